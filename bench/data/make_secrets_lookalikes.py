# ruff: noqa: E501  (rows of data, one a line)
"""Write a look-alike probe for the write policy's secret side (issue 14): non-secrets shaped
like secrets (commit ids, digests, UUIDs, base64 data, integrity hashes, public keys,
placeholders, cloud and payment ids, content ids, password hashes) in prose, code and config,
and secrets in the same places. Generated from the formats' specifications with a fixed seed,
not from any dev file; written before the 2026.11-18 rules (which it showed were needed).
`python bench/data/make_secrets_lookalikes.py OUT/secrets_lookalikes.jsonl`, then
`loci bench policy --data OUT/secrets_lookalikes.jsonl --no-builtin --by kind`
(the file name must start with "secrets")."""

import base64
import hashlib
import random
import string
import sys
import uuid

from probe_rows import ProbeRows

R = random.Random(20261128)
HEX = "0123456789abcdef"
B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
B32 = "abcdefghijklmnopqrstuvwxyz234567"
ALNUM = string.ascii_letters + string.digits


def rs(alpha, n):
    return "".join(R.choice(alpha) for _ in range(n))


def sha1():
    return hashlib.sha1(R.randbytes(20)).hexdigest()


def sha256():
    return hashlib.sha256(R.randbytes(32)).hexdigest()


def md5():
    return hashlib.md5(R.randbytes(16)).hexdigest()


def uid():
    return str(uuid.UUID(bytes=R.randbytes(16), version=4))


def b64(n):
    return base64.b64encode(R.randbytes(n)).decode()


def b64u(n):
    return base64.urlsafe_b64encode(R.randbytes(n)).decode().rstrip("=")


def ssh_pub(kind):
    if kind == "ed25519":
        blob = b"\x00\x00\x00\x0bssh-ed25519\x00\x00\x00\x20" + R.randbytes(32)
        return "ssh-ed25519 " + base64.b64encode(blob).decode()
    blob = b"\x00\x00\x00\x07ssh-rsa\x00\x00\x00\x03\x01\x00\x01\x00\x00\x01\x01\x00" + R.randbytes(256)
    return "ssh-rsa " + base64.b64encode(blob).decode()


def pem(label, nbytes=270):
    body = base64.b64encode(R.randbytes(nbytes)).decode()
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    return f"-----BEGIN {label}-----\n" + "\n".join(lines) + f"\n-----END {label}-----"


def png_b64():
    return base64.b64encode(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + R.randbytes(60)).decode()


rows = ProbeRows("probe")
add = rows.add


def b58(b):
    n = int.from_bytes(b, "big")
    out = ""
    while n:
        n, r = divmod(n, 58)
        out = B58[r] + out
    return "1" * (len(b) - len(b.lstrip(b"\0"))) + out


JPEG_HEAD = bytes([0xFF, 0xD8, 0xFF, 0xE0, 0, 16]) + b"JFIF"


def JPG():
    return base64.b64encode(JPEG_HEAD + R.randbytes(80)).decode()


def CSV():
    return (
        "date,amount,category\n"
        + "\n".join(
            f"2024-0{R.randint(1, 9)}-1{R.randint(0, 9)},{R.randint(5, 500)}.{R.randint(10, 99)},groceries"
            for _ in range(3)
        )
    ).encode()


EVENT_B64 = base64.b64encode(b'{"event":"page_view","path":"/pricing","ts":1732800000}').decode()


N = 4
for _ in range(N):
    s = sha1()
    short = s[:7]
    add(
        "commit_sha",
        0,
        [
            f"The regression was introduced in commit {s} and reverted the next day.",
            f"git checkout {s}",
            f'Pinned the dependency to rev = "{s}" until upstream tags a release.',
            f"fixed in {short}, see the PR for details",
            f'  "sha": "{s}",\n  "message": "bump version"',
            f"merge_base: {s}",
        ],
    )
    h = sha256()
    add(
        "sha256_digest",
        0,
        [
            f"sha256sum of the ISO should be {h}",
            f"{h}  ubuntu-24.04-desktop-amd64.iso",
            f'checksum = "{h}"',
            f"image: registry.example.org/app@sha256:{h}",
            f"requests==2.32.3 --hash=sha256:{h}",
            f"The file hash is {h}; compare it before installing.",
            f'"digest": "sha256:{h}"',
            f'etag: "{md5()}"',
            f"md5 of the backup tarball: {md5()}",
        ],
    )
    u = uid()
    add(
        "uuid",
        0,
        [
            f"My order confirmation number is {u}.",
            f"request_id={u} status=500 path=/api/v1/items",
            f'"id": "{u}", "name": "Quarterly report"',
            f"The Azure subscription id is {u} (tenant {uid()}).",
            f"X-Request-ID: {u}",
            f"user_uuid = '{u}'",
            f"idempotency_key: {u}",
            f"trace {u.replace('-', '')} span {rs(HEX, 16)}",
        ],
    )
    add(
        "base64_data",
        0,
        [
            f'<img src="data:image/png;base64,{png_b64()}" alt="logo">',
            f'icon = "{png_b64()}"',
            '"thumbnail": "' + JPG() + '"',
            "payload (base64): " + EVENT_B64,
            f"font-face src: url(data:font/woff2;base64,{b64(120)})",
            f"The attachment body was {base64.b64encode(CSV()).decode()} which decodes to a small CSV.",
            f"certificate-authority-data: {base64.b64encode(pem('CERTIFICATE', 400).encode()).decode()}",
            f"message: {base64.b64encode(b'Hello team, the standup moves to 10:30 tomorrow. ' + str(R.random()).encode()).decode()}",
        ],
    )
    add(
        "integrity_hash",
        0,
        [
            f'<script src="https://cdn.example.net/lib.min.js" integrity="sha384-{b64(48)}" crossorigin="anonymous"></script>',
            f'"integrity": "sha512-{b64(64)}",',
            f"golang.org/x/text v0.14.0 h1:{b64(32)}",
            f'checksum = "{sha256()}"  # Cargo.lock',
            f'resolved "https://registry.yarnpkg.com/lodash/-/lodash-4.17.21.tgz#{sha1()}"',
            f"Content-Security-Policy: script-src 'self' 'sha256-{b64(32)}'",
        ],
    )
    add(
        "public_key",
        0,
        [
            ssh_pub("ed25519") + " alice@laptop",
            f"Added my public key to authorized_keys: {ssh_pub('ed25519')} bob@work",
            ssh_pub("rsa") + " deploy@ci",
            pem("PUBLIC KEY", 294),
            pem("CERTIFICATE", 600),
            f'public_key = "{b64(32)}"',
            f"[Peer]\nPublicKey = {b64(32)}\nAllowedIPs = 10.0.0.2/32",
            f"age recipient: age1{rs('qpzry9x8gf2tvdw0s3jn54khce6mua7l', 58)}",
            f"Host key fingerprint is SHA256:{b64u(32)}.",
            "PGP fingerprint: " + " ".join(rs(HEX.upper(), 4) for _ in range(10)),
            f"My GPG key id is {rs(HEX.upper(), 16)}, signed by the release team.",
        ],
    )
add(
    "placeholder",
    0,
    [
        "API_KEY=<your-api-key>",
        'export OPENAI_API_KEY="sk-..."',
        "token: YOUR_TOKEN_HERE",
        'password = "********"',
        "SECRET_KEY=${SECRET_KEY}",
        "client_secret: {{ vault_client_secret }}",
        'api_key = "REPLACE_WITH_YOUR_KEY"',
        "DATABASE_URL=postgres://user:password@localhost:5432/app",
        "Authorization: Bearer <token>",
        "GITHUB_TOKEN=ghp_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX",
        "password: changeme",
        "STRIPE_SECRET_KEY=sk_test_your_key_here",
        'api_key: "${{ secrets.API_KEY }}"',
        'token = os.environ["SLACK_BOT_TOKEN"]',
        "password=$(cat /run/secrets/db_password)",
        "aws_secret_access_key = <redacted>",
    ],
)
for _ in range(N):
    add(
        "cloud_ids",
        0,
        [
            f"arn:aws:iam::{rs(string.digits, 12)}:role/{R.choice(['deploy', 'ci-runner', 'lambda-exec'])}",
            f"Instance i-{rs(HEX, 17)} failed its status check.",
            f'ami = "ami-{rs(HEX, 17)}"',
            f"Bucket versionId: {rs(ALNUM + '._', 32)}",
            f"docker run {rs(HEX, 12)}",
            f"container {rs(HEX, 64)} exited with code 137",
            f"pod web-{rs(HEX, 9)}-{rs('bcdfghjklmnpqrstvwxz2456789', 5)} is CrashLoopBackOff",
            f"GCP project id: my-project-{rs(string.digits, 6)}",
            f"Stripe customer cus_{rs(ALNUM, 14)} was charged ch_{rs(ALNUM, 24)}",
            f"Measurement ID G-{rs(string.ascii_uppercase + string.digits, 10)}",
            f"pk_live_{rs(ALNUM, 24)} is the publishable key for the checkout page",
            f'client_id = "{rs(string.digits, 12)}-{rs(string.ascii_lowercase + string.digits, 32)}.apps.googleusercontent.com"',
        ],
    )
    add(
        "links_ids",
        0,
        [
            f"Notes are in https://docs.google.com/document/d/{rs(ALNUM + '-_', 44)}/edit",
            f"Watch https://www.youtube.com/watch?v={rs(ALNUM + '-_', 11)} for the talk",
            f"Drive folder: https://drive.google.com/drive/folders/{rs(ALNUM + '-_', 33)}",
            f"magnet:?xt=urn:btih:{sha1()}&dn=debian-12.iso",
            f"ipfs://bafybei{rs('abcdefghijklmnopqrstuvwxyz234567', 52)}",
            f"CID {b58(bytes([0x12, 0x20]) + hashlib.sha256(R.randbytes(40)).digest())}",
            f"Send the refund to bc1q{rs('qpzry9x8gf2tvdw0s3jn54khce6mua7l', 38)}",
            f"My ETH address is 0x{rs(HEX, 40)}",
            f"tx hash 0x{rs(HEX, 64)}",
            f"Tracking number 1Z{rs(string.ascii_uppercase + string.digits, 16)}",
            f"https://github.com/org/repo/blob/{sha1()}/src/main.py#L42",
            f"https://example.com/reset?utm_source=newsletter&utm_campaign={rs(ALNUM, 20)}",
        ],
    )
    add(
        "hash_values",
        0,
        [
            f"stored hash: $2b$12${rs(ALNUM + './', 53)}",
            f'password_hash = "$argon2id$v=19$m=65536,t=3,p=4${b64u(16)}${b64u(32)}"',
            f"The password is hashed with bcrypt before storage ({rs(HEX, 8)}...).",
            f'salt = "{rs(HEX, 32)}"',
            f"nonce: {rs(HEX, 24)}",
            f"HMAC-SHA256 signature of the payload: {sha256()}",
            f'"hash": "{sha1()}"',
        ],
    )
# positives: secrets in the same contexts
for _ in range(N):
    k = rs(ALNUM, 32)
    add(
        "secret_keyword",
        1,
        [
            f'api_key = "{k}"',
            f"SECRET_KEY={rs(ALNUM + '!@#%^&*(-_=+)', 50)}",
            f'"client_secret": "{rs(ALNUM + "-_", 40)}"',
            f"export AWS_SECRET_ACCESS_KEY={rs(ALNUM + '/+', 40)}",
            f"auth_token: {rs(HEX, 40)}",
            f"my API key for the weather service is {k}",
            f"password: {rs(ALNUM + '!#%&', 16)}",
            f"DB_PASSWORD='{rs(ALNUM, 20)}'",
        ],
    )
    add(
        "secret_vendor",
        1,
        [
            f"GITHUB_TOKEN=ghp_{rs(ALNUM, 36)}",
            f"xoxb-{rs(string.digits, 12)}-{rs(string.digits, 13)}-{rs(ALNUM, 24)}",
            f"stripe key sk_live_{rs(ALNUM, 24)}",
            f"AKIA{rs(string.ascii_uppercase + '234567', 16)} / {rs(ALNUM + '/+', 40)}",
            f"Authorization: Bearer {rs(ALNUM + '-._', 48)}",
            f"postgres://app:{rs(ALNUM, 18)}@db.internal:5432/prod",
            pem("RSA PRIVATE KEY", 600),
            f"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.{b64u(60)}.{b64u(32)}",
            f"hf_{rs(string.ascii_letters, 34)}",
            f"session secret: {rs(ALNUM, 64)}",
            f"client-key-data: {base64.b64encode(pem('RSA PRIVATE KEY', 600).encode()).decode()}",
            f"echo {base64.b64encode(('admin:' + rs(ALNUM, 14)).encode()).decode()} | base64 -d",
            f"SECRET_KEY={rs(string.ascii_lowercase + string.digits + '!@#$%^&*(-_=+)', 50)}",
        ],
    )
rows.write(sys.argv[1])
