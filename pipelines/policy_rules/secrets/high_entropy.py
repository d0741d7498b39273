"""Layer 5: long generated-looking tokens anywhere, except what their surroundings say is
public or data: paths, hashes, data URIs, public keys and addresses, payment object ids, armoured
public blocks, password hashes, values of names saying public or check.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from pipelines.policy_rules.secrets.armour import _in_public_block
from pipelines.policy_rules.secrets.dictionary import dictionary_share
from pipelines.policy_rules.secrets.encoded import (
    _BASE58,
    _content_address,
    _encoded_json_without_secret,
    _encoded_public_data,
    _fernet_ciphertext,
)
from pipelines.policy_rules.secrets.generated import _looks_generated
from pipelines.policy_rules.secrets.hit import SecretHit
from pipelines.policy_rules.secrets.keywords import _PUBLIC_NAME, _REQUEST_TOKEN_NAME
from pipelines.policy_rules.secrets.placeholders import _HASHED_VALUE

_HIGH_ENTROPY_TOKEN = re.compile(r"(?<![A-Za-z0-9+/_\-$.])[A-Za-z0-9+/_\-]{24,}={0,2}(?![A-Za-z0-9+/_\-$])")
_TOKEN_BODY = re.compile(r"[A-Za-z0-9+/_\-]{24,}={0,2}")


def _high_entropy_hits(text: str) -> Iterator[SecretHit]:
    """Long random-looking tokens anywhere, with the entropy limit applied here."""
    for m in _HIGH_ENTROPY_TOKEN.finditer(text):
        token = m.group()
        if m.start() > 0 and text[m.start() - 1] == "\\" and token[0] in "nrt":
            # after an escaped line break ("\\nMIIB..." in JSON) the token starts one later
            m = _TOKEN_BODY.match(text, m.start() + 1)
            if m is None:
                continue
            token = m.group()
        if _path_like(token):
            continue  # a path or URL segment
        if token.startswith(("pk_live_", "pk_test_")):
            continue  # publishable keys are public by design
        # A run that goes on past a dot is one segment of a longer token (a JWT's, a Discord
        # token's, an S3 version id's): the limit by length is the whole token's, not the segment's.
        segment = text[m.end() : m.end() + 1] == "." and text[m.end() + 1 : m.end() + 2].isalnum()
        if not _looks_generated(token, min_len=24, strict=True, whole=not segment):
            continue  # (tested first: it rules out most tokens, and costs less than the names before it)
        if _HASH_SOURCE.match(token):
            continue  # "sha384-<base64>": a subresource-integrity or CSP hash of a file
        if _encoded_json_without_secret(token) or _encoded_public_data(token):
            continue  # base64 of a document, a file, text or a public key, with no secret in it: data
        if _content_address(token):
            continue  # an IPFS content id (a hash of a file), written in base58
        if _fernet_ciphertext(token):
            continue  # data encrypted with a key that is not here
        if _public_by_context(text, m.start(), token):
            continue  # inline data, a module hash, a public address or a payment object's id
        if _in_public_block(text, m.start()) or _in_password_hash(text, m.start()) or _public_by_name(text, m.start()):
            continue  # public keys, certificates, password hashes, CSRF tokens and the like
        yield SecretHit("hard.secret.high_entropy", m.start(), m.end())


def _path_like(token: str) -> bool:
    """Two or more slashes between names: a path or a URL's path ("src/main/java/com/acme",
    "api/v2/users/12345"). Base64 holds slashes too (one character in 64: 48 random bytes
    hold two or more one time in four), between random runs: a part of 8+ letters and digits
    in both cases, under half of its letters in dictionary words (`dictionary_share`), is such
    a run ("MyApp2Config" is words)."""
    if token.count("/") < 2 or "+" in token or "=" in token:
        return False
    for part in token.split("/"):
        if len(part) >= 8 and part.isalnum() and not part.islower() and not part.isupper() \
                and dictionary_share(part) < 0.5:
            return False
    return True


# Right before a token: a data URI's base64 marker (an inlined image or font), or an
# algorithm label of a hash (Go's "h1:", "sha256:", an SSH "SHA256:" fingerprint).
_DATA_OR_HASH_LABEL = re.compile(r"(?:data:[\w.+\-]+/[\w.+\-]+(?:;[\w.+\-]+=[\w.+\-]+)*;base64,|"
                                 r"\b(?:h1|sha1|sha224|sha256|sha384|sha512|md5|blake2b|SHA\d{1,3}):)$")
# Words saying a base58 / bech32 string is public: an address, a program or public key id.
_PUBLIC_CONTEXT = re.compile(r"(?i)\b(?:address|addr|program[ _\-]?id|pub[ _\-]?key|public[ _\-]?key|recipient"
                             r"|receive|watch[ \-]only|deposit)\b")

# Extended public keys (BIP-32 xpub and variants) and Nostr public keys: public by prefix.
_PUBLIC_PREFIX = ("xpub", "ypub", "zpub", "tpub", "Ypub", "Zpub", "npub1")
# Stripe object ids ("price_...", "cus_...", "sub_..."): ids of records, not keys (keys are
# sk_ / rk_ / pk_ / whsec_).
_OBJECT_ID = re.compile(r"(?:price|prod|cus|sub|si|pi|pm|ch|py|in|il|ii|txn|evt|acct|plan|seti|src|re|po|tr|ba"
                        r"|card|cs|prc|cn|dp|du|ipi|mbur|bpc|ic)_[A-Za-z0-9]{14,40}$")


def _public_by_context(text: str, pos: int, token: str) -> bool:
    """What stands around a random-looking token says it is not a credential: it follows a
    data URI's base64 marker or a hash's algorithm label, it is base58 after a word naming an
    address or public key, it has a public-key prefix, or it is a payment object's id."""
    if _DATA_OR_HASH_LABEL.search(text, max(0, pos - 80), pos) or token.startswith(_PUBLIC_PREFIX):
        return True
    if _OBJECT_ID.match(token):
        return True
    return _BASE58.fullmatch(token) is not None and _PUBLIC_CONTEXT.search(text, max(0, pos - 40), pos) is not None


# W3C subresource integrity and CSP hash sources: an algorithm, a dash, the base64 digest.
_HASH_SOURCE = re.compile(r"(?:sha(?:256|384|512)|md5)-[A-Za-z0-9+/]{22,88}={0,2}$")

_HTML_NAMED_VALUE = re.compile(r"(?i)name=[\\\"']{0,2}([\w.\-]{2,60})[\\\"']{0,2}\s+value=[\\\"']{0,2}$")
_NAME_BEFORE_VALUE = re.compile(r"([\w.\-]{2,60})[\\\"'\]]{0,3}\s*(?::=|=>|[:=])\s*[\\\"'`]{0,2}$")


def _public_by_name(text: str, pos: int) -> bool:
    """The token is the value of a name saying it is public or a check value
    (`public_key = "..."`, `csrf-token=...`, `authenticity_token" value="...`)."""
    # The token may start inside the value ("Signature: Ixn4b~PcNBdx..."): look before the
    # value's first character as well.
    word = _word_start(text, pos, "\"'`=:", 400)
    names = [rx.search(text, max(0, at - back), at) for at in {pos, word}
             for rx, back, html in ((_NAME_BEFORE_VALUE, 80, False), (_HTML_NAMED_VALUE, 120, True))
             if _may_end_with(text, max(0, at - back), at, html)]
    return any(m is not None and (_PUBLIC_NAME.search(m.group(1)) or _REQUEST_TOKEN_NAME.search(m.group(1)))
               for m in names)


def _may_end_with(text: str, lo: int, at: int, html: bool) -> bool:
    """False when `_NAME_BEFORE_VALUE` (or, with `html`, `_HTML_NAMED_VALUE`) cannot match
    `text[lo:at]`: read back from where `$` can match (the end, or before a final line
    break), past the quotes and spaces the pattern ends with, the separator (`:`, `=`, `=>`)
    or `value=` must be there. A cheap test before a search that tries every start."""
    ends = (at, at - 1) if at > lo and text[at - 1] == "\n" else (at,)
    for end in ends:
        j = end
        for _ in range(2):
            if j > lo and text[j - 1] in ("\\\"'" if html else "\\\"'`"):
                j -= 1
        if html:
            if j - 6 >= lo and text[j - 6 : j].lower() == "value=":
                return True
            continue
        while j > lo and text[j - 1].isspace():
            j -= 1
        if j > lo and text[j - 1] in ":=>":
            return True
    return False


def _in_password_hash(text: str, pos: int) -> bool:
    """Part of a password hash ("$argon2id$v=19$m=65536,...$<salt>$<hash>", "$2b$12$..."):
    the word the token sits in starts like one."""
    start = _word_start(text, pos, "\"'`", 120)
    return _HASHED_VALUE.match(text[start:pos]) is not None  # `^` anchors at the slice


def _word_start(text: str, pos: int, stops: str, limit: int) -> int:
    """Where the word ending at `pos` starts: back over characters that are neither space nor
    in `stops`, at most `limit` of them."""
    start = pos
    while start > 0 and not text[start - 1].isspace() and text[start - 1] not in stops and pos - start < limit:
        start -= 1
    return start
