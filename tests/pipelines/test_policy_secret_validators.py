"""Validators that keep look-alike non-secrets out of the secret rules: guessable and
self-describing password values in code and filler vendor tokens (blocked no more, still
masked in stored turns), public or check values that look random, broken JWT headers, and `curl -u`
forms that hold no password. Each case comes with a real secret of the same shape that is
still found."""

from __future__ import annotations

import base64
import json

import pytest

from pipelines.policy_rules.secrets import (
    dictionary_coverage,
    find_secrets,
    find_secrets_to_mask,
    guesses_log10,
    is_guessable,
    is_words,
    names_a_credential,
)


def rule_ids(text: str) -> set[str]:
    return {h.rule_id for h in find_secrets(text)}


@pytest.mark.parametrize("text", [
    'password: "testpass"',
    "{user: bob, password: bar}",
    "export DB_PASSWORD=password1",
    "pass: 'testing'",
    "nats://foo:bar@127.0.0.1:4222",
])
def test_guessable_password_values_in_code_are_fixtures(text):
    assert rule_ids(text) == set()
    assert find_secrets_to_mask(text)  # a stored turn still masks them


@pytest.mark.parametrize("text", [
    'password: "Xk9#mQ2vL"',
    "export DB_PASSWORD=fedejbynbe",
    "nats://foo:Gx7rq2Lp9v@127.0.0.1:4222",
])
def test_hard_to_guess_password_values_in_code_are_found(text):
    assert rule_ids(text) & {"hard.secret.keyword_assignment", "hard.secret.url_credentials"}


def test_a_guessable_password_stated_in_a_sentence_is_still_found():
    assert "hard.secret.plain_sentence" in rule_ids("Our Netflix password is swordfish.")
    assert "hard.secret.plain_sentence" in rule_ids("pw: hunter2")


@pytest.mark.parametrize("value, expected", [
    ("some-password", True), ("your_client_secret", True), ("somesecretkey", True), ("testToken1", True),
    ("sentjiaj_aofqpvuk_iohx", False), ("Secret2024!", False), ("fedejbynbe", False), ("river-stone", False),
])
def test_values_naming_a_credential(value, expected):
    assert names_a_credential(value) is expected


def test_zxcvbn_word_and_guess_checks():
    assert is_guessable("pass") and is_guessable("password1") and not is_guessable("T0pS3dz5k")
    assert is_words("secretkey") and is_words("Configuration") and not is_words("fedejbynbe")
    assert not is_guessable("a" * 40)  # long values are left to the entropy checks (cost)


@pytest.mark.parametrize("filler", [
    "ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "AKIAZZZZZZZZZZZZZZZZ",
    "glpat-XXXXXXXXXXX-XXXXXXXX",
    "GR134894112312312312312312312",
    "sgp_5555555dAAAAA7777777CcccCFaaaaaaaaaaaaaa",
    "xoxe.xoxp-1-RANDOMSTRINGHERE",  # words, not a generated body
])
def test_filler_vendor_tokens_are_not_blocked_but_are_masked(filler):
    assert find_secrets(filler) == []
    assert find_secrets_to_mask(filler)


@pytest.mark.parametrize("token, rule", [
    ("ghp_R7kQ2mX9vL4pT8wZ3nY6cB1hJ5sD0fGaE2uK", "hard.secret.github_token"),
    ("AKIAQ7V3XK2LMN4PRS5T", "hard.secret.aws_key"),
    ("AKIAIOSFODNN7EXAMPLE", "hard.secret.aws_key"),  # the AWS docs' key is used for real too often
])
def test_generated_vendor_tokens_are_still_found(token, rule):
    assert rule in rule_ids(f"key {token} here")


def test_identifiers_matching_a_short_vendor_prefix_are_not_tokens():
    assert rule_ids("s.AcceptanceTimeoutSeconds") == set()  # Vault's "s." prefix, then words
    assert rule_ids("xoxe.xoxp-1-initial") == set()
    assert "hard.secret.vault_token" in rule_ids("VAULT_TOKEN s.Q7vN2xLp9RtK4mWs8YbE3hJc")


TOKEN = "9Cnzj4p4WGeKLs1Pt8QuKUpRKfFLfRYC9AIKjbJTWit"


@pytest.mark.parametrize("text", [
    f'public_key = "{TOKEN}"',
    f"csrf-token={TOKEN}",
    f'<input type="hidden" name="authenticity_token" value="{TOKEN}">',
    f"-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nmQENBFOrMNcBCAC{TOKEN}\n-----END PGP PUBLIC KEY BLOCK-----",
    'hash: "$argon2id$v=19$m=65536,t=3,p=2$BpLnfgDsc2WD8F2q$^^vzA4myCqZZ36bUGsDY//8mKUYNZZaR0t4MFFSs+iM"',
])
def test_public_and_check_values_are_not_secrets(text):
    assert "hard.secret.high_entropy" not in rule_ids(text)


def test_the_same_random_value_under_another_name_is_found():
    assert rule_ids(f'note = "{TOKEN}"') == {"hard.secret.high_entropy"}


def _b64(obj) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")


def test_jwt_needs_a_header_that_decodes_when_it_looks_like_json():
    body = _b64({"sub": "1234567890", "name": "John Doe", "iat": 1516239022})
    sig = "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
    good = f"{_b64({'alg': 'HS256', 'typ': 'JWT'})}.{body}.{sig}"
    truncated = f"{_b64({'alg': 'HS256', 'typ': 'JWT'})[:-2]}.{body}.{sig}"  # header lost its closing brace
    assert "hard.secret.jwt" in rule_ids(good)
    assert "hard.secret.jwt" not in rule_ids(truncated)


@pytest.mark.parametrize("text, found", [
    ('curl -u "myusername" http://localhost:15130/api/check_user/', False),  # curl prompts for it
    ('curl -u "${username}":"${password}"', False),
    ("curl -u <user:password> https://test.com/endpoint", False),
    ('curl -u "d2LkV78zLx!t:" https://localhost:9200', True),  # an API key as the user name
    ("curl --user admin:Xk9mQ2vLp7 https://api.internal", True),
    ('curl --user "{acd3c08b-74e8}":"{ZqL5kVrX1n8tA2}" https://api', True),
])
def test_curl_user_forms(text, found):
    assert ("hard.secret.url_credentials" in rule_ids(text)) is found


def test_a_secret_in_markdown_inline_code_is_found():
    text = "> Consumer Key: ``RKCGzna7bv9YD57c``\n>\n> Consumer Secret: ``D+QgL-dm$-%@0Kd0``"
    hits = find_secrets(text)
    assert "D+QgL-dm$-%@0Kd0" in [text[h.start:h.end] for h in hits if h.rule_id == "hard.secret.keyword_assignment"]
    assert find_secrets("> Consumer Secret: ``testing``") == []  # a guessable stand-in, as unquoted


# --- look-alikes of secrets that hold none (each next to a real secret of the same shape)


@pytest.mark.parametrize("value, expected", [
    ("a-secret", True), ("pwd7", True), ("bad_pass", True), ("s3cr3t9", True), ("p4ssw0rd", True),
    ("compass", False), ("bluecompass", False), ("P@ssw0rd$1", False), ("S3cretPw9", False),
])
def test_values_naming_a_credential_with_short_parts_and_l33t(value, expected):
    assert names_a_credential(value) is expected


@pytest.mark.parametrize("text", [
    'smtp_password: "my-pass"',
    "amqp://guest:pwd2@rabbit.local:5672",
    'creds = {"password": "t0k3n42"}',
])
def test_password_values_naming_a_credential_are_fixtures(text):
    assert rule_ids(text) == set()


@pytest.mark.parametrize("text, found", [
    ("wget --password '$FTP_PASS' $MIRROR_HOST/$ARCHIVE", False),  # shell variables, expanded later
    ("docker login --password $REG_PW $REGISTRY_URL/$IMAGE", False),
    ("wget --password 'Vq8rTn2Lk' $MIRROR_HOST/pkg", True),
])
def test_shell_variable_references_are_not_password_values(text, found):
    assert bool(rule_ids(text)) is found


@pytest.mark.parametrize("text", [
    "if (password == form!!.password) return true",  # Kotlin non-null assertion
    "const ok = password === session?.password",  # optional chaining
])
def test_member_access_is_code_not_a_password(text):
    assert rule_ids(text) == set()


def test_an_escaped_line_break_ends_an_unquoted_value():
    assert rule_ids('{"yaml": "db:\\n  DB_SECRET: from_vault\\n  port: 5432"}') == set()
    assert rule_ids('{"yaml": "db:\\n  DB_SECRET: Jq7vN2xLp9Rk\\n  port: 5432"}')


@pytest.mark.parametrize("text", [
    "REGISTRY_TOKEN=$CI_TOKEN DEPLOY_ENV=staging make release",  # `$CI_TOKEN` is used, not set
    "curl https://auth.example.org/oauth/token -d grant_type=refresh_token -d scope=read",
])
def test_a_name_value_pair_further_along_is_not_a_wrapped_token(text):
    assert rule_ids(text) == set()


@pytest.mark.parametrize("text, found", [
    ("export STRIPE_TOKEN=sk_live_51HqLyjWDarjtT1zdp7dc...", False),  # cut short in a log
    ('"bot_token": "xoxb-20210422-99120-####################"', False),  # the secret part masked
    ("api_key = Rk82jQp0Lx7NvT4mZs9WbY3c", True),
])
def test_masked_or_cut_tokens_hold_no_working_secret(text, found):
    assert bool(rule_ids(text)) is found
    assert find_secrets_to_mask(text)  # what is left is still masked in a stored turn


def test_an_ellipsis_after_a_complete_vendor_key_only_ends_the_sentence():
    assert "hard.secret.github_token" in rule_ids("the deploy key was ghp_R7kQ2mX9vL4pT8wZ3nY6cB1hJ5sD0fGaE2uK...")


def test_a_filler_stated_as_a_key_is_not_a_secret():
    assert rule_ids('secret key: "sk_ttttttttttttttttttttttttttt"') == set()
    assert rule_ids('secret key: "sk_7Hq2LxV9pR4kWm8TzN3c"')


def test_a_qualified_type_name_is_not_a_key_value():
    assert rule_ids("var signer PrivateKey = rsa.PrivateKey") == set()
    assert rule_ids("the private key is x9Lq2Vr7Tk.Mw4") != set()


def test_vendor_prefix_followed_by_a_camel_case_name_is_code():
    assert rule_ids("s.loadClusterCredentialsFor(ctx)") == set()  # Vault's legacy "s." + 24 letters
    assert "hard.secret.vault_token" in rule_ids("token s.Rk82jQp0Lx7NvT4mZs9WbY3c")


def test_a_signature_value_is_public_even_when_the_token_starts_inside_it():
    value = "Ab3~Zq8LmN2pR7tV5xK9wY4cF6hJ1sD0gB3nM8qL2vR5tW7yX"
    assert rule_ids(f"X-Amz-Signature: {value}") == set()
    assert rule_ids(f"X-Session: {value}") == {"hard.secret.high_entropy"}


def test_ideographs_glued_to_a_keyword_are_prose():
    assert rule_ids("请把access_token配置到环境变量里面") == set()
    assert rule_ids("access_token=Rk82jQp0Lx7NvT4mZs9WbY3c")


@pytest.mark.parametrize("text, found", [
    ('db_password = SecretStr("qvmtrzkwle")', True),  # the wrapper type says the literal is the secret
    ('final SecureString adminPassword = new SecureString("Lk29vRqx7");', True),
    ('apiToken = SecretValue("Rk82jQp0Lx7NvT4mZs9WbY3c")', True),
    ('db_password = SecretStr("sample-password")', False),  # names a credential: a fixture
    ('passwordData = new PasswordCredentialData("/vault/app/db")', False),  # a path to where it lives
])
def test_a_literal_wrapped_in_a_secret_holder_type(text, found):
    assert bool(rule_ids(text)) is found


@pytest.mark.parametrize("text, found", [
    ("hdr = base64.b64encode(b'deploy:wqzmrtkv').decode()", True),  # HTTP Basic built in code
    ('const auth = btoa("svc:Q7v2LpX9")', True),
    ("hdr = base64.b64encode(b'deploy:password').decode()", False),  # a stand-in
    ("data = base64.b64encode(b'hello world')", False),
])
def test_basic_credentials_built_by_base64_encoding(text, found):
    assert ("hard.secret.url_credentials" in rule_ids(text)) is found


def test_a_long_vendor_token_may_hold_a_letter_run_by_chance():
    body = "Q7vN2xLp9RtK4mWs8YbE3hJc6FzA1dGu5TiVo0XeBnMq" * 3
    token = f"EAAC{body[:40]}qwrtzpsdfg{body[40:120]}"  # ten lower-case letters in 134 characters
    assert "hard.secret.facebook_token" in rule_ids(token)
    assert rule_ids("EAACrequiredCharacteristicTypesForTheView") == set()  # short: words


@pytest.mark.parametrize("text, found", [
    ('admin_password_secure = "Jq7vN2xLp9Rk"', True),  # "_secure" is no descriptive "re" tail
    ('db_secret_here = "Jq7vN2xLp9Rk"', True),
    ('password_re = "^[A-Za-z0-9]{8,}$"', False),  # a pattern for passwords
    ('token_id = "Jq7vN2xLp9Rk"', False),
    ("passwordLen = 12", False),
])
def test_short_descriptive_tails_must_be_a_word_of_their_own(text, found):
    assert bool(rule_ids(text)) is found


@pytest.mark.parametrize("text, found", [
    ("export DB_PASSWORD=test4821", False),  # a test word and a number: a stand-in, as in a sentence
    ("MYSQL_ROOT_PASSWORD=demo2024", False),
    ("export DB_PASSWORD=tqmv4821", True),
])
def test_test_words_with_a_number_are_stand_ins_in_code(text, found):
    assert bool(rule_ids(text)) is found


def test_a_private_key_with_lines_left_out_is_a_display_not_a_key():
    lines = ["Zq8LmN2pR7tV5xK9wY4cF6hJ1sD0gB3nM8qL2vR5tW7yXa1Bc9Dk", "Lp4Tr7Vn2Xq8Mw5Kz1Hs6Jd3Fg0Yb9Cu"]
    whole = "-----BEGIN EC PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END EC PRIVATE KEY-----"
    cut = "-----BEGIN EC PRIVATE KEY-----\n" + lines[0] + "\n   ...\n" + lines[1] + "\n-----END EC PRIVATE KEY-----"
    assert "hard.secret.private_key" in rule_ids(whole)
    assert rule_ids(cut) == set()
    assert find_secrets_to_mask(cut)  # what is shown is still masked in a stored turn


# --- look-alikes met in ordinary code and documentation


def test_a_keyword_ending_a_type_path_is_a_type_name():
    assert rule_ids('"Acme::Vault::SecretKey": "5e0c81f2a9d4b7c3",') == set()  # a schema hash per type
    assert rule_ids('"SecretKey": "Rk82jQp0Lx7NvT4mZs9WbY3c",')


@pytest.mark.parametrize("name", ["NextToken", "page_token", "continuationToken", "sync-token", "idempotency_token"])
def test_paging_and_request_tokens_are_not_credentials(name):
    value = "eyJvZmZzZXQiOiAyNTAsICJzb3J0IjogImNyZWF0ZWQifQ=="
    assert rule_ids(f'"{name}": "{value}"') == set()
    assert rule_ids(f'"access_token": "{value}"')


def test_a_variable_handed_on_under_its_own_name_is_not_a_value():
    assert rule_ids("encode(token_ids_0=token_ids_0, token_ids_1=token_ids_1)") == set()
    assert rule_ids("encode(api_token=Rk82jQp0Lx7NvT4mZs9WbY3c)")


def test_a_scheme_word_ending_a_line_takes_no_value_from_the_next():
    assert rule_ids("    return token\n    self._added_tokens_encoder[content] = index") == set()
    assert "hard.secret.auth_header" in rule_ids("Authorization: Token Rk82jQp0Lx7NvT4mZs9WbY3c")


def test_dotted_names_and_flags_are_not_wrapped_tokens():
    assert rule_ids("if token.content not in self.tokens_trie._tokens:") == set()
    assert rule_ids("aws acm request --idempotency-token 91adc45q --subject-alternative-names www.example.net") == set()


def test_a_keyword_argument_quoted_in_prose_is_code():
    assert rule_ids("Notice that we pass `record_in_macro=False` here.") == set()
    assert rule_ids("pass `Jq7vN2xLp9Rk` to the login form")


def test_words_after_a_number_are_split_when_naming_a_credential():
    assert names_a_credential("PasswordOf8Letters")
    assert not names_a_credential("Pw8Kq2Lm9Zx")


def test_hashes_and_identifiers_by_name_are_not_secrets():
    value = "GGmv8ocUw4cly0T8HL0Vx/f5V4RmSCGNjDIslY4VskM="
    assert rule_ids(f'"CodeSha256": "{value}"') == set()
    assert rule_ids(f"--target DistributionTenantId={value}") == set()
    assert rule_ids(f'"shared_secret": "{value}"')  # "sha" only as a word of its own


def test_a_keyword_inside_a_slug_is_no_sentence():
    assert rule_ids('"id": "how-to-reset-a-password-for-your-vm-1472150202632"') == set()
    assert rule_ids("the wifi password - Tq8vLm2x")


@pytest.mark.parametrize("text, found", [
    ("def ask(prompt: str, password: bool = False) -> str:", False),  # a type annotation
    ("def login(user: str, token: Optional[str] = None):", False),
    ('    print(f"password={password!r}")', False),  # a template field
    ('msg = "token={token:>12}"', False),
    ("password: Tq8vLm2xR4", True),
])
def test_annotations_and_template_fields_are_not_values(text, found):
    assert bool(rule_ids(text)) is found


def test_an_attribute_path_is_not_a_wrapped_token():
    assert rule_ids("elif token in self.word2idx:") == set()


def test_pass_as_a_verb_names_nothing():
    assert rule_ids("Please pass `cache_dir` via `model_kwargs` instead.") == set()
    assert rule_ids("pass: Tq8vLm2xR4")


def test_a_token_after_an_escaped_line_break_starts_after_it():
    token = "Zq8LmN2pR7tV5xK9wY4cF6hJ1sD0gB3n"
    text = f'{{"blob": "first line\\n{token}"}}'
    spans = [text[h.start:h.end] for h in find_secrets(text)]
    assert spans == [token]


# --- found through the blind set (bench/data/secrets_blind.jsonl): general shapes, each with
# --- a look-alike that stays harmless

def test_a_dotted_token_of_generated_parts_is_a_value_not_a_qualified_name():
    token = "sk.eyJ1Ijoi8fQ2LmZ7xVr4TnP9wB3kRy6HsUd0GjEc5NaW1tXq.Qm7Lp2xV9rKt4WnZ8bHc3D"
    other = token.replace("sk.", "tk.", 1)  # (with "sk." the Mapbox secret-token rule finds it first)
    assert rule_ids(f"export MAPBOX_SECRET_TOKEN={other}") == {"hard.secret.keyword_assignment"}
    assert rule_ids(f"export MAPBOX_SECRET_TOKEN={token}") == {"hard.secret.mapbox_secret"}
    assert rule_ids("token = jwt.encode") == set()
    assert rule_ids("var signer PrivateKey = rsa.PrivateKey") == set()


def test_a_base32_secret_in_capitals_is_not_a_constant_name():
    uri = "otpauth://totp/Acme:jdoe?secret=JBSWY3DPEHPK3PXPLU7TZN3QG4ZK2RWC&issuer=Acme"
    assert rule_ids(uri) == {"hard.secret.keyword_assignment"}
    assert rule_ids("password=DEFAULT_ADMIN_PASSWORD") == set()
    assert rule_ids("secret=AES256GCM") == set()
    assert rule_ids("password=getUser2FAToken123") == set()  # a camelCase name with digits
    assert rule_ids("password=self.cfg2.get(k9x8y7z6w5v4)") == set()  # code


@pytest.mark.parametrize("text, found", [
    ('<add key="SmtpPassword" value="Tundrapepper95!" />', True),
    ("<input type=\"hidden\" name=\"api_key\" value=\"a8Kq2LmZ7xVr4TnP9wB3\">", True),
    ('<add key="SmtpPasswordLength" value="12" />', False),
    ('<input type="hidden" name="authenticity_token" value="7SWa-Fo1_hsC6oovfBsJFLGPUl2EhkSWPbJhWANwgaJ">', False),
    ('<add key="Theme" value="Xk9#mQ2vL" />', False),
])
def test_a_name_and_its_value_as_two_attributes(text, found):
    assert bool(rule_ids(text)) is found


@pytest.mark.parametrize("text, found", [
    ("machine api.heroku.com\n  login ana@acme.io\n  password 9b2e4f1a-7c3d-4e8f-a1b2-c3d4e5f6a7b8", True),
    ("default login anonymous password Gq7#vL2pXz", True),
    ("machine github.com login ana password $GITHUB_TOKEN", False),
    ("machine learning password Xq7mR2vL9 detectors", False),  # no host: prose, not an entry
    ("by default password Gq7vL2pXzQ is refused", False),
])
def test_netrc_entries(text, found):
    assert bool(rule_ids(text)) is found


@pytest.mark.parametrize("text, found", [
    ("mysql -u root -pLtcqD6gpedBQbW -h db.internal shop", True),
    ("mysqldump -u backup -p'Xq7!mR2v' --all-databases > all.sql", True),
    ("mysql -u root -p -h db.internal shop", False),  # -p alone: the client prompts
    ("mysql -u root -p$MYSQL_PWD shop", False),
    ("grep -pattern file.txt", False),
])
def test_mysql_password_glued_to_p(text, found):
    assert bool(rule_ids(text)) is found
    if found:
        assert rule_ids(text) == {"hard.secret.command_line_password"}


@pytest.mark.parametrize("text, found", [
    ("my seed phrase is fossil zebra mimic urge credit tunnel kitten zebra credit tunnel nurse pledge", True),
    ("recovery phrase: abandon ladder orbit nurse garlic swamp kitten fossil credit mimic tunnel velvet.", True),
    ("my seed phrase is written on paper and kept in a drawer at my parents house in the countryside", False),
    ("the seed phrase is twelve words long", False),
])
def test_a_recovery_phrase_of_twelve_to_twenty_four_words(text, found):
    assert bool(rule_ids(text)) is found


@pytest.mark.parametrize("text, found", [
    ("nuget push with api key oy2matrtblp9diuyigyir2zjrqa2tdtt069ke9lokxym4z", True),
    ("heroku api key 33cd9084-147d-4d76-9209-0a3517bb5983 for the CLI", True),
    ("zoom meeting 834 2201 7795, passcode BdDS7y", True),
    ("the api key field in settings is greyed out", False),
    ("the access token expires after 3600 seconds", False),
    ("zoom meeting 834 2201 7795, passcode required", False),
    ("the api key sk-...your-key-here goes in config", False),
])
def test_a_credential_keyword_followed_at_once_by_a_generated_value(text, found):
    assert bool(rule_ids(text)) is found


@pytest.mark.parametrize("text", [
    "Content-Security-Policy: script-src 'sha256-I429p70dzSiZ0vqXRp6Mz2+iGqIJhM4LiqP0WOKWq/4='",
    "localStorage holds prefs=eyJ0aGVtZSI6ImRhcmsiLCJsYW5nIjoiZW4ifQ",
    "Idempotency-Key: f0593591-2e44-4c8b-9faf-d5f0fbf6d053",
])
def test_hashes_encoded_settings_and_request_ids_are_not_secrets(text):
    assert rule_ids(text) == set()


def test_encoded_json_holding_a_secret_is_still_one():
    doc = base64.b64encode(json.dumps({"auths": {"r.io": {"auth": "", "password": "Gq7#vL2pXz9"}}}).encode()).decode()
    assert rule_ids(f"config={doc}") == {"hard.secret.high_entropy"}
    assert rule_ids("X-Session: c2VjcmV0LXNlc3Npb24tS3E3TDJtWjl4VnI0VG5QOXdCMw") == {"hard.secret.high_entropy"}
    assert rule_ids("card 5009 0083 5313 9762") == {"hard.secret.payment_card"}


def test_a_command_line_password_is_named_in_words():
    from pipelines.policy_rules.findings import secret_kind

    assert secret_kind("hard.secret.command_line_password") == "password given to a command"


JWT_IO_EXAMPLE = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0"
    "IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
MAPBOX_PUBLIC = "pk.eyJ1IjoidHJhaWxzIiwiYSI6ImNsazNkcXAzYWhmdmVhcXBnMnEwNDQ1NSJ9.sRCZ7o5Tm6nvT9TaN19xRM"


@pytest.mark.parametrize("text", [
    "For the checkout demo use Stripe's test card 4242 4242 4242 4242, any future expiry, any CVC.",
    "Adyen test Mastercard: 5555 3412 4444 1115, expiry 03/30, CVC 737.",
    "test amex for the braintree sandbox: 378282246310005",
    "Visa 4000 0000 0000 0002 declines every charge.",  # one digit for most of it: a documented number
    f"The sample token on jwt.io is {JWT_IO_EXAMPLE}",
    f"curl -H 'Authorization: Bearer {JWT_IO_EXAMPLE}' localhost:3000  # example token for the tutorial",
    f"mapboxgl.accessToken = '{MAPBOX_PUBLIC}';",
    f"our map's public token: {MAPBOX_PUBLIC}",
])
def test_test_cards_and_public_by_design_tokens_are_not_secrets(text):
    assert rule_ids(text) == set()


@pytest.mark.parametrize("text", [
    "For the checkout demo use Stripe's test card 4242 4242 4242 4242, any future expiry, any CVC.",
    "test amex for the braintree sandbox: 378282246310005",
    "Globex customer wants the chargeback on card 4111 1111 1111 1111, can you check it?",
])
def test_a_test_card_is_no_leak_in_a_proposal_but_a_stored_turn_masks_it(text):
    assert rule_ids(text) == set()
    (hit,) = find_secrets_to_mask(text)
    assert hit.rule_id == "hard.secret.payment_card" and text[hit.start:hit.end].replace(" ", "").isdigit()


@pytest.mark.parametrize("text, rule", [
    ("My Visa is 4539 1488 0343 6467, exp 08/28, CVV 412.", "hard.secret.payment_card"),
    (f"My JWT token is: {JWT_IO_EXAMPLE}", "hard.secret.jwt"),  # no word of the line says example
    (f"Mapbox secret token for uploads: {MAPBOX_PUBLIC.replace('pk.', 'sk.')}", "hard.secret.jwt"),
])
def test_issued_cards_and_tokens_not_called_examples_still_are(text, rule):
    assert rule in rule_ids(text)


@pytest.mark.parametrize("text", [
    "my visa is 4539148803436467 12/28 cvv 123",  # the run of digits swallowed the expiry month
    "card: 4539 1488 0343 6467 12 28",  # and the year, written with spaces
])
def test_a_card_number_followed_by_its_expiry_is_still_a_card(text):
    assert rule_ids(text) == {"hard.secret.payment_card"}


def test_digits_after_a_failed_card_number_make_no_card_of_it():
    assert rule_ids("order 45391488034364671 22 shipped") == set()


# BIP-39 phrases built from fixed entropy with the reference implementation (`mnemonic`), so
# their checksum word is right: 00 01 02 ... 0f is no repeated unit, all-zero entropy is the
# standard's first test vector ("abandon abandon ... about").
def _phrase(entropy: bytes) -> str:
    from mnemonic import Mnemonic

    return Mnemonic("english").to_mnemonic(entropy)


@pytest.mark.parametrize("text", [
    _phrase(bytes(range(16))),
    "backup of the hardware wallet: " + _phrase(bytes(range(32))),
    "\n".join(f"{i}. {w}" for i, w in enumerate(_phrase(bytes(range(16, 32))).split(), 1)),
])
def test_a_checksum_valid_recovery_phrase_is_a_secret_without_a_word_naming_it(text):
    # (after a word naming it, the sentence rule finds the same span first)
    assert rule_ids(text) & {"hard.secret.seed_phrase", "hard.secret.plain_sentence"}


@pytest.mark.parametrize("text", [
    "BIP39 test vector: " + _phrase(bytes(16)),
    "my seed phrase is " + _phrase(bytes(16)),
    "seed words: " + _phrase(b"\x7f" * 16),  # "legal winner thank year ..."
    _phrase(b"\xff" * 32),  # "zoo zoo ... vote"
])
def test_the_standards_test_vectors_are_no_secrets(text):
    assert rule_ids(text) == set()


def test_twelve_list_words_failing_the_checksum_are_no_phrase_without_a_word_naming_one():
    from mnemonic import Mnemonic

    words = _phrase(bytes(range(16))).split()
    broken = next(p for w in ("zoo", "zone", "zero") if not Mnemonic("english").check(p := " ".join([*words[:-1], w])))
    assert "hard.secret.seed_phrase" not in rule_ids(broken)


# Vendors' documented prefixes whose bodies (hex, one letter case) are below the
# high-entropy bar: found by the prefix alone, in prose as in code. Bodies from a seeded
# generator; a placeholder after the prefix is none.
def _body(chars: str, n: int, seed: int = 3) -> str:
    import random

    rng = random.Random(seed)
    return "".join(rng.choice(chars) for _ in range(n))


_HEX = "0123456789abcdef"
_UPPER_DIGITS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


@pytest.mark.parametrize("token, rule", [
    ("NRAK-" + _body(_UPPER_DIGITS, 27), "hard.secret.newrelic_key"),
    ("dapi" + _body(_HEX, 32), "hard.secret.databricks_token"),
    ("PMAK-" + _body(_HEX, 24) + "-" + _body(_HEX, 34, 4), "hard.secret.postman_key"),
    ("sbp_" + _body(_HEX, 40), "hard.secret.supabase_token"),
    ("dt0c01." + _body(_UPPER_DIGITS, 24) + "." + _body(_UPPER_DIGITS, 64, 4), "hard.secret.dynatrace_token"),
    ("https://discord.com/api/webhooks/112233445566778899/" + _body(_HEX + "ABCDEFGHIJ_-", 68),
     "hard.secret.webhook_url"),
])
def test_documented_vendor_prefixes_are_found_in_prose(token, rule):
    assert rule in rule_ids(f"sent {token} to the channel")


@pytest.mark.parametrize("text", [
    "GOCSPX-your-client-secret-goes-here",
    "NRAK-" + "X" * 27,
    "dapi" + "0" * 32,
    "the token dckr_pat_your_docker_token_goes_here_x is a placeholder",
])
def test_a_placeholder_after_a_vendor_prefix_is_none(text):
    assert rule_ids(text) == set()


@pytest.mark.parametrize("text, found", [
    ("define('DB_PASSWORD', 'iBv*OHr2%Je%KXvu');", True),  # wp-config.php
    ("os.environ.setdefault('API_TOKEN', '8f2kQ7vN2xLp9RtK4mWs8YbE3h')", True),
    ("define('DB_PASSWORD', 'password_here');", False),
    ("fields = ('username', 'password', 'email')", False),
    ("config.get('password', 'default')", False),
    ('ok, err := CheckPassword("password", "$8$rounds=50000$aFr56HjK3DrB8t3S$zhPQiS85cgBlNhUKKE6n")', False),
])
def test_a_credential_name_and_its_value_as_a_pair_of_quoted_arguments(text, found):
    assert bool(rule_ids(text)) is found


def test_a_wifi_pre_shared_key_is_a_password():
    assert rule_ids("wifi psk=Qm7Lp2xV9rKt4Wn") == {"hard.secret.keyword_assignment"}
    assert rule_ids("psk_length = 63") == set()


@pytest.mark.parametrize("text, found", [
    ("the shared secret 3f9a2c1d8e7b6a5f4e3d2c1b0a9f8e7d", True),
    ("signing secret 3f9a2c1d8e7b6a5f4e3d2c1b0a9f8e7d for stripe", True),
    ("the shared secret between us is that I hate cake", False),
    ("the webhook secret rotates monthly", False),
])
def test_a_named_secret_followed_at_once_by_a_generated_value(text, found):
    assert bool(rule_ids(text)) is found


def test_a_long_text_written_in_list_words_holds_no_phrase():
    # (every window of it would be a checksum to try, and one in sixteen passes)
    words = _phrase(bytes(range(16))).split()
    assert "hard.secret.seed_phrase" not in rule_ids(" ".join(words * 10))


def test_a_fernet_ciphertext_is_data_not_a_key():
    import random

    rng = random.Random(11)
    # version 0x80, a 64-bit timestamp (its high bytes zero), an IV, two AES blocks, an HMAC
    raw = b"\x80" + bytes(4) + bytes(rng.getrandbits(8) for _ in range(4 + 16 + 32 + 32))
    fernet = base64.urlsafe_b64encode(raw).decode()
    assert fernet.startswith("gAAAAA")
    assert rule_ids(f"http://host:2540/image?q={fernet}") == set()
    assert rule_ids(f"http://host:2540/image?q={fernet[:-8]}") == {"hard.secret.high_entropy"}  # not 57 + 16k bytes


# ---- decoded once: what a random-looking base64 or base58 run holds (2026.11-18)

def _rng_bytes(seed: int, n: int) -> bytes:
    import random

    return random.Random(seed).randbytes(n)


def _base64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def test_base64_of_a_media_file_is_data():
    jpeg = _base64(bytes([0xFF, 0xD8, 0xFF, 0xE0, 0, 16]) + b"JFIF" + _rng_bytes(6, 50))
    png = _base64(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + _rng_bytes(2, 60))
    assert rule_ids(f'"thumbnail": "{jpeg}"') == set()
    assert rule_ids(f"icon = {png}") == set()
    # the same bytes without the file's signature are as random as a key
    assert rule_ids(f'"thumbnail": "{_base64(_rng_bytes(3, 60))}"') == {"hard.secret.high_entropy"}


def test_base64_of_an_ssh_public_key_is_public():
    blob = b"\x00\x00\x00\x0bssh-ed25519\x00\x00\x00\x20" + _rng_bytes(6, 32)
    assert rule_ids(f"Added my key to authorized_keys: ssh-ed25519 {_base64(blob)} bob@work") == set()
    # a wire-format length that does not hold a key type's name is not a public key
    broken = b"\x00\x00\x00\x0bxyz-ed25519\x00\x00\x00\x20" + _rng_bytes(6, 32)
    assert rule_ids(f"key: {_base64(broken)}") != set()


def test_base64_of_readable_text_is_data_unless_it_holds_a_secret():
    note = b"Hello team, the standup moves to 10:30 tomorrow, bring the slides please."
    assert rule_ids(f"message: {_base64(note)}") == set()
    cert = "-----BEGIN CERTIFICATE-----\n" + _base64(_rng_bytes(4, 300)) + "\n-----END CERTIFICATE-----\n"
    assert rule_ids(f"certificate-authority-data: {_base64(cert.encode())}") == set()
    private = cert.replace("CERTIFICATE", "RSA PRIVATE KEY")
    assert rule_ids(f"client-key-data: {_base64(private.encode())}") != set()
    leaked = b"deploy notes: export GITHUB_TOKEN=ghp_" + b"aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5"
    assert rule_ids(f"notes: {_base64(leaked)}") != set()


def _b58(raw: bytes) -> str:
    alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
    n, out = int.from_bytes(raw, "big"), ""
    while n:
        n, r = divmod(n, 58)
        out = alphabet[r] + out
    return out


def test_an_ipfs_content_id_is_a_hash_not_a_key():
    import hashlib

    cid = _b58(bytes([0x12, 0x20]) + hashlib.sha256(b"a file").digest())
    assert cid.startswith("Qm") and len(cid) == 46
    assert rule_ids(f"pinned the page as CID {cid}") == set()
    # base58 of 34 random bytes is no multihash (its length byte does not match)
    not_cid = _b58(bytes([0x12, 0x21]) + hashlib.sha256(b"a file").digest())
    assert rule_ids(f"pinned the page as CID {not_cid}") == {"hard.secret.high_entropy"}


@pytest.mark.parametrize("text, found", [
    ("SECRET_KEY=4#_z27MsubBVv)xt4lXKE=Bv@#aKTCog^c*MN5xVz@zyi*MX-b", True),  # Django's key alphabet
    ("SECRET_KEY=osl))vaj+!_h&uc*_#19x%0&^h@b1-lbm2uow8)ze@*k+y!i$6", True),  # `&` inside the key
    ("SECRET_KEY=get_random_secret_key()", False),
    ("SECRET_KEY=os.environ.get(DJANGO_SECRET_KEY_FROM_ENV_1, default_2)", False),
    ("password=(a+b)*(c-d)^e!=f@g#h_1_2_3_long_expression_here", False),
    ("https://x.io/cb?token=${T}&redirect_uri=https%3A%2F%2Fexample.com%2Fcallback%3Fa%3D1&state=xyz", False),
])
def test_a_generated_key_of_punctuation_and_letters_is_a_value_unquoted(text, found):
    assert bool(rule_ids(text)) is found


@pytest.mark.parametrize("text, found", [
    ("echo " + _base64(b"admin:ftnsWTaL2Cme73") + " | base64 -d", True),
    ('"auth": "' + _base64(b"deploy:Xk9#mQ2vLp8z") + '"', True),
    ("echo " + _base64(b"foo:bar") + " | base64 -d", False),  # a guessable stand-in
    ("echo " + _base64(b"admin:password123") + " | base64 -d", False),
    (_base64(b"time:12:30 sharp"), False),
    ("The word Internationalization is long", False),
])
def test_a_base64_user_password_pair_is_decoded_once(text, found):
    assert rule_ids(text) == ({"hard.secret.encoded_credential"} if found else set())


def test_base64_of_a_text_holding_a_secret_is_one():
    env = b"export AWS_SECRET_ACCESS_KEY=Dtc2KZ1Dw0gBEHum3adzqxMhGx3taeY5jvDR3q9lV\nexport REGION=eu-west-1"
    assert rule_ids(f"creds.txt is {_base64(env)}") == {"hard.secret.encoded_credential"}
    assert rule_ids(f"env.txt is {_base64(b'export REGION=eu-west-1' + bytes([10]) + b'export DEBUG=false')}") == set()


# ---- random letters judged by their parts, not by the absence of digits (2026.11-19)

@pytest.mark.parametrize("text", [
    'api_key = "ZdHeICdTjPJWIPhCWEHdbRMdDjLatVll"',  # 32 of the 52 letters: no digit drawn
    "API_TOKEN=qWfKpLmZxRtYbNvHgJcDsAeUoIiP",
    '{"access_token": "hUsnEwQoPzXcVbMlKjHgFdSa"}',
])
def test_a_key_of_letters_only_under_a_token_name_is_one(text):
    assert rule_ids(text) == {"hard.secret.keyword_assignment"}


@pytest.mark.parametrize("value", [
    "AbstractSingletonProxyFactoryBean",  # a long PascalCase class name
    "getUserIdFromAuthTokenHeader",
    "XMLHttpRequestEventTarget",  # acronyms before words
    "IOErrorIdToUrlMapV",  # short parts, still a quarter of it words
    "org.apache.commons.lang3.StringUtils",  # a Java package
    "btn btn-primary btn-lg active",  # CSS classes
    "settings.apiKey.placeholderText",  # an i18n key
    "ReplaceWithYourOwnSecretValue",
])
def test_an_identifier_under_a_token_name_is_no_key(value):
    assert rule_ids(f'api_key = "{value}"') == set()
    assert rule_ids(f"API_TOKEN={value}") == set()
    # the name in camelCase is the sentence rule's keyword too ("apiKey", "authToken"): the same judgement
    assert rule_ids(f'apiKey = "{value}"') == set()
    assert rule_ids(f'"authToken": "{value}"') == set()


def test_a_bare_token_with_a_random_run_of_one_case_is_one_and_with_a_word_is_none():
    # 48 random bytes in base64 (64 characters) hold a 7-letter run of one case one time in eight
    token = "e2KjHOvD5DQWjzkfscaxfhC2VuQzCnIGXRzd2VVX5A7a9P0j6g7Z0e+u0yweorig"
    assert rule_ids(f"here it is {token} ok") == {"hard.secret.high_entropy"}
    # the same token with a word in that run is a name with a random part, not a key
    named = token.replace("jzkfscaxfh", "configuration")
    assert rule_ids(f"here it is {named} ok") == set()


def test_a_shorter_bare_token_with_a_run_of_one_case_is_still_none():
    # under 52 characters a 7-letter run is more likely a name than chance
    assert rule_ids("here it is 0023452Lllk2KqjLBvaxANWEgTd7bqjsxjo8aZj0wd ok") == set()


def test_a_json_web_keys_public_members_are_data_and_its_private_ones_a_secret():
    n = "WCxf6DzIshOd8rDQ3_Q1uVJTD37xXRBuOd38D9tpxvrFPwyGJf3ul58i3nx5jgbWMsMlzszWs1Ujl77j9C-m3SMFScVTmiXRncf0kM6f"
    public = '{"keys": [{"kty": "RSA", "kid": "k1", "use": "sig", "n": "%s", "e": "AQAB"}]}' % n
    assert rule_ids(f"jwks: {public}") == set()
    private = public.replace('"e": "AQAB"', '"e": "AQAB", "d": "%s"' % n[::-1])
    assert "hard.secret.high_entropy" in rule_ids(f"jwks: {private}")
    assert "hard.secret.high_entropy" in rule_ids(f'config: {{"n": "{n}"}}')  # no "kty": not a key's member


# ---- 2026.11-20: names in camelCase, one-case letter keys, base64 with slashes, prefix + words

@pytest.mark.parametrize("text", [
    'apiKey = "ZdHeICdTjPJWIPhCWEHdbRMdDjLatVll"',
    'authToken: "tR7pQ2mX9kLw4ZbN8vYc3HsD"',
])
def test_a_key_under_a_camel_case_name_is_still_one(text):
    assert rule_ids(text)


@pytest.mark.parametrize("text", [
    'api_key = "skgeeplbwcifdopignmuqpvk"',  # 24 of the 26 lower-case letters, seeded
    "API_TOKEN=WTOKCBITBVWISLJUZSAUEMOGAYIHYEZB",
    'accessToken: "udoduruuzlcvggpifwayprwb"',
])
def test_a_key_of_one_case_letters_under_a_token_name_is_one(text):
    assert rule_ids(text)


@pytest.mark.parametrize("text", [
    'api_key = "sessioncookiesigningkey"',  # words run together
    "API_TOKEN=SHIPPINGBUCKETENTITYSTORE",
    'authToken: "kubeletgrpcapikeyrotator"',  # with abbreviations among them
])
def test_words_run_together_in_one_case_are_no_key(text):
    assert rule_ids(text) == set()


def test_base64_holding_two_slashes_is_a_key_and_a_path_of_names_is_none():
    token = "7V7d56arr1fFGvWoHjwo7rJ8InHoT5F/PDdI5ETg0T3/sLNTYSqeZ2FceKqkRidA"  # 48 random bytes
    assert rule_ids(f"here it is {token} ok") == {"hard.secret.high_entropy"}
    for path in ("src/main/java/com/acme/security/MyApp2Config", "Users/jsmith/Library/Keychains/SessionStore"):
        assert rule_ids(f"the file lives in {path} now") == set()


@pytest.mark.parametrize("made_up", ["LTAI5tSomethingVeryLong", "AKIASEARCHSTUBMOCKID",
                                     "ghp_DeployAnalyticsEncoderPaymentDocumen"])
def test_a_vendor_prefix_followed_by_words_is_a_made_up_example(made_up):
    assert rule_ids(f"the key id is like {made_up} in the docs") == set()
    assert find_secrets_to_mask(made_up)  # a stored turn masks it all the same
    assert rule_ids("key id LTAI08vDuPngU30ZP7Thnp5y") == {"hard.secret.alibaba_key"}  # a random body


@pytest.mark.parametrize("value", ["sessioncookiesigningkey", "xsmzukxrezozsmgviabp", "p4ssw0rd", "Tr0ub4dor&3",
                                   "qwerty123", "2024-01-15", "drowssap", "aaaaaa"])
def test_the_zxcvbn_shortcuts_give_zxcvbns_own_answers(value):
    from zxcvbn import matching, zxcvbn

    spans = bytearray(len(value))
    for m in matching.dictionary_match(value.lower()):
        spans[m["i"] : m["j"] + 1] = b"\x01" * (m["j"] - m["i"] + 1)
    assert dictionary_coverage(value.lower()) == spans
    assert guesses_log10(value) == pytest.approx(float(zxcvbn(value)["guesses_log10"]), abs=1e-9)


# ---- 2026.11-21: names run together in capitals; the vendor rule's look-alikes under a token name

@pytest.mark.parametrize("text", [
    'export STRIPEAPIKEY="ttoaamkwpfhlbmlefhblcbyofnljumpkltpbjzlf"',  # probe 3, seeded random letters
    "TWILIOAUTHTOKEN=skgeeplbwcifdopignmuqpvk",  # a random value the bare-token rule does not take
    "SENDGRIDAPIKEY: hzbS5cLAZoTF59JWq1x7",
])
def test_a_keyword_inside_a_name_run_together_in_capitals_is_read(text):
    assert rule_ids(text) == {"hard.secret.keyword_assignment"}


@pytest.mark.parametrize("text", [
    "MONKEY=skgeeplbwcifdopignmuqpvk",  # a word ending in a keyword ("key", "nkey") is no name of one
    "HOCKEY: skgeeplbwcifdopignmuqpvk",
    "BYPASS=skgeeplbwcifdopignmuqpvk",
    "X509_PUBKEY = skgeeplbwcifdopignmuqpvk",  # a public key
    "notes = \"Maven - io.jsonwebtoken:jjwt-jackson-0.11.2\"",  # lower case runs together in packages
])
def test_a_word_or_package_that_ends_in_a_keyword_names_no_credential(text):
    assert rule_ids(text) == set()


def test_word_starts_splits_a_run_at_its_cheapest_words():
    from pipelines.policy_rules.secrets.dictionary import word_starts

    assert word_starts("stripeapikey", frozenset({"api", "key"})) == {0, 6, 9}
    assert word_starts("monkey", frozenset({"key"})) == {0}


@pytest.mark.parametrize("text", [
    "const access_key = 'ghp_8fAbstractEndpointSecretListenerKeyO';",  # probe 3's shapes, seeded
    'export API_KEY="AKID3uValidatorFlagPrincipalParserTr"',
    "const signing_key = 'LTAI2nServerKeyQueueImag';",
    '"authToken": "AKIA7qPRODUCTSOMEENV",',  # AWS ids are capitals; a made-up one need not be
    "accessToken: AKID7nModelSubscriptionUserToggleCli",  # the sentence rule's name in code too
])
def test_a_vendor_prefix_and_words_under_a_token_name_is_a_made_up_example(text):
    assert rule_ids(text) == set()


@pytest.mark.parametrize("text", [
    'api_key = "LTAI08vDuPngU30ZP7Thnp5y"',  # random bodies of the same formats
    'export API_KEY="AKIDsT517h3zOaoWG8Bfxc8judHbB2vdq94y"',
    "accessToken: AKID7nMoqLSubBcrUeEYxgTgC1iwCliV0k2x",
    'api_key = "tR7pQ2mX9kLw4ZbN8vYc3HsD"',  # no vendor prefix at all
])
def test_a_vendor_prefix_and_a_random_body_under_a_token_name_is_a_key(text):
    assert rule_ids(text)


# ---- 2026.11-21: a bare token's entropy limit by its length

@pytest.mark.parametrize("token", ["v5ZJr3J1TWDtkwtDDb+xHKas", "tmUdjAWtGSU8po+799NksnRH",  # 24 seeded, 4.2-4.3 bits
                                   "9SsL5k1/LIpJHeLO3P+1qM5d/+aij9X9"])  # 32 (probe 3), 4.45 bits
def test_a_short_random_token_under_the_fixed_limit_is_found_bare(token):
    assert rule_ids(f"here it is {token} ok") == {"hard.secret.high_entropy"}


@pytest.mark.parametrize("text", [
    "call graphQueueNodeConfigV493 here",  # a camelCase name with a version: 4.14 bits, but words
    "version id v5ZJr3J1TWDtkwtDDb+xHKas.o0Hq9Dj",  # one segment of a dotted token: the fixed limit
])
def test_words_and_token_segments_are_held_to_the_fixed_limit(text):
    assert rule_ids(text) == set()


def test_the_limit_is_a_random_runs_expected_entropy_up_to_detect_secrets_4_5():
    import random
    import statistics
    import string

    from pipelines.policy_rules.secrets.generated import strict_entropy_limit
    from pipelines.policy_rules.text import shannon_entropy

    rng = random.Random(24)
    sample = [shannon_entropy("".join(rng.choice(string.ascii_letters + string.digits + "+/") for _ in range(24)))
              for _ in range(400)]
    assert strict_entropy_limit(24) == pytest.approx(statistics.mean(sample) - 0.15, abs=0.03)
    assert strict_entropy_limit(36) == strict_entropy_limit(200) == 4.5
