"""Credentials in formats that name them without `name = value`: attribute pairs
(`<add key="SmtpPassword" value="..."/>`), .netrc entries, passwords given to a command.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from pipelines.policy_rules.secrets.hit import SecretHit
from pipelines.policy_rules.secrets.keywords import (
    _DESCRIPTIVE_TAIL,
    _KW,
    _PASSWORD_KW,
    _PUBLIC_NAME,
    _REQUEST_TOKEN_NAME,
    _keyword_stands_alone,
    _literal_hit,
)
from pipelines.policy_rules.secrets.values import _is_password_value

# A name and its value as two attributes of one element: .NET `<add key="SmtpPassword"
# value="..."/>`, HTML `<input name="api_key" value="...">`, Java `<entry key=... value=...>`.
_ATTRIBUTE_PAIR = re.compile(
    r"(?i)\b(?:key|name)[ \t]*=[ \t]*(?P<q>[\"'])(?P<name>[\w.\-:]{2,60})(?P=q)[ \t]+"
    r"value[ \t]*=[ \t]*(?P<q2>[\"'])(?P<val>[^\"'\n]{1,200})(?P=q2)"
)
# .netrc / _netrc (curl, git, ftp, Heroku's CLI): "machine HOST login USER password PASS".
# The machine is a host name with a dot, localhost or an address ("machine learning password
# ..." is prose); `default` needs its login.
_NETRC = re.compile(
    r"\b(?:machine[ \t]+(?:[\w\-]+\.[\w.\-]+|localhost|\[[\d:a-fA-F]+\])\s+(?:login[ \t]+\S+\s+)?"
    r"|default\s+login[ \t]+\S+\s+)password[ \t]+(?P<pw>\S+)"
)
# The MySQL/MariaDB clients take the password glued to -p ("-pS3cret"; "-p" alone prompts).
_MYSQL_PASSWORD = re.compile(
    r"\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlcheck|mysqlshow|mariadb|mariadb-dump)\b"
    r"[^\n|;&]{0,200}?[ \t]-p(?P<pw>'[^'\n]+'|\"[^\"\n]+\"|[^\s'\"]+)"
)
# Other command-line tools' documented password options, as (command names, option) pairs: the
# option's argument is the password. An option alone ("-p" with nothing, "--password-stdin")
# makes the tool prompt or read stdin and holds none; a `$VAR` or `<placeholder>` argument
# is a reference (`_is_password_value` decides, as for every password value).
_CLI_PASSWORD_OPTIONS: tuple[tuple[str, str], ...] = (
    (r"sshpass", r"-p[ \t]*"),
    (r"(?:docker|podman|buildah|skopeo|nerdctl|helm[ \t]+registry|oras)[ \t]+login", r"(?:-p|--password)(?:[ \t]+|=)"),
    (r"redis-cli|keydb-cli", r"-a[ \t]+|--pass[ \t]+"),
    (r"ldap(?:search|modify|add|delete|passwd|whoami|compare)", r"-w[ \t]*"),
    (r"mongo(?:sh|dump|restore|import|export)?", r"(?:-p|--password)(?:[ \t]+|=)"),
    (r"openssl", r"-(?:passout|passin|pass|password)[ \t]+(?:pass:)"),
    (r"smbclient|rpcclient|smbmap|crackmapexec|netexec|nxc", r"-U[ \t]+['\"]?[^\s%'\"]{1,64}%"),
    (r"htpasswd", r"-[a-zA-Z]*b[a-zA-Z]*(?:[ \t]+-[a-zA-Z]+)*[ \t]+\S+[ \t]+\S+[ \t]+"),
    (r"net[ \t]+use", r"/user:\S+[ \t]+"),
    (r"(?:plink|pscp|psftp)(?:\.exe)?", r"-pw[ \t]+"),
    (r"sqlcmd|bcp|isql", r"-P[ \t]*"),
    (r"(?:wget|curl|lftp|ncftp\w*)", r"--(?:ftp-|http-)?password(?:[ \t]+|=)"),
    (r"az[ \t]+login", r"(?:-p|--password)(?:[ \t]+|=)"),
)
_CLI_PASSWORD = re.compile(
    r"(?i)(?<![\w\-/.])(?:" + "|".join(
        rf"(?:{tool})(?:\.exe)?\b[^\n|;&]{{0,160}}?(?<![\w\-])(?-i:{option})"
        for tool, option in _CLI_PASSWORD_OPTIONS
    ) + r")(?P<pw>'[^'\n]+'|\"[^\"\n]+\"|[^\s'\"]+)"
)
# Passwords handed to a command through its documented environment variable, written before
# the command on the same line ("PGPASSWORD=s3cret pg_dump ...", "SSHPASS=... sshpass -e").
_ENV_PASSWORD_PREFIX = re.compile(
    r"(?<![\w$])(?:PGPASSWORD|MYSQL_PWD|SSHPASS|REDISCLI_AUTH|LFTP_PASSWORD|SQLCMDPASSWORD|RSYNC_PASSWORD"
    r"|ISQL_PASSWORD)=(?P<pw>'[^'\n]+'|\"[^\"\n]+\"|[^\s'\"]+)(?=[ \t]+[\w./])"
)
# Every `_CLI_PASSWORD` match holds one of these tool names (lower-cased), every
# `_ENV_PASSWORD_PREFIX` match one of the others.
_CLI_TOOLS = ("sshpass", "login", "-cli", "ldap", "mongo", "openssl", "smbclient", "rpcclient", "smbmap",
              "crackmapexec", "netexec", "nxc", "htpasswd", "net use", "plink", "pscp", "psftp", "sqlcmd", "bcp",
              "isql", "wget", "curl", "lftp", "ncftp")
_ENV_LITERALS = ("PGPASSWORD", "MYSQL_PWD", "SSHPASS", "REDISCLI_AUTH", "_PASSWORD=", "SQLCMDPASSWORD")


def _command_line_hits(text: str) -> Iterator[SecretHit]:
    """Passwords given to a command: MySQL's glued `-p`, the password options of other
    command-line tools (`_CLI_PASSWORD_OPTIONS`), and password environment variables set
    before the command."""
    scans = []
    if "-p" in text:
        scans.append(_MYSQL_PASSWORD)
    low = text.lower()
    if any(w in low for w in _CLI_TOOLS):
        scans.append(_CLI_PASSWORD)
    if any(w in text for w in _ENV_LITERALS):
        scans.append(_ENV_PASSWORD_PREFIX)
    for rx in scans:
        for m in rx.finditer(text):
            pw = m.group("pw")
            quoted = pw[:1] in "'\"" and pw[-1:] == pw[:1] and len(pw) > 1
            if _is_password_value(pw, quoted=True):
                start = m.start("pw") + quoted
                yield SecretHit("hard.secret.command_line_password", start, m.end("pw") - quoted)


def _config_format_hits(text: str) -> Iterator[SecretHit]:
    """Credentials in formats that name them without `name = value`: attribute pairs,
    .netrc entries and passwords given to a command (`_command_line_hits`)."""
    if "value" in text or "VALUE" in text or "Value" in text:
        for m in _ATTRIBUTE_PAIR.finditer(text):
            hit = _named_value_hit(m.group("name"), m.group("val"), m.start("val"))
            if hit is not None:
                yield hit
    if "password" in text:
        for m in _NETRC.finditer(text):
            if _is_password_value(m.group("pw"), quoted=True):
                yield SecretHit("hard.secret.keyword_assignment", m.start("pw"), m.end("pw"))
    yield from _command_line_hits(text)


def _named_value_hit(name: str, value: str, start: int) -> SecretHit | None:
    """`value` (a quoted literal at `start`) judged as `_keyword_hits` judges a literal
    assigned to `name`: only names holding a secret keyword that is not a description."""
    kws = [k for k in _KW.finditer(name) if _keyword_stands_alone(name, 0, k.start())]
    if not kws:
        return None
    tail = name[kws[-1].end():]
    if tail and _DESCRIPTIVE_TAIL.match(tail) or re.search(r"(?i)nonce", name) or _PUBLIC_NAME.search(name) \
            or _REQUEST_TOKEN_NAME.search(name):
        return None  # a description, or a value public or a check by its name ("authenticity_token")
    password_like = any(_PASSWORD_KW.fullmatch(k.group()) for k in kws)
    bare_key = not password_like and all(k.group().lower() in ("key", "keys") for k in kws)
    return _literal_hit(value, start, True, password_like, bare_key, name)
