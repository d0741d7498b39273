# ruff: noqa: E501  (rows of data, one a line)
"""Write a third look-alike probe (issue 14, policy 2026.11-20), from naming conventions and the
formats' specifications, not from any dev file: identifiers made of words (PascalCase,
camelCase, snake_case, one case run together) and random keys of the same alphabets (52
letters, one case of 26), each under token-like names spelled in every convention code uses
(`apiKey`, `api_key`, `API_KEY`, `api-key`, `ApiKey`) and in every syntax they are assigned in
(code, JSON, YAML, .env); paths of names with two or more slashes beside base64 that holds
two or more slashes; vendor prefixes followed by words ("LTAI" + "SomethingVeryLong") beside
keys of the vendors' documented lengths and alphabets. Seeded. Run as
`make_secrets_lookalikes.py`."""

import base64
import random
import string
import sys

from probe_rows import ProbeRows

R = random.Random(20261129)
ALNUM = string.ascii_letters + string.digits
# Words that code names are made of: design-pattern and framework vocabulary, the nouns of
# business software, environments, and the plain English of placeholders.
WORDS = """
abstract singleton proxy factory bean session cookie signing key token request response handler
manager service provider client server config default custom user account payment gateway webhook
secret auth access refresh deploy staging production local development test mock stub example demo
internal external public private shared cache store storage bucket queue event message notification
stream pipeline builder adapter wrapper listener observer controller view model repository entity
context registry resolver validator serializer parser encoder decoder channel connection socket
transport retry policy strategy interceptor filter middleware router endpoint resource document
profile settings preference feature flag toggle metrics logger tracer upload download image
thumbnail search index analytics billing invoice subscription customer order product inventory
shipping address some thing very long value real fake sample your own here goes replace with
application integration environment credential identity principal signature header template
""".split()
NAMES = ("api key", "auth token", "access token", "client key", "signing key", "stripe api key", "access key")


def spell(words, style):
    """`words` in one naming convention."""
    if style == "pascal":
        return "".join(w.capitalize() for w in words)
    if style == "camel":
        return words[0] + "".join(w.capitalize() for w in words[1:])
    if style == "snake":
        return "_".join(words)
    if style == "upper":
        return "_".join(words).upper()
    if style == "kebab":
        return "-".join(words)
    if style == "lower":
        return "".join(words)
    return "".join(words).upper()  # "flat upper"


def name():
    words = R.choice(NAMES).split()
    return spell(words, R.choice(["snake", "camel", "upper", "kebab", "pascal"]))


def assign(value):
    """`value` under a token-like name, in one of the syntaxes code and config use."""
    n = name()
    return R.choice([
        f'{n} = "{value}"', f"{n}: '{value}'", f'"{n}": "{value}",', f"{n}: {value}",
        f"const {n.replace('-', '_')} = '{value}';", f"{n.upper().replace('-', '_')}={value}",
        f'export {n.upper().replace("-", "_")}="{value}"', f'<add key="{n}" value="{value}" />',
    ])


def identifier(style, lo=3, hi=6):
    while True:
        v = spell(R.sample(WORDS, R.randint(lo, hi)), style)
        if 20 <= len(v) <= 48:
            return v


def letters(alphabet):
    return "".join(R.choice(alphabet) for _ in range(R.choice([20, 24, 32, 40])))


def b64_with_slashes():
    while True:
        v = base64.b64encode(R.randbytes(R.choice([24, 30, 32, 40, 48]))).decode()
        if v.count("/") >= 2:
            return v


PATH_ROOTS = ["usr/local/lib", "var/lib/docker/volumes", "home/ubuntu/projects", "Users/jsmith/Library",
              "src/main/java/com/acme", "api/v2/users", "refs/heads/feature", "opt/homebrew/Cellar",
              "etc/nginx/sites", "app/src/main/res", "node/modules/types", "srv/data/2024/11"]


def path():
    words = R.sample(WORDS, R.randint(1, 3))
    tail = R.choice([spell(words, "pascal"), spell(words, "lower"), str(R.randint(1, 99999)), spell(words, "camel")])
    return f"{R.choice(PATH_ROOTS)}/{tail}"


rows = ProbeRows("probe3")
N = 60
for style in ("pascal", "camel", "lower", "flat_upper"):
    rows.add(f"identifier_{style}", 0, [assign(identifier(style)) for _ in range(N)])
rows.add("identifier_snake", 0, [assign(identifier(R.choice(["snake", "upper", "kebab"]))) for _ in range(N)])
rows.add("random_letters_mixed", 1, [assign(letters(string.ascii_letters)) for _ in range(N)])
rows.add("random_letters_lower", 1, [assign(letters(string.ascii_lowercase)) for _ in range(N)])
rows.add("random_letters_upper", 1, [assign(letters(string.ascii_uppercase)) for _ in range(N)])
rows.add("base64_slashes", 1, [R.choice(["here it is {} ok", "the token is {}", "use {} for the staging box", "{}"]).format(b64_with_slashes()) for _ in range(N)]
         + [assign(b64_with_slashes()) for _ in range(N // 2)])
rows.add("path", 0, [R.choice(["the file lives in {}", "cd {} and run make", "see {} for the handler", "{}"]).format(path()) for _ in range(N)])
# Vendor prefixes: Alibaba Cloud AccessKey IDs are "LTAI" and 20 (formerly 12 or 16) letters and
# digits; Tencent Cloud SecretIds "AKID" and 32; GitHub classic tokens "ghp_" and 36; AWS access
# key ids "AKIA" and 16 capitals and digits (the prefix and the length are the spec; the
# words after them are what a made-up example puts there).
VENDORS = (("LTAI", ALNUM, 20), ("AKID", ALNUM, 32), ("ghp_", ALNUM, 36), ("AKIA", string.ascii_uppercase + "234567", 16))


def vendor_words(prefix, n):
    words = R.sample(WORDS, 8)
    body = R.choice(["", str(R.randint(1, 9)) + R.choice("abcdefghijklmnopqrstuvwxyz")])
    for w in words:
        body += w.upper() if prefix == "AKIA" else w.capitalize()
        if len(body) >= n:
            break
    return prefix + body[:n]


rows.add("vendor_prefix_words", 0, [R.choice(["{}", "key id {}", assign("{}")]).format(vendor_words(p, n)) for _ in range(N // 4) for p, _a, n in VENDORS])
rows.add("vendor_prefix_key", 1, [R.choice(["{}", "key id {}", assign("{}")]).format(p + "".join(R.choice(a) for _ in range(n))) for _ in range(N // 4) for p, a, n in VENDORS])
rows.write(sys.argv[1])
