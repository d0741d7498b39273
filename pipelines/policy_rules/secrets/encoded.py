"""Payloads decoded once: base64 of a `user:password` pair or of a text holding a secret (a
credential), of JSON, media, an SSH public key or readable text without one (data), a JWT header,
Fernet ciphertext and base58 content ids.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterator

from pipelines.policy_rules.secrets.armour import _PEM_BEGIN, _public_armour
from pipelines.policy_rules.secrets.dictionary import is_guessable, names_a_credential
from pipelines.policy_rules.secrets.hit import SecretHit
from pipelines.policy_rules.secrets.placeholders import _TEST_VALUE
from pipelines.policy_rules.secrets.rescan import find_secrets
from pipelines.policy_rules.secrets.values import _is_password_value


def _broken_jwt_header(segment: str) -> bool:
    """The header decodes to text that starts like JSON but is not JSON: a corrupted or
    truncated token ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ" lacks its closing brace)."""
    try:
        raw = base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))
    except (ValueError, binascii.Error):
        return False
    if not raw.startswith(b'{"'):
        return False
    try:
        return not isinstance(json.loads(raw), dict)
    except ValueError:
        return True


# A base64 run (12 to 1,000 characters of the standard alphabet, padded to a multiple of
# four) that may encode a credential: a `user:password` pair (an HTTP Basic credential outside
# its header: `echo ... | base64 -d`, a docker `config.json`'s `auth`) or a text holding one (a
# Kubernetes secret's file, an encoded `.env`).
_BASE64_RUN_PADDED = re.compile(r"(?<![\w+/=\-.])(?:[A-Za-z0-9+/]{4}){3,250}(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?"
                                r"(?![\w+/=\-.])")
_DECODED_PAIR = re.compile(r"(?P<user>[\w.@+\-]{1,64}):(?P<pw>[^\s:]{4,128})")


def _encoded_credential_hits(text: str) -> Iterator[SecretHit]:
    """Base64 decoded once: `user:password` whose password is judged as a password value in
    code (a guessable or self-describing one is a stand-in: "Zm9vOmJhcg==" is "foo:bar"), or
    a text in which a secret is found."""
    for m in _BASE64_RUN_PADDED.finditer(text):
        token = m.group()
        if token.isalpha() and (token.islower() or token.isupper()):
            continue  # a long word, not base64
        try:
            raw = base64.b64decode(token, validate=True)
        except (ValueError, binascii.Error):
            continue
        decoded = _utf8_text(raw)
        if decoded is None or not _readable(decoded):
            continue
        pair = _DECODED_PAIR.fullmatch(decoded)
        if pair is not None:
            pw = pair.group("pw")
            found = (pair.group("user").lower() not in ("http", "https", "urn", "mailto")
                     and _is_password_value(pw, quoted=True)
                     and not (_TEST_VALUE.match(pw) or names_a_credential(pw) or is_guessable(pw)))
        else:
            found = len(decoded) >= 16 and bool(find_secrets(decoded))
        if found:
            yield SecretHit("hard.secret.encoded_credential", m.start(), m.end())


def _fernet_ciphertext(token: str) -> bool:
    """A Fernet token (Python's `cryptography`): version byte 0x80, a timestamp, an IV, AES
    blocks and an HMAC, 57 + 16k bytes in URL-safe base64. It is ciphertext, readable only
    with a key that is not in it."""
    if not token.startswith("gAAAAA"):
        return False
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    except (ValueError, binascii.Error):
        return False
    return raw[:1] == b"\x80" and len(raw) >= 73 and (len(raw) - 57) % 16 == 0


_BASE58 = re.compile(r"[1-9A-HJ-NP-Za-km-z]+")


def _encoded_json_without_secret(token: str) -> bool:
    """`token` is base64 (standard or URL-safe) of a JSON object or array in which no secret
    is found: encoded data, judged by what it holds (decoded once, not again)."""
    if not token.startswith(("eyJ", "eyI", "W3", "WyJ", "ewo", "ewog", "e30")):
        return False  # base64 of '{"', '{', '["', '[' and '{\n' starts so
    raw = token.strip("=")
    try:
        decoded = base64.b64decode(raw.replace("-", "+").replace("_", "/") + "=" * (-len(raw) % 4),
                                   validate=True).decode("utf-8")
        doc = json.loads(decoded)
    except (ValueError, binascii.Error, UnicodeDecodeError):
        return False
    if not isinstance(doc, (dict, list)):
        return False
    return not find_secrets(decoded)


def _base64_bytes(token: str) -> bytes | None:
    """`token` decoded as base64 (standard or URL-safe, padding optional; a token cut short
    loses its last incomplete group), or None when it is not base64."""
    raw = token.rstrip("=").replace("-", "+").replace("_", "/")
    raw = raw[: len(raw) - len(raw) % 4] if len(raw) % 4 == 1 else raw + "=" * (-len(raw) % 4)
    try:
        return base64.b64decode(raw, validate=True)
    except (ValueError, binascii.Error):
        return None


# The first bytes of media files (PNG, JPEG, GIF, WebP and other RIFF, PDF, WOFF, WOFF2, OpenType,
# ICO, MP3 with ID3, Ogg, FLAC, ISO media "ftyp" at offset 4): base64 of one is an inlined image,
# font or sound (a thumbnail, an icon, an e-mail attachment), never a generated key. Random
# bytes start with one of these 4-8 byte signatures about once in 10^8 (JPEG's three in 10^7).
# Archives (gzip, zip) are left out: they may hold anything.
_MEDIA_SIGNATURES = (b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"GIF87a", b"GIF89a", b"RIFF", b"%PDF-", b"wOFF",
                     b"wOF2", b"OTTO", b"\x00\x01\x00\x00\x00", b"\x00\x00\x01\x00", b"ID3", b"OggS", b"fLaC")
# An SSH public key's wire format (RFC 4253 6.6, RFC 5656, OpenSSH's PROTOCOL.u2f): a 4-byte
# length, then the key type's name. Base64 of it ("AAAAC3NzaC1lZDI1NTE5...") is the public half
# of a key pair, made to be shared (authorized_keys, known_hosts).
_SSH_KEY_TYPE = re.compile(rb"(?:ssh|ecdsa|sk|rsa|x509v3)-[a-z0-9@.\-]{2,40}")
_PRINTABLE_SHARE = 0.95


def _encoded_public_data(token: str) -> bool:
    """`token` is base64 of something that is no credential, decoded once: a media file (by
    its first bytes), an SSH public key (by its wire format), a public PEM block (a certificate,
    as in a kubeconfig's `certificate-authority-data`), or readable text of several words with
    no secret found in it. Generated keys decode to random bytes; a base64 password or
    `user:password` pair decodes to one word, which is not released."""
    raw = _base64_bytes(token)
    if raw is None or len(raw) < 16:
        return False
    if raw.startswith(_MEDIA_SIGNATURES) or raw[4:8] == b"ftyp":
        return True
    n = int.from_bytes(raw[:4], "big")
    if 7 <= n <= 44 and _SSH_KEY_TYPE.fullmatch(raw[4 : 4 + n]):
        return True
    text = _utf8_text(raw)
    if text is None or len(text) < 16 or not _readable(text):
        return False
    begin = _PEM_BEGIN.match(text)
    if begin is not None:
        return _public_armour(begin.group(1))
    return len(text.split()) >= 4 and "PRIVATE KEY" not in text and not find_secrets(text)


def _utf8_text(raw: bytes) -> str | None:
    """`raw` as UTF-8 text, allowing only its last character to be cut off (a base64 run cut
    short), or None when it is not UTF-8."""
    for cut in range(4):
        try:
            return raw[: len(raw) - cut].decode("utf-8")
        except UnicodeDecodeError:
            continue
    return None


def _readable(text: str) -> bool:
    """Nearly all printable characters and line breaks: text, not bytes that happen to decode."""
    return sum(c.isprintable() or c in "\n\r\t" for c in text) >= _PRINTABLE_SHARE * len(text)


_BASE58_ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_BASE58_VALUE = {c: i for i, c in enumerate(_BASE58_ALPHABET)}
# Multihash function codes (the multiformats table): SHA-1, SHA2-256/512, SHA3-512/384/256/224,
# Keccak-256. An IPFS v0 content id is base58 of one ("Qm" and 44 characters for SHA2-256).
_MULTIHASH_CODES = frozenset({0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x1B})


def _content_address(token: str) -> bool:
    """`token` is base58 of a multihash: a function code, the digest's length, the digest
    (the length byte must match, which random base58 does about once in 10^4 tokens that
    start with a code). A content id names a file by its hash; it gives access to nothing
    that its holder could not fetch anyway."""
    if len(token) < 30 or len(token) > 100 or not _BASE58.fullmatch(token):
        return False
    value = 0
    for c in token:
        value = value * 58 + _BASE58_VALUE[c]
    raw = value.to_bytes((value.bit_length() + 7) // 8, "big")
    return len(raw) >= 22 and raw[0] in _MULTIHASH_CODES and raw[1] == len(raw) - 2
