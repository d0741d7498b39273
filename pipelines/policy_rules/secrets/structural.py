"""Layer 2: structural credentials: PEM private keys, `scheme://user:pass@host`,
Authorization / Bearer / Basic headers, Basic credentials being encoded, `curl -u user:pass`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from pipelines.policy_rules.secrets.encoded import _encoded_credential_hits
from pipelines.policy_rules.secrets.generated import _looks_generated
from pipelines.policy_rules.secrets.hit import SecretHit
from pipelines.policy_rules.secrets.placeholders import _is_placeholder, _is_placeholder_token
from pipelines.policy_rules.secrets.scanning import _scan
from pipelines.policy_rules.secrets.values import _is_password_value

_PEM_PRIVATE = re.compile(r"-----BEGIN[ A-Z0-9]{0,30}PRIVATE KEY(?: BLOCK)?-----(?P<body>[\s\S]{0,200})")
_URL_CREDENTIALS = re.compile(
    r"\b[a-zA-Z][a-zA-Z0-9+.\-]{1,20}://(?P<user>[^\s:/@'\"<>]{0,64}):(?P<pw>[^\s@/'\"<>]{1,128})@[\w\-\[%]"
)
_AUTH_HEADER = re.compile(
    r"(?i)\b(?:proxy-)?authori[sz]ation\b[\\\"'\]]{0,3}\s*[:=,]\s*[\\\"']{0,2}\s*"
    r"(?:(?P<scheme>[A-Za-z][\w\-]{1,20})\s+)?(?P<value>[A-Za-z0-9._~+/=\-:]{8,})"
)
_SCHEME_TOKEN = re.compile(
    r"(?i)\b(?P<scheme>bearer|basic|ntlm|negotiate|digest|token)[ \t]+(?P<value>[A-Za-z0-9._~+/\-]{12,}=*)"
)
_BASIC_ENCODE = re.compile(
    r"(?i)\b(?:b64encode|btoa|encodebytes|encodestring|encodeToString|base64_encode|strict_encode64|encode64)"
    r"\s*\(\s*[bB]?(?P<q>[\"'])(?P<user>[^\"':\s]{1,64}):(?P<pw>[^\"'\s]{1,128})(?P=q)"
)
_CURL_USER = re.compile(r"(?i)(?:^|\s)(?:-u|--user)[\s=]*(?P<cred>\"[^\"\n]*\"(?::\"[^\"\n]*\")?|'[^'\n]*'|\S+)")


def _structural_hits(text: str, out: frozenset[re.Pattern] = frozenset()) -> Iterator[SecretHit]:
    for m in _scan(_PEM_PRIVATE, text, out):
        body = m.group("body")
        if body.strip() and not body.lstrip().startswith("-----END"):
            yield SecretHit("hard.secret.private_key", m.start(), m.end())
    for m in _scan(_URL_CREDENTIALS, text, out):
        if _is_password_value(m.group("pw"), quoted=True):
            yield SecretHit("hard.secret.url_credentials", m.start("pw"), m.end("pw"))
    for m in _scan(_AUTH_HEADER, text, out):
        value = m.group("value")
        scheme = (m.group("scheme") or "").lower()
        if scheme == "basic":
            ok = len(value) >= 8 and not _is_placeholder(value) and not _is_placeholder_token(value)
        else:
            ok = _looks_generated(value, min_len=10)
        if ok:
            yield SecretHit("hard.secret.auth_header", m.start("value"), m.end("value"))
    for m in _scan(_SCHEME_TOKEN, text, out):
        value = m.group("value")
        if m.group("scheme").lower() == "basic":
            ok = (
                re.fullmatch(r"[A-Za-z0-9+/]{8,}={0,2}", value) is not None
                and re.search(r"[0-9+/=]|[a-z][A-Z]", value) is not None  # not "basic understanding"
                and not _is_placeholder(value)
            )
        else:
            ok = _looks_generated(value, min_len=12)
        if ok and not _is_placeholder_token(value):
            yield SecretHit("hard.secret.auth_header", m.start("value"), m.end("value"))
    for m in _scan(_BASIC_ENCODE, text, out):
        # "user:password" base64-encoded in code is an HTTP Basic credential being built
        if _is_password_value(m.group("pw"), quoted=True):
            yield SecretHit("hard.secret.url_credentials", m.start("pw"), m.end("pw"))
    yield from _encoded_credential_hits(text)
    for m in _scan(_CURL_USER, text, out):
        # `-u user` alone makes curl prompt for the password: only `user:password` holds one,
        # or `token:` (an API key as the user name, no password).
        cred = m.group("cred").replace('"', "").replace("'", "")
        user, colon, pw = cred.partition(":")
        if not colon or cred.startswith("<"):
            continue
        if not pw.startswith("${"):
            pw = pw.strip("{}")  # `--user "{id}":"{secret}"`
        if pw and _is_password_value(pw, quoted=True) or not pw and _looks_generated(user, min_len=10):
            pw = pw or user
            at = text.find(pw, m.start("cred"))
            at = m.start("cred") if at < 0 else at
            yield SecretHit("hard.secret.url_credentials", at, at + len(pw))
