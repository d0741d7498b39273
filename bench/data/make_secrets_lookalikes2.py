# ruff: noqa: E501  (rows of data, one a line)
"""Write a second look-alike probe, written after the 2026.11-18 rules and not tuned on:
other members of the format families those rules decode (GIF, PDF, WOFF2, WebP, MP3 in
base64; ECDSA, RSA and FIDO SSH public keys; base64 of French prose, SAML, a certificate, a
README; SHA-256 and SHA-512 multihashes) and secrets hidden the same ways (base64 of a private
key, of a password, of `user:token`, of an encoded `.env`; an unquoted Django key; 48 random
bytes). Seeded. Run as `make_secrets_lookalikes.py`."""

import base64
import hashlib
import random
import string
import sys

from probe_rows import ProbeRows

R = random.Random(99)
ALNUM = string.ascii_letters + string.digits
B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def rs(a, n):
    return "".join(R.choice(a) for _ in range(n))


def b64(b):
    return base64.b64encode(b).decode()


def b58(b):
    n = int.from_bytes(b, "big")
    out = ""
    while n:
        n, r = divmod(n, 58)
        out = B58[r] + out
    return out


def sshblob(name, body):
    return b64(len(name).to_bytes(4, "big") + name + body)


def pem(label, n):
    body = b64(R.randbytes(n))
    return (
        f"-----BEGIN {label}-----\n"
        + "\n".join(body[i : i + 64] for i in range(0, len(body), 64))
        + f"\n-----END {label}-----\n"
    )


rows = ProbeRows("probe2")
add = rows.add


def SAML():
    return b64(
        (
            '<samlp:AuthnRequest xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" ID="_'
            + rs(ALNUM, 20)
            + '" Version="2.0">'
        ).encode()
    )


def CREDS():
    return b64(
        (
            "export AWS_SECRET_ACCESS_KEY="
            + rs(ALNUM + "/+", 40)
            + chr(10)
            + "export AWS_ACCESS_KEY_ID=AKIA"
            + rs(string.ascii_uppercase + "234567", 16)
        ).encode()
    )


for _ in range(5):
    add(
        "media",
        0,
        [
            f'logo_gif = "{b64(b"GIF89a" + R.randbytes(70))}"',
            f'"pdf": "{b64(b"%PDF-1.7" + R.randbytes(90))}"',
            f"font: {b64(b'wOF2' + R.randbytes(80))}",
            f"the webp preview {b64(b'RIFF' + R.randbytes(4) + b'WEBPVP8 ' + R.randbytes(60))}",
            f"audio clip {b64(b'ID3' + bytes([4, 0, 0]) + R.randbytes(70))}",
            f'"image/png": "{b64(bytes([0x89]) + b"PNG" + bytes([13, 10, 26, 10]) + R.randbytes(70))}"',
        ],
    )
    add(
        "ssh_public",
        0,
        [
            "ecdsa-sha2-nistp256 "
            + sshblob(b"ecdsa-sha2-nistp256", b"\x00\x00\x00\x08nistp256\x00\x00\x00\x41\x04" + R.randbytes(64))
            + " ops@bastion",
            "ssh-rsa "
            + sshblob(b"ssh-rsa", b"\x00\x00\x00\x03\x01\x00\x01\x00\x00\x01\x81\x00" + R.randbytes(384))
            + " me@desktop",
            "sk-ssh-ed25519@openssh.com "
            + sshblob(b"sk-ssh-ed25519@openssh.com", b"\x00\x00\x00\x20" + R.randbytes(32) + b"\x00\x00\x00\x04ssh:")
            + " yubikey",
            f"github.com ssh-ed25519 {sshblob(b'ssh-ed25519', bytes([0, 0, 0, 32]) + R.randbytes(32))}",
        ],
    )
    add(
        "encoded_text",
        0,
        [
            f"decoded it says {b64('Réunion demain à 9h, apportez vos ordinateurs portables.'.encode())}",
            "saml: " + SAML(),
            f"ca.crt: {b64(pem('CERTIFICATE', 500).encode())}",
            'readme_b64 = "'
            + b64(
                b"# Project notes"
                + bytes([10, 10])
                + b"Run make build, then make test. Ask Sam about the deploy window."
            )
            + '"',
            f"cid {b58(bytes([0x12, 0x20]) + hashlib.sha256(R.randbytes(8)).digest())}",
            f"multihash {b58(bytes([0x13, 0x40]) + hashlib.sha512(R.randbytes(8)).digest())}",
        ],
    )
    add(
        "encoded_secret",
        1,
        [
            f"tls.key: {b64(pem('PRIVATE KEY', 600).encode())}",
            f"  password: {b64(rs(ALNUM + '!#', 18).encode())}",
            f"docker login token {b64(('ci-bot:' + rs(ALNUM, 24)).encode())}",
            "creds.txt is " + CREDS(),
            f"DJANGO_SECRET_KEY={rs(string.ascii_lowercase + string.digits + '!@#$%^&*(-_=+)', 50)}",
            f"random key {b64(R.randbytes(48))}",
        ],
    )
rows.write(sys.argv[1])
