"""Cluster merging: one canonical MTM memory per STM cluster.

A small local LLM (Granite 3.2 2B) proposes the merged canonical item; the provenance
union is attached and the originals are superseded, never deleted. The merge confidence
is a weighted formula (`merge_confidence`), floored at the least confident member's
(`merged_item_confidence`), and the strategy is an extension point: any
object with `name` and `draft(cluster) -> MergeDraft` is a `Merger`.

- `ExtractiveMerger`: deterministic, no model. The canonical item (highest confidence, then
  newest, then smallest id) gives title and first sentences; other items add only the
  sentences not already covered (words compared as lemma stems), within `max_chars`; a
  sentence that says all a kept one says and more replaces it.
- `OllamaMerger`: Granite through the official `ollama` client with a JSON-schema `format`
  (structured output) at temperature 0. Output is validated; an invalid answer is retried
  once. Connection refused, timeout, HTTP error, invalid output twice: the fallback
  merger's draft is used and says why (`merger="extractive-fallback"`, `fallback_reason`).
  It never raises for upstream problems. After `trip_after` consecutive unreachable/timeout
  failures the instance stops calling Ollama (one dead server must not cost a timeout per
  cluster); a new instance (the next run) tries again.
- `contradicting_ids`: members of a cluster that contradict another member, by the conflict
  rule recall and `/v1/conflicts` use. They are kept out of the merge: similar wording is
  what clusters them ("metrics go to TimescaleDB" / "... to ClickHouse"), and one merged
  item holding both would hide the contradiction that recall resolves and reports. The
  rule misses about half the labelled conflicts, so members merge only on evidence that
  they agree (`members.may_disagree`: a value in common, alike in denying, neither saying
  something changed); `loci bench merge` measures it.
- `for_other_times`: members that hold at different times (two weeks on call) are kept
  out of the merge too: one item would hold over the span between them.
- `merge_cluster`: builds the canonical item (deterministic id, provenance union, merge
  confidence, links) and sends the draft through the write policy like any proposal.

Merged items are MTM, and quarantined memory may only live in STM: so a `quarantine`
verdict refuses a merge just like `reject`; the originals then stay as they are.

One module per job: `drafts` (MergeDraft, the Merger protocol, ExtractiveMerger),
`granite` (OllamaMerger, make_merger), `members` (which members merge), `canonical`
(merge confidence and the canonical item). Their public names are imported from here.
"""

from pipelines.merging.canonical import (
    MERGE_REASON,
    MergeOutcome,
    merge_cluster,
    merge_confidence,
    merged_item_confidence,
    merged_item_id,
    merged_provenance,
    said_dates,
    union_exact,
)
from pipelines.merging.drafts import (
    EXTRACTIVE_NAME,
    FALLBACK_NAME,
    MAX_TITLE_CHARS,
    TYPE_PRIORITY,
    ExtractiveMerger,
    MergeDraft,
    MergeError,
    Merger,
    canonical_order,
    majority_type,
    union_stable,
)
from pipelines.merging.granite import OllamaMerger, draft_schema, make_merger, merge_prompt
from pipelines.merging.members import contradicting_ids, for_other_times

__all__ = [
    "EXTRACTIVE_NAME", "FALLBACK_NAME", "MAX_TITLE_CHARS", "MERGE_REASON", "TYPE_PRIORITY", "ExtractiveMerger",
    "MergeDraft", "MergeError", "MergeOutcome", "Merger", "OllamaMerger", "canonical_order", "contradicting_ids",
    "draft_schema", "for_other_times", "majority_type", "make_merger", "merge_cluster", "merge_confidence",
    "merge_prompt", "merged_item_confidence", "merged_item_id", "merged_provenance", "said_dates", "union_exact",
    "union_stable",
]
