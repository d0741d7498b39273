"""Re-ordering the raw chat turns at the head of a ranking with a small linear model.

The fused score ranks turns by how well they match the question alone. Three things it does
not see make a turn more often the evidence: how much the turn states (words outside
questions: a statement of what happened, not "how are you?"), whether its session holds
other good matches (a subject talked about at length), and whether it was said by someone
the question names. Questions that ask for several things ("What activities does Melanie
do?", "How many tournaments has Nate won?") have their answer spread over many turns, so for
them a turn's position in the first ranking counts for less, and a turn that names someone or
something other than the speakers (a capitalised word inside a sentence: "we watched Little
Women", "I beat Valorant") counts for more: such questions are answered by the things named.
Questions that ask *when* are left alone: the answer is the day a turn was said, and a short
turn that names the event gives it as well as a long one.

A question that asks for several things done or had so far ("What books has Melanie read?",
"How many times has Nate won?", "What pets does she have?": several things, and "has" or
"have") is answered across chat sessions: each session tells one of them. For those the
first `SPREAD_SLOTS` are picked greedily, each turn's score lowered by `SESSION_PENALTY`
for every turn of its session already picked, so the head holds the best turn of more
sessions instead of the neighbours of one. A question that asks for one thing keeps its
answer's session together (its evidence is mostly several turns of one session).

`rerank_turns` scores each raw turn among the first `pool` of the ranking with a fixed
linear model over those signals and its position, and re-orders the turns among their own
slots (other items keep theirs). The turns keep the ranking's scores in the new order, so
scores still fall with rank. The weights were fitted by logistic regression (L2, C = 0.1)
on the evidence of three LoCoMo conversations (questions that ask when left out), before the
query vector left out the speakers a question names; refitted on the inputs as computed now
they did no better out of sample (2026-11-28), so they stay. bench/README.md has the
cross-validated and held-out numbers.

Asked what they said themselves ("What did I tell you about penicillin?",
`query.asks_what_i_said`), the caller's own turns that say the question's words take the
first of the turns' slots (`own_words_first`): an echo of them by the assistant is no answer.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from .candidates import Candidate, CandidateSearch
from .dates import asks_when
from .episodic import is_message, named_words, said_by_the_user, says_something_asked, stated_words
from .select import session_key, session_mass

# Weights over the raw signals (the order of `turn_signals`).
WEIGHTS = (
    -0.199,  # dense cosine
    1.851,  # normalised lexical score
    4.233,  # stated words n, as n / (n + STATED_HALF)
    1.101,  # said by someone the question names
    -1.244,  # log(1 + position in the ranking)
    1.516,  # the session's match mass / the best session's
    -0.201,  # asks for several x stated
    0.339,  # asks for several x log(1 + position)
    0.456,  # asks for several x the turn names someone or something (not a speaker, not asked)
)
STATED_HALF = 40.0
SESSION_TOP = 3  # a session's mass: the summed fused score of its best 3 turns in the pool
# Questions that ask across sessions: a turn's score drops by this much per turn of its
# session already placed, over the first `SPREAD_SLOTS` slots (bench/README.md: measured
# 0.5-2, 1 the best on the tune conversations).
SESSION_PENALTY = 1.0
SPREAD_SLOTS = 10

_AUX = frozenset("do does did has have had is are was were can could will would should might may".split())
_SEVERAL = re.compile(r"\b(?:how\s+many|both|(?:kinds|types|sorts)\s+of|in\s+what\s+ways|what\s+are\s+some|"
                      r"some\s+of)\b", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z][A-Za-z'+-]*")
_SO_FAR = re.compile(r"\b(?:has|have)\b", re.IGNORECASE)


def _plural(word: str) -> bool:
    return len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is", "'s", "ous"))


def asks_for_several(question: str) -> bool:
    """The question asks for several things: "how many", "both", "what kinds of", or a
    plural noun after "what"/"which" before its verb ("What books has she read?"). A verb
    in -s right after the noun reads as a plural too ("Which song motivates her?")."""
    if _SEVERAL.search(question):
        return True
    words = [w.lower() for w in _WORD.findall(question)]
    for i, word in enumerate(words):
        if word in ("what", "which"):
            for nxt in words[i + 1:i + 4]:
                if nxt in _AUX:
                    break
                if _plural(nxt):
                    return True
    return False


def asks_across_sessions(question: str) -> bool:
    """The question asks for several things done or had so far ("What books has she read?",
    "How many times has he won?", "What pets does she have?"): `asks_for_several` and "has"
    or "have"."""
    return _SO_FAR.search(question) is not None and asks_for_several(question)


def rerankable(ranked: Sequence[Candidate], pool: int) -> list[tuple[int, Candidate]]:
    """(position, candidate) of the raw turns among the first `pool` that may move."""
    return [(pos, c) for pos, c in enumerate(ranked[:pool]) if c.tier == 1 and is_message(c.item)]


def turn_signals(search: CandidateSearch, turns: Sequence[tuple[int, Candidate]], several: bool
                 ) -> list[tuple[float, ...]]:
    """Per (position, raw turn): the model's inputs, in the order of `WEIGHTS`."""
    mass = session_mass((cand for _, cand in turns), lambda c: c.fused, SESSION_TOP)
    best = max([0.0, *mass.values()]) or 1.0  # a turn without a session has no support: 0
    # names a turn gives that the question does not (nor a speaker's: "Thanks, Caroline!")
    known = {word for _, cand in turns for word in cand.item.title.lower().split()} | set(search.terms)
    out = []
    for pos, cand in turns:
        n = stated_words(cand.item.content)
        stated = n / (n + STATED_HALF)
        at = math.log1p(pos)
        names = several and not named_words(cand.item.content) <= known
        out.append((cand.dense, cand.lexical, stated, float(search.speaker_named(cand)), at,
                    mass.get(session_key(cand), 0.0) / best, several * stated, several * at, float(names)))
    return out


def spread_over_sessions(order: Sequence[int], logits: Sequence[float], sessions: Sequence[object],
                         penalty: float, slots: int) -> list[int]:
    """`order` (indices, best logit first) with its first `slots` picked greedily by logit -
    penalty x (turns of the same session already picked); a turn without a session (None)
    is never lowered. The rest keep their order; ties keep the first order."""
    rest = list(order)
    picked: list[int] = []
    count: dict[object, int] = {}

    def value(j: int) -> tuple[float, int]:
        i = rest[j]
        lowered = penalty * count.get(sessions[i], 0) if sessions[i] is not None else 0.0
        return logits[i] - lowered, -j

    while rest and len(picked) < slots:
        i = rest.pop(max(range(len(rest)), key=value))
        picked.append(i)
        count[sessions[i]] = count.get(sessions[i], 0) + 1
    return picked + rest


def rerank_turns(search: CandidateSearch, ranked: list[Candidate], question: str, pool: int,
                 weights: Sequence[float] = WEIGHTS, session_penalty: float = SESSION_PENALTY
                 ) -> list[Candidate]:
    """`ranked` with its raw turns among the first `pool` re-ordered by the model (spread
    over sessions for a question that asks across them)."""
    if asks_when(question):
        return ranked  # any turn that tells of the event gives its date, short or not
    turns = rerankable(ranked, pool)
    if len(turns) < 2:
        return ranked
    signals = turn_signals(search, turns, asks_for_several(question))
    logits = [sum(w * x for w, x in zip(weights, sig)) for sig in signals]
    order = sorted(range(len(turns)), key=lambda i: (-logits[i], turns[i][0]))
    if session_penalty > 0 and asks_across_sessions(question):
        order = spread_over_sessions(order, logits, [session_key(c) for _, c in turns], session_penalty,
                                     SPREAD_SLOTS)
    slot_scores = [c.score for _, c in turns]
    out = list(ranked)
    for slot, i in enumerate(order):
        cand = turns[i][1]
        cand.score = slot_scores[slot]  # the slot's score: scores still fall with rank
        cand.components["rerank"] = round(logits[i], 4)
        cand.components["final"] = cand.score
        out[turns[slot][0]] = cand
    return out


def own_words_first(ranked: list[Candidate], query_terms: Sequence[str]) -> list[Candidate]:
    """`ranked` with the caller's own turns that say a word of the question (`said_by_the_user`,
    `says_something_asked`) moved to the first of the raw turns' slots, in their order, the
    other turns after them in theirs: asked what they said ("What did I tell you about
    penicillin?"), the caller's words are the answer, and another speaker's echo ("Got it,
    you're allergic to penicillin, so ..."), often longer and so ranked higher, only repeats
    them. Curated memories keep their places; turns keep the slots' scores."""
    slots = [pos for pos, c in enumerate(ranked) if is_message(c.item)]
    turns = [ranked[pos] for pos in slots]
    own = [c for c in turns if said_by_the_user(c.item) and says_something_asked(c.item, query_terms)]
    if own == turns[:len(own)]:
        return ranked
    mine = {c.id for c in own}
    out = list(ranked)
    for pos, score, cand in zip(slots, [c.score for c in turns], own + [c for c in turns if c.id not in mine]):
        cand.score = score  # the slot's score: scores still fall with rank
        cand.components["final"] = score
        if cand.id in mine:
            cand.components["own_words"] = 1.0
        out[pos] = cand
    return out


def cover_parts(search: CandidateSearch, ranked: list[Candidate], parts: Sequence[Sequence[str]], k: int
                ) -> list[Candidate]:
    """`ranked` with, for each part of a question that asks several things (the parts'
    query terms, `query.question_parts`), the candidate that matches the part's words best
    (normalised BM25 of those words alone) among the first `k`: "Where does Maya live and
    what's her dog called?" searched as one finds the many turns on where she lives first;
    the turn that names the dog is moved up to the end of the top k (what it displaces
    ranked lowest). A part no candidate shares a word with moves nothing."""
    if len(parts) < 2 or len(ranked) <= k:
        return ranked
    outside: list[Candidate] = []
    for terms in parts:
        scores = [search.view.corpora[ci].lexical_scores(list(terms)) for ci in range(len(search.view.corpora))]
        best, best_score = None, 0.0
        for cand in ranked:  # ties: the better ranked
            lex = scores[cand.ci]
            score = float(lex[cand.row]) if lex is not None else 0.0
            if score > best_score:
                best, best_score = cand, score
        if best is not None and ranked.index(best) >= k and best not in outside:
            outside.append(best)
    if not outside:
        return ranked
    moved = {c.id for c in outside}
    rest = [c for c in ranked if c.id not in moved]
    for cand in outside:
        cand.components["covers_part"] = 1.0
    return rest[: k - len(outside)] + outside + rest[k - len(outside):]


__all__ = ["SESSION_PENALTY", "WEIGHTS", "asks_across_sessions", "asks_for_several", "asks_when",
           "cover_parts", "own_words_first", "rerank_turns", "rerankable", "spread_over_sessions", "turn_signals"]
