"""The words in which a writer speaks of themselves ("I'm allergic", "my sister Lena").

One home for what both the write policy (a request about one's own memory,
`policy_rules.preferences`) and recall (a turn stating something of its writer,
`recall.episodic`) read as the first person singular, and for what the conflict rule
(`recall.conflicts`, at write time and at recall) reads as a claim about its writer alone
(`of_the_writer`). No imports: the policy rules and recall both load it, and neither may
load the other at import time.
"""

from __future__ import annotations

import calendar
import re

FIRST_PERSON_SINGULAR = frozenset({"i", "me", "my", "mine", "myself"})
# The same words inside running text; "I'm", "I've", "I’d" hold "I" as a word.
# Not a part of a code of words and a number ("I-95", "us-east-1"): `_IN_A_CODE`.
_IN_A_CODE = (r"\b", r"\b(?!-[\w-]*\d)")
FIRST_PERSON_SINGULAR_WORD = re.compile(
    _IN_A_CODE[0] + r"(?:" + "|".join(sorted(FIRST_PERSON_SINGULAR, key=len, reverse=True)) + r")" + _IN_A_CODE[1],
    re.IGNORECASE)
# The writer vouching for, or deciding, what follows, not its subject: "I think the standup
# is at 10", "I decided the API timeout is 30 seconds".
_VOUCHING = re.compile(
    r"\bI(?:['’]m| am)?\s+(?:think|believe|guess|suppose|reckon|assume|recall|remember|heard|hear|was told|said|"
    r"decided|agreed|proposed|suggested|suggest|set|"
    r"(?:pretty |quite |fairly )?(?:sure|certain))\b", re.IGNORECASE)
# What a group shares: "our release day", "we deploy", "let's", "the team's standup", "everyone";
# a possessive other than a pronoun's contraction ("it's", "that's") names an owner, maybe
# no one of the two ("Acme's", "my sister's"): read as shared, so compared as before.
# Neither a part of a code ("us-east-1", "we-chat-2") nor "US" (the country: "our US customers").
_SHARED = re.compile(
    _IN_A_CODE[0] + r"(?:we|(?-i:us|Us)|our|ours|ourselves|let['’]s|team|everyone|everybody)" + _IN_A_CODE[1] +
    r"|\b(?!(?:it|that|what|there|here|he|she|who|where|how|when|why|this|one)['’]s\b)\w+['’]s\b",
    re.IGNORECASE)


# Reported speech: someone's words told, not the writer's ("Maria said she'd be off Friday",
# "He told me he would be away next week", "Tom mentioned that the office closes early").
# The verb, whom it was told to ("told me", "let us know"), "that", then the reported clause.
_TOLD_TO = r"(?:me|us|him|her|them|everyone|everybody|the\s+team|(?-i:[A-Z][\w'’-]*))"
_REPORTING = re.compile(
    r"\b(?:(?:said|says|say|mentioned|mentions|announced|announces|confirmed|confirms|explained|wrote|writes|"
    r"texted|emailed|messaged|thinks|thought|reckons|claims|claimed)"
    rf"|(?:told|tells|informed|informs)\s+{_TOLD_TO}|(?:reminded|reminds|warned|warns|promised|promises)(?:\s+{_TOLD_TO})?"
    rf"|let\s+{_TOLD_TO}\s+know)(?:\s+that)?\s+", re.IGNORECASE)
_CLAUSE_END = re.compile(r"[.!?;\n]|$")
# Whom a reported clause is about, when it is someone: a third person pronoun (with its
# contraction: "she'd", "he's") or a name ("Maria said Tom would ..."; a day or a month is no one).
_THIRD_PERSON = re.compile(r"(?:he|she|they|him|her|them|his|their)(?:['’]\w+)?$", re.IGNORECASE)
_NO_ONE = frozenset(n.lower() for n in (*calendar.day_name, *calendar.month_name) if n)


def reported_clauses(text: str) -> list[tuple[int, int, bool]]:
    """Where `text` tells someone's words (`_REPORTING`): each reported clause's start and
    end, and whether it is about someone other than the writer ("Maria said she'd be off
    Friday": she; "My manager said I can work remotely": the writer)."""
    out = []
    for m in _REPORTING.finditer(text):
        end = _CLAUSE_END.search(text, m.end()).start()
        subject = re.match(r"[\w'’-]+", text[m.end():end])
        if subject is None:
            continue
        word = subject.group(0)
        someone = bool(_THIRD_PERSON.match(word)) or (
            word[0].isupper() and word.lower() not in _NO_ONE and not FIRST_PERSON_SINGULAR_WORD.match(word)
            and word.lower() not in {"we", "the", "a", "an", "it", "this", "that", "there", "our"})
        out.append((m.end(), end, someone))
    return out


# The writer only as the one told, asked or given to, not what is said ("He told me he'd be
# away": of him; "Tell me when you're free"; "Give me the report by Friday"; "Let me know").
# Told or asked *to* do something, the writer is who does it ("Remind me to call the dentist",
# "Ann asked me to cover Friday"): not the listener only. After a verb of telling, "me to" is
# a purpose ("He called me to say he'd be late"): still the listener.
_ASKING = r"tell|tells|told|telling|ask|asks|asked|asking|remind|reminds|reminded|reminding|warn|warns|warned|urged?"
_TELLING = (r"inform|informs|informed|notif(?:y|ies|ied)|promise[sd]?|assured?|show|shows|showed|shown|"
            r"give|gives|gave|given|giving|send|sends|sent|sending|hand|hands|handed|pass|passed|forward(?:s|ed)?|"
            r"bring|brings|brought|e-?mail(?:s|ed)?|text(?:s|ed)?|message[sd]?|ping(?:s|ed)?|call(?:s|ed)?|"
            r"phone[sd]?|ring|rang|update[sd]?|teach|taught|offer(?:s|ed)?|write|writes|wrote")
_LISTENER = re.compile(
    rf"\b(?:(?:{_ASKING})\s+me\b(?!\s+to\s)|(?:{_TELLING})\s+me\b"
    r"|let(?:s|ting)?\s+me\s+know\b|keep(?:s|ing)?\s+me\s+(?:posted|updated|informed|in\s+the\s+loop)\b"
    r"|(?:said|says|say|mentioned|mentions|explained|explains|wrote|writes|write|reported|admitted|complained|"
    r"confessed|spoke|speaks|talked|talks|sent|gave|handed|passed|forwarded|showed)\s+(?:(?:it|this|that|them)\s+)?to\s+me\b)",
    re.IGNORECASE)


def of_the_writer(text: str) -> bool:
    """Whether `text` speaks of its writer alone: in the first person singular ("I work from
    home on Fridays", "My laptop is a MacBook"), not only to vouch for what follows ("I think
    the standup is at 10") nor as the one told or given to (`_LISTENER`: "He told me he'd be
    away" is of him; "He told me I should rest" is of the writer), and naming nothing a group
    shares ("our release day", "the team's standup"). Two such claims by two people are about
    two people: never one subject."""
    return (FIRST_PERSON_SINGULAR_WORD.search(_LISTENER.sub(" ", _VOUCHING.sub(" ", text))) is not None
            and _SHARED.search(text) is None)


__all__ = ["FIRST_PERSON_SINGULAR", "FIRST_PERSON_SINGULAR_WORD", "of_the_writer", "reported_clauses"]
