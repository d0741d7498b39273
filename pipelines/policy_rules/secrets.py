"""Credential detection for memory writes.

Layers, most specific first:

1. Vendor token formats. detect-secrets' format-specific plugins (AWS, GitHub, GitLab,
   Slack, Stripe, JWT, ...) are used through their `denylist` regexes; its entropy and
   keyword plugins are not, because `scan_line` reports every high-entropy candidate
   without applying the entropy limit and flags ordinary prose. Formats detect-secrets does
   not know (Anthropic, Hugging Face, Google, GitHub fine-grained, 1Password, ...) are
   regexes of the vendors' published prefixes. A match embedded in a longer word, whose
   body is a filler (a run of x, one character, a repeated unit: "ghp_xxxx...",
   "GR1348941231231231..."), or a JWT whose header decodes to broken JSON does not count.
2. Structural credentials: PEM private keys, `scheme://user:pass@host`, Authorization /
   Bearer / Basic headers, `curl -u user:pass` (or `-u token:`).
3. Keyword assignments (`password = "..."`, `api_key: ...`, `"token": "..."`, escaped JSON
   and HTML-escaped forms too): a secret keyword in the name and a value that is a
   literal, not a placeholder, template, variable reference, hash or code expression.
   Token/key-like names also need a value that looks generated (our own entropy limit).
   A password value that zxcvbn finds among the 10^4 most guessable ("testpass") or that
   is dictionary words naming a credential ("some-password") is a fixture in code: it does
   not count (layer 4 still catches a weak password stated in a sentence).
4. Plain-sentence secrets, which no code scanner looks for: "my wifi password is
   BlueFalcon!2024", "the PIN is 4921", "door code: 0000", card numbers (Luhn-checked,
   with a card keyword or 4-4-4-4 grouping), social security numbers next to "SSN"; the other
   way round too ("4471 is my PIN", "I changed my wifi password to ..."), beside its name in
   any order ("use 4471 as the PIN", "my PIN, 4471", "5812 (the door code)"), and across two
   fields (`find_labelled_value`: a title "Bank PIN" over the content "4471").
5. Long generated-looking tokens anywhere (mixed case + digits, entropy >= 4.5 bits/char,
   detect-secrets' base64 limit applied by us; hex alone never, commit ids are common),
   except in public key / certificate blocks, password hashes and values of names that
   say public, CSRF, signature or hash.

Every hit is a (rule_id, start, end) span over the original text.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from zxcvbn import matching as zxcvbn_matching
from zxcvbn import scoring as zxcvbn_scoring

from pipelines.policy_rules.recovery_phrases import find_recovery_phrases
from pipelines.policy_rules.text import (
    OnePass,
    char_classes,
    fold_case,
    leading_literals,
    literal_starts,
    matches_at,
    may_match,
    required_literals,
    shannon_entropy,
)


@dataclass(frozen=True, slots=True)
class SecretHit:
    rule_id: str
    start: int
    end: int


# --------------------------------------------------------------------------- vendors

# detect-secrets plugin class name -> our rule id.
_DETECT_SECRETS_PLUGINS: dict[str, str] = {
    "AWSKeyDetector": "hard.secret.aws_key",
    "ArtifactoryDetector": "hard.secret.artifactory",
    "AzureStorageKeyDetector": "hard.secret.azure_storage_key",
    "CloudantDetector": "hard.secret.cloudant",
    "DiscordBotTokenDetector": "hard.secret.discord_token",
    "GitHubTokenDetector": "hard.secret.github_token",
    "GitLabTokenDetector": "hard.secret.gitlab_token",
    "IbmCloudIamDetector": "hard.secret.ibm_cloud_iam",
    "IbmCosHmacDetector": "hard.secret.ibm_cos_hmac",
    "JwtTokenDetector": "hard.secret.jwt",
    "MailchimpDetector": "hard.secret.mailchimp_key",
    "NpmDetector": "hard.secret.npm_token",
    "OpenAIDetector": "hard.secret.openai_key",
    "PypiTokenDetector": "hard.secret.pypi_token",
    "SendGridDetector": "hard.secret.sendgrid_key",
    "SlackDetector": "hard.secret.slack_token",
    "SoftlayerDetector": "hard.secret.softlayer",
    "SquareOAuthDetector": "hard.secret.square_oauth",
    "StripeDetector": "hard.secret.stripe_key",
    "TelegramBotTokenDetector": "hard.secret.telegram_token",
    "TwilioKeyDetector": "hard.secret.twilio_key",
}


@lru_cache(maxsize=1)
def _detect_secrets_patterns() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """The format regexes of detect-secrets' vendor plugins (loaded once).

    We use the compiled `denylist` patterns rather than `analyze_string`, which returns
    capture groups (e.g. only "ghp" for a GitHub token) instead of spans."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    by_name = {cls.__name__: cls for cls in get_mapping_from_secret_type_to_class().values()}
    patterns: list[tuple[str, re.Pattern[str]]] = []
    for name, rule_id in _DETECT_SECRETS_PLUGINS.items():
        cls = by_name.get(name)
        if cls is None:
            continue
        for rx in getattr(cls, "denylist", ()):
            if isinstance(rx, re.Pattern):
                patterns.append((rule_id, rx))
    return tuple(patterns)


# Published token prefixes not covered by detect-secrets (formats, not example values).
_VENDOR_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (rule_id, re.compile(pattern))
    for rule_id, pattern in (
        ("hard.secret.anthropic_key", r"sk-ant-(?:api|admin)\d{2}-[A-Za-z0-9_\-]{80,}"),
        ("hard.secret.openai_key", r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{40,}"),
        ("hard.secret.openai_key", r"sk-[A-Za-z0-9]{48}"),
        ("hard.secret.github_token", r"github_pat_[A-Za-z0-9_]{70,}"),
        ("hard.secret.github_token", r"gh[pousr]_[A-Za-z0-9]{30,}"),
        ("hard.secret.gitlab_token", r"glpat-[A-Za-z0-9_\-]{20,}"),
        ("hard.secret.huggingface_token", r"hf_[A-Za-z]{34}"),  # weak: body checked
        ("hard.secret.google_api_key", r"AIza[0-9A-Za-z_\-]{35}"),
        ("hard.secret.google_oauth", r"ya29\.[0-9A-Za-z_\-]{30,}"),
        ("hard.secret.onepassword_token", r"ops_eyJ[A-Za-z0-9+/=_\-]{40,}"),
        ("hard.secret.onepassword_secret_key", r"A3-[A-Z0-9]{6}-(?:[A-Z0-9]{5}-){4}[A-Z0-9]{5}"),
        ("hard.secret.sourcegraph_token", r"sgp_(?:[a-fA-F0-9]{16}_|local_)?[a-fA-F0-9]{40}"),
        ("hard.secret.notion_token", r"ntn_[0-9]{11}[A-Za-z0-9]{35}"),
        ("hard.secret.notion_token", r"secret_[A-Za-z0-9]{43}"),
        ("hard.secret.slack_webhook", r"hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9+/]{40,}"),
        ("hard.secret.vault_token", r"hv[sb]\.[A-Za-z0-9_\-]{90,}"),
        ("hard.secret.vault_token", r"s\.[A-Za-z0-9]{24}"),
        ("hard.secret.intra42_secret", r"s-s4t2(?:ud|af)-[a-f0-9]{64}"),
        ("hard.secret.azure_client_secret", r"[A-Za-z0-9_~.\-]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}"),
        ("hard.secret.facebook_token", r"EAA[MC][A-Za-z0-9]{100,}"),
        ("hard.secret.facebook_token", r"\d{15,16}\|[A-Za-z0-9_\-]{27}"),
        ("hard.secret.stripe_key", r"[rs]k_(?:live|test)_[0-9a-zA-Z]{24,}"),
        # BIP-32 extended private keys (xprv, and the yprv / zprv / tprv variants): base58 after the prefix
        ("hard.secret.wallet_key", r"[xyzt]prv[1-9A-HJ-NP-Za-km-z]{100,112}"),
        ("hard.secret.shopify_token", r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}"),
        ("hard.secret.digitalocean_token", r"do[opr]_v1_[a-f0-9]{64}"),
        ("hard.secret.npm_token", r"npm_[A-Za-z0-9]{36}"),
        ("hard.secret.pypi_token", r"pypi-AgE[A-Za-z0-9_\-]{50,}"),
        ("hard.secret.sendgrid_key", r"SG\.[A-Za-z0-9_\-]{20,24}\.[A-Za-z0-9_\-]{39,50}"),
        ("hard.secret.nats_nkey", r"S[UOACNX][A-Z0-9]{56}"),
        ("hard.secret.age_key", r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
        # More vendors' documented prefixes (2026.11-17): bodies of hex or of one letter case
        # are below the high-entropy rule's bar, so without a credential word beside them
        # these were found only by their prefix. Each prefix is long or structured enough
        # that prose and code names do not spell it.
        ("hard.secret.newrelic_key", r"NR(?:AK|II|AA|JS)-[A-Z0-9]{27}"),
        ("hard.secret.postman_key", r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}"),
        ("hard.secret.doppler_token", r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,44}"),
        ("hard.secret.databricks_token", r"dapi[a-f0-9]{32}(?:-\d)?"),
        ("hard.secret.pulumi_token", r"pul-[a-f0-9]{40}"),
        ("hard.secret.terraform_token", r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=\-]{60,70}"),
        ("hard.secret.sentry_token", r"sntry[su]_[A-Za-z0-9+/=_\-]{64,}"),
        ("hard.secret.supabase_token", r"sbp_[a-f0-9]{40}"),
        ("hard.secret.perplexity_key", r"pplx-[A-Za-z0-9]{48}"),
        ("hard.secret.xai_key", r"xai-[A-Za-z0-9]{80}"),
        ("hard.secret.groq_key", r"gsk_[A-Za-z0-9]{52}"),
        ("hard.secret.dynatrace_token", r"dt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64}"),
        ("hard.secret.flutterwave_key", r"FLWSECK(?:_TEST)?-[a-f0-9]{32}-X"),
        ("hard.secret.readme_key", r"rdme_[a-z0-9]{70}"),
        ("hard.secret.rubygems_key", r"rubygems_[a-f0-9]{48}"),
        ("hard.secret.sendinblue_key", r"xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}"),
        ("hard.secret.shippo_token", r"shippo_(?:live|test)_[a-f0-9]{40}"),
        ("hard.secret.buildkite_token", r"bkua_[a-f0-9]{40}"),
        ("hard.secret.docker_token", r"dckr_pat_[A-Za-z0-9_\-]{27}"),
        ("hard.secret.typeform_token", r"tfp_[A-Za-z0-9_\-.]{59}"),
        ("hard.secret.adafruit_key", r"aio_[A-Za-z0-9]{28}"),
        ("hard.secret.atlassian_token", r"ATATT3[A-Za-z0-9_\-=]{150,}"),
        ("hard.secret.square_token", r"EAAA[A-Za-z0-9_\-]{60}"),
        ("hard.secret.google_client_secret", r"GOCSPX-[A-Za-z0-9_\-]{28}"),
        ("hard.secret.google_refresh_token", r"1//0[A-Za-z0-9_\-]{40,}"),
        ("hard.secret.alibaba_key", r"LTAI[A-Za-z0-9]{17,21}"),
        ("hard.secret.tencent_key", r"AKID[A-Za-z0-9]{32}"),
        ("hard.secret.mapbox_secret", r"sk\.eyJ[A-Za-z0-9_\-]{20,}\.[A-Za-z0-9_\-]{20,}"),
        ("hard.secret.jfrog_token", r"cmVmdGtuOjAx[A-Za-z0-9]{50,}"),
        ("hard.secret.grafana_token", r"glc_eyJ[A-Za-z0-9+/]{32,}={0,2}"),
        ("hard.secret.webhook_url", r"discord(?:app)?\.com/api/webhooks/\d{17,20}/[A-Za-z0-9_\-]{60,70}"),
        ("hard.secret.webhook_url",
         r"(?:outlook\.office(?:365)?\.com/webhook|[\w\-]+\.webhook\.office\.com/webhookb2)/[a-f0-9\-]{36}@"
         r"[a-f0-9\-]{36}/IncomingWebhook/[a-f0-9]{32}/[a-f0-9\-]{36}"),
        # An Azure shared access signature: the signature of a URL that names its version
        ("hard.secret.azure_sas", r"\bsv=\d{4}-\d{2}-\d{2}&[^\s\"'<>]{0,300}?\bsig=[A-Za-z0-9%+/]{40,}"),
    )
)

# The prefixes added in 2026.11-17: a body of words after them is a placeholder
# ("GOCSPX-your-client-secret-goes-here"); their single-case or hex bodies are not held to
# the weak formats' random-body test, which long single-case keys fail by chance.
_NEWER_FORMATS = frozenset(rule_id for rule_id, _ in
                           _VENDOR_PATTERNS[[r for r, _ in _VENDOR_PATTERNS].index("hard.secret.newrelic_key"):])

_VENDOR_RULES = frozenset({*_DETECT_SECRETS_PLUGINS.values(), *(rule_id for rule_id, _ in _VENDOR_PATTERNS)})

# --------------------------------------------------------------------------- structural

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

# --------------------------------------------------------------------------- keywords

_PASSWORD_WORDS = r"pass(?:word|wd|phrase|code)?|pwd|pw|psk|contrase[nñ]a|senha|kennwort|secret"
_TOKEN_WORDS = (
    r"token|api[_\-]?key|apikey|access[_\-]?key|auth[_\-]?key|private[_\-]?key|"
    r"client[_\-]?key|signing[_\-]?key|encryption[_\-]?key|master[_\-]?key|credentials?|"
    r"auth|nkey|key|session[_\-]?id|cookie"
)
_KW = re.compile(rf"(?i)(?:{_PASSWORD_WORDS}|{_TOKEN_WORDS})s?(?![a-z])")
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
_PLACEHOLDER_WORDS = (
    r"example|placeholder|changeme|change_me|dummy|fake|sample|redacted|masked|"
    r"your[_\-\s]?(?:password|pass|token|key|secret|api)|insert|replace|xxxx|\*\*\*|todo|fixme|not_?set|"
    r"secret_?here|key_?here|_here$"
)
_PLACEHOLDER_VALUE = re.compile(
    r"(?ix)^(?:"
    r"\$\{.*\}|\$\(.*\)|\$[A-Za-z_]\w*|%\(?\w*\)?[sdv]?|%[A-Z_]+%|\{\{.*\}\}|\{[\w.\-]*\}|<[^>]*>|"
    r"\[[^\]]*\]|\(\(.*\)\)|"
    r"[x*•·.#_\-?]+|(.)\1{2,}|0x[0-9a-f]+|"
    r".*(?:" + _PLACEHOLDER_WORDS + r").*"
    r")$"
)
# A cheap test before that regex on an ASCII value: only these first characters (or a first
# one repeated) start its other branches, and the last needs one of the words' literals.
_PLACEHOLDER_FIRST = frozenset("$%{<[(0x*.#_-?")
_PLACEHOLDER_LITERALS = required_literals(re.compile(r"(?i)(?:" + _PLACEHOLDER_WORDS + r")"))
_NON_SECRET_WORDS = frozenset(
    """
    password passwd pass pwd pw secret secrets token tokens key keys apikey api_key auth
    credential credentials null none nil undefined true false yes no on off string str
    int integer bool boolean number empty blank default value values required optional
    object any test testing tests foo bar baz qux foobar hidden unknown invalid valid new
    old current self this that it env environ config settings param params args kwargs data
    input text plain hash bcrypt sha256 md5 argon2 base64 utf8 ascii json xml yaml header
    bearer basic digest ntlm oauth oauth2 jwt session cookie login logout signin wrong
    incorrect bad secure mypassword mysecret mytoken demo guest
    """.split()
)
_TEST_VALUE = re.compile(
    r"(?i)^(?:(?:test|new|my|old|some|default|dummy|fake|sample|temp|tmp|the)?[-_]?"
    r"(?:test|pass|passw(?:or)?d|pwd|pw|secret|s3cr3t|key|token)|foo|bar|baz|demo|sample|user|abc|qwerty)"
    r"[-_]?\d{0,6}$"
)
_HASHED_VALUE = re.compile(
    r"^(?:\$(?:2[abxy]?|\d{1,2}|md5|sha1|gy|argon2(?:id|i|d)|scrypt|pbkdf2[\w-]*|y|7)\$|\{(?:CRYPT|SSHA|SHA|SMD5|MD5|ARGON2|PBKDF2)\})"
)
_CODE_REFERENCE = re.compile(
    r"^(?:[A-Za-z_$][\w$]*(?:(?:!!)?(?:\??\.|::|->)[A-Za-z_$][\w$]*)+(?:\(\))?"  # obj.attr, a!!.b, a?.b
    r"|.*[(){}\[\]&].*"  # calls, subscripts, literals, references
    r"|(?:process\.env|os\.environ|getenv|ENV|System\.getenv).*"
    r"|@?[a-z]+(?:[A-Z][a-z0-9]*)+|[a-z]+(?:_[a-z0-9]+)+|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+"  # identifiers
    r"|[A-Z][a-z]+(?:[A-Z][a-z0-9]+)+"  # PascalCase type names
    r"|[\w.]+\?)$"
)

# --------------------------------------------------------------------------- sentences

# The words that name a credential a person states in a sentence.
_SENTENCE_KW = (
    r"pass\s?words?|passcodes?|pass\s?phrases?|pins?(?:\s?(?:code|number))?|pw|pwd|"
    r"passw[oö]rt|wachtwoord|mot\s+de\s+passe|l[öo]senord|has[łl]o|contrase[nñ]a|senha|kennwort|"
    r"(?:door|gate|alarm|safe|lock|garage|locker|access|security|verification|login|"
    r"otp|2fa|mfa|backup|recovery|unlock|entry|keypad|wifi|wi-fi|bank|atm|puk|sim|master)\s?codes?|"
    r"combination|seed\s?phrase|recovery\s?phrase|mnemonic|security\s?answer|"
    r"(?:api|access|secret|private)\s?key|(?:auth|access|api|bearer)\s?token"
)
# keyword, what it is of (up to four words: "the PIN for the new debit card", "the password for
# the shared family netflix account"), and the verb: every match of `_SENTENCE_KEYWORD` starts with one
_SENTENCE_HEAD = (
    r"\b(?P<kw>" + _SENTENCE_KW + r")\b"
    r"(?P<mid>(?:\s+(?:for|to|of|on)\s+(?:the\s+|my\s+|our\s+)?[\w'\-]+(?:\s+[\w'\-]+){0,3})?)"
    r"\s*(?P<verb>(?:is|was|has\s+been|have\s+been|got|gets)\s+(?:set|changed|reset|updated)\s+to|"
    r"(?:set|changed|reset|updated)\s+to|is\s+now|was\s+now|will\s+be|(?:ist|lautet|est|es|é|är|jest|è)(?=[ \t])|"
    r"is|was|are|=|:|-|became|reads)[ \t]*"
)
_SENTENCE_KEYWORD = re.compile(
    r"(?ix)" + _SENTENCE_HEAD +
    r"(?:(?P<q>[\"'`\u201c\u2018])(?P<qval>[^\"'`\u201d\u2019\n]{1,100})[\"'`\u201d\u2019]"
    r"|(?P<val>[^\s\"'`]{1,100}))"
)
# What the one pass screens for it (its value's curly quotes and verbose flag are no
# Hyperscan's): where no head matches, no sentence does.
_SENTENCE_SCREEN = re.compile(r"(?i)" + _SENTENCE_HEAD)
# The same credential stated the other way round: set to a value ("I changed my wifi password to
# BlueFalcon!2024", "set the alarm code to 5812"), or the value first ("4471 is my PIN",
# "BlueFalcon!2024 is the wifi password"). Between the determiner and the keyword stand at most
# three words that are not determiners or verbs ("2019 was the year my PIN changed" is no PIN).
_OWNER = r"(?:my|the|our|his|her|their|your)\s+"
_DESCRIBING = r"(?:(?!(?:my|the|our|his|her|their|your|a|an|is|was|are)\b)[\w'\-]+\s+){0,3}?"
_SET_TO = re.compile(
    r"(?i)\b(?:set|changed?|reset|updated?|switched)\s+" + _OWNER + _DESCRIBING +
    r"(?P<kw>" + _SENTENCE_KW + r")\s+to\s*:?[ \t]*"
    r"(?:(?P<q>[\"'`\u201c\u2018])(?P<qval>[^\"'`\u201d\u2019\n]{1,100})[\"'`\u201d\u2019]|(?P<val>[^\s\"'`]{1,100}))"
)
# Where the noun phrase naming the credential ends: the clause ends, or a conjunction or a
# preposition follows ("4471 is my PIN for the bank"), not another noun ("Bitwarden2 is my
# password manager": the keyword only describes that noun).
_KW_ENDS = (r"(?=[ \t]*(?:$|[.,;:!?)\]\n\u2014\u2013]|(?:and|or|but|so|now|too|again|instead|please|today|"
            r"tonight|here|for|on|of|at|in|from|to|with|until|since|when|if|because)\b))")
_VALUE_FIRST = re.compile(
    r"(?i)(?<![\w@.$/\-])(?P<val>[^\s\"'`]{3,64}+)\s+(?:is|was|will\s+be)\s+" + _OWNER + r"(?:new\s+)?" + _DESCRIBING +
    r"(?P<kw>" + _SENTENCE_KW + r")\b(?![\-'])" + _KW_ENDS
)
# The value named by its role ("use 4471 as the PIN", "with hunter2! as password": after "as"
# the determiner may be left out), or set off before its name by a comma, a parenthesis or a
# dash ("4471, my PIN", "5812 (the door code)"), the name ending the clause there (not "room
# 1234, the access code for which ...").
_VALUE_AS = re.compile(
    r"(?i)(?<![\w@.$/\-])(?P<val>[^\s\"'`]{3,64}+)\s+as\s+(?:" + _OWNER + r")?(?:new\s+)?" + _DESCRIBING +
    r"(?P<kw>" + _SENTENCE_KW + r")\b(?![\-'])" + _KW_ENDS
)
_CLAUSE_ENDS = r"(?=[ \t]*(?:$|[.,;:!?)\]\n\u2014\u2013]|(?:and|or|but)\b))"
_VALUE_APPOSED = re.compile(
    r"(?i)(?<![\w@.$/\-])(?P<val>[^\s\"'`,(\u2014\u2013]{3,64}+)[ \t]*(?:,|\(|--|[\u2014\u2013])[ \t]*"
    + _OWNER + r"(?:new\s+)?" + _DESCRIBING + r"(?P<kw>" + _SENTENCE_KW + r")\b(?![\-'])" + _CLAUSE_ENDS
)
# The credential, then its value set off by a comma, a parenthesis or a dash ("my PIN, 4471",
# "the wifi password (BlueFalcon!2024)", "the door code, which is 5812"), the value standing
# alone: the clause, a conjunction or a verb after it.
_APPOSITION = re.compile(
    r"(?i)\b" + _OWNER + _DESCRIBING + r"(?P<kw>" + _SENTENCE_KW + r")[ \t]*(?:,|\(|--|[\u2014\u2013])[ \t]*"
    r"(?:(?:which|that)[ \t]+(?:is|was)[ \t]+(?:now[ \t]+)?|i\.e\.,?[ \t]*|namely[ \t]+)?"
    r"(?:(?P<q>[\"'`\u201c\u2018])(?P<qval>[^\"'`\u201d\u2019\n]{1,100})[\"'`\u201d\u2019]|(?P<val>[^\s\"'`,()]{3,100}))"
    r"(?=[ \t]*(?:$|[.,;:!?)\]\n\u2014\u2013]|(?:and|or|but|is|was|are|for|on|in)\b))"
)
# A word naming a credential: every match of the patterns above holds one (`_OTHER_ORDERS`).
# (A value-first pattern's value is possessive: only a whole run of its characters can be
# followed by the space that ends it, and trying shorter ones cost most of a long token's scan.)
_CREDENTIAL_NOUN = re.compile(r"(?i)\b(?:" + _SENTENCE_KW + r")\b")
# The patterns stating a value in another order; their values make them no Hyperscan's (a
# class without spaces), so the one pass screens them by the credential noun they all hold.
_OTHER_ORDERS = (_SET_TO, _APPOSITION, _VALUE_FIRST, _VALUE_AS, _VALUE_APPOSED)
_STATUS_WORDS = frozenset(
    """
    a an the my your his her our their its this that these those it not no none
    correct incorrect wrong right weak strong required optional expired invalid valid
    missing empty blank long short secure insecure unknown same different changed reset
    set saved stored hidden encrypted hashed sensitive case-sensitive too very still now
    also only being in on at for by with from protected needed mandatory displayed shown
    visible managed rotated shared compromised leaked taken good bad fine ok okay great
    simple complex easy hard secret private personal kept written there here changing
    expiring case what where which who how why when and or but if then so as is was be
    been being enabled disabled active inactive locked unlocked working broken lost
    forgotten known available printed written located attached included listed
    """.split()
)
_DIGIT_OR_SYMBOL = re.compile(r"[0-9!@#$%^&*+=~?]")

_CARD = re.compile(r"(?<![\d-])(?:\d[ -]?){12,18}\d(?![\d-])")
_CARD_CONTEXT = re.compile(
    r"(?i)\b(?:card|visa|mastercard|master card|amex|american express|credit|debit|cc|cvv|discover)\b"
)
_SSN = re.compile(r"(?<!\d)\d{3}-\d{2}-\d{4}(?!\d)")
_SSN_CONTEXT = re.compile(r"(?i)\b(?:ssn|social security|social insurance|sin number)\b")

_HIGH_ENTROPY_TOKEN = re.compile(r"(?<![A-Za-z0-9+/_\-$.])[A-Za-z0-9+/_\-]{24,}={0,2}(?![A-Za-z0-9+/_\-$])")
_TOKEN_BODY = re.compile(r"[A-Za-z0-9+/_\-]{24,}={0,2}")
_TOKENISH = re.compile(r"[A-Za-z0-9+/_\-.~=]{12,}")


def find_secrets(text: str, *, stand_ins: bool = False) -> list[SecretHit]:
    """All credential-looking spans in `text`, de-duplicated, in order of position.
    `stand_ins`: also what looks like a credential but stands in for one: vendor-format
    tokens whose body is a filler ("ghp_xxxx...", "GR1348941231231231...") and password
    values in code that are among the most guessable or name a credential ("testpass",
    "some-password"). A proposal holding one is no leak and is not blocked; a stored turn
    masks them all the same."""
    if not text:
        return []
    out = _ruled_out(text)
    hits: list[SecretHit] = []
    hits.extend(_vendor_hits(text, stand_ins, out))
    out = out or frozenset()
    code_hits = [*_structural_hits(text, out), *_keyword_hits(text, out), *_config_format_hits(text)]
    if not stand_ins:
        code_hits = [h for h in code_hits if not _stand_in_password(h, text[h.start:h.end])]
    hits.extend(code_hits)
    hits.extend(_high_entropy_hits(text))
    if not stand_ins:
        elided: dict[tuple[int, int], bool] = {}
        hits = [h for h in hits if not _masked_or_cut(text, h, elided)]
    hits.extend(_sentence_hits(text, out))
    hits.extend(_number_hits(text, out))
    hits.extend(_context_hits(text, out))
    hits.extend(SecretHit("hard.secret.seed_phrase", p.start, p.end)
                for p in find_recovery_phrases(text) if not p.test_vector)
    if not stand_ins:
        hits = [h for h in hits if not _public_by_design(text, h)]
    return _dedupe(hits)


# A Mapbox public token: "pk." and a JWT-shaped body. Mapbox's public tokens are made to ship
# in web pages ("sk." tokens are its secret ones).
_MAPBOX_PUBLIC = "pk.eyJ"
# Words by which the writer says a JWT is a documentation example ("the sample token on
# jwt.io", "# example token for the tutorial"), in the token's line.
_EXAMPLE_JWT_CONTEXT = re.compile(
    r"(?i)jwt\.io|\b(?:example|sample|tutorial|docs|documentation|placeholder|dummy)\b"
)


_JWT_VALUE = re.compile(r"(?:Bearer\s+)?eyJ[\w-]+\.eyJ[\w-]+\.")


def _public_by_design(text: str, hit: SecretHit) -> bool:
    """A hit on a value that is public by design: a Mapbox public token (as a JWT or as the
    value of an access-token name), a public member of a JSON Web Key, or a JWT its own line
    calls a documentation example."""
    if text.startswith(_MAPBOX_PUBLIC, hit.start) or text.startswith(_MAPBOX_PUBLIC, max(0, hit.start - 3)):
        return True
    if _jwk_public_member(text, hit):
        return True
    if hit.rule_id != "hard.secret.jwt" and not _JWT_VALUE.match(text, hit.start, hit.end):
        return False  # (a JWT is also the value of an auth header or a token name)
    line_start = text.rfind("\n", 0, hit.start) + 1
    line_end = text.find("\n", hit.end)
    line = text[line_start:hit.start] + " " + text[hit.end:len(text) if line_end < 0 else line_end]
    return _EXAMPLE_JWT_CONTEXT.search(line) is not None


# RFC 7517/7518: a JSON Web Key's public members are "n" and "e" (RSA), "x" and "y" (EC, OKP);
# its private ones "d", "p", "q", "dp", "dq", "qi", "oth" and "k" (a symmetric key).
_JWK_PUBLIC_MEMBER = re.compile(r"[\"'](?:n|e|x|y)[\"'][ \t]*:[ \t]*[\"']$")
_JWK_PRIVATE_MEMBER = re.compile(r"[\"'](?:d|p|q|dp|dq|qi|oth|k)[\"'][ \t]*:")


def _jwk_public_member(text: str, hit: SecretHit) -> bool:
    """A random-looking run that is the modulus or a curve point of a JSON Web Key (a JWKS
    endpoint's `{"kty": "RSA", "n": ...}`) with no private member beside it: public key data."""
    if hit.rule_id != "hard.secret.high_entropy":
        return False
    if not _JWK_PUBLIC_MEMBER.search(text, max(0, hit.start - 12), hit.start):
        return False
    end = text.find("}", hit.end)
    key = text[text.rfind("{", 0, hit.start) : len(text) if end < 0 else end]
    return re.search(r"[\"']kty[\"']", key) is not None and _JWK_PRIVATE_MEMBER.search(key) is None


@lru_cache(maxsize=1)
def _one_pass() -> OnePass:
    """The patterns each scan a whole text (vendor formats, structures, keywords, sentences,
    numbers), screened together in one pass over a long text."""
    return OnePass([*(rx for _, rx, _ in _vendor_patterns()), _PEM_PRIVATE, _URL_CREDENTIALS, _AUTH_HEADER,
                    _SCHEME_TOKEN, _BASIC_ENCODE, _CURL_USER, _KW, _REVERSE_COMPARE, _BARE_PIN, _SENTENCE_SCREEN,
                    *_OTHER_ORDERS, _CREDENTIAL_NOUN, _CARD, _SSN,
                    *(rx for _, context, value in _CONTEXT_VALUES for rx in (context, value)), _PHRASE_CONTEXT])


def _ruled_out(text: str) -> frozenset[re.Pattern] | None:
    """On a long text, the patterns the one pass shows cannot match; None when it cannot tell
    (a short text, or no Hyperscan: then the vendor formats' literal tests decide)."""
    if len(text) <= _PREFILTER_CHARS:
        return None
    one = _one_pass()
    found = one.candidates(text)
    if found is None:
        return None
    return frozenset(ruled for k, rx in enumerate(one.patterns) if k not in found
                     for ruled in _SCREENED_FOR.get(rx, (rx,)))


# screen -> the patterns it rules out
_SCREENED_FOR = {_SENTENCE_SCREEN: (_SENTENCE_KEYWORD,), _CREDENTIAL_NOUN: _OTHER_ORDERS}


def _scan(rx: re.Pattern, text: str, out: frozenset[re.Pattern]) -> Iterator[re.Match]:
    if out and rx in out:
        return iter(())
    leading = _LEADING.get(rx)
    if leading is not None and len(text) > _PREFILTER_CHARS:  # tried only where a match can start
        return matches_at(rx, text, literal_starts(leading, fold_case(text)))
    return rx.finditer(text)


# The keyword patterns' leading literals (`text.leading_literals`): every match starts with one.
_LEADING = {rx: leading_literals(rx) for rx in (_KW, _SENTENCE_KEYWORD)}


_MASK_RUN = re.compile(r"[#*\u2022]{3,}")
_MASKED_TAIL = re.compile(r"[-_.:]?[#*\u2022]{3,}")
_CUT_TAIL = re.compile(r"\.{3}|\u2026")


def _masked_or_cut(text: str, hit: SecretHit, elided: dict[tuple[int, int], bool] | None = None) -> bool:
    """A token shown with its secret part masked ("xoxb-1234-5678-####", "sk-live-abc***")
    or cut short ("ops_eyJzaWdu..."), as consoles, logs and documentation print keys: the
    value that would work is not there; so is a private key block whose body has lines left
    out ("MIIEpAIB...\n    ...\n-----END"). An ellipsis after a complete vendor-format key
    only ends the sentence: that key is all there. (A stored turn still masks what is left.)
    `elided`: the blocks of this text already read (a long block holds many hits)."""
    if _MASK_RUN.search(text, hit.start, hit.end) or _MASKED_TAIL.match(text, hit.end):
        return True
    if _CUT_TAIL.match(text, hit.end) and hit.rule_id not in _VENDOR_RULES:
        return True
    block = _private_block(text, hit.start)
    if block is None:
        return False
    elided = {} if elided is None else elided
    if block not in elided:
        elided[block] = _ELIDED_LINE.search(text, *block) is not None
    return elided[block]


_ELIDED_LINE = re.compile(r"^[ \t]*(?:\.{3,}|\u2026)[ \t]*$", re.MULTILINE)


def _private_block(text: str, pos: int) -> tuple[int, int] | None:
    """The span of the "-----BEGIN ... PRIVATE KEY-----" block `pos` is in (its BEGIN line
    included), up to its END line or the end of the text."""
    begin = text.rfind("-----BEGIN ", 0, pos + len("-----BEGIN "))
    if begin < 0 or "-----END " in text[begin:pos]:
        return None
    m = _PEM_BEGIN.match(text, begin)
    if m is None or "PRIVATE" not in m.group(1):
        return None
    end = text.find("-----END ", begin)
    return begin, len(text) if end < 0 else end


def _dedupe(hits: list[SecretHit]) -> list[SecretHit]:
    seen: set[tuple[int, int]] = set()
    out = []
    for h in sorted(hits, key=lambda h: (h.start, -(h.end - h.start))):
        if (h.start, h.end) in seen:
            continue
        seen.add((h.start, h.end))
        out.append(h)
    return out


# --------------------------------------------------------------------------- layer 1


# Formats with a short or no fixed prefix: the body must also look generated, so
# "s.DefaultListableBeanFactory" or "hf_requiredCharacteristicTypes" do not count.
_WEAK_FORMATS = frozenset(
    {
        "hard.secret.vault_token",
        "hard.secret.huggingface_token",
        "hard.secret.azure_client_secret",
        "hard.secret.facebook_token",
        "hard.secret.notion_token",
        "hard.secret.mailchimp_key",
    }
)


@lru_cache(maxsize=1)
def _vendor_patterns() -> tuple[tuple[str, re.Pattern[str], tuple[frozenset[str], ...]], ...]:
    """Every vendor format with the literals each match holds (`text.required_literals`)."""
    return tuple((rule_id, rx, required_literals(rx)) for rule_id, rx in (*_detect_secrets_patterns(),
                                                                        *_VENDOR_PATTERNS))


# Longer texts skip the formats whose literals they lack (exact: no hit is skipped); in
# shorter ones the test would cost more than the scan it saves.
_PREFILTER_CHARS = 300


def _vendor_hits(text: str, fillers: bool = False, out: frozenset[re.Pattern] | None = None) -> Iterator[SecretHit]:
    folded = fold_case(text) if len(text) > _PREFILTER_CHARS and out is None else ""
    seen: dict[str, bool] = {}
    patterns = _vendor_patterns()
    if out:
        patterns = tuple(p for p in patterns if p[1] not in out)
    short_folded = None
    for rule_id, pattern, required in patterns:
        if folded and not may_match(required, folded, seen):
            continue
        if not folded and rule_id in _NEWER_FORMATS and out is None:
            # (their literals are tested in a short text too: most of them cost a scan of
            # the text each, where a substring test is a fraction of that)
            short_folded = fold_case(text) if short_folded is None else short_folded
            if not may_match(required, short_folded, seen):
                continue
        for m in pattern.finditer(text):
            start, end = _trim(text, m.start(), m.end())
            if end - start < 8 or _embedded(text, start):
                continue
            token = text[start:end]
            if rule_id == "hard.secret.jwt":
                end = start + len(re.match(r"[A-Za-z0-9_\-.+/=]*", text[start:]).group())
                token = text[start:end]
                if len(token) < 30 or len(token.split(".")[0]) < 10 or _broken_jwt_header(token.split(".")[0]):
                    continue
            # Keyboard walks ("...abcdefghijklmnop...") and format-valid fillers ("AKIAXXXX...",
            # "ghp_xxxx...", "GR1348941231231231...") are documentation, not keys.
            if _is_sequential(token) or (not fillers and _is_filler_token(token)):
                continue
            if rule_id in _NEWER_FORMATS and _placeholder_body(token):
                continue
            if not fillers and _prefix_then_words(token, pattern):
                continue  # "LTAI5tSomethingVeryLong", "AKIASEARCHSTUBMOCKID": a made-up example (masked all the same)
            if rule_id in _WEAK_FORMATS and (not _random_body(token) or text[end : end + 1].isalnum()):
                continue  # a short prefix ending mid-word ("s.makeKubeConfigController") names code
            if rule_id == "hard.secret.artifactory" and not (token.startswith("AKC") or re.search(r"\d", token[3:])):
                continue  # "AP" + hex digit + letters also spells upper-case words ("APACHEKAFKA")
            yield SecretHit(rule_id, start, end)


def _prefix_then_words(token: str, pattern: re.Pattern[str]) -> bool:
    """Past the format's literal prefix, letters and digits alone, 8+ letters and at least half
    of them in dictionary words (`dictionary_share`: camelCase parts or one-case runs): a
    made-up example. A key's body is drawn at random from its alphabet: in 1000 seeded bodies
    of each of LTAI (12 and 20), AKID, AKIA and ghp_ none reads so. (Words between separators,
    "glpat-hellOworld380_testin", are `_placeholder_body`'s to judge, for the newer formats
    only: detect-secrets' own test cases count them as tokens of the older ones.)"""
    low = token.lower()
    body = token[max((len(p) for p in _prefixes(pattern) if low.startswith(p)), default=0):]
    body = _PREFIX_REST.sub("", body, count=1)  # the rest of a prefix the literal leaves: "p_" of "gh[pousr]_"
    return body.isalnum() and sum(c.isalpha() for c in body) >= 8 and dictionary_share(body) >= 0.5


_PREFIX_REST = re.compile(r"^[A-Za-z0-9]{0,3}[_\-.]")


@lru_cache(maxsize=None)
def _prefixes(pattern: re.Pattern[str]) -> frozenset[str]:
    return leading_literals(pattern) or frozenset()


def _placeholder_body(token: str) -> bool:
    """Past its prefix the token is a placeholder or dictionary words joined by separators
    ("GOCSPX-your-client-secret-goes-here", "sk.eyJexample...")."""
    parts = [p for p in re.split(r"[^A-Za-z0-9]+", token)[1:] if p]
    if len(parts) >= 2 and all(p.isalpha() and is_words(p) for p in parts):
        return True
    return _is_placeholder(token)


def _broken_jwt_header(segment: str) -> bool:
    """The header decodes to text that starts like JSON but is not JSON: a corrupted or
    truncated token ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ" lacks its closing brace)."""
    try:
        raw = base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))
    except (ValueError, binascii.Error):
        return False
    if not raw.startswith(b'{"'):
        return False
    try:
        return not isinstance(json.loads(raw), dict)
    except ValueError:
        return True


def _random_body(token: str) -> bool:
    body = re.sub(r"^(?:[a-z]{1,4}[_.\-]|[A-Z]{2,4}(?=[A-Za-z0-9]))", "", token)
    # A long letter run reads as words in a short body; in a body of 100+ characters a run of
    # 10-15 happens by chance (Facebook's 200-character tokens), so only 16+ counts there.
    run = r"[a-z]{16,}|[A-Z]{16,}" if len(body) >= 100 else r"[a-z]{10,}|[A-Z]{12,}"
    if re.search(run, body) or _is_placeholder_token(body):
        return False
    if re.fullmatch(r"[a-z]*(?:[A-Z][a-z]{2,})+", body):
        return False  # camelCase humps of letters only ("makeKubeConfigController"): a name in code
    return shannon_entropy(body) >= 3.3 and char_classes(body) >= 2


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    """Drop the delimiters some detect-secrets patterns include (spaces, quotes, `=`)."""
    while start < end and text[start] in " \t\r\n\"'=:":
        start += 1
    while end > start and text[end - 1] in " \t\r\n\"'":
        end -= 1
    return start, end


def _embedded(text: str, start: int) -> bool:
    """True when the match starts inside a longer alphanumeric run ("TODAYINASIA...").
    The end is not checked: fixed-length format regexes legitimately stop mid-token."""
    return start > 0 and text[start - 1].isalnum()


def _is_placeholder_token(token: str) -> bool:
    """Format-valid tokens that are documentation fillers: "ghp_xxxxxxxx...", "AKIAXXXX..."."""
    body = re.sub(r"^[A-Za-z0-9]{2,6}[_\-.]", "", token)
    if re.search(r"(?i)x{6,}", body):
        return True
    if body and max(body.count(c) for c in set(body)) > 0.6 * len(body):
        return True
    low = token.lower()
    return "example" in low and "examplekey" not in low or "placeholder" in low


def _is_filler_token(token: str) -> bool:
    """A vendor-format match whose body is a filler: a run of x ("ghp_xxxx..."), one character
    for most of it ("AKIAZZZZ...", "sgp_5555555dAAAAA7777777CcccCFaaaaaaaaaaaaaa"), or a short
    unit repeated ("GR1348941231231231...", "abcd1234abcd1234..."): generated keys repeat
    nothing; or words (`_reads_as_words`). The AWS documentation's "...EXAMPLE" keys still
    count: they are used as real configuration values often enough."""
    body = re.sub(r"^[A-Za-z]{2,5}\d?[_\-.]?|^[A-Z]{2,4}\d*", "", token)
    if re.search(r"(?i)x{6,}", body) or (body and max(body.count(c) for c in set(body)) > 0.6 * len(body)):
        return True
    return len(body) >= 12 and (is_periodic(body) or _one_class_runs(body)) or _reads_as_words(token)


def _reads_as_words(token: str) -> bool:
    """Past its short prefix parts ("xoxe.xoxp-1-", "s."), the token is dictionary words
    ("...-SlackAppConfigurationAccessTokenHere", "s.AcceptanceTimeoutSeconds"): an
    identifier or a placeholder, not a generated key."""
    parts = [p for p in re.split(r"[^A-Za-z0-9]+", token) if len(p) > 4 and not p.isdigit()]
    words = [w for p in parts for w in _CAMEL_HUMP.split(p)]
    # Short alphabetic humps are abbreviations ("App", "Id", "Db") between real words.
    short = [w for w in words if w.isalpha() and len(w) <= 3 and not is_words(w)]
    long_words = [w for w in words if w not in short]
    return (sum(map(len, long_words)) >= 6 and len(short) * 3 <= len(words)
            and all(is_words(w) for w in long_words))


_CAMEL_HUMP = re.compile(r"(?<=[a-z])(?=[A-Z])")


def _one_class_runs(body: str) -> bool:
    """Most of the body is runs of one repeated character ("5555555dAAAAA7777777CcccC")."""
    runs = sum(len(m.group()) for m in re.finditer(r"(.)\1{3,}", body))
    return runs >= 0.6 * len(body)


def is_periodic(value: str) -> bool:
    """Most of `value` is one unit of 1-8 characters repeated at least twice, over a stretch
    of at least 8 characters and half the value."""
    n = len(value)
    if n > 64 and value.isascii():  # a long token (a key block's body): the same runs, vectorised
        codes = np.frombuffer(value.lower().encode("ascii"), dtype=np.uint8)
        for unit in range(1, 9):
            same = np.concatenate(([False], codes[unit:] == codes[:-unit], [False]))
            edges = np.flatnonzero(same[1:] != same[:-1])
            best = int((edges[1::2] - edges[::2]).max(initial=0))
            if best >= unit and best + unit >= max(8, n // 2):
                return True
        return False
    return periodic_by_runs(value)


def periodic_by_runs(value: str) -> bool:
    """`is_periodic` as defined, one character at a time (short values; the reference the
    vectorised path is tested against)."""
    n = len(value)
    for unit in range(1, 9):
        run = best = 0
        for i in range(unit, n):
            run = run + 1 if value[i].lower() == value[i - unit].lower() else 0
            best = max(best, run)
        if best >= unit and best + unit >= max(8, n // 2):
            return True
    return False


# --------------------------------------------------------------------------- layer 2


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


# A base64 run (12 to 1,000 characters of the standard alphabet, padded to a multiple of
# four) that may encode a credential: a `user:password` pair (an HTTP Basic credential outside
# its header: `echo ... | base64 -d`, a docker `config.json`'s `auth`) or a text holding one (a
# Kubernetes secret's file, an encoded `.env`).
_BASE64_RUN_PADDED = re.compile(r"(?<![\w+/=\-.])(?:[A-Za-z0-9+/]{4}){3,250}(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?"
                                r"(?![\w+/=\-.])")
_DECODED_PAIR = re.compile(r"(?P<user>[\w.@+\-]{1,64}):(?P<pw>[^\s:]{4,128})")


def _encoded_credential_hits(text: str) -> Iterator[SecretHit]:
    """Base64 decoded once: `user:password` whose password is judged as a password value in
    code (a guessable or self-describing one is a stand-in: "Zm9vOmJhcg==" is "foo:bar"), or
    a text in which a secret is found."""
    for m in _BASE64_RUN_PADDED.finditer(text):
        token = m.group()
        if token.isalpha() and (token.islower() or token.isupper()):
            continue  # a long word, not base64
        try:
            raw = base64.b64decode(token, validate=True)
        except (ValueError, binascii.Error):
            continue
        decoded = _utf8_text(raw)
        if decoded is None or not _readable(decoded):
            continue
        pair = _DECODED_PAIR.fullmatch(decoded)
        if pair is not None:
            pw = pair.group("pw")
            found = (pair.group("user").lower() not in ("http", "https", "urn", "mailto")
                     and _is_password_value(pw, quoted=True)
                     and not (_TEST_VALUE.match(pw) or names_a_credential(pw) or is_guessable(pw)))
        else:
            found = len(decoded) >= 16 and bool(find_secrets(decoded))
        if found:
            yield SecretHit("hard.secret.encoded_credential", m.start(), m.end())


# --------------------------------------------------------------------------- layer 3


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
        if tail and _DESCRIPTIVE_TAIL.match(tail) or re.search(r"(?i)public|pub_|csrf|xsrf|nonce", name):
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
    """The keyword starts a word, a name segment or a camelCase hump, or is glued to a
    known prefix ("apikey"); "monkey" and "Authentication" do not count."""
    if kw_start == 0 or not text[kw_start - 1].isalpha():
        return True
    if text[kw_start].isupper() and text[kw_start - 1].islower():
        return True
    j = kw_start
    while j > name_start and text[j - 1].isalpha() and text[j - 1].islower() == text[kw_start].islower():
        j -= 1
    if j > name_start and text[kw_start].islower() and text[j - 1].isupper():
        j -= 1  # "Apitoken": a capitalised glued prefix
    return text[j:kw_start].lower() in _GLUE_PREFIXES


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
        ok = _is_password_value(value, quoted=True) if password_like else _is_token_value(value, quoted=True)
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
        ok = _is_bare_key_value(value, quoted=quoted)
    else:
        ok = _is_token_value(value, quoted=quoted)
    return SecretHit("hard.secret.keyword_assignment", start, start + len(value)) if ok else None


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


def _is_bare_key_value(value: str, *, quoted: bool) -> bool:
    """`key = ...` alone names keys of maps and caches far more often than credentials:
    only a long generated-looking value counts."""
    v = value.strip()
    if not re.fullmatch(r"[A-Za-z0-9+/=_\-]{16,}", v):
        return False
    letters = sum(c.isalpha() for c in v)
    digits = sum(c.isdigit() for c in v)
    return letters >= 2 and digits >= 2 and _is_token_value(v, quoted=quoted)


def _is_placeholder(value: str) -> bool:
    v = value.strip()
    if not v:
        return True
    low = v.lower()
    if low in _NON_SECRET_WORDS:
        return True
    if v.isascii() and low[0] not in _PLACEHOLDER_FIRST and low[:1] != low[1:2] \
            and not may_match(_PLACEHOLDER_LITERALS, low):
        return False  # no branch of the regex can match (checked against it, property-tested)
    return bool(_PLACEHOLDER_VALUE.match(v))


# Values that stand for "no password here" when assigned to a password name.
_PASSWORD_PLACEHOLDERS = frozenset(
    """
    password passwd pwd secret token null none nil undefined true false yes no on off
    string str empty blank required optional default value values hidden redacted masked
    changeme placeholder example your_password yourpassword your-password xxx
    """.split()
)


# How people build passwords: words with a digit run at the end, separated by a dot, dash,
# underscore or symbol, at least one capital or symbol ("Willow.pebble69", "Harbor-biscuit87!");
# code names do not end their last part in two or more digits after a capital word.
_HUMAN_PASSWORD = re.compile(r"(?=.*[A-Z!#$%&*@])[A-Za-z]{3,12}(?:[._\-!#$%&*@][A-Za-z]{2,12}){0,3}"
                             r"[._\-!#$%&*@]?\d{2,6}[!#$%&*@?]?")
# A passphrase of dictionary words joined by dashes ("copper-cactus-willow-violet").
_PASSPHRASE = re.compile(r"[a-z]{3,10}(?:-[a-z]{3,10}){2,7}")


def _is_passphrase(value: str) -> bool:
    return _PASSPHRASE.fullmatch(value) is not None and all(is_words(w) for w in value.split("-"))


def _is_password_value(value: str, *, quoted: bool) -> bool:
    """A literal assigned to a password name: not a placeholder, template, reference, hash,
    flag or phrase. (Guessable and self-describing values are judged after, by
    `_stand_in_password`.)"""
    v = value.strip()
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"`":
        v = v[1:-1]  # nested quoting: `'$DOCKER_PASSWORD'`
    if len(v) < 3 or len(v) > 128 or v.lower() in _PASSWORD_PLACEHOLDERS:
        return False
    if _PLACEHOLDER_VALUE.match(v) or _is_placeholder_token(v):
        return False
    if re.search(r"\s", v) or "://" in v or _HASHED_VALUE.match(v):
        return False  # phrases ("Enter previous password: "), URLs, password hashes
    if re.fullmatch(r"[A-Za-z_]\w*=(?:True|False|None|true|false|null|\d+|[A-Za-z_]\w*)", v):
        return False  # "pass `record=False`": a keyword argument quoted in prose, code
    if _IDEOGRAPHS.search(v):
        return False  # Chinese or Japanese text glued to a name (these scripts use no spaces): prose
    if not re.search(r"[A-Za-z0-9]", v):
        return False  # punctuation only, or not Latin at all
    if not quoted and (_CODE_REFERENCE.match(v) or re.fullmatch(r"_?[A-Z][A-Z0-9_]*_?|[a-z]+(?:-[a-z]+)+", v)) \
            and not _generated_capitals(v) and not _symbol_alphabet_key(v) \
            and not (_DOTTED.fullmatch(v) and not _dotted_name(v)) \
            and not _HUMAN_PASSWORD.fullmatch(v) and not _random_letter_groups(v):
        return False  # variables, constants, expressions (not generated values they happen to fit)
    if _SHELL_REFERENCES.fullmatch(v):
        return False  # "$USER:$PASS", "${HOST}/$DB": variables expanded by a shell or template
    if _dotted_name(v) and not _HUMAN_PASSWORD.fullmatch(v):
        return False  # "session.secret": a dotted name, not a value
    if re.fullmatch(r"\d{1,3}|[\d.]+[smhdSMHD]?|0x[0-9a-fA-F]+", v):
        return False  # lengths, durations, small numbers, flags
    return True


def _random_letter_groups(v: str) -> bool:
    """Groups of lower-case letters joined by dashes or underscores, none of them a word
    ("rediz-pkyu-nephaczm"): a generated password, which a name's shape fits; a name in code
    is words ("db_host_name", "some-password")."""
    parts = re.split(r"[-_]", v)
    return (len(parts) >= 2 and sum(map(len, parts)) >= 10 and all(len(p) >= 4 and p.isalpha() and p.islower()
                                                                 for p in parts)
            and not any(is_words(p) for p in parts))


def _generated_capitals(v: str) -> bool:
    """Letters and digits only, long, with digits spread in: a generated value that the
    identifier patterns happen to fit. Capitals and digits with 3.5+ bits a character are a
    base32 secret (a TOTP seed, "JBSWY3DPEHPK3PXP..."), not a constant's name (which has
    underscores); mixed case must pass the strict generated-token test ("hzbS5cLAZoTF59JW...",
    not the camelCase name "getUser2FAToken123")."""
    if len(v) < 16 or not (v.isascii() and v.isalnum()) or _digits(v) < 3:
        return False
    if v.isupper():
        return shannon_entropy(v) >= 3.5
    return _looks_generated(v, min_len=24, strict=True)


_IDEOGRAPHS = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_SHELL_REFERENCES = re.compile(r"(?:\$\{?[A-Za-z_]\w*\}?[/:@.,\-]*)+")
_PASSWORD_VALUE_RULES = frozenset(
    {"hard.secret.keyword_assignment", "hard.secret.url_credentials", "hard.secret.command_line_password"})


def _stand_in_password(hit: SecretHit, value: str) -> bool:
    """A password value in code that is among the most guessable (`is_guessable`: "pass",
    "testing", the fixtures of test suites and documentation) or names a credential
    (`names_a_credential`: "test-user-password"). Weak passwords stated in a sentence ("our
    Netflix password is swordfish") are the sentence rule's, which keeps them. A test word
    with a short number ("test123456", "demo42") is a stand-in in code as in sentences."""
    return hit.rule_id in _PASSWORD_VALUE_RULES and (
        bool(_TEST_VALUE.match(value)) or names_a_credential(value) or is_guessable(value))  # zxcvbn last


# zxcvbn's estimate below which a password value is a stand-in: under 10^4 guesses is a
# dictionary word, a common password or an obvious variant of one ("testpass", "bar1").
GUESSABLE_LOG10 = 4.0
_GUESSABLE_MAX_CHARS = 16  # zxcvbn's cost grows fast with length; longer values are not among them


_CREDENTIAL_WORD = re.compile(r"(?i)pass(?:wor)?d|passwd|pwd|secret|token|key|credential")
_WORD_PARTS = re.compile(r"[_\-.\s:/]+|(?<=[a-z0-9])(?=[A-Z])")


def names_a_credential(value: str) -> bool:
    """The value is words that name a credential instead of being one: dictionary words
    (and short numbers) only, one of them a credential word ("some-password",
    "your_client_secret", "somesecretkey", "testToken1", "wrong_pass", "pwd1"), l33t
    spellings too ("s3cr3t4", "p4ssw0rd"): the classic fixtures of test suites."""
    parts = [_unleet(p) for p in _WORD_PARTS.split(value) if p]
    # "pass" only as a whole part: inside a word it is "compass", "passenger".
    if not parts or not any(_CREDENTIAL_WORD.search(p) or p.rstrip("0123456789").lower() == "pass" for p in parts):
        return False
    # A one- or two-letter part is an article or abbreviation ("a-secret", "db_pass") when
    # a longer word is there; a credential word with a short number ("pwd1") is one word.
    return all(
        (p.isdigit() and len(p) <= 4)
        or (p.isalpha() and len(p) <= 2)
        or re.fullmatch(r"(?i)pass|pwd|pw", p.rstrip("0123456789"))
        or is_words(p)
        for p in parts
    )


@lru_cache(maxsize=4096)
def _unleet(part: str) -> str:
    """`part` with digits standing for letters in one dictionary word read back, as zxcvbn
    reads l33t ("s3cr3t4" -> "secret4", "p4ssw0rd" -> "password"); else unchanged. Symbols
    and capitals ("P@ssw0rd$1", "S3cretPw9") are left alone: they are put in to pass a
    complexity rule, as passwords in use are."""
    letters = part.rstrip("0123456789")
    if (len(letters) < 4 or len(letters) > _GUESSABLE_MAX_CHARS or letters.isalpha() or not letters.isalnum()
            or letters.lower() != letters):
        return part
    for m in zxcvbn_matching.l33t_match(letters.lower()):
        if m["i"] == 0 and m["j"] == len(letters) - 1:
            return m["matched_word"] + part[len(letters):]
    return part


@lru_cache(maxsize=4096)
def is_words(part: str) -> bool:
    """`part` is made of zxcvbn dictionary words (a trailing number allowed): "secretkey",
    "Configuration", "test1"; not "fedejbynbe"."""
    if len(part) > _GUESSABLE_MAX_CHARS or not part.isalnum():
        return False
    letters = part.rstrip("0123456789")
    if len(part) - len(letters) > 4 or not letters:
        return False
    return all(dictionary_coverage(letters.lower()))


def dictionary_coverage(low: str, min_len: int = 1) -> bytearray:
    """Which characters of `low` (lower case) lie inside a zxcvbn dictionary word of `min_len`+
    characters: the spans `zxcvbn.matching.dictionary_match` finds, looked up in one set of all
    its frequency lists' words and only up to the longest word's length (the same spans, a
    fraction of the cost: it looks each substring up in every list and builds a match for each
    hit, most of the policy's cost on a token it has not seen before)."""
    words, longest = _dictionary_words()
    n = len(low)
    covered = bytearray(n)
    for i in range(n):
        for j in range(i + min_len, min(n, i + longest) + 1):
            if low[i:j] in words:
                covered[i:j] = b"\x01" * (j - i)
    return covered


@lru_cache(maxsize=1)
def _dictionary_words() -> tuple[frozenset[str], int]:
    words = frozenset(w for name, ranked in zxcvbn_matching.RANKED_DICTIONARIES.items() if name != "user_inputs"
                      for w in ranked)
    return words, max(map(len, words))


@lru_cache(maxsize=4096)
def is_guessable(value: str) -> bool:
    """True when zxcvbn (Dropbox's password strength estimator: common passwords, English
    words, names, keyboard patterns, l33t and sequences) needs fewer than 10^4 guesses."""
    if len(value) > _GUESSABLE_MAX_CHARS:
        return False
    return guesses_log10(value) < GUESSABLE_LOG10


def guesses_log10(value: str) -> float:
    """zxcvbn's `guesses_log10` for `value` (no user inputs), without its feedback and attack
    times, and with its word lists merged into one (each word at its best rank): the same
    number, since of matches on one span the search keeps the fewest guesses, and a third of
    the cost (three matchers look every substring up in every list)."""
    matches = zxcvbn_matching.omnimatch(value, _merged_dictionaries())
    return float(zxcvbn_scoring.most_guessable_match_sequence(value, matches)["guesses_log10"])


@lru_cache(maxsize=1)
def _merged_dictionaries() -> dict[str, dict[str, int]]:
    merged: dict[str, int] = {}
    for name, ranked in zxcvbn_matching.RANKED_DICTIONARIES.items():
        if name != "user_inputs":
            for word, rank in ranked.items():
                merged[word] = min(rank, merged.get(word, rank))
    return {"merged": merged}


def _is_token_value(value: str, *, quoted: bool) -> bool:
    v = value.strip()
    if _IDEOGRAPHS.search(v):
        return False  # generated tokens are ASCII; ideographs make it prose
    if _is_placeholder(v) or _is_placeholder_token(v) or "://" in v or _HASHED_VALUE.match(v):
        return False
    if not quoted and (re.search(r"[(){}\[\]&]", v) and not _symbol_alphabet_key(v)
                       or (_CODE_REFERENCE.match(v) and not re.search(r"\d", v) and not random_letters(v))):
        return False
    if _dotted_name(v):
        return False  # "ed25519.PrivateKey": a qualified name
    return _looks_generated(v, min_len=10)


# Generated keys drawn from letters, digits and punctuation (Django's `get_random_secret_key`,
# WordPress salts, password managers' strong passwords) hold brackets and `&` that in a short
# unquoted value mean code. A long run of them, several kinds of punctuation scattered among
# letters and digits with no space and not starting like a call, is such a key.
_KEY_PUNCTUATION = frozenset("!@#$%^&*()-_=+")
_CALL_START = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*[(\[{]")


def _symbol_alphabet_key(v: str) -> bool:
    return (len(v) >= 30 and not _SPACE.search(v) and len(_KEY_PUNCTUATION.intersection(v)) >= 4
            and _digits(v) >= 2 and sum(c.isalpha() for c in v) >= 12 and not _CALL_START.match(v)
            and shannon_entropy(v) >= 4.5)


_DOTTED = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+")


def _dotted_name(v: str) -> bool:
    """A dotted name in code ("session.secret", "ed25519.PrivateKey"); not a token made of
    dot-separated generated parts ("sk.eyJ1IjoiYW5h...Qx7.d4gbq..."), as Mapbox, Doppler or
    Twilio-style keys are: a part that passes the strict generated-token test is no name."""
    return _DOTTED.fullmatch(v) is not None and not any(
        _looks_generated(part, min_len=24, strict=True) for part in v.split("."))


def _looks_generated(value: str, *, min_len: int, strict: bool = False) -> bool:
    """Long enough, mixed characters, and enough entropy to be a generated credential."""
    v = value.strip().strip("=")
    if strict:
        # Anywhere in prose: only long mixed-case+digit tokens above the base64 limit of
        # detect-secrets (4.5); hex needs context, commit ids and hashes are common. (The
        # tests below, cheapest first; all digits or a word fail the classes or digits.)
        return (
            len(v) >= max(min_len, 24)
            and char_classes(v) >= 3
            and _digits(v) >= 2
            and not _word_run(v)
            and not _SPACE.search(v)
            and not _HEX_LIKE.fullmatch(v)
            and not _is_sequential(v)
            and not _is_placeholder(v)
            and shannon_entropy(v) >= 4.5
        )
    if len(v) < min_len or _is_placeholder(v) or re.search(r"\s", v):
        return False
    if re.fullmatch(r"\d+", v):
        return False
    letters_key = False
    if re.fullmatch(r"-{0,2}[A-Za-z]+(?:[_\-.]+[A-Za-z]+)*", v):
        if not random_letters(v):
            return False  # words, identifiers and flags: "session_secret", "mqtt-token", "--dry-run"
        letters_key = True  # (one case of letters is one class of characters, and still a key)
    if _is_sequential(v):
        return False
    hex_like = bool(_HEX_LIKE.fullmatch(v))
    entropy = shannon_entropy(v)
    if hex_like:
        return entropy >= 2.5 and sum(c.isdigit() for c in v) >= 2
    enough = entropy >= 3.0 or (len(v) >= 40 and entropy >= 2.7)
    return (char_classes(v) >= 2 or letters_key) and enough and bool(re.search(r"\d", v) or len(v) >= 20)


_ONE_CASE_RUN = re.compile(r"[a-z]{7,}|[A-Z]{7,}")


def _word_run(v: str) -> bool:
    """A run of 7+ letters of one case: a name in the value ("Configuration", "TOKEN"). From
    52 characters on, random base64 holds such a run one time in ten or more (one 64-character
    token in eight), so there the run must be dictionary words or too long for chance (17+)."""
    if len(v) < _CHANCE_RUN_LENGTH:
        return _ONE_CASE_RUN.search(v) is not None
    return any(len(m.group()) > _GUESSABLE_MAX_CHARS or is_words(m.group()) for m in _ONE_CASE_RUN.finditer(v))


_CHANCE_RUN_LENGTH = 52


# An identifier's parts: an acronym before a capitalised word ("HTTP" of "HTTPResponse"), a
# word with its capital, a run of capitals.
_IDENTIFIER_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+")


def random_letters(v: str) -> bool:
    """Letters only, 20+, and not words: a key drawn from the 52 letters or from one case's 26
    ("ZdHeICdTjPJWIPhCWEHdbRMdDjLatVll", "xsmzukxrezozsmgviabp"). In both cases: under a
    quarter of the letters in camelCase parts of 3+ letters that are dictionary words
    (`word_letters`): the camelCase and PascalCase names it could pass for are words for the
    most part ("AbstractSingletonProxyFactoryBean" all of it, "IOErrorIdToUrlMapV" over a
    quarter), random letters' parts are short and not words (under a quarter in 2997 of 3000
    seeded keys). In one case, a single part, under half of the letters inside dictionary words
    of 3+ letters found anywhere in it (`dictionary_share`): words run together
    ("sessioncookiesigningkey", "SHIPPINGBUCKETENTITY") are covered all through, even with
    abbreviations among them (98.6% of 2000 compounds of Wikipedia words and 35% "svc", "k8s",
    "grpc"...), random letters hardly (no seeded key of 3000 reached half)."""
    if len(v) < 20 or not v.isascii() or not v.isalpha():
        return False
    if v.islower() or v.isupper():
        return dictionary_share(v) < 0.5
    letters, in_words = word_letters(v)
    return in_words * 4 < letters


def word_letters(v: str) -> tuple[int, int]:
    """How many letters `v` has, and how many of them lie in its camelCase parts of 3+ letters
    that are dictionary words (`is_words`): "5tSomethingVeryLong" 18 and 17."""
    parts = _IDENTIFIER_PART.findall(v)
    return sum(map(len, parts)), sum(len(p) for p in parts if len(p) >= 3 and is_words(p))


def dictionary_share(v: str) -> float:
    """The share of `v`'s letters inside zxcvbn dictionary words of 3+ letters, the words
    looked for in each camelCase part (a one-case run is one part): "sessioncookiesigningkey"
    1.0, "5tSerializerProviderFeatureLogge" 0.74 ("serial" of "Serializer"), random letters
    and base64 near 0."""
    letters = covered = 0
    for part in _IDENTIFIER_PART.findall(v[:64]):
        letters += len(part)
        if len(part) >= 3:
            covered += _covered_letters(part.lower())
    return covered / max(1, letters)


@lru_cache(maxsize=4096)
def _covered_letters(part: str) -> int:
    return sum(dictionary_coverage(part, 3))


_SPACE = re.compile(r"\s")
_HEX_LIKE = re.compile(r"[0-9a-fA-F\-]+")


def _digits(v: str) -> int:
    """How many characters of `v` are digits (`str.isdigit`)."""
    return sum(map(v.count, "0123456789")) if v.isascii() else sum(c.isdigit() for c in v)


# Adds one to every byte: `_is_sequential` compares a text with itself shifted by one.
_NEXT_BYTE = bytes((b + 1) & 0xFF for b in range(256))


def _is_sequential(v: str) -> bool:
    """ "abcdefgh...", "12345678...": keyboard-walk fillers, not generated values."""
    low = v.lower()
    if low.isascii():  # eight characters each one up from the one before: seven equal pairs in a row
        if len(low) < 8:
            return False
        raw = low.encode("ascii")
        pairs = int.from_bytes(raw[:-1].translate(_NEXT_BYTE), "big") ^ int.from_bytes(raw[1:], "big")
        return b"\x00" * 7 in pairs.to_bytes(len(raw) - 1, "big")
    run = best = 1
    for a, b in zip(low, low[1:]):
        run = run + 1 if ord(b) - ord(a) == 1 else 1
        best = max(best, run)
    return best >= 8


# --------------------------------------------------------------------------- layer 4


_BARE_PIN = re.compile(
    r"(?i)\b(?:pin(?:\s?code)?|passcode|(?:door|gate|alarm|safe|garage|keypad|locker)\s?code)\s*(?:#|no\.?)?\s*"
    r"(?P<val>\d{4,8})\b(?![.,]\d)"
)


# A BIP-39 recovery phrase: 12 to 24 lower-case words of 3 to 8 letters (its word list's
# lengths), in groups of three, ending the clause.
_MNEMONIC = re.compile(r"(?:[a-z]{3,8}(?:[ \t]+|,[ \t]*)){11,23}[a-z]{3,8}(?![\w'\-])(?![ \t]+[a-z])")
_PHRASE_KEYWORD = re.compile(r"(?i)seed|recovery|mnemonic")
# A credential keyword followed at once by its value, no verb between: "api key oy2m4r...",
# "the passcode BdDS7y", "bot token 8f2Kq...". The value must look generated.
_KEYWORD_THEN_VALUE = re.compile(
    r"(?i)\b(?P<kw>(?:api|access|secret|private|auth|bearer|bot|app|personal[ \t]+access)[ \t]?(?:key|token)s?|"
    r"(?:client|shared|signing|webhook|app|api|consumer)[ \t]secret|pass(?:\s?(?:word|code|phrase))?)[ \t]+"
    r"(?P<val>[^\s\"'`]{6,200})"
)
# An account and its password side by side: "robert@icloud.com / c#i8vaHYdK", "user@x.io, pw9!Lk2m"
# (not after a colon: "me@host.example.com:backup2024Q1" is an scp or ssh target).
_EMAIL_THEN_PASSWORD = re.compile(
    r"(?<![\w.+\-])[\w.+\-]{1,64}@[\w\-]+(?:\.[\w\-]+)+[ \t]*(?:/|\||,)[ \t]*(?P<pw>[^\s\"'`,;]{8,64})(?=[\s,;.]|$)"
)


def _sentence_hits(text: str, out: frozenset[re.Pattern] = frozenset()) -> Iterator[SecretHit]:
    for m in _scan(_BARE_PIN, text, out):
        yield SecretHit("hard.secret.plain_sentence", m.start("val"), m.end("val"))
    yield from _keyword_then_value_hits(text)
    if "@" in text:
        for m in _EMAIL_THEN_PASSWORD.finditer(text):
            pw = m.group("pw").rstrip(".")
            if char_classes(pw) >= 3 and "@" not in pw and "/" not in pw and _is_password_value(pw, quoted=True) \
                    and not _is_sequential(pw):
                yield SecretHit("hard.secret.plain_sentence", m.start("pw"), m.start("pw") + len(pw))
    for m in _scan(_SENTENCE_KEYWORD, text, out):
        quoted = m.group("qval") is not None
        value = m.group("qval") if quoted else m.group("val")
        start = m.start("qval") if quoted else m.start("val")
        if _PHRASE_KEYWORD.match(m.group("kw")):
            words = _MNEMONIC.match(text, start)
            if words is not None and len(words.group().replace(",", " ").split()) % 3 == 0:
                if _bip39_test_vector(words.group()):
                    continue  # the standard's own example ("abandon abandon ... about"): public
                yield SecretHit("hard.secret.plain_sentence", start, words.end())
                continue
        if not quoted:
            value = value.rstrip(".,;:!?)]}")
            if not value:
                continue
        kw = m.group("kw").lower()
        if m.group("verb") == "-" and text[m.start("kw") - 1 : m.start("kw")] in ("-", "_"):
            continue  # "to-set-a-password-for-your-vm": a slug or identifier, not a sentence
        if _sentence_value_is_secret(text, value, quoted, kw, start + len(value), m.group("verb")):
            yield SecretHit("hard.secret.plain_sentence", start, start + len(value))
    yield from _other_order_hits(text, out)


def _other_order_hits(text: str, out: frozenset[re.Pattern] = frozenset()) -> Iterator[SecretHit]:
    """The value and the credential's name in other orders (`_SET_TO` and `_APPOSITION`: the
    name first, the value quoted or bare; `_VALUE_FIRST`, `_VALUE_AS`, `_VALUE_APPOSED`: the
    value first), each value judged as the sentence rule judges a value after "set to" (a bare
    word never counts: "set the password to expire")."""
    for rx in (_SET_TO, _APPOSITION):
        for m in _scan(rx, text, out):
            quoted = m.group("qval") is not None
            value = m.group("qval") if quoted else m.group("val").rstrip(".,;:!?)]}")
            start = m.start("qval") if quoted else m.start("val")
            kw = m.group("kw").lower()
            if value and _sentence_value_is_secret(text, value, quoted, kw, start + len(value), "set to"):
                yield SecretHit("hard.secret.plain_sentence", start, start + len(value))
    for rx in (_VALUE_FIRST, _VALUE_AS, _VALUE_APPOSED):
        for m in _scan(rx, text, out):
            raw = m.group("val").rstrip(",;:")
            value = raw.lstrip("([{")
            start = m.start("val") + len(raw) - len(value)
            kw = m.group("kw").lower()
            if value and _sentence_value_is_secret(text, value, False, kw, start + len(value), "set to"):
                yield SecretHit("hard.secret.plain_sentence", start, start + len(value))


# Every match holds one of these (a cheap test before the case-blind scan).
_KEYWORD_THEN_VALUE_LITERALS = ("key", "Key", "KEY", "oken", "OKEN", "ecret", "ECRET", "ass", "ASS")


def _keyword_then_value_hits(text: str) -> Iterator[SecretHit]:
    if not any(w in text for w in _KEYWORD_THEN_VALUE_LITERALS):
        return
    for m in _KEYWORD_THEN_VALUE.finditer(text):
        value = m.group("val").rstrip(".,;:!?)]}")
        if (len(value) < 6 or "://" in value or value.startswith("/") or "=" in value.rstrip("=")
                or _sentence_value_is_stand_in(value) or _sentence_value_is_not_literal(value, False)):
            continue
        if _is_numeric_keyword(m.group("kw").lower()):
            ok = re.fullmatch(r"[A-Za-z0-9]{4,12}", value) is not None and bool(re.search(r"\d", value))
        elif m.group("kw").lower().startswith("pass") and (_HUMAN_PASSWORD.fullmatch(value) or _is_passphrase(value)):
            ok = m.group("kw").lower() != "pass" or _HUMAN_PASSWORD.fullmatch(value) is not None
        elif m.group("kw").lower() == "pass":
            ok = False  # "pass" alone is also a verb: only a value built like a password follows it
        else:
            ok = _looks_generated(value, min_len=12) and not _dotted_name(value) and not _is_placeholder_token(value)
        if ok:
            yield SecretHit("hard.secret.plain_sentence", m.start("val"), m.start("val") + len(value))


# The sentence keywords that, written as one word ("apiKey", "ACCESSTOKEN", "authToken"), are a
# name in code: its value is judged as layer 3 judges a token-like name's (`_is_token_value`),
# so a name made of words ("AbstractSingletonProxyFactoryBean") is no key there either.
_CODE_NAME_KW = re.compile(r"(?:api|access|private)key|(?:auth|access|api|bearer)token")


def _sentence_value_is_secret(text: str, value: str, quoted: bool, kw: str, end: int, verb: str = "is") -> bool:
    if _CODE_NAME_KW.fullmatch(kw):
        return not _sentence_value_is_stand_in(value) and _is_token_value(value, quoted=quoted)
    numeric_kw = _is_numeric_keyword(kw)
    if numeric_kw and re.fullmatch(r"\d[\d\s\-]{2,14}", value):
        return 3 <= len(re.sub(r"\D", "", value)) <= 12  # "the door code is 0000"
    if not numeric_kw and verb.strip() not in ("-", "") and _is_passphrase(value.strip("\"'`")):
        return True  # "the password is copper-cactus-willow-violet": words, but four of them
    if _sentence_value_is_stand_in(value) or _sentence_value_is_not_literal(value, quoted):
        return False
    if numeric_kw:
        return _is_code_value(value, quoted)
    if len(value) < 4:
        return False
    if quoted:
        return True
    if _DIGIT_OR_SYMBOL.search(value) or _is_mixed_case(value):
        return not _CODE_REFERENCE.match(value) or bool(_DIGIT_OR_SYMBOL.search(value))
    if verb.strip() in _FOREIGN_VERBS:
        return False  # a bare word after "ist" / "es" may be "falsch": no status-word list for these
    return _bare_word_ends_sentence(text, value, end, verb)


_FOREIGN_VERBS = frozenset({"ist", "lautet", "est", "es", "é", "är", "jest", "è"})


def _is_numeric_keyword(kw: str) -> bool:
    """PINs, door codes and combinations: their values are digits, not words."""
    return kw.startswith("pin") or "code" in kw or kw == "combination"


def _sentence_value_is_stand_in(value: str) -> bool:
    """A status word, placeholder or test value in place of the secret ("is required"), or a
    filler made mostly of one character ("AIzaaaaaaaaa...", "sk-xxxxxxxx")."""
    return (value.lower() in _STATUS_WORDS or _is_placeholder(value) or bool(_TEST_VALUE.match(value))
            or (len(value) >= 8 and _is_placeholder_token(value)))


def _sentence_value_is_not_literal(value: str, quoted: bool) -> bool:
    """Punctuation, a hash, a reference or template, a word naming a credential, a
    hyphenated or snake_case name, or (unquoted) code."""
    if not re.search(r"[A-Za-z0-9]", value) or _HASHED_VALUE.match(value) or re.match(r"[$&({\[<%=]", value):
        return True
    if re.search(r"(?i)pass(?:wor)?d|passwd|secret|token", value) or re.fullmatch(r"[a-z]+(?:[_\-][a-z]+)+", value):
        return True
    if _qualified_type_name(value):
        return True  # "PrivateKey = ed25519.PrivateKey": code naming a type
    return not quoted and bool(re.search(r"[(){}\[\]]", value))


def _qualified_type_name(value: str) -> bool:
    """A dotted name whose last part is capitalised words: a type or member in code
    ("ed25519.PrivateKey", "crypto.SecretKey"), not a value."""
    m = re.fullmatch(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*\.([A-Z][a-z]+(?:[A-Z][a-z]+)*)", value)
    return m is not None and all(is_words(w) for w in _CAMEL_HUMP.split(m.group(1)))


def _is_code_value(value: str, quoted: bool) -> bool:
    """The value of a PIN or code keyword: 3 to 12 digits, or something quoted or with
    digits or symbols."""
    digits = re.sub(r"[\s\-]", "", value)
    if digits.isdigit():
        return 3 <= len(digits) <= 12
    return quoted or (bool(_DIGIT_OR_SYMBOL.search(value)) and len(value) >= 4)


def _is_mixed_case(value: str) -> bool:
    """An upper-case letter after the first character and a lower-case one ("hunterTwo")."""
    return any(c.isupper() for c in value[1:]) and any(c.islower() for c in value)


def _bare_word_ends_sentence(text: str, value: str, end: int, verb: str) -> bool:
    """A bare lowercase word is a password only when the sentence ends right after it
    ("the password is swordfish."), not in "the password is kept in 1Password", and
    not after "set to" ("the password is set to expire")."""
    if re.search(r"\bto$", verb.strip()):
        return False
    rest = text[end : end + 2]
    return value.isalpha() and (rest == "" or rest[0] in ".!;,\n" or rest.startswith(" \n"))


def _number_hits(text: str, out: frozenset[re.Pattern] = frozenset()) -> Iterator[SecretHit]:
    for m in _scan(_CARD, text, out):
        found = _card_number(m.group())
        if found is None:
            continue
        number, digits = found
        end = m.start() + len(number)
        grouped = bool(re.fullmatch(r"\d{4}([ -])\d{4}\1\d{4}\1\d{1,7}", number))
        context = _CARD_CONTEXT.search(text, max(0, m.start() - 40), m.start())
        if (grouped or context) and not _test_card(text, m.start(), end, digits):
            yield SecretHit("hard.secret.payment_card", m.start(), end)
    for m in _scan(_SSN, text, out):
        if _SSN_CONTEXT.search(text, max(0, m.start() - 40), m.end() + 20):
            yield SecretHit("hard.secret.national_id", m.start(), m.end())


def _card_number(run: str) -> tuple[str, str] | None:
    """The card number a run of digits starts with, and its digits: the whole run, or else the
    longest part of it that ends where a group of digits ends (the run swallows what follows a
    number written with spaces, "5500 0055 5555 5559 12 27" with its expiry month and year),
    when it has 13-19 digits and passes the Luhn check."""
    cuts = [len(run)] + [i for i in range(len(run) - 1, 0, -1) if run[i] in " -"]
    for cut in cuts:
        digits = re.sub(r"\D", "", run[:cut])
        if 13 <= len(digits) <= 19 and _luhn_ok(digits):
            return run[:cut], digits
    return None


# Words saying a card number is for testing, in its line: card processors document test
# numbers for their sandboxes ("Stripe's test card 4242 4242 4242 4242", "Adyen test Mastercard").
_TEST_CARD_CONTEXT = re.compile(
    r"(?i)\b(?:test|testing|sandbox|demo|dummy|fake|sample|example|mock|fixture|staging|qa)\b"
)


def _test_card(text: str, start: int, end: int, digits: str) -> bool:
    """A card number for testing, not a card: its line says so (`_TEST_CARD_CONTEXT`), or one
    digit makes up half of it or more ("4111 1111 1111 1111", "4000 0000 0000 0002"), as in the
    numbers processors document; an issued card's digits are not that repetitive."""
    if max(digits.count(d) for d in set(digits)) * 2 >= len(digits):
        return True
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    return (_TEST_CARD_CONTEXT.search(text, line_start, start) is not None
            or _TEST_CARD_CONTEXT.search(text, end, len(text) if line_end < 0 else line_end) is not None)


def _luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


# --------------------------------------------------------------------------- context

# Values whose shape alone is common in harmless text (64 hex digits are also a transaction
# hash or a checksum; 16 base32 letters also an id; a list of codes also order numbers) but
# which are credentials when a word naming what they are stands just before them, on the
# same line or the line above: a context word, then a value the shape of that credential.
_CONTEXT_VALUES: tuple[tuple[str, re.Pattern[str], re.Pattern[str]], ...] = (
    # a wallet's private key: 64 hex digits (0x optional), 51-52 base58 (WIF), 87-88 base58
    # (a Solana secret key), or 64 byte values (a Solana keypair file)
    ("hard.secret.wallet_key",
     re.compile(r"(?i)private[ _\-]?key|secret[ _\-]?key|\bwallet\b|\bsigner\b|key[ _\-]?pair|\bWIF\b|paper wallet"),
     re.compile(r"(?<![\w])(?:0x)?[0-9a-fA-F]{64}(?![\w])|(?<![\w])[5KL][1-9A-HJ-NP-Za-km-z]{50,51}(?![\w])"
                r"|(?<![\w])[1-9A-HJ-NP-Za-km-z]{86,88}(?![\w])|\[(?:[ \t]*\d{1,3}[ \t]*,){63}[ \t]*\d{1,3}[ \t]*\]")),
    # a TOTP / HOTP shared secret: base32, 16 to 64 letters, often shown in groups of four
    ("hard.secret.otp_seed",
     re.compile(r"(?i)(?<![a-z])(?:t?otp|hotp|2fa|mfa|two[ \-]factor|authenticator|setup[ \-]key|shared[ _\-]secret"
                r"|google[ \-]auth[a-z]*)(?![a-z])|typed the key|enter (?:this|the) key"),
     re.compile(r"(?<![\w])(?:[A-Z2-7]{16,64}|[a-z2-7]{16,64}|(?:[A-Z2-7]{4}[ \-]){3,15}[A-Z2-7]{4}"
                r"|(?:[a-z2-7]{4}[ \-]){3,15}[a-z2-7]{4})(?![\w])")),
    # recovery and backup codes: several codes of one shape in a row, or one grouped recovery key
    ("hard.secret.recovery_code",
     re.compile(r"(?i)\b(?:recovery|backup|emergency|one[ \-]time|2fa|mfa|scratch)[ \-](?:codes?|keys?)\b"
                r"|\b(?:bitlocker|recovery)\b"),
     # (each code and the separator after it is an atomic group, and a code ends where its
     # characters do: a long run of letters is never split into "codes", so no backtracking)
     re.compile(r"(?<![\w\-])(?>[A-Za-z0-9]{4,10}(?:-[A-Za-z0-9]{4,10})?(?![A-Za-z0-9\-])"
                r"(?:[ \t]*[,;]?[ \t]*\n[ \t]*|[ \t]*[,;][ \t]*|[ \t]+)){3,}"
                r"[A-Za-z0-9]{4,10}(?:-[A-Za-z0-9]{4,10})?(?![\w\-])"
                r"|(?<![\w\-])(?:[A-Z0-9]{4,6}-){4,11}[A-Z0-9]{4,6}(?![\w\-])")),
)
_CONTEXT_WINDOW = 120  # characters before the value a context word may stand in
_CONTEXT_AGAINST = re.compile(
    r"(?i)\b(?:tx|txn|transaction|tx[ _\-]?hash|hash|sha\d*|digest|checksum|commit|block|address|public|pubkey"
    r"|order|tracking|invoice|serial|example|sample|test[ \-]?vector)\b"
)
# A recovery phrase (BIP-39 and alike): 12, 15, 18, 21 or 24 lower-case words of 3 to 8
# letters, none of them a function word of prose (word lists leave those out).
_PHRASE_WORDS = re.compile(r"(?<![\w'\-])[a-z]{3,8}(?:(?:[ \t]+|,[ \t]*)[a-z]{3,8}){11,23}(?![\w'\-])")
_PHRASE_CONTEXT = re.compile(r"(?i)\b(?:seed|recovery|mnemonic|backup|secret)[ \-]?(?:phrase|words?)?\b|\bwallet\b")
_PROSE_WORDS = frozenset(
    """the and was for you that with this have are not but from they his her she him had were been
    its our your their them then than what when where which who will would could should there
    here into onto some just like also very much more most only over about because after""".split()
)
_CONTEXT_LITERALS = ("key", "Key", "KEY", "allet", "igner", "WIF", "otp", "OTP", "2FA", "2fa", "MFA", "mfa",
                     "actor", "uthenticator", "code", "Code", "ecovery", "ECOVERY", "itLocker", "ackup", "eed",
                     "nemonic", "hrase", "ecret", "ALLET")


def _context_hits(text: str, out: frozenset[re.Pattern] = frozenset()) -> Iterator[SecretHit]:
    """Values of a credential's shape with a word naming that credential just before them
    (`_CONTEXT_VALUES`), and recovery phrases after a word naming one; a word saying the value
    is public, a hash or an example (`_CONTEXT_AGAINST`) between them rules it out. `out`:
    patterns the one pass ruled out (a context or value pattern among them: no hit)."""
    if not any(w in text for w in _CONTEXT_LITERALS):
        return
    for rule_id, context, value in _CONTEXT_VALUES:
        if context in out or value in out or context.search(text) is None:
            continue  # (the cheaper test first: most texts name none of these)
        for m in value.finditer(text):
            before = text[max(0, m.start() - _CONTEXT_WINDOW) : m.start()]
            if "\n\n" in before:
                before = before[before.rfind("\n\n") :]
            words = list(context.finditer(before))
            if not words or _CONTEXT_AGAINST.search(before, words[-1].end()):
                continue
            found = m.group()
            if rule_id == "hard.secret.otp_seed" and not (re.search(r"[2-7]", found) and re.search(r"[A-Za-z]", found)):
                continue  # base32 secrets mix letters and the digits 2-7
            if rule_id == "hard.secret.recovery_code" and not _code_list(found):
                continue
            bare = found.removeprefix("0x").replace(" ", "")
            if _is_placeholder(bare) or _is_placeholder_token(bare) or _is_sequential(bare):
                continue
            yield SecretHit(rule_id, m.start(), m.end())
    for m in (_PHRASE_WORDS.finditer(text) if _PHRASE_CONTEXT not in out and _PHRASE_CONTEXT.search(text) else ()):
        words = m.group().replace(",", " ").split()
        if len(words) not in (12, 15, 18, 21, 24) or any(w in _PROSE_WORDS for w in words):
            continue
        before = text[max(0, m.start() - _CONTEXT_WINDOW) : m.start()]
        if _PHRASE_CONTEXT.search(before) and not _CONTEXT_AGAINST.search(before) and len(set(words)) > 2 \
                and not _bip39_test_vector(m.group()):
            yield SecretHit("hard.secret.plain_sentence", m.start(), m.end())


def _bip39_test_vector(words: str) -> bool:
    """The words are a BIP-39 test vector (`recovery_phrases`): public, no secret."""
    return any(p.test_vector for p in find_recovery_phrases(words))


def _code_list(found: str) -> bool:
    """Recovery codes: each holds a digit, and they share one shape (length and dash), or a
    single grouped key."""
    codes = re.split(r"[\s,;]+", found.strip())
    if not all(re.search(r"\d", c) for c in codes):
        return False
    if len(codes) == 1:
        return True
    shapes = {re.sub(r"[A-Za-z0-9]", "x", c) for c in codes}
    pairs = {len(c) for c in codes}
    return len(shapes) <= 2 and max(pairs) - min(pairs) <= 1 and len(codes) >= 4


# --------------------------------------------------------------------------- layer 5


def _high_entropy_hits(text: str) -> Iterator[SecretHit]:
    """Long random-looking tokens anywhere, with the entropy limit applied here."""
    for m in _HIGH_ENTROPY_TOKEN.finditer(text):
        token = m.group()
        if m.start() > 0 and text[m.start() - 1] == "\\" and token[0] in "nrt":
            # after an escaped line break ("\\nMIIB..." in JSON) the token starts one later
            m = _TOKEN_BODY.match(text, m.start() + 1)
            if m is None:
                continue
            token = m.group()
        if _path_like(token):
            continue  # a path or URL segment
        if token.startswith(("pk_live_", "pk_test_")):
            continue  # publishable keys are public by design
        if not _looks_generated(token, min_len=24, strict=True):
            continue  # (tested first: it rules out most tokens, and costs less than the names before it)
        if _HASH_SOURCE.match(token):
            continue  # "sha384-<base64>": a subresource-integrity or CSP hash of a file
        if _encoded_json_without_secret(token) or _encoded_public_data(token):
            continue  # base64 of a document, a file, text or a public key, with no secret in it: data
        if _content_address(token):
            continue  # an IPFS content id (a hash of a file), written in base58
        if _fernet_ciphertext(token):
            continue  # data encrypted with a key that is not here
        if _public_by_context(text, m.start(), token):
            continue  # inline data, a module hash, a public address or a payment object's id
        if _in_public_block(text, m.start()) or _in_password_hash(text, m.start()) or _public_by_name(text, m.start()):
            continue  # public keys, certificates, password hashes, CSRF tokens and the like
        yield SecretHit("hard.secret.high_entropy", m.start(), m.end())


def _path_like(token: str) -> bool:
    """Two or more slashes between names: a path or a URL's path ("src/main/java/com/acme",
    "api/v2/users/12345"). Base64 holds slashes too (one character in 64: 48 random bytes
    hold two or more one time in four), between random runs: a part of 8+ letters and digits
    in both cases, under half of its letters in dictionary words (`dictionary_share`), is such
    a run ("MyApp2Config" is words)."""
    if token.count("/") < 2 or "+" in token or "=" in token:
        return False
    for part in token.split("/"):
        if len(part) >= 8 and part.isalnum() and not part.islower() and not part.isupper() \
                and dictionary_share(part) < 0.5:
            return False
    return True


def _fernet_ciphertext(token: str) -> bool:
    """A Fernet token (Python's `cryptography`): version byte 0x80, a timestamp, an IV, AES
    blocks and an HMAC, 57 + 16k bytes in URL-safe base64. It is ciphertext, readable only
    with a key that is not in it."""
    if not token.startswith("gAAAAA"):
        return False
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    except (ValueError, binascii.Error):
        return False
    return raw[:1] == b"\x80" and len(raw) >= 73 and (len(raw) - 57) % 16 == 0


# Right before a token: a data URI's base64 marker (an inlined image or font), or an
# algorithm label of a hash (Go's "h1:", "sha256:", an SSH "SHA256:" fingerprint).
_DATA_OR_HASH_LABEL = re.compile(r"(?:data:[\w.+\-]+/[\w.+\-]+(?:;[\w.+\-]+=[\w.+\-]+)*;base64,|"
                                 r"\b(?:h1|sha1|sha224|sha256|sha384|sha512|md5|blake2b|SHA\d{1,3}):)$")
# Words saying a base58 / bech32 string is public: an address, a program or public key id.
_PUBLIC_CONTEXT = re.compile(r"(?i)\b(?:address|addr|program[ _\-]?id|pub[ _\-]?key|public[ _\-]?key|recipient"
                             r"|receive|watch[ \-]only|deposit)\b")
_BASE58 = re.compile(r"[1-9A-HJ-NP-Za-km-z]+")
# Extended public keys (BIP-32 xpub and variants) and Nostr public keys: public by prefix.
_PUBLIC_PREFIX = ("xpub", "ypub", "zpub", "tpub", "Ypub", "Zpub", "npub1")
# Stripe object ids ("price_...", "cus_...", "sub_..."): ids of records, not keys (keys are
# sk_ / rk_ / pk_ / whsec_).
_OBJECT_ID = re.compile(r"(?:price|prod|cus|sub|si|pi|pm|ch|py|in|il|ii|txn|evt|acct|plan|seti|src|re|po|tr|ba"
                        r"|card|cs|prc|cn|dp|du|ipi|mbur|bpc|ic)_[A-Za-z0-9]{14,40}$")


def _public_by_context(text: str, pos: int, token: str) -> bool:
    """What stands around a random-looking token says it is not a credential: it follows a
    data URI's base64 marker or a hash's algorithm label, it is base58 after a word naming an
    address or public key, it has a public-key prefix, or it is a payment object's id."""
    if _DATA_OR_HASH_LABEL.search(text, max(0, pos - 80), pos) or token.startswith(_PUBLIC_PREFIX):
        return True
    if _OBJECT_ID.match(token):
        return True
    return _BASE58.fullmatch(token) is not None and _PUBLIC_CONTEXT.search(text, max(0, pos - 40), pos) is not None


# W3C subresource integrity and CSP hash sources: an algorithm, a dash, the base64 digest.
_HASH_SOURCE = re.compile(r"(?:sha(?:256|384|512)|md5)-[A-Za-z0-9+/]{22,88}={0,2}$")


def _encoded_json_without_secret(token: str) -> bool:
    """`token` is base64 (standard or URL-safe) of a JSON object or array in which no secret
    is found: encoded data, judged by what it holds (decoded once, not again)."""
    if not token.startswith(("eyJ", "eyI", "W3", "WyJ", "ewo", "ewog", "e30")):
        return False  # base64 of '{"', '{', '["', '[' and '{\n' starts so
    raw = token.strip("=")
    try:
        decoded = base64.b64decode(raw.replace("-", "+").replace("_", "/") + "=" * (-len(raw) % 4),
                                   validate=True).decode("utf-8")
        doc = json.loads(decoded)
    except (ValueError, binascii.Error, UnicodeDecodeError):
        return False
    if not isinstance(doc, (dict, list)):
        return False
    return not find_secrets(decoded)


def _base64_bytes(token: str) -> bytes | None:
    """`token` decoded as base64 (standard or URL-safe, padding optional; a token cut short
    loses its last incomplete group), or None when it is not base64."""
    raw = token.rstrip("=").replace("-", "+").replace("_", "/")
    raw = raw[: len(raw) - len(raw) % 4] if len(raw) % 4 == 1 else raw + "=" * (-len(raw) % 4)
    try:
        return base64.b64decode(raw, validate=True)
    except (ValueError, binascii.Error):
        return None


# The first bytes of media files (PNG, JPEG, GIF, WebP and other RIFF, PDF, WOFF, WOFF2, OpenType,
# ICO, MP3 with ID3, Ogg, FLAC, ISO media "ftyp" at offset 4): base64 of one is an inlined image,
# font or sound (a thumbnail, an icon, an e-mail attachment), never a generated key. Random
# bytes start with one of these 4-8 byte signatures about once in 10^8 (JPEG's three in 10^7).
# Archives (gzip, zip) are left out: they may hold anything.
_MEDIA_SIGNATURES = (b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"GIF87a", b"GIF89a", b"RIFF", b"%PDF-", b"wOFF",
                     b"wOF2", b"OTTO", b"\x00\x01\x00\x00\x00", b"\x00\x00\x01\x00", b"ID3", b"OggS", b"fLaC")
# An SSH public key's wire format (RFC 4253 6.6, RFC 5656, OpenSSH's PROTOCOL.u2f): a 4-byte
# length, then the key type's name. Base64 of it ("AAAAC3NzaC1lZDI1NTE5...") is the public half
# of a key pair, made to be shared (authorized_keys, known_hosts).
_SSH_KEY_TYPE = re.compile(rb"(?:ssh|ecdsa|sk|rsa|x509v3)-[a-z0-9@.\-]{2,40}")
_PRINTABLE_SHARE = 0.95


def _encoded_public_data(token: str) -> bool:
    """`token` is base64 of something that is no credential, decoded once: a media file (by
    its first bytes), an SSH public key (by its wire format), a public PEM block (a certificate,
    as in a kubeconfig's `certificate-authority-data`), or readable text of several words with
    no secret found in it. Generated keys decode to random bytes; a base64 password or
    `user:password` pair decodes to one word, which is not released."""
    raw = _base64_bytes(token)
    if raw is None or len(raw) < 16:
        return False
    if raw.startswith(_MEDIA_SIGNATURES) or raw[4:8] == b"ftyp":
        return True
    n = int.from_bytes(raw[:4], "big")
    if 7 <= n <= 44 and _SSH_KEY_TYPE.fullmatch(raw[4 : 4 + n]):
        return True
    text = _utf8_text(raw)
    if text is None or len(text) < 16 or not _readable(text):
        return False
    begin = _PEM_BEGIN.match(text)
    if begin is not None:
        return _public_armour(begin.group(1))
    return len(text.split()) >= 4 and "PRIVATE KEY" not in text and not find_secrets(text)


def _utf8_text(raw: bytes) -> str | None:
    """`raw` as UTF-8 text, allowing only its last character to be cut off (a base64 run cut
    short), or None when it is not UTF-8."""
    for cut in range(4):
        try:
            return raw[: len(raw) - cut].decode("utf-8")
        except UnicodeDecodeError:
            continue
    return None


def _readable(text: str) -> bool:
    """Nearly all printable characters and line breaks: text, not bytes that happen to decode."""
    return sum(c.isprintable() or c in "\n\r\t" for c in text) >= _PRINTABLE_SHARE * len(text)


_BASE58_ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_BASE58_VALUE = {c: i for i, c in enumerate(_BASE58_ALPHABET)}
# Multihash function codes (the multiformats table): SHA-1, SHA2-256/512, SHA3-512/384/256/224,
# Keccak-256. An IPFS v0 content id is base58 of one ("Qm" and 44 characters for SHA2-256).
_MULTIHASH_CODES = frozenset({0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x1B})


def _content_address(token: str) -> bool:
    """`token` is base58 of a multihash: a function code, the digest's length, the digest
    (the length byte must match, which random base58 does about once in 10^4 tokens that
    start with a code). A content id names a file by its hash; it gives access to nothing
    that its holder could not fetch anyway."""
    if len(token) < 30 or len(token) > 100 or not _BASE58.fullmatch(token):
        return False
    value = 0
    for c in token:
        value = value * 58 + _BASE58_VALUE[c]
    raw = value.to_bytes((value.bit_length() + 7) // 8, "big")
    return len(raw) >= 22 and raw[0] in _MULTIHASH_CODES and raw[1] == len(raw) - 2


_PEM_BEGIN = re.compile(r"-----BEGIN ([A-Z0-9 ]{1,40})-----")


def _in_public_block(text: str, pos: int) -> bool:
    """Inside an armoured block that is public by design: a public key, certificate or
    signature ("-----BEGIN PGP PUBLIC KEY BLOCK-----" up to its END line)."""
    begin = text.rfind("-----BEGIN ", 0, pos)
    if begin < 0 or "-----END " in text[begin:pos]:
        return False
    m = _PEM_BEGIN.match(text, begin)
    return _public_armour(m.group(1) if m else "PRIVATE")


def _public_armour(kind: str) -> bool:
    """An armoured block's kind ("PGP PUBLIC KEY BLOCK", "CERTIFICATE") is public by design."""
    return "PRIVATE" not in kind and re.search(r"PUBLIC|CERTIFICATE|SIGNATURE", kind) is not None


_PUBLIC_NAME = re.compile(
    r"(?i)public|pub_|csrf|xsrf|authenticity|signature|checksum|integrity|hash|digest|etag"
    r"|(?:sha|crc)(?:\d+|(?![a-z]))|md5"  # "CodeSha256", "crc32"; not "shared_secret"
    r"|(?:^|[_\-.])(?:id|Id|ID)s?$|(?-i:(?<=[a-z])(?:Id|ID)s?$)"  # identifiers: "TenantId", "object_id"
)
_HTML_NAMED_VALUE = re.compile(r"(?i)name=[\\\"']{0,2}([\w.\-]{2,60})[\\\"']{0,2}\s+value=[\\\"']{0,2}$")
_NAME_BEFORE_VALUE = re.compile(r"([\w.\-]{2,60})[\\\"'\]]{0,3}\s*(?::=|=>|[:=])\s*[\\\"'`]{0,2}$")


def _public_by_name(text: str, pos: int) -> bool:
    """The token is the value of a name saying it is public or a check value
    (`public_key = "..."`, `csrf-token=...`, `authenticity_token" value="...`)."""
    # The token may start inside the value ("Signature: Ixn4b~PcNBdx..."): look before the
    # value's first character as well.
    word = _word_start(text, pos, "\"'`=:", 400)
    names = [rx.search(text, max(0, at - back), at) for at in {pos, word}
             for rx, back, html in ((_NAME_BEFORE_VALUE, 80, False), (_HTML_NAMED_VALUE, 120, True))
             if _may_end_with(text, max(0, at - back), at, html)]
    return any(m is not None and (_PUBLIC_NAME.search(m.group(1)) or _REQUEST_TOKEN_NAME.search(m.group(1)))
               for m in names)


def _may_end_with(text: str, lo: int, at: int, html: bool) -> bool:
    """False when `_NAME_BEFORE_VALUE` (or, with `html`, `_HTML_NAMED_VALUE`) cannot match
    `text[lo:at]`: read back from where `$` can match (the end, or before a final line
    break), past the quotes and spaces the pattern ends with, the separator (`:`, `=`, `=>`)
    or `value=` must be there. A cheap test before a search that tries every start."""
    ends = (at, at - 1) if at > lo and text[at - 1] == "\n" else (at,)
    for end in ends:
        j = end
        for _ in range(2):
            if j > lo and text[j - 1] in ("\\\"'" if html else "\\\"'`"):
                j -= 1
        if html:
            if j - 6 >= lo and text[j - 6 : j].lower() == "value=":
                return True
            continue
        while j > lo and text[j - 1].isspace():
            j -= 1
        if j > lo and text[j - 1] in ":=>":
            return True
    return False


def _in_password_hash(text: str, pos: int) -> bool:
    """Part of a password hash ("$argon2id$v=19$m=65536,...$<salt>$<hash>", "$2b$12$..."):
    the word the token sits in starts like one."""
    start = _word_start(text, pos, "\"'`", 120)
    return _HASHED_VALUE.match(text[start:pos]) is not None  # `^` anchors at the slice


def _word_start(text: str, pos: int, stops: str, limit: int) -> int:
    """Where the word ending at `pos` starts: back over characters that are neither space nor
    in `stops`, at most `limit` of them."""
    start = pos
    while start > 0 and not text[start - 1].isspace() and text[start - 1] not in stops and pos - start < limit:
        start -= 1
    return start


# --------------------------------------------------------------------------- two fields


_MAX_LABELLED_VALUE = 200  # a value, not a note that happens to sit under such a title


def find_labelled_value(label: str, value: str) -> list[SecretHit]:
    """A credential whose name is one field and whose value is another: a memory titled "Bank
    PIN" holding "4471", or "Wifi password" holding "BlueFalcon!2024". The two are read as one
    `label: value` line, and the hits inside the value are returned in its offsets (the value
    alone is a bare number or word, which no rule may block)."""
    label = label.strip()
    if not value.strip() or len(value) > _MAX_LABELLED_VALUE or not _CREDENTIAL_NOUN.search(label):
        return []
    said = _IT_IS.match(value)  # "it is 4471": the value refers to the title
    cut = said.end() if said else 0
    offset = len(label) + 2 - cut
    return [SecretHit(h.rule_id, h.start - offset, h.end - offset)
            for h in find_secrets(f"{label}: {value[cut:]}") if h.start - offset >= cut]


_IT_IS = re.compile(r"(?i)[ \t]*(?:it(?:'s|\u2019s|[ \t]+is)|(?:that|this)(?:'s|[ \t]+is)|is)[ \t]+(?:now[ \t]+)?")


# --------------------------------------------------------------------------- stored records


@lru_cache(maxsize=1)
def _base64_entropy_plugin():
    """detect-secrets' base64 high-entropy plugin: its character set and entropy limit."""
    from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString

    return Base64HighEntropyString()


def find_secrets_to_mask(text: str) -> list[SecretHit]:
    """What a verbatim record (a captured chat turn) must not keep: everything
    `find_secrets` reports, and credential-shaped strings that judging a proposal lets
    pass on purpose (it errs towards keeping prose): documentation example values and
    random-looking strings with slashes or long capital runs. Here the rule is
    detect-secrets' own: a run of its base64 characters above its entropy limit (4.5
    bits/char), mixing upper case, lower case and digits. Masking a word too many in a
    stored turn costs little; keeping a key costs a leak every time the turn is recalled."""
    hits = find_secrets(text, stand_ins=True)
    plugin = _base64_entropy_plugin()
    for m in _BASE64_RUN.finditer(text):
        token = m.group().strip("=")
        if (len(token) >= 20 and re.search(r"[a-z]", token) and re.search(r"[A-Z]", token)
                and re.search(r"\d", token) and plugin.calculate_shannon_entropy(token) > plugin.entropy_limit):
            hits.append(SecretHit("hard.secret.high_entropy", m.start(), m.end()))
    return _dedupe(hits)


_BASE64_RUN = re.compile(r"[A-Za-z0-9+/\-_=]{20,}")
