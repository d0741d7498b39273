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

Modules, one job each:
- `find`           `find_secrets`: the layers over one text, screened by one pass over a long one.
- `vendors`        layer 1; `structural` layer 2; `keywords` and `config_formats` layer 3;
                   `sentences`, `numbers`, `context` layer 4; `high_entropy` layer 5.
- `values`         a literal judged by the kind of name it is assigned to.
- `placeholders`   placeholders, fillers, test values and hashes standing in for a value.
- `generated`      whether a value looks generated (entropy, classes, runs).
- `dictionary`     zxcvbn words: guessable values, words naming a credential.
- `encoded`        base64 / base58 payloads decoded once (`rescan`); `armour` PEM blocks.
- `published`, `elided`  hits ruled out: public by design, masked or cut short.
- `labelled`       a credential's name in one field, its value in another.
- `masking`        what a stored record must not keep (`find_secrets_to_mask`).
- `scanning`, `hit`  how a layer scans a text; the hit record.
"""

from pipelines.policy_rules.secrets.dictionary import (
    GUESSABLE_LOG10,
    dictionary_coverage,
    dictionary_share,
    guesses_log10,
    is_guessable,
    is_words,
    names_a_credential,
    random_letters,
    word_letters,
)
from pipelines.policy_rules.secrets.find import find_secrets
from pipelines.policy_rules.secrets.generated import is_periodic, periodic_by_runs
from pipelines.policy_rules.secrets.hit import SecretHit
from pipelines.policy_rules.secrets.keywords import PASSWORD_KEYWORD, SECRET_KEYWORD
from pipelines.policy_rules.secrets.labelled import find_labelled_value
from pipelines.policy_rules.secrets.masking import find_secrets_to_mask

__all__ = [
    "GUESSABLE_LOG10",
    "PASSWORD_KEYWORD",
    "SECRET_KEYWORD",
    "SecretHit",
    "dictionary_coverage",
    "dictionary_share",
    "find_labelled_value",
    "find_secrets",
    "find_secrets_to_mask",
    "guesses_log10",
    "is_guessable",
    "is_periodic",
    "is_words",
    "names_a_credential",
    "periodic_by_runs",
    "random_letters",
    "word_letters",
]
