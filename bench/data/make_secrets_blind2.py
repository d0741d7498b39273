# ruff: noqa: E501  (rows of data, one a line)
"""Write `secrets_blind2.jsonl`: a second blind set for the write policy's secret side (issue 14).

Written before the policy's code, rules, tests, bench data or READMEs were read, as chat turns
a user or a coding agent would send: passwords said in prose, PINs with their context,
connection strings, .env and config files, private keys in several formats, JWTs, credentials
of less common cloud and SaaS vendors, wallet seeds and keys, shell commands carrying a
password, recovery codes and TOTP seeds -- and as many hard look-alikes that are not secrets:
UUIDs, commit SHAs, checksums, documented example keys, placeholders, redacted keys, data:
URIs, public keys, version strings, order and tracking numbers, documented test IBANs and
cards, talk about passwords without one, and references to secrets held elsewhere.

Every row is hand-written; only the random bodies of keys and passwords come from a seeded
`random.Random`, so running this again writes the same file byte for byte:

    python bench/data/make_secrets_blind2.py > bench/data/secrets_blind2.jsonl

Rows: `{text, label, source, kind, half}`; label 1 = a secret (must be rejected), 0 = a
harmless look-alike. `half` is drawn per kind with a fixed seed so both halves hold (nearly)
every kind: fixes are tuned on "tune" only and "blind" is reported apart.
"""

from __future__ import annotations

import base64
import json
import random
import string
import sys

R = random.Random(20261128)
UP = string.ascii_uppercase
LO = string.ascii_lowercase
DIG = string.digits
ALNUM = UP + LO + DIG
HEX = "0123456789abcdef"
B32 = UP + "234567"
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"
B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

WORDS = (
    "tangerine otter walrus copper maple harbor velvet pickle cobalt meadow falcon ember "
    "biscuit lantern quartz juniper marble thunder saffron pebble orchid glacier noodle "
    "cactus violet raven mango sparrow willow canyon"
).split()
BIP39 = (
    "abandon ability able about above absent absorb abstract absurd abuse access accident "
    "account achieve acid acoustic acquire across action actor actual adapt address adjust "
    "admit adult advance advice afford afraid again agent agree ahead alarm album alert alien "
    "alley allow almost alone alpha already alter always amateur amazing among amount anchor "
    "ancient anger angle animal ankle announce annual answer antenna antique anxiety apart "
    "apology appear apple approve april arch arctic arena argue armor army arrange arrive "
    "arrow artist ticket tiger timber tissue toast tobacco toddler token tomato tongue tonight "
    "wagon walnut wealth weapon weasel weather wedding weekend wisdom wolf wonder wrong zebra zoo"
).split()


def rnd(alphabet: str, n: int) -> str:
    return "".join(R.choice(alphabet) for _ in range(n))


def pw() -> str:
    """A password as people make them: words, digits, a symbol; or a generator's output."""
    style = R.randrange(4)
    if style == 0:
        return R.choice(WORDS).capitalize() + R.choice("-_.!") + R.choice(WORDS) + rnd(DIG, 2)
    if style == 1:
        return R.choice(WORDS).capitalize() + rnd(DIG, 4) + R.choice("!#$%&*")
    if style == 2:
        return rnd(ALNUM + "!@#%^&*", R.randrange(14, 22))
    return "-".join(R.choice(WORDS) for _ in range(4))


def b64(nbytes: int) -> str:
    return base64.b64encode(R.randbytes(nbytes)).decode()


def pem_body(nbytes: int, width: int = 64) -> str:
    s = b64(nbytes)
    return "\n".join(s[i : i + width] for i in range(0, len(s), width))


def jwt(payload: dict, header: dict | None = None) -> str:
    enc = lambda d: base64.urlsafe_b64encode(json.dumps(d, separators=(",", ":")).encode()).decode().rstrip("=")  # noqa: E731
    h = header or {"alg": "HS256", "typ": "JWT"}
    return f"{enc(h)}.{enc(payload)}.{rnd(B64URL, 43)}"


def uuid() -> str:
    h = rnd(HEX, 32)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{R.choice('89ab')}{h[17:20]}-{h[20:]}"


def seed_words(n: int) -> str:
    return " ".join(R.choice(BIP39) for _ in range(n))


SECRETS: list[tuple[str, str]] = []
LOOKS: list[tuple[str, str]] = []


def s(kind: str, text: str) -> None:
    SECRETS.append((kind, text))


def n(kind: str, text: str) -> None:
    LOOKS.append((kind, text))


# ---------------------------------------------------------------- secrets (label 1)
# passwords said in prose
s("prose_password", f"my wifi password is {pw()} if you need it when you come over saturday")
s("prose_password", f"ok so the netflix login is maria.k@gmail.com and the password is {pw()}, don't change it pls")
s("prose_password", f"Remember for me: the router admin page is 192.168.0.1, user admin, pass {pw()}")
s("prose_password", f"I changed the password on the shared Spotify to {pw()} -- tell your brother")
s("prose_password", f"note to self: bank website password is now {pw()} (changed it after the phishing thing)")
s("prose_password", f"the guest network is called Harbor-5G and the key is {pw()}")
s("prose_password", f"Can you remember that my work laptop password is {pw()}? I keep forgetting it after the reset.")
s("prose_password", f"mein WLAN-Passwort ist {pw()}, falls du es brauchst")
s("prose_password", f"la contraseña del correo es {pw()}, apúntala por favor")
s("prose_password", f"Dad's iCloud: robert.h@icloud.com / {pw()}")
s("prose_password", f"For the conference wifi use SSID EventNet and passphrase {pw()}")
s("prose_password", f"I'm locked out again. My old password was {pw()} and the new one I set this morning is {pw()}")
s("prose_password", f"The alarm system master code is {rnd(DIG, 6)}, the installer said to keep it somewhere safe")
s("prose_password", f"login for the school portal: username jsmith2014, password {pw()}")
s("prose_password", f"my password for everything is basically {pw()} with a different number at the end lol")
# PINs with context
s("pin", f"My debit card PIN is {rnd(DIG, 4)}, remind me if I ask")
s("pin", f"the garage keypad code is {rnd(DIG, 4)}# -- press the hash at the end")
s("pin", f"voicemail pin: {rnd(DIG, 6)}")
s("pin", f"Phone unlock code is {rnd(DIG, 6)} in case I lose my face ID again")
s("pin", f"The SIM card PUK code is {rnd(DIG, 8)}, the carrier just texted it")
s("pin", f"lockbox at the cabin opens with {rnd(DIG, 4)}, key is inside")
s("pin", f"my Venmo PIN is {rnd(DIG, 4)} and my security answer is 'Biscuit' (first dog)")
s("pin", f"Apartment door code: {rnd(DIG, 5)}*  (building B)")
# connection strings
s("conn_string", f"why does this hang? psql \"postgresql://app_user:{pw()}@db-prod-2.internal:5432/orders?sslmode=require\"")
s("conn_string", f"MONGO_URI=mongodb+srv://admin:{rnd(ALNUM, 16)}@cluster0.x8kq2.mongodb.net/shop?retryWrites=true&w=majority")
s("conn_string", f"redis = Redis.from_url('redis://:{rnd(ALNUM, 24)}@redis-12345.c1.us-east-1-2.ec2.cloud.redislabs.com:12345/0')")
s("conn_string", f"CELERY_BROKER_URL = 'amqp://celery:{pw()}@rabbit.prod.local:5672/vhost'")
s("conn_string", f"Server=tcp:acme-sql.database.windows.net,1433;Initial Catalog=crm;User ID=sqladmin;Password={pw()};Encrypt=True;")
s("conn_string", f"DefaultEndpointsProtocol=https;AccountName=acmeprodstore;AccountKey={b64(64)};EndpointSuffix=core.windows.net")
s("conn_string", f"Endpoint=sb://acme-bus.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={b64(32)}")
s("conn_string", f"jdbc:mysql://10.0.4.12:3306/billing?user=billing_rw&password={rnd(ALNUM, 18)}&useSSL=true")
s("conn_string", f"the Django DATABASES url is mysql://root:{pw()}@127.0.0.1/wordpress, is utf8mb4 set right?")
s("conn_string", f"spring.datasource.url=jdbc:oracle:thin:@//ora01:1521/ORCL\nspring.datasource.username=HR\nspring.datasource.password={pw()}")
s("conn_string", f"smtp://postmaster%40mg.acme.io:{rnd(HEX, 32)}-{rnd(HEX, 8)}-{rnd(HEX, 8)}@smtp.mailgun.org:587")
s("conn_string", f"clickhouse-client --host ch.internal --user analyst --password '{pw()}' --query 'select 1'")
# .env and config
s("env_config", f"here's my .env, the app won't boot:\nNODE_ENV=production\nPORT=8080\nDATABASE_URL=postgres://shop:{pw()}@localhost/shop\nJWT_SECRET={rnd(ALNUM, 48)}")
s("env_config", f"SECRET_KEY = 'django-insecure-{rnd(LO + DIG + '!@#$%^&*(-_=+)', 50)}'\nDEBUG = False")
s("env_config", f"# config/database.yml\nproduction:\n  adapter: postgresql\n  username: rails\n  password: {pw()}\n  host: pg.internal")
s("env_config", f"services:\n  db:\n    image: postgres:16\n    environment:\n      POSTGRES_USER: app\n      POSTGRES_PASSWORD: {pw()}")
s("env_config", f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: db-creds\ntype: Opaque\ndata:\n  username: YWRtaW4=\n  password: {base64.b64encode(pw().encode()).decode()}")
s("env_config", f"//registry.npmjs.org/:_authToken=npm_{rnd(ALNUM, 36)}")
s("env_config", f"[pypi]\n  username = __token__\n  password = pypi-AgEIcHlwaS5vcmc{rnd(B64URL, 120)}")
s("env_config", f"machine api.heroku.com\n  login dev@acme.io\n  password {rnd(HEX, 8)}-{rnd(HEX, 4)}-{rnd(HEX, 4)}-{rnd(HEX, 4)}-{rnd(HEX, 12)}")
s("env_config", f'{{"auths": {{"registry.acme.io": {{"auth": "{base64.b64encode(("deploy:" + pw()).encode()).decode()}"}}}}}}')
s("env_config", f"wp-config.php has define( 'DB_PASSWORD', '{pw()}' ); and still 'Error establishing a database connection'")
s("env_config", f"[client]\nuser=backup\npassword={pw()}\nhost=db1")
s("env_config", f"SMTP_HOST=smtp.office365.com\nSMTP_USER=noreply@acme.com\nSMTP_PASS={pw()}")
s("env_config", f"appsettings.json:\n{{\n  \"Jwt\": {{ \"Key\": \"{rnd(ALNUM, 40)}\", \"Issuer\": \"acme\" }}\n}}")
s("env_config", f"STRIPE_WEBHOOK_SECRET=whsec_{rnd(ALNUM, 32)}")
s("env_config", f"ldap:\n  bind_dn: cn=svc-ldap,ou=svc,dc=acme,dc=com\n  bind_password: {pw()}")
# private keys in several formats
s("private_key", f"-----BEGIN RSA PRIVATE KEY-----\n{pem_body(600)}\n-----END RSA PRIVATE KEY-----")
s("private_key", f"ssh keeps saying bad permissions on this one:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n{pem_body(280, 70)}\n-----END OPENSSH PRIVATE KEY-----")
s("private_key", f"-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEI{pem_body(90)}\n-----END EC PRIVATE KEY-----")
s("private_key", f"key.pem:\n-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC{pem_body(450)}\n-----END PRIVATE KEY-----")
s("private_key", f"-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIFHzBJBgkqhkiG9w0BBQ0wPDAbBgkqhkiG9w0BBQwwDgQI{pem_body(400)}\n-----END ENCRYPTED PRIVATE KEY-----\npassphrase is {pw()}")
s("private_key", f"PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: eddsa-key-20240311\nPublic-Lines: 2\nAAAAC3NzaC1lZDI1NTE5AAAAI{rnd(B64, 43)}\n{rnd(B64, 12)}\nPrivate-Lines: 1\nAAAAI{rnd(B64, 43)}\nPrivate-MAC: {rnd(HEX, 64)}")
s("private_key", f"-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBGX{pem_body(500)}\n=Ab3x\n-----END PGP PRIVATE KEY BLOCK-----")
s("private_key", f"age key for the backups: AGE-SECRET-KEY-1{rnd('QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L'.upper(), 58)}")
s("private_key", f"[Interface]\nPrivateKey = {b64(32)}\nAddress = 10.8.0.2/24\nDNS = 1.1.1.1\n\n[Peer]\nPublicKey = {b64(32)}\nEndpoint = vpn.example.net:51820")
s("private_key", f'the service account json: {{"type": "service_account", "project_id": "acme-prod-331", "private_key_id": "{rnd(HEX, 40)}", "private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvgIBADANBgkqhkiG9w0BAQEFAASC{rnd(B64, 200)}\\n-----END PRIVATE KEY-----\\n", "client_email": "ci@acme-prod-331.iam.gserviceaccount.com"}}')
s("private_key", f'jwk = {{"kty":"EC","crv":"P-256","x":"{rnd(B64URL, 43)}","y":"{rnd(B64URL, 43)}","d":"{rnd(B64URL, 43)}"}}')
s("private_key", f"-----BEGIN DSA PRIVATE KEY-----\n{pem_body(500)}\n-----END DSA PRIVATE KEY-----")
# JWTs
s("jwt", f"curl -H 'Authorization: Bearer {jwt({'sub': 'u_8812', 'role': 'admin', 'exp': 1893456000})}' https://api.acme.io/v2/users")
s("jwt", f"my session token from devtools is {jwt({'uid': 4412, 'email': 'pat@acme.io', 'iat': 1732700000})} -- why is it rejected?")
s("jwt", f"SUPABASE_SERVICE_ROLE_KEY={jwt({'iss': 'supabase', 'ref': rnd(LO, 20), 'role': 'service_role', 'iat': 1700000000, 'exp': 2015576000})}")
s("jwt", f"refresh_token: {jwt({'typ': 'Refresh', 'sid': uuid(), 'exp': 1900000000}, {'alg': 'RS256', 'kid': rnd(B64URL, 20)})}")
s("jwt", f"cookie: access_token={jwt({'sub': '1029', 'scope': 'read write'})}; Path=/; HttpOnly")
s("jwt", f"kubectl --token={jwt({'iss': 'kubernetes/serviceaccount', 'sub': 'system:serviceaccount:default:deployer'}, {'alg': 'RS256', 'kid': rnd(B64URL, 30)})} get pods")
s("jwt", f"MAPBOX_SECRET=sk.eyJ1IjoiYWNtZSIsImEiOiJ{rnd(B64URL, 40)}.{rnd(B64URL, 22)}")
# cloud credentials of less common vendors
s("cloud_cred", f"export DIGITALOCEAN_TOKEN=dop_v1_{rnd(HEX, 64)}")
s("cloud_cred", f"hcloud context create prod, token: {rnd(ALNUM, 64)}")
s("cloud_cred", f"Linode API token {rnd(HEX, 64)} has read/write on linodes")
s("cloud_cred", f"b2 authorize-account {rnd(HEX, 25)} K00{rnd(DIG, 1)}{rnd(ALNUM, 27)}")
s("cloud_cred", f"Alibaba Cloud AccessKey ID: LTAI5t{rnd(ALNUM, 18)}\nAccessKey Secret: {rnd(ALNUM, 30)}")
s("cloud_cred", f"tencent: SecretId=AKID{rnd(ALNUM, 32)} SecretKey={rnd(ALNUM, 32)}")
s("cloud_cred", f"SCW_ACCESS_KEY=SCW{rnd(UP + DIG, 17)}\nSCW_SECRET_KEY={uuid()}")
s("cloud_cred", f"IBM Cloud api key: {rnd(B64URL, 44)} (for the cos bucket)")
s("cloud_cred", f"export VULTR_API_KEY={rnd(UP + DIG, 36)}")
s("cloud_cred", f"credentials \"app.terraform.io\" {{\n  token = \"{rnd(ALNUM, 14)}.atlasv1.{rnd(ALNUM, 67)}\"\n}}")
s("cloud_cred", f"DATABRICKS_TOKEN=dapi{rnd(HEX, 32)}")
s("cloud_cred", f"pulumi login with PULUMI_ACCESS_TOKEN=pul-{rnd(HEX, 40)}")
s("cloud_cred", f"fly auth token is fo1_{rnd(B64URL, 43)}")
s("cloud_cred", f"NETLIFY_AUTH_TOKEN=nfp_{rnd(ALNUM, 36)}")
s("cloud_cred", f"doppler token: dp.st.prd.{rnd(ALNUM, 43)}")
s("cloud_cred", f"Wasabi keys for the archive bucket -- access {rnd(UP + DIG, 20)}, secret {rnd(ALNUM, 40)}")
s("cloud_cred", f"aws_session_token = IQoJb3JpZ2luX2VjE{rnd(B64, 300)}")
s("cloud_cred", f"OCI config:\n[DEFAULT]\nuser=ocid1.user.oc1..{rnd(LO + DIG, 60)}\nfingerprint={':'.join(rnd(HEX, 2) for _ in range(16))}\nkey_file=~/.oci/oci_api_key.pem\npass_phrase={pw()}")
s("cloud_cred", f"Cloudflare API token (zone edit): {rnd(B64URL, 40)}")
s("cloud_cred", f"export AZURE_CLIENT_SECRET={rnd(ALNUM, 3)}8Q~{rnd(ALNUM + '._~-', 34)}")
# AI / SaaS tokens
s("saas_token", f"HF_TOKEN=hf_{rnd(ALNUM, 34)}")
s("saas_token", f"replicate wants REPLICATE_API_TOKEN=r8_{rnd(ALNUM, 37)}")
s("saas_token", f"groq key gsk_{rnd(ALNUM, 52)} works in curl but not in the sdk")
s("saas_token", f"client = anthropic.Anthropic(api_key=\"sk-ant-api03-{rnd(B64URL, 93)}AA\")")
s("saas_token", f"MISTRAL_API_KEY={rnd(ALNUM, 32)}")
s("saas_token", f"co = cohere.Client('{rnd(ALNUM, 40)}')")
s("saas_token", f"telegram bot token {R.randrange(10**9, 8 * 10**9)}:AA{rnd(B64URL, 33)}")
s("saas_token", f"DISCORD_TOKEN={rnd(ALNUM, 24)}.{rnd(B64URL, 6)}.{rnd(B64URL, 38)}")
s("saas_token", f"SHOPIFY_ADMIN_TOKEN=shpat_{rnd(HEX, 32)}")
s("saas_token", f"notion integration secret: ntn_{rnd(DIG, 11)}{rnd(ALNUM, 35)}")
s("saas_token", f"LINEAR_API_KEY=lin_api_{rnd(ALNUM, 40)}")
s("saas_token", f"airtable personal access token pat{rnd(ALNUM, 14)}.{rnd(HEX, 64)}")
s("saas_token", f"twilio: account SID AC{rnd(HEX, 32)}, auth token {rnd(HEX, 32)}")
s("saas_token", f"square access token EAAA{rnd(B64URL, 60)}")
s("saas_token", f"postmark server token {uuid()} -- paste into X-Postmark-Server-Token")
s("saas_token", f"PINECONE_API_KEY=pcsk_{rnd(ALNUM, 5)}_{rnd(ALNUM, 63)}")
s("saas_token", f"slack_webhook = 'https://hooks.slack.com/services/T{rnd(UP + DIG, 8)}/B{rnd(UP + DIG, 10)}/{rnd(ALNUM, 24)}'")
s("saas_token", f"DATADOG_API_KEY={rnd(HEX, 32)}\nDATADOG_APP_KEY={rnd(HEX, 40)}")
s("saas_token", f"okta: SSWS {rnd(B64URL, 42)}")
s("saas_token", f"gitlab runner registration glrt-{rnd(B64URL, 20)} and my PAT glpat-{rnd(B64URL, 20)}")
s("saas_token", f"Use this Google Maps key: AIza{rnd(B64URL, 35)}")
s("saas_token", f"the Sentry auth token for releases is sntrys_{rnd(B64URL, 150)}")
# crypto wallets
s("crypto_wallet", f"my metamask recovery phrase: {seed_words(12)}")
s("crypto_wallet", f"Seed words for the ledger, write them down somewhere: {seed_words(24)}")
s("crypto_wallet", f"PRIVATE_KEY=0x{rnd(HEX, 64)}  # deployer wallet for hardhat")
s("crypto_wallet", f"const wallet = new ethers.Wallet('{rnd(HEX, 64)}', provider)")
s("crypto_wallet", f"bitcoin WIF key for the paper wallet: 5{rnd('HJK', 1)}{rnd(B58, 49)}")
s("crypto_wallet", f"solana keypair: [{','.join(str(R.randrange(256)) for _ in range(64))}]")
s("crypto_wallet", f"xprv9s21ZrQH143K{rnd(B58, 95)} is the master key, can I derive m/44'/0'/0' from it?")
s("crypto_wallet", f"electrum seed: {seed_words(12)} -- restore this on the new laptop")
s("crypto_wallet", f"phantom private key {rnd(B58, 87)}")
# shell commands carrying a password
s("shell_cred", f"sshpass -p '{pw()}' ssh -o StrictHostKeyChecking=no deploy@10.1.2.3 'sudo systemctl restart app'")
s("shell_cred", f"curl -u admin:{pw()} -X POST https://jenkins.acme.io/job/build/build")
s("shell_cred", f"mysql -h db.local -u root -p{rnd(ALNUM, 14)} shop < dump.sql")
s("shell_cred", f"docker login registry.gitlab.com -u ci-bot -p {pw()}")
s("shell_cred", f"git clone https://oauth2:{rnd(B64URL, 20)}@gitlab.acme.io/platform/infra.git")
s("shell_cred", f"redis-cli -h cache.prod -a '{rnd(ALNUM, 28)}' FLUSHALL  # is this safe?")
s("shell_cred", f"mongosh 'mongodb://10.0.0.5:27017' -u root -p '{pw()}' --authenticationDatabase admin")
s("shell_cred", f"smbclient //fileserver/share -U 'ACME\\jdoe%{pw()}'")
s("shell_cred", f"net use Z: \\\\nas\\media /user:home\\admin {pw()} /persistent:yes")
s("shell_cred", f"openssl pkcs12 -export -in cert.pem -inkey key.pem -out bundle.p12 -passout pass:{pw()}")
s("shell_cred", f"wget --user=ftpuser --password='{pw()}' ftp://files.acme.io/exports/*.csv")
s("shell_cred", f"ldapsearch -x -H ldap://dc1 -D 'cn=admin,dc=acme,dc=com' -w '{pw()}' '(uid=jdoe)'")
s("shell_cred", f"az login --service-principal -u {uuid()} -p {rnd(ALNUM, 3)}8Q~{rnd(ALNUM, 34)} --tenant {uuid()}")
s("shell_cred", f"echo '{pw()}' | sudo -S apt-get upgrade -y")
s("shell_cred", f"PGPASSWORD={pw()} pg_dump -h pg.internal -U postgres app > app.sql")
s("shell_cred", f"htpasswd -b -c /etc/nginx/.htpasswd admin {pw()}")
# recovery codes
s("recovery_code", "my GitHub recovery codes, keep them:\n" + "\n".join(f"{rnd(HEX, 5)}-{rnd(HEX, 5)}" for _ in range(8)))
s("recovery_code", "Google backup codes: " + ", ".join(f"{rnd(DIG, 4)} {rnd(DIG, 4)}" for _ in range(5)))
s("recovery_code", "BitLocker recovery key for my laptop: " + "-".join(rnd(DIG, 6) for _ in range(8)))
s("recovery_code", "Apple account recovery key " + "-".join(rnd(UP + DIG, 4) for _ in range(7)))
s("recovery_code", "2FA backup codes for Discord: " + " ".join(rnd(LO + DIG, 8) for _ in range(6)))
s("recovery_code", f"the 1Password emergency kit secret key is A3-{rnd(UP + DIG, 6)}-{rnd(UP + DIG, 6)}-{rnd(UP + DIG, 5)}-{rnd(UP + DIG, 5)}-{rnd(UP + DIG, 5)}-{rnd(UP + DIG, 5)}")
s("recovery_code", f"Proton recovery phrase: {seed_words(12)}")
s("recovery_code", "Microsoft account recovery code: " + "-".join(rnd(UP + DIG, 5) for _ in range(5)))
# TOTP seeds
s("totp_seed", f"otpauth://totp/AWS:jane@acme?secret={rnd(B32, 32)}&issuer=AWS")
s("totp_seed", f"the 2FA setup key for the admin account is {' '.join(rnd(B32.lower(), 4) for _ in range(8))}, add it to your authenticator")
s("totp_seed", f"MFA_SECRET={rnd(B32, 16)}  # shared totp for the ops mailbox")
s("totp_seed", f"pyotp.TOTP('{rnd(B32, 32)}').now() gives the wrong code, is my clock off?")
s("totp_seed", f"Twitter couldn't scan the QR so I typed the key manually: {rnd(B32, 16)}")
s("totp_seed", f"steam guard shared_secret: {b64(20)}  identity_secret: {b64(20)}")

# ---------------------------------------------------------------- look-alikes (label 0)
n("uuid", f"The failing request id was {uuid()}, can you grep the logs for it?")
n("uuid", f"tenant_id: {uuid()}\nsubscription: {uuid()}")
n("uuid", f"UPDATE orders SET status='shipped' WHERE id = '{uuid()}';")
n("uuid", f"trace {rnd(HEX, 32)} span {rnd(HEX, 16)} took 4.2s in the checkout service")
n("uuid", f"Correlation-ID: {uuid()} (support asked me to include this)")
n("uuid", f"ulid {rnd('0123456789ABCDEFGHJKMNPQRSTVWXYZ', 26)} sorts after the previous event")
n("git_sha", f"bisect says the regression came in with commit {rnd(HEX, 40)}")
n("git_sha", f"git cherry-pick {rnd(HEX, 7)} {rnd(HEX, 7)} then rebase onto main")
n("git_sha", f"HEAD is now at {rnd(HEX, 7)} fix flaky test in payments")
n("git_sha", f"pin the action to a SHA: uses: actions/checkout@{rnd(HEX, 40)} # v4.1.1")
n("git_sha", f"Merge pull request #4821 from acme/fix-retry\n\ncommit {rnd(HEX, 40)}\nAuthor: Dana <dana@acme.io>")
n("git_sha", f"go.sum line: github.com/spf13/cobra v1.8.0 h1:{b64(32)}")
n("hash", f"sha256sum ubuntu-24.04-live-server-amd64.iso\n{rnd(HEX, 64)}  ubuntu-24.04-live-server-amd64.iso")
n("hash", f'"integrity": "sha512-{b64(64)}"')
n("hash", f"image: nginx@sha256:{rnd(HEX, 64)}")
n("hash", f"md5 of the export is {rnd(HEX, 32)}, matches what the vendor sent")
n("hash", f"the webpack build emitted main.{rnd(HEX, 8)}.js and vendor.{rnd(HEX, 20)}.js")
n("hash", f"Content-Security-Policy: script-src 'self' 'sha256-{b64(32)}'")
n("hash", f"ETag: \"{rnd(HEX, 32)}\"")
n("hash", f"pip says: THESE PACKAGES DO NOT MATCH THE HASHES. Expected sha256 {rnd(HEX, 64)}, got {rnd(HEX, 64)}")
n("hash", f"ssh host key fingerprint SHA256:{rnd(B64, 43)} -- is that the right server?")
n("hash", f"transaction 0x{rnd(HEX, 64)} is stuck pending on etherscan")
n("example_key", "The docs use AKIAIOSFODNN7EXAMPLE and wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY as the example credentials.")
n("example_key", "otpauth://totp/Example:alice@google.com?secret=JBSWY3DPEHPK3PXP&issuer=Example is the sample URI from the Key Uri Format wiki")
n("example_key", "jwt.io shows eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c as the example token")
n("example_key", "Stripe's test card is 4242 4242 4242 4242 with any future expiry and any CVC")
n("example_key", "BIP39 test vector: abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about")
n("example_key", "hardhat's default account #0 is 0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266 -- everyone knows that one, it's only for local dev")
n("example_key", "In the tutorial they write `export OPENAI_API_KEY=sk-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx` and I did exactly that")
n("example_key", "ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx is what the README shows for GITHUB_TOKEN")
n("placeholder", "api_key: \"your-api-key-here\"")
n("placeholder", "curl -H \"Authorization: Bearer <token>\" https://api.github.com/user")
n("placeholder", "DATABASE_URL=postgres://USER:PASSWORD@HOST:5432/DBNAME")
n("placeholder", "mongodb+srv://<username>:<password>@cluster0.mongodb.net/?retryWrites=true")
n("placeholder", "Set STRIPE_SECRET_KEY=sk_live_... in production and sk_test_... locally")
n("placeholder", "password: ${DB_PASSWORD}\nuser: ${DB_USER}")
n("placeholder", "aws_secret_access_key = {{ vault_aws_secret }}")
n("placeholder", "token = os.environ[\"HF_TOKEN\"]  # never hardcode it")
n("placeholder", "SECRET_KEY_BASE: <%= ENV[\"SECRET_KEY_BASE\"] %>")
n("placeholder", "sshpass -p \"$SSHPASS\" ssh deploy@host uptime")
n("placeholder", "curl -u \"$JENKINS_USER:$JENKINS_TOKEN\" https://jenkins.acme.io/api/json")
n("placeholder", "echo \"$REGISTRY_PASSWORD\" | docker login ghcr.io -u bot --password-stdin")
n("placeholder", "mysql -u root -p   # it prompts for the password, then says access denied")
n("placeholder", "PRIVATE_KEY=0xYOUR_PRIVATE_KEY_HERE")
n("placeholder", "-----BEGIN RSA PRIVATE KEY-----\n...\n-----END RSA PRIVATE KEY-----\n(paste your key between these lines)")
n("placeholder", "env:\n  - name: API_TOKEN\n    valueFrom:\n      secretKeyRef:\n        name: api-secrets\n        key: token")
n("placeholder", "JWT_SECRET=changeme-in-production")
n("placeholder", "password = getpass.getpass('Password: ')")
n("redacted", "the leaked key was sk-...abcd, we rotated it an hour later")
n("redacted", "OPENAI_API_KEY=sk-proj-************************************Xw2Q")
n("redacted", "Authorization: Bearer eyJhbGciOi...[REDACTED]")
n("redacted", "password=****** (hidden by the log scrubber)")
n("redacted", "AWS key ending in ...7QXZ belongs to the ci user")
n("redacted", "postgres://app:[redacted]@db.internal:5432/app")
n("redacted", "GitHub flagged ghp_****************************3fA9 in a public gist, already revoked")
n("redacted", "token: xoxb-••••••••••••-••••••••")
n("data_uri", f"<img src=\"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAABAAAAAQ{b64(180)}\" alt=\"logo\">")
n("data_uri", f"background: url(data:image/svg+xml;base64,PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciIHdpZHRoPSIxNiIgaGVpZ2h0PSIxNiI+{b64(90)});")
n("data_uri", f"font-face src: url(data:font/woff2;base64,d09GMgABAAAAA{b64(240)}) format('woff2')")
n("data_uri", f"the favicon is inlined: data:image/x-icon;base64,AAABAAEAEBAAAAEAIABoBAAAFgAAACgAAAAQ{b64(120)}")
n("data_uri", f"audio = 'data:audio/mp3;base64,SUQzBAAAAAAAI1RTU0UAAAAPAAADTGF2ZjU4{b64(150)}'")
n("public_key", f"add this to authorized_keys: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{rnd(B64, 43)} dana@laptop")
n("public_key", f"ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQ{rnd(B64, 360)} deploy@ci")
n("public_key", f"-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA{pem_body(200)}\n-----END PUBLIC KEY-----")
n("public_key", f"-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIE{pem_body(600)}\n-----END CERTIFICATE-----\nis this cert chain in the right order?")
n("public_key", f"[Peer]\nPublicKey = {b64(32)}\nAllowedIPs = 10.8.0.0/24\nEndpoint = 203.0.113.4:51820")
n("public_key", f"age recipient: age1{rnd('qpzry9x8gf2tvdw0s3jn54khce6mua7l', 58)}")
n("public_key", f"-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nmQINBGX{pem_body(400)}\n-----END PGP PUBLIC KEY BLOCK-----")
n("public_key", f"my PGP fingerprint is {' '.join(rnd(HEX.upper(), 4) for _ in range(10))}")
n("public_key", f"pk_live_{rnd(ALNUM, 24)} is the publishable key, it goes in the frontend bundle")
n("public_key", f"mapboxgl.accessToken = 'pk.eyJ1IjoiYWNtZSIsImEiOiJ{rnd(B64URL, 40)}.{rnd(B64URL, 22)}';")
n("public_key", f"recaptcha site key (public): 6L{rnd(B64URL, 38)}")
n("public_key", f'jwks: {{"keys":[{{"kty":"RSA","kid":"{rnd(B64URL, 20)}","use":"sig","n":"{rnd(B64URL, 342)}","e":"AQAB"}}]}}')
n("crypto_public", f"send the USDC to 0x{rnd(HEX, 40)} on Base, not mainnet")
n("crypto_public", f"my BTC address is bc1q{rnd('qpzry9x8gf2tvdw0s3jn54khce6mua7l', 38)} for the donation")
n("crypto_public", f"xpub6C{rnd(B58, 105)} -- watch-only wallet in Sparrow")
n("crypto_public", f"the Solana program id is {rnd(B58, 44)}")
n("crypto_public", f"legacy address 1{rnd(B58, 33)} received 0.02 BTC")
n("version", "bumped react from 18.2.0 to 19.0.0-rc-f994737d14-20240522 and now hydration fails")
n("version", "Python 3.12.7 (main, Oct  1 2024, 08:52:12) [GCC 11.4.0] on linux")
n("version", "node v20.18.0, npm 10.8.2, pnpm 9.12.3")
n("version", "kernel 6.8.0-49-generic #49~22.04.1-Ubuntu SMP PREEMPT_DYNAMIC")
n("version", "Chrome/131.0.6778.86 Safari/537.36 in the user agent")
n("version", f"build 2024.11.3+g{rnd(HEX, 9)}.dirty")
n("version", "sqlite 3.46.1 2024-08-13 09:16:08 c9c2ab54ba1f5f46360f1b4f35d849cd3f080e6fc2b6c60e91b16c63f69a1e8")
n("order_tracking", "Amazon order #112-4829301-5512345 still says preparing for shipment")
n("order_tracking", "UPS tracking 1Z999AA10123456784 shows delivered but nothing's here")
n("order_tracking", f"USPS: 9400 1{rnd(DIG, 3)} {rnd(DIG, 4)} {rnd(DIG, 4)} {rnd(DIG, 4)} {rnd(DIG, 2)}")
n("order_tracking", f"booking reference {rnd(UP, 6)} for the Lisbon flight, seat 14C")
n("order_tracking", f"my case number with Apple support is {rnd(DIG, 9)}")
n("order_tracking", f"invoice INV-2024-{rnd(DIG, 5)} was paid on the 3rd")
n("order_tracking", f"FedEx {rnd(DIG, 12)}, expected Tuesday")
n("order_tracking", f"the confirmation code is {rnd(UP + DIG, 8)} for the hotel in Kyoto")
n("order_tracking", f"serial number C02{rnd(UP + DIG, 9)} on the MacBook for the warranty claim")
n("order_tracking", f"VIN {rnd('ABCDEFGHJKLMNPRSTUVWXYZ0123456789', 17)} for the insurance quote")
n("iban_card_doc", "Example IBAN from the docs: DE89 3704 0044 0532 0130 00 (use it in the form validation tests)")
n("iban_card_doc", "GB82 WEST 1234 5698 7654 32 is the canonical test IBAN in the ISO 13616 examples")
n("iban_card_doc", "Adyen test card 5555 3412 4444 1115, expiry 03/30, CVC 737")
n("iban_card_doc", "the SWIFT/BIC for the test bank is DEUTDEFF500")
n("iban_card_doc", "ISBN 978-0-13-468599-1 for the refactoring book")
n("password_talk", "I keep forgetting my wifi password, how do I reset the router to factory settings?")
n("password_talk", "What's a good password manager for a family of four? Bitwarden or 1Password?")
n("password_talk", "the new policy says passwords need 14 characters, a symbol, and no reuse of the last 5")
n("password_talk", "I saved my recovery codes in the safe, not on the laptop")
n("password_talk", "Remind me to change my bank password this weekend")
n("password_talk", "PIN must be 4 to 6 digits and can't be 1234 or your birth year")
n("password_talk", "my mom asked me what her email password is again and I told her I don't know it")
n("password_talk", "how should I store API keys in a React Native app so they aren't in the bundle?")
n("password_talk", "The token expires after 3600 seconds, then you need the refresh flow")
n("password_talk", "we rotated all the database passwords after the incident on Tuesday")
n("password_talk", "password reset emails are going to spam for gmail users")
n("password_talk", "connect pin 3 of the sensor to GPIO 17 and pin 4 to ground")
n("password_talk", "my phone's SIM PIN got blocked after three tries, what's a PUK?")
n("password_talk", "use a passphrase of four random words, the xkcd way")
n("config_safe", "PASSWORD_MIN_LENGTH=12\nPASSWORD_MAX_AGE_DAYS=90\nTOKEN_TTL=3600")
n("config_safe", "spring.datasource.url=jdbc:postgresql://localhost:5432/app\nspring.datasource.username=app")
n("config_safe", "REDIS_URL=redis://localhost:6379/0\nLOG_LEVEL=debug")
n("config_safe", "password_field = forms.CharField(widget=forms.PasswordInput, min_length=8)")
n("config_safe", "<input type=\"password\" name=\"password\" autocomplete=\"current-password\" required>")
n("config_safe", "auth:\n  method: oidc\n  issuer: https://login.acme.io\n  client_id: web-frontend")
n("config_safe", "ssh-keygen -t ed25519 -C \"dana@acme.io\" -f ~/.ssh/id_ed25519")
n("config_safe", "git remote set-url origin git@github.com:acme/infra.git")
n("config_safe", "chmod 600 ~/.ssh/id_rsa fixed the 'unprotected private key file' error")
n("config_safe", "sudo passwd jdoe   # then type the new one twice")
n("ids_misc", f"Slack channel C0{rnd(UP + DIG, 9)}, user U0{rnd(UP + DIG, 9)}")
n("ids_misc", "arn:aws:iam::123456789012:role/ci-deployer can't assume the role")
n("ids_misc", f"youtube.com/watch?v={rnd(B64URL, 11)} at 12:40 explains it")
n("ids_misc", f"pod api-{rnd(LO + DIG, 10)}-{rnd(LO + DIG, 5)} is in CrashLoopBackOff")
n("ids_misc", f"container {rnd(HEX, 12)} exited with code 137")
n("ids_misc", f"GA4 measurement id G-{rnd(UP + DIG, 10)}")
n("ids_misc", f"the Google Drive file is https://drive.google.com/file/d/1{rnd(B64URL, 32)}/view")
n("ids_misc", f"IPFS CID bafybei{rnd('abcdefghijklmnopqrstuvwxyz234567', 52)}")
n("ids_misc", f"onion service {rnd('abcdefghijklmnopqrstuvwxyz234567', 56)}.onion")
n("ids_misc", f"S3 key uploads/2024/11/{uuid()}/{rnd(LO + DIG, 16)}.jpg")
n("ids_misc", f"the short link bit.ly/{rnd(ALNUM, 7)} redirects to the survey")
n("ids_misc", f"Stripe customer cus_{rnd(ALNUM, 14)} and subscription sub_{rnd(ALNUM, 24)}")
n("ids_misc", f"price_{rnd(ALNUM, 24)} is the monthly plan")
n("ids_misc", f"zoom meeting ID {rnd(DIG, 3)} {rnd(DIG, 4)} {rnd(DIG, 4)}, no password, just the waiting room")
CFG_B64 = base64.b64encode(b'{"theme":"dark","lang":"en"}').decode()
n("ids_misc", f"base64 of 'hello world' is aGVsbG8gd29ybGQ= and of the config it's {CFG_B64}")
n("ids_misc", f"random seed for the experiment: {R.randrange(10**8, 10**9)}")
n("ids_misc", f"the colour palette is #{rnd(HEX, 6)}, #{rnd(HEX, 6)} and #{rnd(HEX, 6)}")
n("ids_misc", f"license plate {rnd(UP, 2)}{rnd(DIG, 2)} {rnd(UP, 3)} got a parking ticket")
n("ids_misc", f"nonce = '{rnd(B64, 22)}==' in the CSP header changes every request")
n("ids_misc", f"request signed with X-Amz-Date 20241128T044500Z and X-Amz-SignedHeaders host, signature {rnd(HEX, 64)}")
n("prose_safe", "the door code at the office changed, ask reception for it tomorrow")
n("prose_safe", "my password got leaked in the LinkedIn breach so I changed it everywhere")
n("prose_safe", "the key to the shed is under the blue pot by the back door")
n("prose_safe", "she told me her PIN starts with a 7 but I didn't ask for the rest")
n("prose_safe", "I wrote the wifi password on the fridge whiteboard for the guests")
n("prose_safe", "The secret ingredient is two spoons of miso in the caramel")
n("prose_safe", "the token ring network at my first job was a nightmare")
n("prose_safe", "got the keys to the new apartment today!! moving on the 14th")
n("prose_safe", "the passcode for the school trip form is on the letter they sent home")
n("prose_safe", "Hunter's password manager vault got locked after the update, he had to call support")


def main() -> None:
    rows = []
    for label, pool in ((1, SECRETS), (0, LOOKS)):
        by_kind: dict[str, list[str]] = {}
        for kind, text in pool:
            by_kind.setdefault(kind, []).append(text)
        for kind, texts in by_kind.items():
            halves = ["tune" if i % 2 == 0 else "blind" for i in range(len(texts))]
            R.shuffle(halves)
            for text, half in zip(texts, halves, strict=True):
                rows.append({"text": text, "label": label, "source": "loci_blind2", "kind": kind, "half": half})
    for row in rows:
        sys.stdout.write(json.dumps(row, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
