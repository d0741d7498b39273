# ruff: noqa: E501  (rows of data, one a line)
"""Write `secrets_blind.jsonl`: a blind labelled set for the write policy's secret rules.

Written before the policy's code, rules, tests or dev data were read, from what real
credential formats look like and how people paste them into a chat. Every random part comes
from `secrets` (no real key is in the set), so running this again gives a different file:
the committed file is the set; this script says how it was made.

Rows: `{text, label, source, category, half}`; label 1 = a secret (must be rejected), 0 = a
harmless look-alike. `half` alternates within each category ("tune" / "blind") so both
halves hold every kind: fixes are tuned on "tune" only, "blind" is reported apart.

    python bench/data/make_secrets_blind.py > bench/data/secrets_blind.jsonl
"""

from __future__ import annotations

import base64
import json
import secrets
import string
import sys
from collections.abc import Callable

R = secrets.SystemRandom()
UP = string.ascii_uppercase
LO = string.ascii_lowercase
DIG = string.digits
ALNUM = UP + LO + DIG
HEX = "0123456789abcdef"
B32 = UP + "234567"
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"


def rnd(alphabet: str, n: int) -> str:
    return "".join(secrets.choice(alphabet) for _ in range(n))


def pick(*options):
    return secrets.choice(options)


def b64(nbytes: int) -> str:
    return base64.b64encode(secrets.token_bytes(nbytes)).decode()


def b64url_json(obj: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj, separators=(",", ":")).encode()).decode().rstrip("=")


def pem_body(nbytes: int, prefix: str = "") -> str:
    body = prefix + b64(nbytes)
    return "\n".join(body[i:i + 64] for i in range(0, len(body), 64))


def word() -> str:
    return pick("river", "maple", "otter", "copper", "violet", "harbor", "falcon", "lemon",
                "granite", "velvet", "cactus", "pepper", "tundra", "marble", "saffron", "orbit")


def password() -> str:
    style = R.randrange(4)
    if style == 0:
        return f"{word().capitalize()}{word()}{R.randrange(10, 99)}{pick('!', '#', '$', '?')}"
    if style == 1:
        return "-".join(word() for _ in range(3)) + str(R.randrange(1, 9))
    if style == 2:
        return rnd(ALNUM + "!@#%^&*", R.randrange(12, 20))
    return f"{word()}{R.randrange(1970, 2024)}"


def host() -> str:
    return pick("db.internal", "10.0.3.17", "prod-db-1.cluster-c9x2.eu-west-1.rds.amazonaws.com",
                "pg.acme-corp.net", "localhost", "mysql.staging.example.org", "192.168.1.40")


def user() -> str:
    return pick("admin", "app_user", "deploy", "postgres", "root", "maria", "svc_reports", "jdoe")


def jwt() -> str:
    head = b64url_json({"alg": pick("HS256", "RS256"), "typ": "JWT"})
    body = b64url_json({"sub": str(R.randrange(10**6, 10**9)), "name": pick("Jane Doe", "ops-bot", "k.ito"),
                        "iat": 1700000000 + R.randrange(10**7), "exp": 1730000000 + R.randrange(10**7),
                        "scope": pick("read write", "admin", "api")})
    return f"{head}.{body}.{rnd(B64URL, 43)}"


def aws_id(prefix: str = "AKIA") -> str:
    return prefix + rnd(B32, 16)


def aws_secret() -> str:
    return rnd(B64, 40)


def openssh_private() -> str:
    return ("-----BEGIN OPENSSH PRIVATE KEY-----\n" + pem_body(300, "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ")
            + "\n-----END OPENSSH PRIVATE KEY-----")


# ---------------------------------------------------------------- secrets (label 1)

SECRETS: dict[str, list[Callable[[], str]]] = {
    "aws_keys": [
        lambda: f"here are the creds for the staging bucket: AWS_ACCESS_KEY_ID={aws_id()} AWS_SECRET_ACCESS_KEY={aws_secret()}",
        lambda: f"my ~/.aws/credentials looks like this, why does boto still fail?\n[default]\naws_access_key_id = {aws_id()}\naws_secret_access_key = {aws_secret()}\nregion = eu-west-1",
        lambda: f"use access key {aws_id()} with secret {aws_secret()} for the deploy job",
        lambda: f"temporary creds from sts: {aws_id('ASIA')} / {aws_secret()} session token {b64(180)}",
        lambda: f"aws configure set aws_secret_access_key {aws_secret()} --profile ci",
        lambda: f"s3 = boto3.client('s3', aws_access_key_id='{aws_id()}', aws_secret_access_key='{aws_secret()}')",
        lambda: f"the old IAM key {aws_id()} still works, secret is {aws_secret()}",
    ],
    "gcp": [
        lambda: f"maps stopped working, my key is AIza{rnd(B64URL, 35)} restricted to our domain",
        lambda: f"GOOGLE_API_KEY=AIza{rnd(B64URL, 35)}",
        lambda: ('{\n  "type": "service_account",\n  "project_id": "acme-analytics-' + rnd(DIG, 6) + '",\n  "private_key_id": "'
                 + rnd(HEX, 40) + '",\n  "private_key": "-----BEGIN PRIVATE KEY-----\\n' + b64(600)[:400]
                 + '\\n-----END PRIVATE KEY-----\\n",\n  "client_email": "etl@acme-analytics.iam.gserviceaccount.com"\n}'),
        lambda: f"this is the service account json fragment: \"private_key_id\": \"{rnd(HEX, 40)}\", \"private_key\": \"-----BEGIN PRIVATE KEY-----\\nMIIEv{b64(240)}\\n-----END PRIVATE KEY-----\\n\"",
        lambda: f"oauth client secret for the google login: GOCSPX-{rnd(B64URL, 28)}",
        lambda: f"gcloud gave me this refresh token 1//0{rnd(B64URL, 98)} can you store it for the cron script",
    ],
    "azure": [
        lambda: f"DefaultEndpointsProtocol=https;AccountName=acmelogs;AccountKey={b64(64)};EndpointSuffix=core.windows.net",
        lambda: f"the app registration client secret is {rnd(ALNUM, 3)}8Q~{rnd(B64URL.replace('-', '.'), 34)}",
        lambda: f"here's the SAS url https://acmelogs.blob.core.windows.net/backups?sv=2022-11-02&ss=b&srt=co&sp=rwdlac&se=2026-12-31T00:00:00Z&sig={rnd(ALNUM, 43)}%3D",
        lambda: f"AZURE_CLIENT_SECRET={rnd(ALNUM, 3)}8Q~{rnd(ALNUM + '_.-', 34)}",
        lambda: f"Endpoint=sb://acme-bus.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={b64(32)}",
        lambda: f"cosmos primary key: {b64(64)}",
    ],
    "github": [
        lambda: f"here's my github token ghp_{rnd(ALNUM, 36)} can you check why the push fails",
        lambda: f"GITHUB_TOKEN=ghp_{rnd(ALNUM, 36)}",
        lambda: f"I made a fine-grained PAT: github_pat_{rnd(ALNUM, 22)}_{rnd(ALNUM, 59)}",
        lambda: f"git remote set-url origin https://x-access-token:ghs_{rnd(ALNUM, 36)}@github.com/acme/api.git",
        lambda: f"oauth token from the app flow: gho_{rnd(ALNUM, 36)}",
        lambda: f"export GH_TOKEN=github_pat_{rnd(ALNUM, 22)}_{rnd(ALNUM, 59)}",
        lambda: f"the refresh token is ghr_{rnd(ALNUM, 36)}, the user token ghu_{rnd(ALNUM, 36)}",
    ],
    "gitlab": [
        lambda: f"gitlab personal access token: glpat-{rnd(B64URL, 20)}",
        lambda: f"CI_JOB_TOKEN won't do, use my token glpat-{rnd(B64URL, 20)} in the pipeline",
        lambda: f"runner registration token glrt-{rnd(B64URL, 20)}",
        lambda: f"git clone https://oauth2:glpat-{rnd(B64URL, 20)}@gitlab.com/acme/infra.git",
        lambda: f"deploy token gldt-{rnd(B64URL, 20)} for the registry",
    ],
    "slack": [
        lambda: f"our bot token is xoxb-{rnd(DIG, 12)}-{rnd(DIG, 13)}-{rnd(ALNUM, 24)}",
        lambda: f"SLACK_WEBHOOK_URL=https://hooks.slack.com/services/T{rnd(UP + DIG, 8)}/B{rnd(UP + DIG, 10)}/{rnd(ALNUM, 24)}",
        lambda: f"post alerts to https://hooks.slack.com/services/T{rnd(UP + DIG, 8)}/B{rnd(UP + DIG, 10)}/{rnd(ALNUM, 24)} please",
        lambda: f"user token xoxp-{rnd(DIG, 12)}-{rnd(DIG, 12)}-{rnd(DIG, 13)}-{rnd(HEX, 32)}",
        lambda: f"SLACK_APP_TOKEN=xapp-1-A{rnd(UP + DIG, 10)}-{rnd(DIG, 13)}-{rnd(HEX, 64)}",
    ],
    "stripe": [
        lambda: f"STRIPE_SECRET_KEY=sk_live_{rnd(ALNUM, 99)}",
        lambda: f"the live key is sk_live_{rnd(ALNUM, 24)} don't share it",
        lambda: f"restricted key for the reporting job rk_live_{rnd(ALNUM, 99)}",
        lambda: f"webhook signing secret: whsec_{rnd(ALNUM, 32)}",
        lambda: f"stripe.api_key = \"sk_live_{rnd(ALNUM, 24)}\"",
        lambda: f"test mode secret sk_test_{rnd(ALNUM, 99)} for the sandbox",
    ],
    "twilio_sendgrid_mail": [
        lambda: f"twilio account AC{rnd(HEX, 32)} auth token {rnd(HEX, 32)}",
        lambda: f"TWILIO_AUTH_TOKEN={rnd(HEX, 32)}",
        lambda: f"twilio api key SK{rnd(HEX, 32)} secret {rnd(ALNUM, 32)}",
        lambda: f"SENDGRID_API_KEY=SG.{rnd(B64URL, 22)}.{rnd(B64URL, 43)}",
        lambda: f"use sendgrid key SG.{rnd(B64URL, 22)}.{rnd(B64URL, 43)} for the newsletter",
        lambda: f"mailgun api key key-{rnd(HEX, 32)}",
        lambda: f"mailchimp key {rnd(HEX, 32)}-us{R.randrange(1, 21)}",
    ],
    "ai_keys": [
        lambda: f"my openai key is sk-proj-{rnd(B64URL, 156)}",
        lambda: f"OPENAI_API_KEY=sk-{rnd(ALNUM, 20)}T3BlbkFJ{rnd(ALNUM, 20)}",
        lambda: f"ANTHROPIC_API_KEY=sk-ant-api03-{rnd(B64URL, 93)}AA",
        lambda: f"hf token hf_{rnd(ALNUM, 34)} for the gated model",
        lambda: f"client = OpenAI(api_key=\"sk-proj-{rnd(B64URL, 120)}\")",
        lambda: f"groq key gsk_{rnd(ALNUM, 52)}",
        lambda: f"replicate token r8_{rnd(ALNUM, 37)}",
        lambda: f"the anthropic admin key sk-ant-admin01-{rnd(B64URL, 93)}AA is for billing only",
    ],
    "package_registries": [
        lambda: f"//registry.npmjs.org/:_authToken=npm_{rnd(ALNUM, 36)}",
        lambda: f"NPM_TOKEN=npm_{rnd(ALNUM, 36)}",
        lambda: f"[pypi]\nusername = __token__\npassword = pypi-AgEIcHlwaS5vcmc{rnd(B64URL, 140)}",
        lambda: f"twine upload -u __token__ -p pypi-AgEIcHlwaS5vcmc{rnd(B64URL, 120)} dist/*",
        lambda: f"docker login -u acme -p dckr_pat_{rnd(B64URL, 27)}",
        lambda: f"rubygems api key rubygems_{rnd(HEX, 48)}",
        lambda: f"nuget push with api key oy2{rnd(LO + DIG, 43)}",
    ],
    "jwt_bearer": [
        lambda: f"Authorization: Bearer {jwt()}",
        lambda: f"the token I get back is {jwt()} and it expires after an hour",
        lambda: f"curl -H 'Authorization: Bearer {jwt()}' https://api.acme.io/v2/users",
        lambda: f"access_token={jwt()}",
        lambda: f"session cookie: sessionid={rnd(LO + DIG, 32)}; csrftoken={rnd(ALNUM, 64)}",
        lambda: f"curl -H \"Authorization: Bearer {rnd(ALNUM, 40)}\" https://api.internal/v1/reports",
    ],
    "private_keys": [
        lambda: "-----BEGIN RSA PRIVATE KEY-----\n" + pem_body(900, "MIIEpAIBAAKCAQEA") + "\n-----END RSA PRIVATE KEY-----",
        lambda: "my deploy key, paste it into the server:\n" + openssh_private(),
        lambda: "-----BEGIN EC PRIVATE KEY-----\n" + pem_body(90, "MHcCAQEEI") + "\n-----END EC PRIVATE KEY-----",
        lambda: "-----BEGIN PRIVATE KEY-----\n" + pem_body(1100, "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC") + "\n-----END PRIVATE KEY-----",
        lambda: "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n" + pem_body(700, "lQOYBF") + "\n=" + rnd(B64, 4) + "\n-----END PGP PRIVATE KEY BLOCK-----",
        lambda: "why does ssh say bad permissions for this key?\n" + openssh_private(),
        lambda: "tls.key: |\n  -----BEGIN RSA PRIVATE KEY-----\n  " + b64(200) + "\n  -----END RSA PRIVATE KEY-----",
    ],
    "database_urls": [
        lambda: f"DATABASE_URL=postgres://{user()}:{password()}@{host()}:5432/app",
        lambda: f"connect with postgresql://{user()}:{rnd(ALNUM, 24)}@{host()}/analytics?sslmode=require",
        lambda: f"mongodb+srv://{user()}:{rnd(ALNUM, 16)}@cluster0.{rnd(LO + DIG, 5)}.mongodb.net/shop?retryWrites=true",
        lambda: f"REDIS_URL=redis://:{rnd(ALNUM, 32)}@{host()}:6379/0",
        lambda: f"mysql://{user()}:{password()}@{host()}:3306/wordpress",
        lambda: f"amqp://{user()}:{rnd(ALNUM, 20)}@rabbit.internal:5672/vhost",
        lambda: f"SQLALCHEMY_DATABASE_URI = 'mssql+pyodbc://{user()}:{password()}@{host()}/erp?driver=ODBC+Driver+18'",
        lambda: f"Server={host()};Database=Payroll;User Id={user()};Password={password()};",
    ],
    "env_lines": [
        lambda: f"DB_PASSWORD={password()}",
        lambda: f"DJANGO_SECRET_KEY='django-insecure-{rnd(LO + DIG + '!@#$%^&*(-_=+)', 50)}'",
        lambda: f"JWT_SECRET={secrets.token_hex(32)}",
        lambda: f"SECRET_KEY_BASE={secrets.token_hex(64)}",
        lambda: f"here's my .env, something is off:\nPORT=3000\nNODE_ENV=production\nAPI_KEY={secrets.token_urlsafe(32)}\nLOG_LEVEL=info",
        lambda: f"ENCRYPTION_KEY={b64(32)}",
        lambda: f"export MAPBOX_SECRET_TOKEN=sk.eyJ1Ijoi{rnd(B64URL, 40)}.{rnd(B64URL, 22)}",
        lambda: f"session_secret: \"{secrets.token_urlsafe(48)}\"",
        lambda: f"password: {password()}\nusername: svc_backup",
    ],
    "prose_passwords": [
        lambda: f"my wifi password is {password()}",
        lambda: f"the admin login for the router is admin / {password()}",
        lambda: f"remember that my bank password is {password()}",
        lambda: f"Netflix account: maria.k@example.com, pw {password()}",
        lambda: f"the code to unlock my laptop is {password()}, save it in case I forget",
        lambda: f"Wifi: network HomeNet5G, password {password()}",
        lambda: f"my email password is {password()} but I'll change it next week",
        lambda: f"the vpn passphrase is '{password()}'",
        lambda: f"root password on the NAS: {password()}",
        lambda: f"I set the master password of the vault to {password()}",
        lambda: f"login: jdoe, password: {password()}",
    ],
    "basic_auth_and_cli": [
        lambda: f"curl -u admin:{password()} https://jenkins.acme.io/api/json",
        lambda: f"https://{user()}:{password()}@nexus.acme.io/repository/maven-releases/",
        lambda: f"mysql -u root -p{rnd(ALNUM, 14)} -h {host()} shop",
        lambda: f"sshpass -p '{password()}' ssh root@10.0.0.5",
        lambda: f"proxy is http://{user()}:{rnd(ALNUM, 12)}@proxy.corp.local:3128",
        lambda: f"Authorization: Basic {base64.b64encode(f'{user()}:{password()}'.encode()).decode()}",
        lambda: f"psql \"host={host()} user={user()} password={password()} dbname=app\"",
    ],
    "chat_and_saas_tokens": [
        lambda: f"discord bot token {base64.b64encode(str(R.randrange(10**17, 10**18)).encode()).decode().rstrip('=')}.{rnd(B64URL, 6)}.{rnd(B64URL, 38)}",
        lambda: f"telegram bot token: {R.randrange(10**9, 7 * 10**9)}:AA{rnd(B64URL, 33)}",
        lambda: f"shopify admin token shpat_{rnd(HEX, 32)}",
        lambda: f"DIGITALOCEAN_TOKEN=dop_v1_{rnd(HEX, 64)}",
        lambda: f"vault token hvs.{rnd(ALNUM, 24)}",
        lambda: f"databricks token dapi{rnd(HEX, 32)}",
        lambda: f"atlassian api token ATATT3xFfGF0{rnd(B64URL, 180)}={rnd(HEX.upper(), 8)}",
        lambda: f"notion integration secret ntn_{rnd(ALNUM, 46)}",
        lambda: f"linear api key lin_api_{rnd(ALNUM, 40)}",
        lambda: f"DD_API_KEY={rnd(HEX, 32)}",
        lambda: f"new relic key NRAK-{rnd(UP + DIG, 27)}",
        lambda: f"postman api key PMAK-{rnd(HEX, 24)}-{rnd(HEX, 34)}",
        lambda: f"heroku api key {secrets.token_hex(4)}-{secrets.token_hex(2)}-{secrets.token_hex(2)}-{secrets.token_hex(2)}-{secrets.token_hex(6)} for the CLI",
        lambda: f"cloudflare api token {rnd(B64URL, 40)}",
        lambda: f"doppler service token dp.st.prd.{rnd(ALNUM, 43)}",
        lambda: f"airtable personal access token pat{rnd(ALNUM, 14)}.{rnd(HEX, 64)}",
    ],
    "crypto_wallets_2fa": [
        lambda: "my seed phrase is " + " ".join(pick("abandon", "ladder", "zebra", "orbit", "nurse", "garlic", "swamp", "kitten",
                                                     "fossil", "credit", "mimic", "tunnel", "velvet", "rocket", "urge", "pledge")
                                                for _ in range(12)),
        lambda: f"wallet private key 0x{rnd(HEX, 64)}",
        lambda: f"otpauth://totp/Acme:jdoe?secret={rnd(B32, 32)}&issuer=Acme",
        lambda: f"the 2FA setup key is {' '.join(rnd(B32.lower(), 4) for _ in range(8))}",
        lambda: f"backup codes: {' '.join(rnd(DIG, 8) for _ in range(6))}",
    ],
    "k8s_and_config": [
        lambda: f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ndata:\n  password: {base64.b64encode(password().encode()).decode()}",
        lambda: f"spring.datasource.password={password()}",
        lambda: f"\"api_key\": \"{secrets.token_hex(20)}\"",
        lambda: f"client_secret: {secrets.token_urlsafe(32)}",
        lambda: f"<add key=\"SmtpPassword\" value=\"{password()}\" />",
        lambda: f"token = \"{secrets.token_hex(24)}\"  # prod",
    ],
    "headers_and_misc": [
        lambda: f"the alarm code for the shop is {rnd(DIG, 4)}, disarm it before 7",
        lambda: f"my phone PIN is {rnd(DIG, 6)}",
        lambda: f"machine api.heroku.com\n  login ana@acme.io\n  password {uuid()}",
        lambda: f"guest wifi WPA2 key: {password()}",
        lambda: f"users:\n- name: ci\n  user:\n    token: {jwt()}",
        lambda: f"okta api token 00{rnd(B64URL, 40)}",
        lambda: f"Authorization: SSWS 00{rnd(B64URL, 40)}",
        lambda: f"X-API-Key: {secrets.token_hex(16)}",
        lambda: f"https://api.openweathermap.org/data/2.5/weather?q=Paris&appid={secrets.token_hex(16)}",
        lambda: f"fcm server key AAAA{rnd(B64URL, 7)}:APA91b{rnd(B64URL, 134)}",
        lambda: f"zoom meeting 834 2201 7795, passcode {rnd(ALNUM, 6)}",
    ],
}

# ---------------------------------------------------------------- look-alikes (label 0)


def sha(n: int = 40) -> str:
    return secrets.token_hex(n // 2)


def uuid() -> str:
    h = secrets.token_hex(16)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{pick('8', '9', 'a', 'b')}{h[17:20]}-{h[20:32]}"


BENIGN: dict[str, list[Callable[[], str]]] = {
    "git_and_hashes": [
        lambda: f"the regression came in with commit {sha()}, revert that one",
        lambda: f"cherry-pick {sha(7)} and {sha(7)} onto the release branch",
        lambda: f"sha256sum of the installer: {sha(64)}  setup-2.4.1.exe",
        lambda: f"Merge: {sha(7)} {sha(7)}\nAuthor: Ana <ana@acme.io>\n    fix flaky test",
        lambda: f"md5 of the dump is {sha(32)}, same as yesterday's",
        lambda: f"the lfs pointer says oid sha256:{sha(64)} size 10485760",
        lambda: f"git bisect points to {sha()} (\"bump deps\")",
        lambda: f"ETag: \"{sha(32)}\"",
    ],
    "ids_and_digests": [
        lambda: f"request id {uuid()} failed with a 502",
        lambda: f"docker pull nginx@sha256:{sha(64)}",
        lambda: f"the image digest changed to sha256:{sha(64)} after the rebuild",
        lambda: f"trace {sha(32)} span {sha(16)} shows the slow query",
        lambda: f"the customer's account id is {uuid()}",
        lambda: f"arn:aws:iam::{rnd(DIG, 12)}:role/deploy-ci has no s3:PutObject",
        lambda: f"our AWS account number is {rnd(DIG, 12)} for the billing question",
        lambda: f"the slack channel id is C{rnd(UP + DIG, 10)}",
        lambda: f"ami-{sha(17)} is the new base image, subnet-{sha(17)} in eu-west-1a",
        lambda: f"the youtube video is https://youtu.be/{rnd(B64URL, 11)}",
        lambda: f"twilio account sid AC{rnd(HEX, 32)} shows in the console header",
        lambda: f"google analytics tag G-{rnd(UP + DIG, 10)} is on every page",
    ],
    "public_keys_certs": [
        lambda: f"add my public key to the server: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{rnd(B64, 43)} ana@laptop",
        lambda: f"ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQ{b64(380)} deploy@ci",
        lambda: "-----BEGIN PUBLIC KEY-----\n" + pem_body(294, "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA") + "\n-----END PUBLIC KEY-----",
        lambda: "this is the cert the client should trust:\n-----BEGIN CERTIFICATE-----\n" + pem_body(900, "MIIDdzCCAl+gAwIBAgIE") + "\n-----END CERTIFICATE-----",
        lambda: "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n" + pem_body(500, "mQINBF") + "\n-----END PGP PUBLIC KEY BLOCK-----",
        lambda: f"my gpg key fingerprint is {' '.join(rnd(HEX.upper(), 4) for _ in range(10))}",
        lambda: f"the host key fingerprint is SHA256:{rnd(B64, 43)}",
        lambda: f"stripe publishable key for the checkout page: pk_live_{rnd(ALNUM, 99)}",
        lambda: f"send the refund to bc1q{rnd(LO + DIG, 38)}",
        lambda: f"my ethereum address is 0x{rnd(HEX, 40)}",
    ],
    "placeholders_and_examples": [
        lambda: "export OPENAI_API_KEY=sk-...your-key-here",
        lambda: "set OPENAI_API_KEY=\"<your-api-key>\" before running the script",
        lambda: "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE (that's the example from the AWS docs)",
        lambda: "the docs use wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY as the sample secret key",
        lambda: "GITHUB_TOKEN=ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        lambda: "DATABASE_URL=postgres://user:password@localhost:5432/mydb",
        lambda: "DB_PASSWORD=${DB_PASSWORD}",
        lambda: "api_key: ${{ secrets.STRIPE_SECRET_KEY }}",
        lambda: "password = os.environ[\"DB_PASSWORD\"]",
        lambda: "STRIPE_SECRET_KEY=sk_live_...",
        lambda: "curl -H \"Authorization: Bearer $TOKEN\" https://api.github.com/user",
        lambda: "API_KEY=changeme",
        lambda: "the README says to put YOUR_API_KEY_HERE in config.yaml",
        lambda: "password: ********",
        lambda: "token = getpass.getpass(\"GitHub token: \")",
        lambda: "mongodb://<username>:<password>@<host>:27017",
        lambda: "SLACK_BOT_TOKEN=xoxb-your-token",
        lambda: "in .env.example we have SECRET_KEY= left empty on purpose",
        lambda: "valueFrom:\n  secretKeyRef:\n    name: db-credentials\n    key: password",
        lambda: "HF_TOKEN=hf_***",
    ],
    "encoded_blobs": [
        lambda: f"the logo inline: data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAA{b64(300)}",
        lambda: f"<img src=\"data:image/jpeg;base64,/9j/4AAQSkZJRgABAQ{b64(240)}\">",
        lambda: f"integrity=\"sha384-{b64(48)}\" crossorigin=\"anonymous\"",
        lambda: f"\"integrity\": \"sha512-{b64(64)}\"",
        lambda: f"Content-Security-Policy: script-src 'sha256-{b64(32)}'",
        lambda: f"the ipfs cid is bafybei{rnd('abcdefghijklmnopqrstuvwxyz234567', 52)}",
        lambda: f"font: url(data:font/woff2;base64,d09GMgABAAAAA{b64(200)}) format('woff2')",
        lambda: f"the protobuf payload in base64 is CgR0ZXN0{b64(60)} if you want to decode it",
        lambda: f"bcrypt cost 12 gives hashes like $2b$12${rnd(ALNUM + './', 53)} in the users table",
    ],
    "numbers_and_codes": [
        lambda: f"version {R.randrange(1, 9)}.{R.randrange(0, 30)}.{R.randrange(0, 20)}+build.{rnd(DIG, 8)} broke the login page",
        lambda: f"order #{rnd(DIG, 3)}-{rnd(DIG, 7)}-{rnd(DIG, 7)} hasn't arrived",
        lambda: f"UPS tracking 1Z{rnd(UP + DIG, 16)}",
        lambda: f"tracking number {rnd(DIG, 22)} with USPS",
        lambda: f"my flight booking reference is {rnd(UP, 6)}",
        lambda: f"invoice INV-{rnd(DIG, 6)} is overdue",
        lambda: f"use coupon code {pick('SPRING', 'WELCOME', 'SAVE')}{R.randrange(10, 50)} at checkout",
        lambda: f"the serial number on the router is {rnd(UP + DIG, 12)}",
        lambda: f"ISBN 978-{rnd(DIG, 1)}-{rnd(DIG, 3)}-{rnd(DIG, 5)}-{rnd(DIG, 1)}",
        lambda: f"support ticket {rnd(UP, 3)}-{rnd(DIG, 5)} was closed without a fix",
        lambda: f"mac address {':'.join(rnd(HEX, 2) for _ in range(6))}",
        lambda: f"the build id is {rnd(DIG, 10)} on {pick('Jenkins', 'GitHub Actions', 'CircleCI')}",
        lambda: f"wifi network name is {pick('Vodafone', 'FRITZ!Box 7590', 'BT-Hub')}-{rnd(UP + DIG, 4)}",
        lambda: f"the container id is {sha(12)} and it keeps restarting",
        lambda: f"the pypi package is requests==2.{R.randrange(20, 33)}.{R.randrange(0, 4)}",
        lambda: f"color palette: #{rnd(HEX, 6)}, #{rnd(HEX, 6)} and #{rnd(HEX, 6)}",
    ],
    "talk_about_secrets": [
        lambda: "the password policy requires 12 characters, one digit and one symbol",
        lambda: "I rotated my API key yesterday after the leak scare",
        lambda: "where should I store the stripe secret key, env var or vault?",
        lambda: "the context window is 128k tokens, output is capped at 4k tokens",
        lambda: "JWT access tokens expire after 15 minutes, refresh tokens after 30 days",
        lambda: "the wifi password is on the sticker under the router",
        lambda: "I forgot my password again and the reset link expired",
        lambda: "use a password manager like Bitwarden instead of a spreadsheet",
        lambda: "our GitHub tokens now need SSO authorization for the org",
        lambda: "never commit your .env file; add it to .gitignore",
        lambda: "the private key stays on the HSM, only the public key is exported",
        lambda: "Slack tokens starting with xoxb are bot tokens, xoxp are user tokens",
        lambda: "AWS access keys start with AKIA, temporary ones with ASIA",
        lambda: "we use AES-256-GCM with a 96-bit nonce and rotate the data key monthly",
        lambda: "my mom's password hint is the name of her first dog",
        lambda: "ssh-keygen -t ed25519 -C \"ana@acme.io\" creates the key pair",
        lambda: "set the token scope to read:packages only",
        lambda: "the secret santa draw is on friday, budget 20 euros",
        lambda: "the api key field in settings is greyed out for viewers",
        lambda: "I have a keynote tomorrow so the key points need to be ready tonight",
    ],
    "code_and_logs": [
        lambda: "api_key = os.getenv(\"OPENAI_API_KEY\")\nclient = OpenAI(api_key=api_key)",
        lambda: "token = request.headers.get(\"Authorization\", \"\").removeprefix(\"Bearer \")",
        lambda: f"2026-11-27T10:{R.randrange(10, 59)}:03Z INFO request_id={uuid()} user_id={rnd(DIG, 6)} status=200 duration_ms={R.randrange(5, 900)}",
        lambda: f"ERROR: relation \"users\" does not exist at character {R.randrange(10, 90)} (session {sha(16)})",
        lambda: f"WARN cache miss key=user:{rnd(DIG, 7)}:profile hash={sha(16)}",
        lambda: "def check_password(raw, hashed):\n    return bcrypt.checkpw(raw.encode(), hashed)",
        lambda: f"npm ERR! code E404 for @acme/ui@{R.randrange(1, 5)}.{R.randrange(0, 9)}.0",
        lambda: f"nonce={rnd(ALNUM, 16)} in the oauth redirect makes the state check pass",
        lambda: f"the s3 object key is uploads/2026/11/{uuid()}.jpg",
        lambda: "the presigned url expires after 3600 s, X-Amz-Date=20261127T101500Z, X-Amz-Expires=3600, X-Amz-SignedHeaders=host",
        lambda: f"random seed for the experiment: {R.randrange(10**8, 10**9)}",
        lambda: "the csrf field name is csrfmiddlewaretoken and the cookie is called csrftoken",
        lambda: "kubectl create secret generic db-creds --from-env-file=.env",
        lambda: f"correlation_id: {sha(24)}",
        lambda: "pip install detect-secrets && detect-secrets scan > .secrets.baseline",
        lambda: f"the shortened link is https://bit.ly/{rnd(ALNUM, 7)}",
    ],
    "near_miss_config": [
        lambda: "password_reset_token_ttl=3600",
        lambda: "MAX_TOKENS=4096\nTEMPERATURE=0.2",
        lambda: "API_KEY_HEADER=X-Api-Key",
        lambda: "SECRET_NAME=prod/db/credentials (the secret lives in Secrets Manager)",
        lambda: "AWS_REGION=eu-west-1\nAWS_PROFILE=ci",
        lambda: "vault kv get -field=password secret/data/app/db",
        lambda: "TOKEN_URL=https://oauth2.googleapis.com/token",
        lambda: "password_min_length: 12\npassword_require_symbol: true",
        lambda: "KMS_KEY_ID=alias/prod-data-key",
        lambda: f"GITHUB_SHA={sha()}",
        lambda: "SESSION_COOKIE_SECURE=True",
        lambda: "ssh -i ~/.ssh/id_ed25519 deploy@10.0.0.5",
        lambda: "git clone git@github.com:acme/api.git",
        lambda: "DATABASE_URL=postgres://localhost:5432/app_dev",
        lambda: f"https://github.com/acme/api/blob/{sha()}/src/main.py#L42",
        lambda: "psql -h localhost -U postgres -W  (it prompts for the password)",
        lambda: f"Idempotency-Key: {uuid()}",
        lambda: f"the KMS key id is {uuid()}",
        lambda: f"localStorage holds prefs={b64url_json({'theme': 'dark', 'lang': pick('en', 'fr', 'de')})}",
        lambda: "AES test vector from FIPS-197: key 000102030405060708090a0b0c0d0e0f",
        lambda: "SHA-256 of the empty string is e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        lambda: f"client_id: {rnd(DIG, 12)}-{rnd(LO + DIG, 32)}.apps.googleusercontent.com",
        lambda: f"the github app client id is Iv1.{rnd(HEX, 16)}",
        lambda: f"recaptcha site key 6L{rnd(B64URL, 38)} goes in the form",
        lambda: f"zoom meeting id {rnd(DIG, 3)} {rnd(DIG, 4)} {rnd(DIG, 4)}",
        lambda: f"the gpg key id is 0x{rnd(HEX.upper(), 16)}",
        lambda: "Stripe API version 2024-06-20 changed the payment intent fields",
        lambda: "token: ${{ github.token }}",
    ],
    "prose_lookalikes": [
        lambda: "the crossword answer was PASSWORD, can you believe it",
        lambda: "GitHub revokes tokens like ghp_ automatically when they are pushed to a public repo",
        lambda: "we store only the sha-256 of each api key, never the key itself",
        lambda: "my wifi is called Ravenclaw Common Room and the speed is terrible",
        lambda: "she told me her password is long but wouldn't say what it is",
        lambda: "the key to the shed is under the blue flowerpot",
        lambda: "I'll send you the credentials over Signal, not here",
        lambda: f"my locker is number {R.randrange(100, 999)} on the second floor",
        lambda: "the token economy in the game resets every season",
        lambda: "the api returned 401 because my key had expired",
        lambda: "remember that the bank changed my login to require a hardware token",
        lambda: "the secret ingredient in grandma's soup is smoked paprika",
    ],
}

# ---------------------------------------------------------------- financial data (kept apart)

def luhn_complete(prefix: str, length: int) -> str:
    digits = prefix + rnd(DIG, length - len(prefix) - 1)
    total = 0
    for i, d in enumerate(reversed(digits)):
        n = int(d)
        if i % 2 == 0:
            n *= 2
            if n > 9:
                n -= 9
        total += n
    return digits + str((10 - total % 10) % 10)


def _groups(number: str) -> list[str]:
    return [number[i:i + 4] for i in range(0, len(number), 4)]


def iban_de() -> str:
    bban = rnd(DIG, 18)
    num = int(bban + "131400")  # D=13, E=14, then 00
    check = 98 - num % 97
    return f"DE{check:02d}{bban}"


FINANCIAL: list[tuple[Callable[[], str], int]] = [
    (lambda: f"my visa is {luhn_complete('4', 16)} exp 09/28 cvv {rnd(DIG, 3)}", 1),
    (lambda: f"card number {' '.join(_groups(luhn_complete('5', 16)))}, expiry 11/27", 1),
    (lambda: f"amex {luhn_complete('37', 15)} cvc {rnd(DIG, 4)}", 1),
    (lambda: f"pay the rent to IBAN {iban_de()}", 1),
    (lambda: f"my bank account for the refund: {iban_de()}, BIC DEUTDEFFXXX", 1),
    (lambda: "the card ending in 4242 was declined", 0),
    (lambda: "stripe's test card 4242 4242 4242 4242 with any future date", 0),
    (lambda: f"my order number is {rnd(DIG, 16)}", 0),
]


def main() -> None:
    which = sys.argv[1] if len(sys.argv) > 1 else "main"
    out = sys.stdout
    if which == "financial":
        for i, (make, label) in enumerate(FINANCIAL):
            out.write(json.dumps({"text": make(), "label": label, "source": "loci_blind_financial",
                                  "category": "financial", "half": "tune" if i % 2 == 0 else "blind"}) + "\n")
        return
    for label, table in ((1, SECRETS), (0, BENIGN)):
        for category, makers in table.items():
            for i, make in enumerate(makers):
                out.write(json.dumps({"text": make(), "label": label, "source": "loci_blind",
                                      "category": category, "half": "tune" if i % 2 == 0 else "blind"}) + "\n")


if __name__ == "__main__":
    main()
