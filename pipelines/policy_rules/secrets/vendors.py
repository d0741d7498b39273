"""Layer 1: vendor token formats. detect-secrets' format plugins (through their `denylist`
regexes) and the published prefixes of vendors it does not know; a match embedded in a longer
word, with a filler or word body, or a JWT with a broken header does not count.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache

from pipelines.policy_rules.secrets.dictionary import _CAMEL_HUMP, dictionary_share, is_words
from pipelines.policy_rules.secrets.encoded import _broken_jwt_header
from pipelines.policy_rules.secrets.generated import _is_sequential, is_periodic
from pipelines.policy_rules.secrets.hit import SecretHit
from pipelines.policy_rules.secrets.placeholders import _is_placeholder, _is_placeholder_token
from pipelines.policy_rules.secrets.scanning import _PREFILTER_CHARS
from pipelines.policy_rules.text import (
    char_classes,
    fold_case,
    leading_literals,
    may_match,
    required_literals,
    shannon_entropy,
)

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
            if _is_sequential(token) or (rule_id in _NEWER_FORMATS and _placeholder_body(token)):
                continue
            if not fillers and _made_up_example(rule_id, token, pattern):
                continue  # "LTAI5tSomethingVeryLong", "AKIASEARCHSTUBMOCKID", "ghp_xxxx...": masked all the same
            if rule_id in _WEAK_FORMATS and (not _random_body(token) or text[end : end + 1].isalnum()):
                continue  # a short prefix ending mid-word ("s.makeKubeConfigController") names code
            if rule_id == "hard.secret.artifactory" and not (token.startswith("AKC") or re.search(r"\d", token[3:])):
                continue  # "AP" + hex digit + letters also spells upper-case words ("APACHEKAFKA")
            yield SecretHit(rule_id, start, end)


def _made_up_example(rule_id: str, token: str, pattern: re.Pattern[str]) -> bool:
    """A match of a vendor's format that only stands in for a key: a filler body, words after
    the prefix, or (newer formats) a placeholder body."""
    return (_is_filler_token(token) or _prefix_then_words(token, pattern)
            or (rule_id in _NEWER_FORMATS and _placeholder_body(token)))


def vendor_example(value: str) -> bool:
    """`value` starts in a vendor's format, letter case aside, and is a made-up example of it
    (`_made_up_example`): what the vendor rule lets through is no key under a token's name
    either (`api_key = "LTAI5tSomethingVeryLong"`, `"AKIA7qPRODUCTSOMEENV"`: an AWS id is
    capitals, but a made-up one need not be)."""
    v = value.strip()
    return any(_made_up_example(rule_id, v[: m.end()], pattern)
               for rule_id, pattern, any_case in _vendor_patterns_any_case() if (m := any_case.match(v)) is not None)


@lru_cache(maxsize=1)
def _vendor_patterns_any_case() -> tuple[tuple[str, re.Pattern[str], re.Pattern[str]], ...]:
    return tuple((rule_id, rx, re.compile(rx.pattern, rx.flags | re.IGNORECASE))
                 for rule_id, rx, _ in _vendor_patterns())


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


def _one_class_runs(body: str) -> bool:
    """Most of the body is runs of one repeated character ("5555555dAAAAA7777777CcccC")."""
    runs = sum(len(m.group()) for m in re.finditer(r"(.)\1{3,}", body))
    return runs >= 0.6 * len(body)
