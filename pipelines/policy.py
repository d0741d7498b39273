"""The write policy: every proposed memory gets a Verdict before anything is stored.

Decisions (seed 000 §4, extended):

Hard blocks — no setting, auditor or caller flag can lift them (`hard_block=True`):
- `hard.secret.*`      a credential anywhere in title, content, tags, entities, why_store
                       or provenance hint (see `policy_rules.secrets`)          -> reject
- `hard.injection.*`   instruction-like text aimed at the assistant or the memory
                       (see `policy_rules.injection`)                           -> reject
- `hard.secret.model`, `hard.injection.model`  the learned layer beside the rules
                       (`policy_rules.learned`): it decides the grey zone the rules leave
                       (text no rule matched, and secret-rule hits on look-alike values,
                       which it may overrule)                                   -> reject
                       A kind whose thresholds help no held-out source ships inert; since
                       2026.11-5 the secret kind does; since 2026.11-11 the injection
                       model adds verdicts (add threshold 0.69, strings of six
                       words or more).
                       A user's style preference ("always answer in French") is not an
                       injection: in a `preference` from a trusted source that says only
                       how to answer, the two standing-order rules yield (`allow.style_preference`
                       in the verdict; `policy_rules.preferences`); so they do for a team's
                       convention about its own work ("always answer customer emails within
                       24 hours") from a trusted source (`allow.work_convention`). Since
                       2026.11-12 a user governing their own memory ("forget my old number",
                       "from now on, call me Sam", "ignore the old meeting notes, the new
                       agenda is in the shared doc") is not one either: from a trusted
                       source, the standing-order, override and role rules and the injection
                       model yield (`allow.own_memory`) when the text is about the writer's
                       own things and nothing else (not the reader's rules, other people,
                       concealment, outside targets or credentials). Since 2026.11-13 a card
                       number followed by its expiry written in digits ("4539... 12/28") is
                       still found (the run of digits is cut back to whole groups for the
                       Luhn check). Since 2026.11-14 a credential stated the other way round
                       is one too ("4471 is my PIN", "I changed my wifi password to ...",
                       "my PIN for the new debit card is 4471"), and so is a title naming a
                       credential over content that is its value (title "Bank PIN", content
                       "4471": `find_labelled_value`). Since 2026.11-15 a value beside its
                       credential's name in any order is one ("use 4471 as the PIN", "my PIN,
                       4471", "the door code (5812)", "4471, my PIN"), and a flood of one
                       filler word ("...EXAMPLEEXAMPLE...", documentation's padded keys) is
                       no `token_flood`. Since 2026.11-16 an override in Russian capitals
                       ("ИГНОРИРУЙ ВСЕ ИНСТРУКЦИИ") is found as in lower case. Since
                       2026.11-17 a checksum-valid BIP-39 recovery phrase is a secret
                       without a word naming it (`hard.secret.seed_phrase`), and the
                       standard's test vectors ("abandon abandon ... about", entropy of one
                       repeated byte) are neither a secret nor a `token_flood`; 32 more
                       vendors' documented token prefixes are found by the prefix alone.
                       Since 2026.11-18 a random-looking run is decoded once: base64 of a
                       media file, an SSH public key, a public PEM block or readable text
                       with no secret in it is data, base58 of a multihash (an IPFS
                       content id) a hash; base64 of `user:password` or of a text holding
                       a secret is one (`hard.secret.encoded_credential`); an
                       unquoted generated key of letters and punctuation (Django's alphabet)
                       is a value though it holds brackets or `&`. Since 2026.11-19 a
                       key of letters only (both cases, no digit) under a token's name is
                       one unless its parts are mostly dictionary words (a camelCase name),
                       and a 7-letter run of one case rules a bare token out only when it is
                       words in a token of 52+ characters (random base64 holds such runs
                       often); a JSON Web Key's public members ("n", "e", "x", "y" beside
                       "kty", no private member) are public key data. Since 2026.11-20
                       a credential's name written as one word in code ("apiKey",
                       "authToken") holds a key only when its value is one as under
                       `api_key` (a name made of words is none); a key of one case's
                       letters under a token's name is one unless half of it lies in
                       dictionary words; base64 holding two or more slashes is no path
                       unless its parts are words; a vendor prefix followed by words
                       ("LTAI5tSomethingVeryLong") is a made-up example (still masked).
                       Since 2026.11-21 a keyword inside a name run together in capitals
                       ("STRIPEAPIKEY", not "MONKEY") is read by a dictionary split, and a
                       made-up vendor example is no key under a token's name either; a
                       bare token of 24-35 characters needs the entropy random base64 of
                       its length has (less 0.15 bits), not a fixed 4.5, unless it is
                       mostly dictionary words or one segment of a dotted token.
- `hard.provenance_required`  MTM/LTM target (by the caller or the item) without
                       provenance                                               -> reject
- `hard.empty`         nothing to store (no title and no content)               -> reject
- `hard.small_talk`    nothing to store but the exchange itself: title and content only
                       acknowledgements, greetings and filler (`recall.episodic.is_small_talk`)
                       once the words naming the chat ("user", "said", "chat") are set aside,
                       a model keeping "Chat: Thanks, sounds great!" (since 2026.11-22)  -> reject
- `hard.oversize`      content longer than `settings.max_content_chars` (or a title over
                       300 chars). The dump itself is never stored: the verdict is
                       `quarantine` with `rewritten_type="pointer"` and the store keeps
                       only `pointer_for(item)` — title, size and content hash, in STM,
                       unverified, expiring. Chosen over `reject` because the seed asks to
                       "force pointer type": the fact that a document existed survives,
                       its text does not. Combined with any other hard block it is rejected.

Soft blocks -> `quarantine` (store in STM only, validation "unverified", `expires_at` =
now + `settings.quarantine_days`):
- `soft.low_confidence` confidence below `settings.min_confidence`
- `soft.no_evidence`    no provenance and no why_store
- `soft.contradiction`  an active stored claim conflicts with it (`pipelines.recall.conflicts`: the
                        same subject stating other values, or under the same title, saying what
                        changed; `contradicted`)
- `soft.untrusted_doc`  from an untrusted source or a document, without chunk ids or
                        content hashes to check it against
Otherwise `accept`.

Extension point (seed 001, "Custom Policy Rules"): pass `extra_rules` (callables returning
`RuleHit`s) or subclass and override `extra_checks`. Extra rules can only add blocks; they
run after the built-in ones and cannot remove a built-in hit.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Literal

import msgspec

from pipelines.policy_rules import learned as learned_layer
from pipelines.policy_rules.findings import Finding, one_per_secret, quote_excerpt, redact_secret
from pipelines.policy_rules.injection import find_homoglyph_words, find_injections_normalised
from pipelines.policy_rules.preferences import (
    CONVENTION_RULE_ID,
    OWN_MEMORY_RULE_ID,
    OWN_MEMORY_YIELDING,
    STYLE_RULE_ID,
    YIELDING_RULES,
    is_own_memory_request,
    is_style_preference,
    is_work_convention,
)
from pipelines.policy_rules.secrets import SecretHit, find_labelled_value, find_secrets
from pipelines.policy_rules.text import fold_lookalikes, unfold
from pipelines.recall.conflicts import CosineTo, contradicted, proposed_claim
from pipelines.recall.episodic import is_small_talk
from pipelines.recall.lexical import SMALL_TALK, STOPWORDS, each_word, words
from pipelines.records import SCOPE_KINDS, MemoryItem, ProposedItem, Provenance, Verdict, sha256_text
from pipelines.settings import Settings

POLICY_VERSION = "2026.11-22"  # bumped whenever a rule changes: stored items are re-checked once

TIERS: tuple[str, ...] = ("stm", "mtm", "ltm")
MAX_TITLE_CHARS = 300
# Longer fields are scanned at both ends only. Such content is far over max_content_chars,
# so it is never stored (only its pointer is); the cap bounds the time one proposal costs.
MAX_SCAN_CHARS = 200_000

__all__ = [
    "POLICY_VERSION",
    "Finding",
    "Policy",
    "PolicyInputError",
    "RuleContext",
    "RuleHit",
    "is_blocked_text",
    "pointer_for",
]


class PolicyInputError(ValueError):
    """Raised for input the policy cannot judge: a non-string text, an item that is not a
    ProposedItem (or a dict convertible to one), an unknown target tier."""


@dataclass(frozen=True, slots=True)
class RuleHit:
    """One rule's decision. `action` "reject" makes a hard block, "quarantine" a soft one;
    a "note" blocks nothing and is kept in the reasons of the verdict it does not change."""

    rule_id: str
    action: Literal["quarantine", "reject", "note"]
    reason: str  # "" when another hit's reason says it (one secret found by several detectors)


@dataclass(frozen=True, slots=True)
class RuleContext:
    """What a rule may look at besides the item."""

    target_tier: str
    provenance: Provenance | None
    source_trusted: bool
    existing: Sequence[MemoryItem]
    settings: Settings
    author: str = ""  # who proposes it ("": not known): what they say of themselves is about them
    cosine_to: CosineTo | None = None  # the proposal's cosine with a stored item (`conflicts.contradicted`)


PolicyRule = Callable[[ProposedItem, RuleContext], Iterable[RuleHit]]


SHIPPED: Literal["shipped"] = "shipped"


class Policy:
    """`learned`: the learned layer (`policy_rules.learned`); by default the artefact
    shipped with the code, None for the rules alone."""

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        extra_rules: Sequence[PolicyRule] = (),
        learned: learned_layer.LearnedLayer | None | Literal["shipped"] = SHIPPED,
    ) -> None:
        self.settings = settings if settings is not None else Settings()
        self._extra_rules = tuple(extra_rules)
        self.learned = learned_layer.shipped() if learned == SHIPPED else learned

    # ------------------------------------------------------------------ scanning

    def scan_text(self, text: str) -> list[Finding]:
        """Secret and injection findings in one string (field "text"), excerpts redacted."""
        if not isinstance(text, str):
            raise PolicyInputError(f"scan_text expects str, got {type(text).__name__}")
        return _scan_fields([("text", text)], self.learned)

    def scan_secrets(self, text: str) -> list[Finding]:
        """The secret findings of `scan_text(text)`, without looking for injections when the
        learned layer cannot change a secret verdict (its secret model is inert or absent):
        a verbatim chat turn is checked for secrets only, and the injection rules are most of
        a scan's cost."""
        if not isinstance(text, str):
            raise PolicyInputError(f"scan_secrets expects str, got {type(text).__name__}")
        secret_model = self.learned.models.get("secret") if self.learned is not None else None
        if secret_model is not None and not secret_model.inert:
            return [f for f in self.scan_text(text) if f.kind == "secret"]
        return _scan(text, "text", injections=False)

    def is_blocked_text(self, text: str) -> bool:
        """True when `text` alone would be hard-blocked (a secret or an injection)."""
        return bool(self.scan_text(text))

    # ------------------------------------------------------------------ verdicts

    def evaluate(
        self,
        item: ProposedItem,
        *,
        target_tier: str = "stm",
        provenance: Provenance | None = None,
        source_trusted: bool = True,
        existing: Sequence[MemoryItem] = (),
        now: datetime | None = None,
        author: str = "",
        cosine_to: CosineTo | None = None,
    ) -> Verdict:
        """Judge one proposal. Raises PolicyInputError for unusable arguments; any
        string content, however large or odd, gets a verdict. `author`: who proposes it, so
        what they say of themselves is not held against a teammate's own words
        (`conflicts.own_words_apart`). `cosine_to`: the proposal's cosine with each of
        `existing`, when there are vectors (`conflicts.contradicted`)."""
        item = _coerce_item(item)
        tier = _effective_tier(target_tier, item.tier)
        if provenance is not None and not isinstance(provenance, Provenance):
            raise PolicyInputError(f"provenance must be a Provenance, got {type(provenance).__name__}")
        ctx = RuleContext(tier, provenance, bool(source_trusted), tuple(existing or ()), self.settings,
                          str(author or ""), cosine_to)

        hits: list[RuleHit] = []
        hits.extend(self._hard_hits(item, ctx))
        oversize = self._oversize_hit(item)
        hits.extend(self._soft_hits(item, ctx))
        hits.extend(self.extra_checks(item, ctx))
        return self._verdict(hits, oversize, now)

    def extra_checks(self, item: ProposedItem, ctx: RuleContext) -> Iterable[RuleHit]:
        """Hook for custom rules (subclass, or pass `extra_rules`). Only adds blocks."""
        for rule in self._extra_rules:
            yield from rule(item, ctx)

    def apply_auditor(self, verdict: Verdict, action: str, reason: str = "") -> Verdict:
        """Combine with an auditor model's opinion (seed 000 §4.3). The auditor may tighten
        any verdict and may lift a soft quarantine, but a hard block is returned unchanged."""
        if action not in ("accept", "quarantine", "reject"):
            raise PolicyInputError(f"unknown auditor action {action!r}")
        if verdict.hard_block:
            return verdict
        note = f"auditor: {action}" + (f" ({reason})" if reason else "")
        if action == verdict.action:
            return msgspec.structs.replace(verdict, reasons=[*verdict.reasons, note])
        if action == "accept":
            return msgspec.structs.replace(verdict, action="accept", expires_at=None, reasons=[*verdict.reasons, note])
        expires = verdict.expires_at if action == "quarantine" else None
        if action == "quarantine" and expires is None:
            expires = _expiry(None, self.settings.quarantine_days)
        return msgspec.structs.replace(
            verdict,
            action=action,
            expires_at=expires,
            rule_ids=[*verdict.rule_ids, "audit.auditor"],
            reasons=[*verdict.reasons, note],
        )

    # ------------------------------------------------------------------ rules

    def _hard_hits(self, item: ProposedItem, ctx: RuleContext) -> Iterable[RuleHit]:
        fields = list(_text_fields(item))
        findings = _scan_fields(fields, self.learned)
        allowed = _standing_order(item, ctx, dict(fields), findings) if findings else None
        if allowed is not None:
            rule_id, what = allowed
            yield RuleHit(rule_id, "note", f"{what} from a trusted source: "
                          + ", ".join(sorted({f.rule_id for f in findings})) + " yield (policy_rules.preferences)")
            findings = []
        told = {id(f) for f in one_per_secret(findings)}  # one reason per secret value; every rule id kept
        for f in findings:
            reason = f"{f.field}: {f.kind} ({f.rule_id}): {f.excerpt}" if id(f) in told else ""
            yield RuleHit(f.rule_id, "reject", reason)
        if not item.title.strip() and not item.content.strip():
            yield RuleHit("hard.empty", "reject", "nothing to store: empty title and content")
        elif _only_small_talk(f"{item.title} {item.content}"):
            yield RuleHit("hard.small_talk", "reject", "nothing to store: only small talk")
        if ctx.target_tier in ("mtm", "ltm") and not _has_provenance(ctx.provenance):
            yield RuleHit(
                "hard.provenance_required",
                "reject",
                f"{ctx.target_tier.upper()} requires provenance (source id, turn refs or chunk ids)",
            )

    def _oversize_hit(self, item: ProposedItem) -> RuleHit | None:
        limit = max(1, int(self.settings.max_content_chars))
        if len(item.content) > limit or len(item.title) > MAX_TITLE_CHARS:
            return RuleHit(
                "hard.oversize",
                "quarantine",
                f"content of {len(item.content)} chars exceeds {limit}: stored as a pointer "
                f"(sha256 {sha256_text(item.content)[:12]}), never as a dump",
            )
        return None

    def _soft_hits(self, item: ProposedItem, ctx: RuleContext) -> Iterable[RuleHit]:
        s = ctx.settings
        if item.confidence is not None and item.confidence < s.min_confidence:
            yield RuleHit(
                "soft.low_confidence",
                "quarantine",
                f"confidence {item.confidence:.2f} below {s.min_confidence:.2f}",
            )
        if not _has_provenance(ctx.provenance) and not item.why_store.strip():
            yield RuleHit("soft.no_evidence", "quarantine", "no provenance and no why_store")
        for other, key in contradictions(item, ctx.existing, ctx.author, ctx.cosine_to):
            yield RuleHit(
                "soft.contradiction",
                "quarantine",
                f"contradicts item {other.id} ({key})",
            )
        from_doc = ctx.provenance is not None and ctx.provenance.source_kind == "doc"
        if (not ctx.source_trusted or from_doc) and not _has_doc_anchors(ctx.provenance):
            yield RuleHit(
                "soft.untrusted_doc",
                "quarantine",
                "untrusted/document content without chunk ids or content hashes",
            )

    def _verdict(self, hits: list[RuleHit], oversize: RuleHit | None, now: datetime | None) -> Verdict:
        rejects = [h for h in hits if h.action == "reject"]
        builtin_hard = any(h.rule_id.startswith("hard.") for h in rejects)
        if rejects:
            chosen = rejects + ([oversize] if oversize else [])
            return Verdict(
                action="reject",
                reasons=[h.reason for h in chosen if h.reason],
                rule_ids=_unique(h.rule_id for h in chosen),
                policy_version=POLICY_VERSION,
                hard_block=builtin_hard or oversize is not None,
            )
        soft = [h for h in hits if h.action == "quarantine"]
        notes = [h for h in hits if h.action == "note"]
        if oversize is not None or soft:
            chosen = ([oversize] if oversize else []) + soft + notes
            return Verdict(
                action="quarantine",
                reasons=[h.reason for h in chosen],
                rule_ids=_unique(h.rule_id for h in chosen),
                policy_version=POLICY_VERSION,
                hard_block=oversize is not None,
                rewritten_type="pointer" if oversize is not None else None,
                expires_at=_expiry(now, self.settings.quarantine_days),
            )
        return Verdict(action="accept", policy_version=POLICY_VERSION, reasons=[h.reason for h in notes],
                       rule_ids=_unique(h.rule_id for h in notes))


def _standing_order(item: ProposedItem, ctx: RuleContext, fields: dict[str, str],
                    findings: Sequence[Finding]) -> tuple[str, str] | None:
    """(allow rule id, what) when the rules found only a standing order a user may keep, from
    a trusted source (`policy_rules.preferences`): how to answer, in a preference; a
    convention about the user's own work, or a request about the user's own memory, in an
    item of any type."""
    if not ctx.source_trusted or any(f.rule_id not in OWN_MEMORY_YIELDING for f in findings):
        return None
    texts = [fields.get(f.field, "") for f in findings]
    if all(f.rule_id in YIELDING_RULES for f in findings):
        if item.type == "preference" and all(is_style_preference(t) for t in texts):
            return STYLE_RULE_ID, "a style preference"
        if all(is_work_convention(t) for t in texts):
            return CONVENTION_RULE_ID, "a convention about the user's own work"
    if all(is_own_memory_request(t) for t in texts):
        return OWN_MEMORY_RULE_ID, "a request about the user's own memory"
    return None


# ---------------------------------------------------------------------- helpers


# Words that name the exchange, not anything in it: "User said thanks" keeps nothing.
_CHAT_NAMES = ("user", "assistant", "said", "says", "saying", "chat", "chatted", "conversation", "message",
               "replied", "reply", "responded", "thanked", "greeted", "greeting", "acknowledged",
               "acknowledgement", "small talk")
_CHAT_WORDS = re.compile(r"\b(?:" + "|".join(_CHAT_NAMES) + r")\b", re.IGNORECASE)
# Every word a text of small talk may hold once the words naming the chat are set aside.
_SMALL_TALK_OR_CHAT = SMALL_TALK | STOPWORDS | frozenset(" ".join(_CHAT_NAMES).split())


def _only_small_talk(text: str) -> bool:
    """Acknowledgements, greetings and filler, and at least one of them: words that are
    only stopwords ("It is what it is.") are left to the other rules."""
    # Most texts hold a word no small talk has: said at once, without the case-blind
    # substitution over the whole text (the slower part on a long one).
    if any(w not in _SMALL_TALK_OR_CHAT for w in each_word(text)):
        return False
    said = _CHAT_WORDS.sub(" ", text)
    return is_small_talk(said) and not (SMALL_TALK - STOPWORDS).isdisjoint(words(said))


def is_blocked_text(text: str) -> bool:
    """Convenience: would `text` be hard-blocked by the default policy?"""
    return Policy().is_blocked_text(text)


def rules_only_ids(text: str) -> list[str]:
    """The rule ids the rules alone find in one string, as the policy scans a field."""
    return [f.rule_id for f in _scan(text, "text")]


def pointer_for(item: ProposedItem, *, source: str = "") -> ProposedItem:
    """What the store keeps for an oversized proposal: a short pointer carrying the
    content hash (and the caller's source reference), never the content itself."""
    item = _coerce_item(item)
    digest = sha256_text(item.content)
    title = (item.title.strip() or "Oversized content")[:120]
    where = f" from {source}" if source else ""
    hint = dict(item.provenance_hint)
    hashes = list(hint.get("content_hashes") or []) if isinstance(hint.get("content_hashes"), list) else []
    hint["content_hashes"] = [*hashes, digest]
    return ProposedItem(
        type="pointer",
        title=title,
        content=f"Pointer to {len(item.content)} characters of content{where} (sha256:{digest}).",
        tags=list(item.tags),
        entities=list(item.entities),
        why_store=item.why_store[:500],
        importance=item.importance,
        confidence=item.confidence,
        tier="stm",
        scope=item.scope,
        provenance_hint=hint,
        valid_from=item.valid_from,
        valid_to=item.valid_to,
    )


def _scan_fields(fields: Sequence[tuple[str, str]], learned: learned_layer.LearnedLayer | None) -> list[Finding]:
    """Rule findings of every field, then the learned layer's decision on each non-blank
    field whose verdict a probability can change (`needs_scores`; one batched model pass per
    item)."""
    per_field = _with_labelled_value([(field, text, _scan(text, field)) for field, text in fields])
    judged = [
        i for i, (_, text, found) in enumerate(per_field)
        if text.strip() and learned is not None and learned.needs_scores([f.rule_id for f in found], text)
    ]
    if learned is None or not judged:
        return [f for _, _, found in per_field for f in found]
    scores = learned.scores([per_field[i][1] for i in judged], [[f.rule_id for f in per_field[i][2]] for i in judged])
    out: list[Finding] = []
    row = {i: n for n, i in enumerate(judged)}
    for i, (field, text, found) in enumerate(per_field):
        if i not in row:
            out.extend(found)
            continue
        kept_ids, added = learned.decide([f.rule_id for f in found], {k: float(v[row[i]]) for k, v in scores.items()},
                                         text)
        out.extend(f for f in found if f.rule_id in kept_ids)
        out.extend(_model_finding(rule_id, text, field, found) for rule_id in added)
    return out


def _with_labelled_value(per_field: list[tuple[str, str, list[Finding]]]) -> list[tuple[str, str, list[Finding]]]:
    """The content's findings with the credential its title names (`find_labelled_value`: title
    "Bank PIN", content "4471"), when the content alone shows no secret."""
    by_field = {field: i for i, (field, _, _) in enumerate(per_field)}
    if "title" not in by_field or "content" not in by_field:
        return per_field
    title, (field, content, found) = per_field[by_field["title"]][1], per_field[by_field["content"]]
    if any(f.kind == "secret" for f in found):
        return per_field
    labelled = _secret_findings(find_labelled_value(title, content), field)
    if labelled:
        per_field[by_field["content"]] = (field, content, [*found, *labelled])
    return per_field


def _secret_findings(hits: Sequence[SecretHit], field: str) -> list[Finding]:
    return [Finding(h.rule_id, "secret", h.start, h.end, redact_secret(h.rule_id, h.end - h.start), field)
            for h in hits]


def _model_finding(rule_id: str, text: str, field: str, found: Sequence[Finding]) -> Finding:
    """A learned-layer finding spans the whole field: the model judges the text, not a phrase."""
    if rule_id.startswith("hard.secret."):
        return Finding(rule_id, "secret", 0, len(text), redact_secret(rule_id, len(text)), field)
    secret_spans = [(f.start, f.end) for f in found if f.kind == "secret"]
    return Finding(rule_id, "injection", 0, len(text), quote_excerpt(text, 0, len(text), secret_spans), field)


def _scan(text: str, field: str, injections: bool = True) -> list[Finding]:
    if len(text) > MAX_SCAN_CHARS:
        half = MAX_SCAN_CHARS // 2
        head = _scan(text[:half], field, injections)
        tail_start = len(text) - half
        tail = [
            msgspec.structs.replace(f, start=f.start + tail_start, end=f.end + tail_start)
            for f in _scan(text[tail_start:], field, injections)
        ]
        return head + tail
    secret_hits = find_secrets(text)
    spans = [(h.start, h.end) for h in secret_hits]
    findings = _secret_findings(secret_hits, field)
    if injections and text.strip():
        unfolded = unfold(text)
        norm = fold_lookalikes(unfolded)
        # Mixed-script words are looked for before the look-alikes are folded away
        # (folding keeps offsets: one character for one).
        injection_hits = find_homoglyph_words(unfolded) + find_injections_normalised(norm)
        # Offsets move when normalisation changes the text; then mask what the secret
        # scanner finds in the normalised text itself (only needed to quote a hit).
        norm_spans = spans if norm == text or not injection_hits else [(h.start, h.end) for h in find_secrets(norm)]
        findings.extend(
            Finding(h.rule_id, "injection", h.start, h.end, quote_excerpt(norm, h.start, h.end, norm_spans), field)
            for h in sorted(injection_hits, key=lambda h: (h.start, h.end))
        )
    return findings


def _text_fields(item: ProposedItem) -> Iterable[tuple[str, str]]:
    yield "title", item.title
    yield "content", item.content
    yield "why_store", item.why_store
    for i, tag in enumerate(item.tags):
        yield f"tags[{i}]", tag
    for i, ent in enumerate(item.entities):
        yield f"entities[{i}]", ent
    for key, value in _flatten(item.provenance_hint):
        yield f"provenance_hint.{key}", value


def _flatten(value: Any, prefix: str = "", depth: int = 0) -> Iterable[tuple[str, str]]:
    """String leaves of a nested hint (bounded depth: hints come from the model)."""
    if depth > 4:
        return
    if isinstance(value, str):
        yield prefix or "value", value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _flatten(v, f"{prefix}.{k}" if prefix else str(k), depth + 1)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from _flatten(v, f"{prefix}[{i}]", depth + 1)


def _coerce_item(item: Any) -> ProposedItem:
    if isinstance(item, ProposedItem):
        return item
    if isinstance(item, dict):
        try:
            return msgspec.convert(item, ProposedItem)
        except msgspec.ValidationError as exc:
            raise PolicyInputError(f"not a valid proposal: {exc}") from exc
    raise PolicyInputError(f"expected ProposedItem, got {type(item).__name__}")


def _effective_tier(target_tier: Any, item_tier: str | None) -> str:
    """The higher of the caller's target and the tier the item asks for, so a proposal
    cannot slip into LTM by naming the tier itself."""
    if not isinstance(target_tier, str) or target_tier.lower() not in TIERS:
        raise PolicyInputError(f"target_tier must be one of {TIERS}, got {target_tier!r}")
    tier = target_tier.lower()
    asked = (item_tier or "").strip().lower()
    if asked in TIERS and TIERS.index(asked) > TIERS.index(tier):
        tier = asked
    return tier


def _has_provenance(p: Provenance | None) -> bool:
    return p is not None and p.is_present()


def _has_doc_anchors(p: Provenance | None) -> bool:
    return p is not None and bool(p.chunk_ids or p.content_hashes)


def _expiry(now: datetime | None, days: float) -> str:
    base = now if now is not None else datetime.now(timezone.utc)
    if base.tzinfo is None:
        base = base.replace(tzinfo=timezone.utc)
    return (base.astimezone(timezone.utc) + timedelta(days=float(days))).isoformat(timespec="microseconds")


def _unique(values: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(values))


# ---------------------------------------------------------------------- contradictions


def contradictions(item: ProposedItem, existing: Sequence[MemoryItem], author: str = "",
                   cosine_to: CosineTo | None = None) -> Iterable[tuple[MemoryItem, str]]:
    """Stored claims the proposal (by `author`, "" when not known) conflicts with, by the one
    conflict rule recall and /v1/conflicts use (pipelines.recall.conflicts), with the
    proposal's cosine to each when there are vectors (`cosine_to`)."""
    if not existing:
        return ()  # nothing to contradict: reading the proposal's claim costs ~1 ms on a long text
    new = proposed_claim(item.title, item.content, item.type, item.scope if item.scope in SCOPE_KINDS else "project",
                         author=author)
    return () if new is None else contradicted(new, existing, cosine_to)
