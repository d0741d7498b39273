"""Layer 3: keyword assignments (`password = "..."`, `api_key: ...`, `"token": "..."`): a
name holding a secret keyword that is not a description, and the literal assigned to it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from pipelines.policy_rules.secrets.dictionary import word_starts
from pipelines.policy_rules.secrets.generated import _looks_generated, _symbol_alphabet_key
from pipelines.policy_rules.secrets.hit import SecretHit
from pipelines.policy_rules.secrets.placeholders import _is_placeholder_token
from pipelines.policy_rules.secrets.scanning import _scan, tried_at_leading_literals
from pipelines.policy_rules.secrets.values import _is_bare_key_value, _is_password_value, _is_token_value
from pipelines.policy_rules.secrets.vendors import vendor_example

_PASSWORD_WORDS = r"pass(?:word|wd|phrase|code)?|pwd|pw|psk|contrase[nñ]a|senha|kennwort|secret"
_TOKEN_WORDS = (
    r"token|api[_\-]?key|apikey|access[_\-]?key|auth[_\-]?key|private[_\-]?key|"
    r"client[_\-]?key|signing[_\-]?key|encryption[_\-]?key|master[_\-]?key|credentials?|"
    r"auth|nkey|key|session[_\-]?id|cookie"
)
_KW = re.compile(rf"(?i)(?:{_PASSWORD_WORDS}|{_TOKEN_WORDS})s?(?![a-z])")
tried_at_leading_literals(_KW)
_PASSWORD_KW = re.compile(rf"(?i)(?:{_PASSWORD_WORDS})s?")
SECRET_KEYWORD = _KW  # for the learned layer's features
PASSWORD_KEYWORD = _PASSWORD_KW  # its trailing "s?" changes no search() result
# Lower-case words a keyword may be glued to ("apikey", "secretkey", "userpassword").
_GLUE_PREFIXES = frozenset(
    """api auth access secret private client consumer session master app db admin root user
    bot ssh gpg pgp encryption signing refresh bearer oauth pass my new old sa service account
    database redis mysql postgres pg mongo smtp mail ftp sftp ldap vault hmac webhook x
    """.split()
)
# The keywords' words and the glue prefixes, as words of a name run together in capitals
# ("STRIPEAPIKEY", "TWILIOAUTHTOKEN"): `word_starts` splits such a name with them.
_NAME_WORDS = _GLUE_PREFIXES | frozenset(
    """password passwd passphrase passcode pass pwd pw psk secret token api apikey key access auth
    private client signing encryption master credential credentials session cookie""".split()
)
_NAME_CHARS = re.compile(r"[\w.\-$@]")
_QUOTE = r"(?:``|\\?[\"'`]|&#3[49];|&quot;|&apos;)"
_ASSIGN = re.compile(
    rf"(?P<close>(?:{_QUOTE}|\]|\[\d*\]|\)){{0,3}})[ \t]*"
    r"(?P<op>:=|=>|->|\+=|\|\|=|\?\?=|===?|!==?|:|=|\((?=[ \t]*[@rbuRBU]{0,2}[\"'`])|[ \t])"
    r"[ \t]*(?:\[[ \t]*|\{[ \t]*)?"
    rf"(?:[@rbuRBU]{{0,2}}(?P<q>{_QUOTE})(?P<qval>.{{0,300}}?)(?P=q)"
    r"|(?P<val>[^\s,;\"'`<>&|]{1,300}))"
)
_REVERSE_COMPARE = re.compile(
    rf"(?P<q>[\"'`])(?P<qval>[^\"'`\n]{{4,200}})(?P=q)\s*(?:===?|!==?)\s*[\w.]*?(?:{_PASSWORD_WORDS}|{_TOKEN_WORDS})",
    re.IGNORECASE,
)
# A name whose part after the keyword describes a credential instead of holding one. Words of
# up to three letters ("re", "id", "len") must start a segment or camelCase hump: as bare
# endings they would match "_secure" or "_here".
_DESCRIPTIVE_TAIL = re.compile(
    r"(?i)^(?:s?(?:[_\-.]|(?<=[a-z])(?=[A-Z])))?(?:.*?(?:"
    r"names?|types?|endpoints?|paths?|files?|filename|length|size|count|field|column|table|format|mode|"
    r"polic(?:y|ies)|expiry|expires|expiration|validity|timeout|header|label|prompt|placeholder|hint|"
    r"regex|pattern|required|enabled|disabled|version|provider|strategy|method|algorithm|source|store|"
    r"manager|class|kind|variable|prefix|suffix|reset|changed|change|hash|hashed|digest|salt|rounds|"
    r"iterations|limit|lifetime|duration|period|location|template|schema|generator|strength|rules|index|"
    r"valid|invalid|error|errors|message|text|input|validator|helper|handler|service|client|repository|"
    r"repo|util|utils|widget|form|dialog|button|screen|page|view|controller|component|param|params|flag|"
    r"code|complexity|configuration|config|request|response|result|results|value_?type|spec|test|tests|"
    r"mock|stub|fixture|func|callback|exists|missing|check|checker|verify|verifier|encoder|decoder|parser|"
    r"reader|writer|builder|factory|options|opts|settings|usage|policy|rotation|path|vault|storage|holder|"
    r"slot|reference|bits|padding|mask|pair|usages|alias|aliases|endpoint|server|host|port|scope|scopes|"
    r"audience|issuer|claim|claims"
    r")|(?:.*?(?:[_\-.]|(?-i:(?<=[a-z])(?=[A-Z]))))?(?:"
    r"ids?|urls?|uris?|dir|len|col|ttl|re|min|max|alg|env|var|age|loc|msg|box|fn|cb|ref|sha|md5"
    r"))$"
)

_TOKENISH = re.compile(r"[A-Za-z0-9+/_\-.~=]{12,}")


def _keyword_hits(text: str, out: frozenset[re.Pattern] = frozenset()) -> Iterator[SecretHit]:
    done_until = -1
    for k in _scan(_KW, text, out):
        if k.start() < done_until:
            continue  # a second keyword inside a name already judged ("secret_key")
        name_start = _name_start(text, k.start())
        if not _keyword_stands_alone(text, name_start, k.start()):
            continue
        name_end = k.end()
        while name_end < len(text) and _NAME_CHARS.match(text[name_end]) and name_end - k.end() < 40:
            name_end += 1
        done_until = name_end
        name = text[name_start:name_end]
        kws = [m for m in _KW.finditer(name) if _keyword_stands_alone(name, 0, m.start())]
        last = kws[-1] if kws else k
        tail = name[last.end() :] if kws else text[k.end() : name_end]
        if tail and _DESCRIPTIVE_TAIL.match(tail) or re.search(r"(?i)public|pub_|pubkey|csrf|xsrf|nonce", name):
            continue
        if name == "pass" and re.match(r"[ \t]+`?[A-Za-z_][a-z0-9_]*(?:\.[A-Za-z_]\w*)*(?![\w$])", text[name_end:]):
            continue  # "pass `cache_dir` via ...": the verb (or Python's statement) before a name
        if text[max(0, name_start - 2) : name_start] == "::" or _REQUEST_TOKEN_NAME.search(name):
            continue  # a type path ("AWS::KMS::Key"), a paging or idempotency token ("NextToken")
        password_like = any(_PASSWORD_KW.fullmatch(m.group()) for m in kws) or bool(_PASSWORD_KW.fullmatch(k.group()))
        bare_key = not password_like and all(m.group().lower() in ("key", "keys") for m in kws or [k])
        hit = _assignment_value(text, name_end, password_like, bare_key)
        if hit is not None:
            yield hit
    for m in _scan(_REVERSE_COMPARE, text, out):
        value = m.group("qval")
        if _is_password_value(value, quoted=True):
            yield SecretHit("hard.secret.keyword_assignment", m.start("qval"), m.end("qval"))


# Tokens and keys that name a place in a listing or a request, not a credential: "NextToken",
# "page_token", "continuationToken", "sync_token", "idempotency-token", the "Idempotency-Key"
# header (a client-chosen id, usually a UUID).
_REQUEST_TOKEN_NAME = re.compile(
    r"(?i)(?:next|page|pagination|continuation|sync|idempotency|cancel(?:lation)?|resume)[_\-]?tokens?(?![a-z])"
    r"|(?:next|page|pagination|continuation|idempotency)[_\-]?keys?(?![a-z])"  # "Idempotency-Key", "NextPageKey"
)


def _name_start(text: str, kw_start: int) -> int:
    i = kw_start
    while i > 0 and _NAME_CHARS.match(text[i - 1]) and kw_start - i < 60:
        i -= 1
    return i


def _keyword_stands_alone(text: str, name_start: int, kw_start: int) -> bool:
    """The keyword starts a word, a name segment or a camelCase hump, is glued to a known
    prefix ("apikey") or starts a word of a name in capitals ("STRIPEAPIKEY"); "monkey",
    "MONKEY" and "Authentication" do not count."""
    if kw_start == 0 or not text[kw_start - 1].isalpha():
        return True
    if text[kw_start].isupper() and text[kw_start - 1].islower():
        return True
    lower = text[kw_start].islower()
    j = kw_start
    while j > name_start and text[j - 1].isalpha() and text[j - 1].islower() == lower:
        j -= 1
    if j > name_start and lower and text[j - 1].isupper():
        j -= 1  # "Apitoken": a capitalised glued prefix
    if text[j:kw_start].lower() in _GLUE_PREFIXES:
        return True
    # A name of words run together in capitals ("STRIPEAPIKEY", "TWILIOAUTHTOKEN"): the keyword
    # stands alone where a dictionary split of the run starts a word ("MONKEY", "BYPASS" do
    # not). Only a whole word of capitals ("JWTSecret", "OAuth" go on in lower case: as before);
    # lower case runs words together in package and type names too ("io.jsonwebtoken").
    if lower:
        return False
    end = kw_start
    while end < len(text) and end - j < 48 and text[end].isalpha() and text[end].isupper():
        end += 1
    if end - j >= 48 or (end < len(text) and text[end].isalpha()):
        return False
    return kw_start - j in word_starts(text[j:end].lower(), _NAME_WORDS)


_CODE_WORDS = frozenset(
    "await async new function lambda yield return this self null nil none true false get "
    "require import typeof sizeof const let var def fn func static final string".split()
)


def _assignment_value(text: str, pos: int, password_like: bool, bare_key: bool = False) -> SecretHit | None:
    """The secret assigned to the name ending at `pos`, if any: the literal after the
    operator, or for token-like names a wrapped value further along the line."""
    held = _SECRET_HOLDER.match(text, pos)
    if held is not None and not bare_key:
        value = held.group("lit")
        if value.startswith("/"):
            return None  # a path naming where the credential lives
        ok = _is_password_value(value, quoted=True) if password_like else token_literal(value, quoted=True)
        return SecretHit("hard.secret.keyword_assignment", held.start("lit"), held.end("lit")) if ok else None
    a = _ASSIGN.match(text, pos)
    if a is None:
        pair = _QUOTED_PAIR.match(text, pos)
        if pair is None:
            return None
        return _literal_hit(pair.group("qval"), pair.start("qval"), True, password_like, bare_key,
                            text[_name_start(text, pos):pos])
    quoted = a.group("qval") is not None
    value = _assigned_literal(text, pos, a, password_like)
    if value:
        start = a.start("qval") if quoted else a.start("val")
        name = text[_name_start(text, pos):pos]
        hit = _literal_hit(value, start, quoted, password_like, bare_key, name)
        if hit is not None:
            return hit
        if not quoted and value.rstrip(".)]}").strip() == name.strip():
            return None  # no wrapped value to look for either
    if password_like or bare_key or (value is not None and value[:1] not in "{[\\"):
        return None
    return _wrapped_token_hit(text, pos)


# A quoted name and a quoted value as the two arguments of a call or the two items of a pair:
# `define('DB_PASSWORD', '...')` (PHP's constants, WordPress' wp-config.php), `os.environ.setdefault(
# "API_TOKEN", "...")`, `("password", "...")`. The pair must close there: a longer list of
# names (`('username', 'password', 'email')`) is none.
_QUOTED_PAIR = re.compile(r"(?P<close>[\"'])[ \t]*,[ \t]*(?P<q>[\"'])(?P<qval>[^\"'\n]{1,200})(?P=q)[ \t]*[)\]]")


# A literal handed to a type made to hold a secret (`SecretStr("...")`, `new SecureString("...")`,
# `StringCredentialValue("...")`): the wrapper says the literal is the credential.
_SECRET_HOLDER = re.compile(
    r"[ \t]*(?::=|=|:)[ \t]*(?:new[ \t]+)?[\w.]*(?:Secret|Secure|Passw(?:or)?d|Credential)\w*\([ \t]*"
    r"[rbuRBU]{0,2}(?P<q>[\"'])(?P<lit>[^\"'\n]{1,128})(?P=q)[ \t]*\)"
)


def _assigned_literal(text: str, pos: int, a: re.Match[str], password_like: bool) -> str | None:
    """The value `_ASSIGN` matched, or None when it is not a literal being assigned."""
    if ")" in a.group("close"):
        return None  # f(password): x -- code, not an assignment
    if a.group("op") == "(" and password_like:
        return None  # CheckPassword("alice", ...): the first argument is not the password
    value = a.group("qval")
    if value is not None:
        return None if "\n" in value or len(value) > 200 else value
    value = a.group("val")
    if value is None or _unquoted_value_is_not_literal(text, pos, a, value):
        return None
    if text.startswith("&", a.end("val")):
        # `&` ends a value in a query string or before an HTML entity; inside a generated key
        # of punctuation and letters it is one more character of the key
        whole = _UNQUOTED_RUN.match(text, a.start("val"))
        if whole is not None and _symbol_alphabet_key(whole.group()) and not _QUERY_PARAMETER.search(whole.group()):
            return whole.group()
    return value


_UNQUOTED_RUN = re.compile(r"[^\s,;\"'`<>|]{1,300}")
_QUERY_PARAMETER = re.compile(r"&(?:[A-Za-z_][\w.\-]*=|[a-z]+;|#\d+;)")


def _unquoted_value_is_not_literal(text: str, pos: int, a: re.Match[str], value: str) -> bool:
    """An unquoted value that is really an expression or the next word of prose."""
    after = text[a.end("val") :]
    if re.search(r"\\[nrt]", value):
        after = ""  # an escaped line break inside the value ends its line (escaped YAML or JSON)
    if a.group("op").strip() == "" and not _config_style_name(text, pos):
        return True
    if value.lower() in _CODE_WORDS or re.match(r"\s*[(.]", after):
        return True  # an expression: "secret = await ...", "pw = getpass()"
    if a.group("op") == ":" and value.rstrip(",)") in _TYPE_NAMES:
        return True  # a type annotation: "password: bool = False", "token: Optional[str]"
    if text[a.start("val") - 1 : a.start("val")] == "{" and re.search(r"\}$", value) or after.startswith("}"):
        return True  # a template field: f"password={password!r}", "{token:>8}"
    # prose: ":param client_secret: The secret paired to ..."
    return bool(re.match(r"[ \t]+[A-Za-z`]", after)) and not re.match(r"[ \t]+[\w.\-]+=", after)


_TYPE_NAMES = frozenset(
    "bool str int float bytes string number boolean any object Optional Union List Dict Any list dict "
    "Text SecretStr SecretBytes".split()
)


def _literal_hit(value: str, start: int, quoted: bool, password_like: bool, bare_key: bool,
                 name: str = "") -> SecretHit | None:
    """Judge the literal by the kind of name it is assigned to."""
    if not quoted:
        # an escaped line break ends an unquoted value inside escaped JSON or a string literal
        value = re.split(r"\\[nrt]", value)[0] or value
        value = value.rstrip(".)]}") or value  # closing punctuation of the sentence or call
        if name and value.strip() == name.strip().lstrip("-"):
            return None  # `f(token_ids=token_ids)`: a variable handed on under its own name
    if password_like:
        ok = _is_password_value(value, quoted=quoted)
    elif bare_key:
        ok = _is_bare_key_value(value, quoted=quoted) and not vendor_example(value)
    else:
        ok = token_literal(value, quoted=quoted)
    return SecretHit("hard.secret.keyword_assignment", start, start + len(value)) if ok else None


def token_literal(value: str, *, quoted: bool) -> bool:
    """A token-like name's literal: generated-looking (`_is_token_value`), and not a made-up
    example of a vendor's format, which the vendor rule lets through (`vendor_example`)."""
    return _is_token_value(value, quoted=quoted) and not vendor_example(value)


def _wrapped_token_hit(text: str, pos: int) -> SecretHit | None:
    """Token-like names whose value is wrapped (escaped JSON, nested objects): the first
    generated-looking token on the same line within reach of the assignment."""
    line_end = text.find("\n", pos)
    window_end = min(len(text) if line_end < 0 else line_end, pos + 160)
    for t in _TOKENISH.finditer(text, pos, window_end):
        token = t.group().strip(".=")
        if token.startswith("/") or token.count("/") >= 2 or "www." in token:
            continue  # paths and URLs
        if re.search(r"\w=\w", token):
            continue  # "RUNNING_IN_CI=true", "grant_type=client_credentials": another assignment
        if re.fullmatch(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+", token):
            continue  # "self.word2idx": an attribute path
        if _looks_generated(token, min_len=12) and not _is_placeholder_token(token):
            return SecretHit("hard.secret.keyword_assignment", t.start(), t.start() + len(token))
    return None


def _config_style_name(text: str, pos: int) -> bool:
    """`POSTGRES_PASS P4ss...` style (name then space then value) only for names that
    look like configuration keys (upper case or with underscores), not prose words."""
    start = _name_start(text, pos)
    name = text[start:pos]
    if name.startswith("$"):
        return False  # "$TOKEN next-word": a shell variable being used, not a key being set
    return "_" in name or (name.isupper() and len(name) > 3)


_PUBLIC_NAME = re.compile(
    r"(?i)public|pub_|csrf|xsrf|authenticity|signature|checksum|integrity|hash|digest|etag"
    r"|(?:sha|crc)(?:\d+|(?![a-z]))|md5"  # "CodeSha256", "crc32"; not "shared_secret"
    r"|(?:^|[_\-.])(?:id|Id|ID)s?$|(?-i:(?<=[a-z])(?:Id|ID)s?$)"  # identifiers: "TenantId", "object_id"
)
