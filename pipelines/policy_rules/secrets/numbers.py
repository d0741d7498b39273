"""Payment card numbers (Luhn-checked, with a card keyword or 4-4-4-4 grouping; test cards
are stand-ins: no leak in a proposal, masked in a stored turn) and social security numbers
next to "SSN".
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from pipelines.policy_rules.secrets.hit import SecretHit
from pipelines.policy_rules.secrets.scanning import _scan

_CARD = re.compile(r"(?<![\d-])(?:\d[ -]?){12,18}\d(?![\d-])")
_CARD_CONTEXT = re.compile(
    r"(?i)\b(?:card|visa|mastercard|master card|amex|american express|credit|debit|cc|cvv|discover)\b"
)
_SSN = re.compile(r"(?<!\d)\d{3}-\d{2}-\d{4}(?!\d)")
_SSN_CONTEXT = re.compile(r"(?i)\b(?:ssn|social security|social insurance|sin number)\b")


def _number_hits(text: str, out: frozenset[re.Pattern] = frozenset(), stand_ins: bool = False
                 ) -> Iterator[SecretHit]:
    """`stand_ins`: test card numbers too (`find_secrets`'s stand-ins): "4111 1111 1111 1111"
    read out as a customer's card is kept in no stored turn, whoever issued it."""
    for m in _scan(_CARD, text, out):
        found = _card_number(m.group())
        if found is None:
            continue
        number, digits = found
        end = m.start() + len(number)
        grouped = bool(re.fullmatch(r"\d{4}([ -])\d{4}\1\d{4}\1\d{1,7}", number))
        context = _CARD_CONTEXT.search(text, max(0, m.start() - 40), m.start())
        if (grouped or context) and (stand_ins or not _test_card(text, m.start(), end, digits)):
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
