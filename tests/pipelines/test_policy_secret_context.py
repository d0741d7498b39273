"""Secrets found by what stands around them (issue 14): passwords given to command-line tools,
values of a credential's shape after a word naming that credential (wallet keys, OTP seeds,
recovery codes, seed phrases), passwords as people build them, passwords stated in other
languages; and random-looking tokens that their surroundings say are public (data URIs, hash
labels, addresses, object ids). Each secret comes with a look-alike that is not one."""

from __future__ import annotations

import pytest

from pipelines.policy_rules.secrets import find_secrets


def found(text: str) -> list[str]:
    return [text[h.start:h.end] for h in find_secrets(text)]


@pytest.mark.parametrize(("text", "secret"), [
    ("sshpass -p 'Kq8#vLm2Zx' ssh deploy@10.1.2.3 uptime", "Kq8#vLm2Zx"),
    ("docker login registry.example.com -u bot -p Tr0ub4dor-Fence", "Tr0ub4dor-Fence"),
    ("redis-cli -h cache -a 'n8Ft2QpZr7LxVw3K' ping", "n8Ft2QpZr7LxVw3K"),
    ("ldapsearch -x -D 'cn=admin,dc=x' -w 'Gl4cier#77' '(uid=a)'", "Gl4cier#77"),
    ("mongosh mongodb://db -u root -p 'Wm3!pQz8Lk' --authenticationDatabase admin", "Wm3!pQz8Lk"),
    ("openssl pkcs12 -export -in c.pem -out b.p12 -passout pass:Lantern.maple77", "Lantern.maple77"),
    ("smbclient //fs/share -U 'CORP\\jdoe%Vel7et_Night'", "Vel7et_Night"),
    ("htpasswd -b -c /etc/nginx/.htpasswd admin Quartz_cobalt11", "Quartz_cobalt11"),
    ("net use Z: \\\\nas\\media /user:home\\admin Zt9%kQ2#wp /persistent:yes", "Zt9%kQ2#wp"),
    ("PGPASSWORD=cOG4Cmn5XvZ pg_dump -h pg -U postgres app > app.sql", "cOG4Cmn5XvZ"),
    ("mysql -h db -u root -pqNVddICh5FAAEh shop < dump.sql", "qNVddICh5FAAEh"),
])
def test_passwords_given_to_a_command_are_found(text, secret):
    assert secret in found(text)


@pytest.mark.parametrize("text", [
    'sshpass -p "$SSHPASS" ssh deploy@host uptime',
    'echo "$REGISTRY_PASSWORD" | docker login ghcr.io -u bot --password-stdin',
    "mysql -u root -p   # it prompts for the password",
    "docker login -u me -p <password> registry.example.com",
    "openssl genrsa -aes256 -passout pass:$KEY_PASS -out key.pem",
    "smbclient //srv/public -U guest%",
])
def test_references_prompts_and_placeholders_given_to_a_command_are_not(text):
    assert found(text) == []


HEX64 = "4e036deb2a5fc347ce9e9144d1150a1081f04efe636add6b519fff1262796ae4"


@pytest.mark.parametrize("text", [
    f"PRIVATE_KEY=0x{HEX64}  # deployer",
    f"const wallet = new ethers.Wallet('{HEX64}', provider)",
    "the 2FA setup key for the admin account is m3iz ul7s xco7 c65z 47zk xarn aiid vkia",
    "Twitter couldn't scan the QR so I typed the key manually: 55A5KVO4T2WCLF5W",
    "BitLocker recovery key: 988625-090801-808686-942404-373131-516756-727811-585706",
    "Google backup codes: 9946 6080, 4567 4788, 0988 4027, 7835 3775, 2811 6402",
    "Seed words for the ledger, write them down: walnut arrive timber alter weapon arrive "
    "account absurd actor arrow arrange weapon",
    "xprv9s21ZrQH143K3QTDL4LXw2F7HEK3wJUD2nW2nRk4stbPy6cq3jPPqjiChkVvvNKmPGJxWUtg6LnF5kejMRNNU3TGtRBeJgk33yuGBxrMPHi",
])
def test_values_named_by_the_word_before_them_are_found(text):
    assert find_secrets(text)


@pytest.mark.parametrize("text", [
    f"transaction 0x{HEX64} is stuck pending, my wallet shows it",
    f"bisect says the regression came in with commit {HEX64[:40]}",
    f"sha256sum of the iso: {HEX64}",
    "the recovery went fine: 1234 orders, 5678 users, 9012 items and 3456 carts restored",
    "we turned on 2FA for everyone last week and the MFA prompts are annoying",
    "the recovery phrase should be written on paper, never typed into a website",
])
def test_the_same_shapes_without_such_a_word_or_said_to_be_public_are_not(text):
    assert found(text) == []


@pytest.mark.parametrize("text", [
    "For the conference wifi use SSID EventNet and passphrase Willow.pebble69",
    "ldap:\n  bind_dn: cn=svc,dc=acme\n  bind_password: Harbor.biscuit87",
    "my wifi password is copper-cactus-willow-violet if you need it",
    "mein WLAN-Passwort ist tangerine-maple-harbor-sparrow, falls du es brauchst",
    "das Passwort ist Sonne2024!",
])
def test_passwords_as_people_build_them_and_in_other_languages_are_found(text):
    assert find_secrets(text)


@pytest.mark.parametrize("text", [
    "password = config.db_password",
    "the password is case-sensitive",
    "see the passwords-and-keys-guide for details",
    "das Passwort ist falsch",
    "use a passphrase of four random words, the xkcd way",
])
def test_code_names_slugs_and_foreign_status_words_are_not(text):
    assert found(text) == []


@pytest.mark.parametrize("text", [
    "go.sum: github.com/spf13/cobra v1.8.0 h1:YxdtRYTw0UiQSAbY1XcE6jcVCAVih2xA22MnbsvQ6YA=",
    "background: url(data:image/svg+xml;base64,PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciIHdp9Kq);",
    "legacy address 1KYizgj2QACbAzYo71cGDA29nLxY6LuWTa received 0.02 BTC",
    "xpub6CQYuTWpDP9XqgaeNrmHJVrtJjvVsuSEHEHxszw4sgX96oaACLJBytEwUZVHNfFbqwgyPrKe2HJdtCiXUQJJ6Qa9Vsx "
    "is the watch-only wallet",
    "price_4ttG53NT6NM5mWon7YuNF1SN is the monthly plan",
])
def test_random_looking_tokens_public_by_their_surroundings_are_not_secrets(text):
    assert found(text) == []


def test_the_same_random_token_without_those_surroundings_is_found():
    assert found("here it is: 1KYizgj2QACbAzYo71cGDA29nLxY6LuWTa9")
    assert found("key=YxdtRYTw0UiQSAbY1XcE6jcVCAVih2xA22MnbsvQ6YA=")


@pytest.mark.parametrize(("text", "secret"), [
    ("the router page is 192.168.0.1, user admin, pass Pickle.copper73", "Pickle.copper73"),
    ("Dad's iCloud: robert.h@icloud.com / c#i8vaHYdKJLMuOAy", "c#i8vaHYdKJLMuOAy"),
])
def test_a_password_after_pass_or_beside_its_account_is_found(text, secret):
    assert secret in found(text)


@pytest.mark.parametrize("text", [
    "please pass the-butter-please and the salt",
    "they said pass resolution 20231128 to the committee",
    "contact me at jane@acme.io / 555-0199-2211 or on slack",
    "scp dump.sql me@host.example.com:backup2024Q1",
    "ssh git@github.com:acme/infra.git",
])
def test_pass_as_a_verb_and_an_address_beside_other_things_are_not(text):
    assert found(text) == []


def test_a_long_run_of_letters_after_recovery_is_not_split_into_codes():
    run = "recovery log: " + "QmVkcm9ja0FQSUtleS1" * 12 + " done"
    assert "hard.secret.recovery_code" not in {h.rule_id for h in find_secrets(run)}
