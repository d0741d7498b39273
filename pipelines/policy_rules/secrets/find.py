"""`find_secrets`: every layer over one text, screened by one pass over a long text."""

from __future__ import annotations

import re
from functools import lru_cache

from pipelines.policy_rules.recovery_phrases import find_recovery_phrases
from pipelines.policy_rules.secrets.config_formats import _config_format_hits
from pipelines.policy_rules.secrets.context import _CONTEXT_VALUES, _PHRASE_CONTEXT, _context_hits
from pipelines.policy_rules.secrets.elided import _masked_or_cut
from pipelines.policy_rules.secrets.high_entropy import _high_entropy_hits
from pipelines.policy_rules.secrets.hit import SecretHit, _dedupe
from pipelines.policy_rules.secrets.keywords import _KW, _REVERSE_COMPARE, _keyword_hits
from pipelines.policy_rules.secrets.numbers import _CARD, _SSN, _number_hits
from pipelines.policy_rules.secrets.published import _public_by_design
from pipelines.policy_rules.secrets.scanning import _PREFILTER_CHARS
from pipelines.policy_rules.secrets.sentences import (
    _BARE_PIN,
    _CREDENTIAL_NOUN,
    _OTHER_ORDERS,
    _SENTENCE_KEYWORD,
    _SENTENCE_SCREEN,
    _sentence_hits,
)
from pipelines.policy_rules.secrets.structural import (
    _AUTH_HEADER,
    _BASIC_ENCODE,
    _CURL_USER,
    _PEM_PRIVATE,
    _SCHEME_TOKEN,
    _URL_CREDENTIALS,
    _structural_hits,
)
from pipelines.policy_rules.secrets.values import _stand_in_password
from pipelines.policy_rules.secrets.vendors import _vendor_hits, _vendor_patterns
from pipelines.policy_rules.text import OnePass


def find_secrets(text: str, *, stand_ins: bool = False) -> list[SecretHit]:
    """All credential-looking spans in `text`, de-duplicated, in order of position.
    `stand_ins`: also what looks like a credential but stands in for one: vendor-format
    tokens whose body is a filler ("ghp_xxxx...", "GR1348941231231231...") and password
    values in code that are among the most guessable or name a credential ("testpass",
    "some-password"), the card numbers processors publish for testing. A proposal holding
    one is no leak and is not blocked; a stored turn masks them all the same."""
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
    hits.extend(_number_hits(text, out, stand_ins))
    hits.extend(_context_hits(text, out))
    hits.extend(SecretHit("hard.secret.seed_phrase", p.start, p.end)
                for p in find_recovery_phrases(text) if not p.test_vector)
    if not stand_ins:
        hits = [h for h in hits if not _public_by_design(text, h)]
    return _dedupe(hits)


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
