"""From scored candidates to a ranking: conflicts, summaries before the turns they cover,
one copy of repeated turns, the more specific scope first within one subject.

Each function reads and changes the candidates of one `CandidateSearch` and returns what it
did, for the trace.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from itertools import chain
from operator import attrgetter
from typing import Any

import numpy as np

from pipelines.records import SCOPE_RANK, MemoryItem, apart_in_time

from . import conflicts
from .candidates import Candidate, CandidateSearch
from .episodic import is_message

FLAGGED = ("ambiguous", "flagged", "scope")
_by_id = attrgetter("id")


def resolve_conflicts(search: CandidateSearch, mode: str, suppressed: list[dict[str, Any]]
                      ) -> list[dict[str, Any]]:
    """Apply the conflict rule (pipelines.recall.conflicts) to the candidate claims."""
    cands = search.cands
    live = sorted((c for c in cands.values() if c.suppressed is None and conflicts.is_claim(c.item)),
                  key=_by_id)
    if len(live) < 2:
        return []  # a conflict needs two claims: no table to take, nothing to resolve
    where = {c.id: (c.ci, c.row) for c in live}  # vectors are read only for the few pairs that ask
    locations = list(where.values())  # the table's rows, in order
    table = search.view.claims(locations)
    report = []
    # the members' update times, from the corpora's arrays, one gather per corpus (-inf: none)
    cis, rows = np.array(locations, np.int64).T
    stamps = np.empty(len(live))
    for ci in np.unique(cis).tolist():
        mine = cis == ci
        stamps[mine] = search.view.corpora[ci].updated_ts[rows[mine]]
    updated = dict(zip(where, np.where(np.isnan(stamps), -np.inf, stamps).tolist()))
    row_of = {it.id: row for row, it in enumerate(table.items)}  # a member's claim: unpacked, not read again
    for group, pairs in _in_one_time(conflicts.groups_with_pairs(
            table, lambda it: search.view.vector(*where[it.id]) if it.id in where else None,
            lambda which: search.view.vectors_at(cis[which], rows[which]))):
        outcomes = conflicts.resolve(group, mode, updated, pairs, lambda it: table.claim(row_of[it.id]),
                                     lambda it: search.view.corpora[where[it.id][0]].title_key(where[it.id][1]))
        for item_id, outcome in outcomes.items():
            cand = cands[item_id]
            cand.conflict_with = list(outcome.conflict_with)
            cand.resolution = None if outcome.resolution == "winner" else outcome.resolution
            if outcome.suppressed:
                cand.suppressed = outcome.resolution
                suppressed.append({"id": item_id, "reason": f"conflict: lost on {outcome.resolution}",
                                   "winner": outcome.winner})
                winner = cands.get(outcome.winner or "")
                if cand.always and winner is not None and winner.via == ["conflict-partner"]:
                    # The current version of an always-on rule, pulled in only as its rival, is
                    # shown in its place as always-on (it answers nothing asked).
                    winner.always = True
        _order_by_scope([cands[i] for i in outcomes if not outcomes[i].suppressed])
        _corrections_first([(cands[i], cands[o.winner]) for i, o in outcomes.items()
                            if o.resolution == conflicts.CORRECTED and o.winner in cands])
        _newest_first([cands[i] for i in outcomes if outcomes[i].resolution == "related"], updated)
        report.append({"members": [m.id for m in group],
                       "kept": [i for i, o in outcomes.items() if not o.suppressed],
                       "resolutions": {i: o.resolution for i, o in outcomes.items()}})
    return report


Groups = list[tuple[list[MemoryItem], set[frozenset[str]]]]


def _in_one_time(groups: Groups) -> Groups:
    """Conflict groups without the pairs of claims that hold at different times
    (`records.apart_in_time`: a stand-in until Friday beside the standing rule, last week's
    trip beside next week's), unless one names the other as what it supersedes; each group
    split into what still joins it."""
    out: Groups = []
    for group, pairs in groups:
        if all(m.valid_to is None for m in group):  # none ends (most groups): all meet, nothing to ask
            out.append((group, pairs))
            continue
        by_id = {m.id: m for m in group}
        named = {frozenset((m.id, link.to)) for m in group for link in m.links if link.rel == "supersedes"}
        kept = {p for p in pairs if p in named or len(p) != 2 or not apart_in_time(*(by_id[i] for i in p))}
        if kept == pairs:
            out.append((group, pairs))
            continue
        out += [(members, {p for p in kept if p <= {m.id for m in members}})
                for members in _joined(group, kept) if len(members) > 1]
    return out


def _joined(group: list[MemoryItem], pairs: set[frozenset[str]]) -> list[list[MemoryItem]]:
    """`group` split into the parts `pairs` join (each member in one part, in group order)."""
    part = {m.id: m.id for m in group}

    def root(i: str) -> str:
        while part[i] != i:
            i = part[i]
        return i
    for pair in pairs:
        first, *rest = sorted(pair)
        for other in rest:
            part[root(other)] = root(first)
    joined: dict[str, list[MemoryItem]] = {}
    for m in group:
        joined.setdefault(root(m.id), []).append(m)
    return list(joined.values())


def _order_by_scope(members: list[Candidate]) -> None:
    """Members of one subject keep the group's scores but take them in scope order (session,
    project, user, org), so the most specific value comes first wherever the group ranks."""
    if len({m.item.scope.kind for m in members}) < 2:
        return
    scores = sorted((m.score for m in members), reverse=True)
    ordered = sorted(members, key=lambda m: (SCOPE_RANK[m.item.scope.kind], -m.score, m.id))
    for rank, (member, score) in enumerate(zip(ordered, scores)):
        # Equal scores would fall back to the id order: step each one just below the last.
        member.score = min(score, ordered[rank - 1].score * (1 - 1e-9)) if rank else score
        member.components["scope_order"] = float(rank)
        member.components["final"] = member.score


def _corrections_first(pairs: list[tuple[Candidate, Candidate]]) -> None:
    """A note corrected in part comes right after its correction, which takes its score
    when it ranked lower: the model reads what is current first, and a budget that holds
    one of the two holds the correction."""
    for corrected, correction in pairs:
        if correction.score <= corrected.score:
            correction.score = corrected.score
            corrected.score = corrected.score * (1 - 1e-9)
            correction.components["final"], corrected.components["final"] = correction.score, corrected.score


def _newest_first(members: list[Candidate], updated: dict[str, float]) -> None:
    """Notes under one title that neither corrects (`related`) keep the group's scores but
    take them newest first: the newer may update the older."""
    if len(members) < 2:
        return
    scores = sorted((m.score for m in members), reverse=True)
    ordered = sorted(members, key=lambda m: (-updated.get(m.id, float("-inf")), m.id))
    for rank, (member, score) in enumerate(zip(ordered, scores)):
        member.score = min(score, ordered[rank - 1].score * (1 - 1e-9)) if rank else score
        member.components["final"] = member.score


def demote_covered_messages(search: CandidateSearch, demotion: float) -> list[dict[str, str]]:
    """A message covered by a summary is demoted below it (kept)."""
    cands = search.cands
    summaries = [c for c in cands.values() if c.item.type == "summary" and c.suppressed is None]
    if not summaries:
        return []
    demoted = []
    for c in cands.values():
        if c.item.type != "message" or not c.item.provenance.turn_refs:
            continue
        refs = set(c.item.provenance.turn_refs)
        covering = [s for s in summaries if refs <= set(s.item.provenance.turn_refs)]
        if not covering:
            continue
        top = max(covering, key=lambda s: (s.score, s.id))
        if top.score < c.score:
            # The summary stands for the message: it ranks at least as high.
            top.score = c.score
            top.components["final"] = round(top.score, 6)
            top.components["via_message"] = 1.0
        c.score = min(c.score * demotion, top.score * 0.999)
        c.components["summary_demotion"] = demotion
        c.components["final"] = round(c.score, 6)
        demoted.append({"message": c.id, "summary": top.id})
    return demoted


def drop_repeated_turns(search: CandidateSearch, suppressed: list[dict[str, Any]]) -> list[str]:
    """Of raw turns with the same text (up to case, punctuation and spacing), only the
    best-ranked stays a candidate."""
    turns = [c for c in search.cands.values() if c.item.type == "message" and c.suppressed is None]
    if len({search.view.corpora[c.ci].content_hash(c.row) for c in turns}) == len(turns):
        return []  # no two texts alike (their keys are made only when two hashes are)
    keys = {c.id: search.view.corpora[c.ci].content_key(c.row) for c in turns}
    if len(set(keys.values())) == len(turns):
        return []
    best: dict[str, Candidate] = {}
    dropped = []
    for cand in sorted(turns, key=Candidate.key):
        key = keys[cand.id]
        if key in best:
            cand.suppressed = "duplicate"
            suppressed.append({"id": cand.id, "reason": "same text as a better-ranked turn",
                               "winner": best[key].id})
            dropped.append(cand.id)
        else:
            best[key] = cand
    return dropped


def session_key(c: Candidate) -> tuple[str, str] | None:
    """(user, chat session) of a raw turn, None for anything else or a turn without one."""
    sid = c.item.metadata.get("session_id") if is_message(c.item) else None
    return (c.item.scope.user_id or "", str(sid)) if sid else None


def session_mass(cands: Iterable[Candidate], value: Callable[[Candidate], float], top: int
                 ) -> dict[tuple[str, str], float]:
    """Per chat session (`session_key`): the summed `value` of its `top` best raw turns
    among `cands`, how much of the matching conversation it holds."""
    by_session: dict[tuple[str, str], list[float]] = {}
    for c in cands:
        key = session_key(c)
        if key is not None:
            by_session.setdefault(key, []).append(value(c))
    return {key: sum(sorted(v, reverse=True)[:top]) for key, v in by_session.items()}


def spread_sessions(ranked: list[Candidate], decay: float, after: int) -> list[Candidate]:
    """Greedy session spread over a ranking: the first `after` raw turns stay; then each
    pick is the candidate with the best score * decay**(raw turns already picked from its
    session). Picked scores are set to that product, so the order is their score order."""
    head: list[Candidate] = []
    pool = list(ranked)
    picked: dict[tuple[str, str], int] = {}
    turns = 0

    while pool:
        if turns < after or pool[0].tier <= 0:  # curated memories keep their place
            best = pool[0]
        else:
            best = max(pool, key=lambda c: (-c.tier, c.score * decay ** picked.get(session_key(c), 0)))
            n = picked.get(session_key(best), 0)
            if n and session_key(best) is not None:
                best.score *= decay ** n
                best.components["session_spread"] = decay ** n
                best.components["final"] = best.score
        pool.remove(best)
        head.append(best)
        key = session_key(best)
        if key is not None:
            picked[key] = picked.get(key, 0) + 1
            turns += 1
    return head


def support_by_session(search: CandidateSearch, weight: float, top: int) -> None:
    """Raw turns in sessions that hold much of the relevant conversation rank higher: each
    turn's score is scaled by 1 + weight * (its session's mass / the best session's mass),
    a session's mass being the summed relevance of its `top` most relevant live turns."""
    live = [c for c in search.cands.values() if c.suppressed is None]
    mass = session_mass(live, lambda c: c.relevance, top)
    best = max(mass.values(), default=0.0)
    if best <= 0:
        return
    for cand in live:
        key = session_key(cand)
        if key is not None:
            factor = 1.0 + weight * mass[key] / best
            cand.score *= factor
            cand.components["session_support"] = factor
            cand.components["final"] = cand.score


def rank(search: CandidateSearch, max_always: int, curated_floor: float
         ) -> tuple[list[Candidate], list[Candidate]]:
    """(always-inject items, the rest ranked best first), suppressed candidates left out.
    Governed memories whose relevance reaches `curated_floor` times the best candidate's
    come before every raw turn: what was decided or stated as memory answers before what
    was merely said around it. Among them, those whose whole title the question names
    ("what is our deploy window?": "Deploy window", not "Hotfix deploy window") come
    first: the question asks about that subject, the others say more than it asked."""
    live = [c for c in search.cands.values() if c.suppressed is None]
    always = sorted((c for c in live if c.always),
                    key=lambda c: (-c.item.importance, *c.key()))[:max_always]
    always_ids = {c.id for c in always}
    rest = [c for c in live if c.id not in always_ids]
    best = max((c.relevance for c in rest), default=0.0)
    titles: dict[str, frozenset[str]] = {}  # the curated claims ranked first
    weaker: dict[str, frozenset[str]] = {}  # the others: they may override one on its subject
    said_with = _exchange_relevance(search, rest)
    for c in rest:
        if is_message(c.item):
            continue
        if not max(c.relevance, said_with.get(c.id, 0.0)) >= curated_floor * best > 0:
            weaker[c.id] = search.view.corpora[c.ci].title_words(c.row)
            continue
        title = search.view.corpora[c.ci].title_key(c.row)
        titles[c.id] = search.view.corpora[c.ci].title_words(c.row)
        named = title in search.grams
        c.tier = NAMED_TIER if named else 0
        c.components["curated_first"] = 1.0
        if named:
            c.components["title_named"] = 1.0
    _subject_in_scope_order(rest, titles, weaker)
    _share_tier_with_rivals(rest)
    _preferences_most_specific_first(rest)
    always, rest = _overrides_before_always(always, rest, lambda c: search.view.corpora[c.ci].title_words(c.row))
    return always, sorted(rest, key=Candidate.key)


def _exchange_relevance(search: CandidateSearch, rest: Sequence[Candidate]) -> dict[str, float]:
    """For each correction among `rest` (a claim that replaced another), the best relevance of
    the turns of the exchange it was said in among them: asked "Rua Augusta?", the user's
    "I moved from Rua Augusta 12! Now it's Rua das Flores 3." names the old value, the
    correction kept from it does not, and it ranks at least with its own turn (curated first)."""
    fixes = [c for c in rest if not is_message(c.item) and any(link.rel == "supersedes" for link in c.item.links)]
    if not fixes:  # most recalls
        return {}
    turns = {c.id: c.relevance for c in rest if is_message(c.item)}
    out = {}
    for c in fixes:
        said = [turns[i] for i in search._exchange_of(c.item) if i in turns]
        if said:
            out[c.id] = max(said)
    return out


def _overrides_before_always(always: list[Candidate], rest: list[Candidate],
                             title_of: Callable[[Candidate], frozenset[str]]
                             ) -> tuple[list[Candidate], list[Candidate]]:
    """An always-injected claim (importance) comes before everything ranked, so a broader
    one would come before the narrower claims that override it here (the org's important
    "Customer data region" before atlas's "Atlas customer data region"). The curated claims
    among the candidates in a more specific scope kind on its subject (a title saying its
    title and more, as `_subject_in_scope_order` reads it, or a conflict with it) come right
    before it, in scope order, all marked with their scope."""
    if not always:
        return always, rest
    out: list[Candidate] = []
    taken: set[str] = set()
    claims = [(c, SCOPE_RANK[c.item.scope.kind], title_of(c)) for c in rest if not is_message(c.item)]
    for head in always:
        head_words, head_rank, rivals = title_of(head), SCOPE_RANK[head.item.scope.kind], set(head.conflict_with)
        narrower = sorted((c for c, rank, words in claims if rank < head_rank and c.id not in taken
                           and (c.id in rivals or bool(head_words) and head_words < words)),
                          key=lambda c: (SCOPE_RANK[c.item.scope.kind], c.key()))
        for c in (*narrower, head) if narrower else ():
            c.resolution = c.resolution or "scope"
        for c in narrower:
            c.components["before_always"] = 1.0
        out += narrower
        taken.update(c.id for c in narrower)
        out.append(head)
    return out, [c for c in rest if c.id not in taken]


def _preferences_most_specific_first(ranked: list[Candidate]) -> None:
    """Preferences all say how to answer, in words the conflict rule cannot compare ("short
    bullet points" / "numbered steps" / "a single paragraph"): the curated ones shown are
    one subject, ordered like a conflict group's members (`_order_by_scope`: session >
    project > user > org, in the group's places), so the wish that applies here is the first
    the model reads."""
    wishes = [c for c in ranked if c.tier <= 0 and c.item.type == "preference"]
    if len(wishes) > 1:
        tier = min(c.tier for c in wishes)
        for c in wishes:
            c.tier = tier
        _order_by_scope(wishes)


NAMED_TIER = -1  # a curated memory whose title the question names: before the other curated ones


def _subject_in_scope_order(ranked: list[Candidate], titles: dict[str, frozenset[str]],
                            weaker: dict[str, frozenset[str]] | None = None) -> None:
    """A curated claim's title names a subject; the curated claims shown in other scope kinds
    whose titles say it and more are on that subject: across scopes the extra word is mostly
    the scope itself ("Atlas indentation", "My indentation" beside the org's "Indentation";
    `conflicts._qualified_apart`). They take the best tier among them together (the named
    tier when the question names one's whole title, "what indentation should I use?"), in
    scope order (session > project > user > org), so the broader claim does not come before
    the ones that override it here. Each is marked with its scope (`resolution` "scope": the
    block's SCOPE=, where they differ the most specific applies), whether or not the question
    names a title word for word ("where does atlas customer data live?": the project's
    "Atlas customer data region" before the org's "Customer data region", both marked), in
    words the conflict rule may not compare ("tabs" / "4-space"), so no CONFLICT is claimed.
    In one scope kind the title named still comes first ("Deploy window" before "Hotfix
    deploy window"). A claim below the curated floor (`weaker`) is on a subject too: in a more
    specific scope kind it joins it ("Indentation in this session", longer and so less
    relevant in words than the org's "Indentation", is what applies here), in a broader one
    it heads its own (the org's "Indentation" under the floor stays after Harbor's and Mira's,
    not between them)."""
    weaker = weaker or {}
    shown = [c for c in ranked if c.id in titles]
    overriding = [c for c in ranked if c.id in weaker]
    heads = (*shown, *overriding)  # a broader claim below the floor heads its subject too
    subjects: list[list[Candidate]] = []
    for h, members in _on_subjects(heads, [titles[c.id] for c in shown] + [weaker[c.id] for c in overriding],
                                   len(shown)):
        head = heads[h]
        subject = [head, *(shown[k] for k in members if k < len(shown))]
        taken = {m.id for m in subject}
        subject += [c for c in (heads[k] for k in members if k >= len(shown)) if c.id not in taken]
        if len(subject) > 1:
            subjects.append(subject)
    # Subjects sharing a claim are one ("Indentation" of the org and of the user, each with
    # the project's and the session's): ordered apart, each would reshuffle the other's scores.
    merged: list[dict[str, Candidate]] = []
    for subject in subjects:
        joined = {c.id: c for c in subject}
        for other in [m for m in merged if m.keys() & joined.keys()]:
            merged.remove(other)
            joined.update(other)
        merged.append(joined)
    for members in merged:
        tier = min(c.tier for c in members.values())
        for c in members.values():
            c.tier = tier
            c.resolution = c.resolution or "scope"
        _order_by_scope(list(members.values()))


def _on_subjects(heads: Sequence[Candidate], words: Sequence[frozenset[str]], n_shown: int
                 ) -> list[tuple[int, list[int]]]:
    """For `_subject_in_scope_order`: per head (an index into `heads`, the first `n_shown`
    shown, the rest below the floor) whose title's words name a subject, the heads on it, in
    order: those whose titles say its words and more, shown in another scope kind or below
    the floor in a more specific one. One product of the heads' title words over all pairs
    (a recall's ~90 claims), so the heads on no subject (most) cost no loop of their own."""
    n = len(heads)
    said = list(chain.from_iterable(words))
    if not said:
        return []
    vocab = {w: column for column, w in enumerate(dict.fromkeys(said))}
    columns = list(map(vocab.__getitem__, said))
    sizes = np.fromiter(map(len, words), np.int64, n)
    held = np.zeros((n, len(vocab)), np.float32)
    held[np.repeat(np.arange(n), sizes), columns] = 1.0
    shared = held @ held.T  # exact: counts of 0/1 columns
    rank = np.fromiter((SCOPE_RANK[c.item.scope.kind] for c in heads), np.int64, n)
    shown = np.arange(n) < n_shown
    # k's title holds h's words and more (h has some), and k may stand on h's subject
    on = ((shared == sizes[:, None]) & (sizes[None, :] > sizes[:, None]) & (sizes[:, None] > 0)
          & np.where(shown[None, :], rank[None, :] != rank[:, None], rank[None, :] < rank[:, None]))
    return [(h, np.flatnonzero(on[h]).tolist()) for h in np.flatnonzero(on.any(axis=1)).tolist()]


def _share_tier_with_rivals(ranked: list[Candidate]) -> None:
    """The shown members of one subject (a conflict group, already in scope order) take the
    tier of the best placed one: a session claim under another title, less relevant in words,
    must not fall behind the broader claims it overrides."""
    by_id = {c.id: c for c in ranked}
    stack = sorted((c for c in ranked if c.tier <= 0), key=lambda c: -c.tier)  # the best tier last
    while stack:
        placed = stack.pop()
        for rival_id in placed.conflict_with:
            rival = by_id.get(rival_id)
            if rival is not None and rival.tier > placed.tier:
                rival.tier = placed.tier
                rival.components["curated_first"] = 1.0
                stack.append(rival)


__all__ = ["FLAGGED", "demote_covered_messages", "drop_repeated_turns", "rank", "resolve_conflicts",
           "session_key", "session_mass"]
