"""Conflict-rule benchmark: precision and recall of the rule on hand-labelled claim pairs.

    loci bench conflicts [--data PAIRS.jsonl] [--embedder minilm|hash|none] [--locomo DEV.json] [--json OUT]

Each line of the pairs file (default `bench/data/conflict_pairs.jsonl`, 89 pairs written
before the rule was read) is `{"a": {"title", "content"}, "b": {...}, "conflict": bool,
"kind": str}`. Both claims become project-scoped `fact` items and the rule
(`pipelines.recall.conflicts.conflict_reason`) judges the pair twice:

- words only, as at write time (`corrected_by` / `contradicted`: no cosine);
- with the embedder's cosine of the two items' vectors (`embedding_text`, the text the
  pipeline and the service embed), as recall does (`--embedder none` skips this);
- the write check with that cosine (`write_cosine`: `contradicted` given the proposal's
  cosine with the stored claim, as the service gives it; skipped with `--embedder none`).

The table reports precision, recall, F1 and the confusion counts overall and per `kind`,
and the misclassified pairs with the reason the rule gave.

`--locomo DEV.json` (with an embedder) adds the write check's false alarms on chat: each
LoCoMo turn read as its speaker's proposal (a `fact`) and checked (`contradicted`) against
that speaker's NEAR_CLAIMS earlier turns nearest it by cosine, as the service checks a
write; counted words only and with the cosine. Hardly a turn there corrects an earlier
one, so nearly every match is a false alarm: at write an author's own match supersedes
the earlier claim, a teammate's is held for review.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench import driver

DEFAULT_PAIRS = Path(__file__).parent / "data" / "conflict_pairs.jsonl"
MODES = ("words", "write", "cosine", "write_cosine")


class PairsError(driver.BenchDataError):
    """The pairs file is malformed."""


def load_pairs(path: Path) -> list[dict[str, Any]]:
    """The labelled pairs of a JSON-lines file."""
    pairs = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            p = json.loads(line)
            pair = {"a": {"title": str(p["a"]["title"]), "content": str(p["a"]["content"])},
                    "b": {"title": str(p["b"]["title"]), "content": str(p["b"]["content"])},
                    "conflict": bool(p["conflict"]), "kind": str(p.get("kind", "-"))}
        except (ValueError, KeyError, TypeError) as exc:
            raise PairsError(f"{path}:{n}: not a labelled pair ({exc})") from exc
        pairs.append(pair)
    if not pairs:
        raise PairsError(f"{path}: no pairs")
    return pairs


def _item(n: int, side: str, claim: dict[str, str]) -> Any:
    from pipelines.records import MemoryItem, Scope

    return MemoryItem(id=f"pair{n:04d}{side}", tier="ltm", type="fact", title=claim["title"],
                      content=claim["content"], scope=Scope(kind="project", org_id="acme", project_id="p"))


def _counts(rows: list[tuple[bool, bool]]) -> dict[str, Any]:
    """Confusion counts and precision / recall / F1 of (label, predicted) rows."""
    tp = sum(1 for y, p in rows if y and p)
    fp = sum(1 for y, p in rows if not y and p)
    fn = sum(1 for y, p in rows if y and not p)
    tn = len(rows) - tp - fp - fn
    precision = tp / (tp + fp) if tp + fp else None
    recall = tp / (tp + fn) if tp + fn else None
    f1 = (2 * precision * recall / (precision + recall)
          if precision is not None and recall is not None and precision + recall else None)
    return {"pairs": len(rows), "tp": tp, "fp": fp, "fn": fn, "tn": tn,
            "precision": None if precision is None else round(precision, 4),
            "recall": None if recall is None else round(recall, 4),
            "f1": None if f1 is None else round(f1, 4)}


def judge(pairs: Sequence[dict[str, Any]], embedder: Any | None) -> dict[str, Any]:
    """The rule's verdict on every pair, words only and (with `embedder`) with the cosine; and
    the write check's ("write": would b, written by a's author in a's scope, replace a? the
    words-only rule less the pairs where one names a case of the other, `contradicted`)."""
    from pipelines.message_context import embedding_text
    from pipelines.recall.conflicts import conflict_reason, contradicted, read_claim

    items = [(_item(n, "a", p["a"]), _item(n, "b", p["b"])) for n, p in enumerate(pairs)]
    cosines: list[float | None] = [None] * len(items)
    embed_s = 0.0
    if embedder is not None:
        started = time.process_time()
        vecs = embedder.embed([embedding_text(it) for pair in items for it in pair])
        embed_s = time.process_time() - started
        cosines = [float(vecs[2 * n] @ vecs[2 * n + 1]) for n in range(len(items))]
    modes = [m for m in MODES if "cosine" not in m or embedder is not None]
    started = time.process_time()
    per_pair = []
    for n, (p, (a, b)) in enumerate(zip(pairs, items)):
        ca, cb = read_claim(a), read_claim(b)
        row = {"n": n + 1, "kind": p["kind"], "conflict": p["conflict"], "a": p["a"], "b": p["b"],
               "cos": None if cosines[n] is None else round(cosines[n], 4),
               "values": [sorted(ca.values), sorted(cb.values)],
               "retired": [sorted(ca.retired), sorted(cb.retired)]}
        for mode in modes:
            if mode in ("write", "write_cosine"):
                cosine_to = (lambda _old, c=cosines[n]: c) if mode == "write_cosine" else None
                row[mode] = next((why for _, why in contradicted(cb, [a], cosine_to)), None)
            else:
                row[mode] = conflict_reason(ca, cb, cosines[n] if mode == "cosine" else None)
        per_pair.append(row)
    rule_s = time.process_time() - started
    kinds = sorted({p["kind"] for p in pairs})
    result: dict[str, Any] = {"modes": {}, "by_kind": {}, "errors": {}}
    for mode in modes:
        labelled = [(r["conflict"], r[mode] is not None) for r in per_pair]
        result["modes"][mode] = _counts(labelled)
        result["by_kind"][mode] = {k: _counts([(y, p) for (y, p), r in zip(labelled, per_pair) if r["kind"] == k])
                                   for k in kinds}
        result["errors"][mode] = [r["n"] for r in per_pair if r["conflict"] != (r[mode] is not None)]
    result["per_pair"] = per_pair
    result["cpu_s"] = {"embed": round(embed_s, 3), "rule": round(rule_s, 4)}
    return result


EXAMPLES = 20  # write false alarms kept in the JSON (the first, in conversation order)


def write_false_alarms(locomo: Path, embedder: Any) -> dict[str, Any]:
    """The write check's matches on LoCoMo turns (see the module's doc), words only and
    with the cosine, and the first EXAMPLES of those the cosine adds."""
    import msgspec
    import numpy as np

    from online.state import NEAR_CLAIMS  # the stored claims the service checks a write against
    from pipelines.ingest import locomo_sessions
    from pipelines.message_context import bare_text
    from pipelines.recall.conflicts import contradicted, read_claim
    from pipelines.records import MemoryItem, Provenance, Scope

    try:
        data = json.loads(locomo.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise driver.BenchDataError(f"{locomo}: not a LoCoMo file ({exc})") from exc
    turns = words_only = with_cosine = 0
    examples: list[dict[str, Any]] = []
    embed_s = rule_s = 0.0
    for sample in data:
        by_speaker: dict[str, list[Any]] = {}
        for _, _, session in locomo_sessions(sample["conversation"]):
            for t in session:
                by_speaker.setdefault(t["speaker"], []).append(MemoryItem(
                    id=f"{sample['sample_id']}:{t['dia_id']}", tier="ltm", type="fact", title="", content=t["text"],
                    scope=Scope(kind="user", user_id=t["speaker"]),
                    provenance=Provenance(created_at="2023-01-01T00:00:00+00:00")))
        for items in by_speaker.values():
            started = time.process_time()
            vecs = np.asarray(embedder.embed([bare_text(it) for it in items]), dtype=np.float32)
            embed_s += time.process_time() - started
            started = time.process_time()
            for k in range(1, len(items)):
                sims = vecs[:k] @ vecs[k]
                near = [items[j] for j in np.argsort(-sims)[:NEAR_CLAIMS]]
                cos = {it.id: float(sims[j]) for j, it in enumerate(items[:k])}
                new = read_claim(msgspec.structs.replace(items[k], id="\x00proposed"))
                plain = {old.id for old, _ in contradicted(new, near)}
                found = list(contradicted(new, near, lambda old, cos=cos: cos[old.id]))
                turns += 1
                words_only += len(plain)
                with_cosine += len(found)
                examples += [{"new": items[k].content, "old": old.content, "why": why, "cos": round(cos[old.id], 3)}
                             for old, why in found if old.id not in plain][:EXAMPLES - len(examples)]
            rule_s += time.process_time() - started
    return {"data": str(locomo), "turns": turns, "near": NEAR_CLAIMS, "words": words_only,
            "with_cosine": with_cosine, "examples": examples,
            "cpu_s": {"embed": round(embed_s, 1), "rule": round(rule_s, 1)}}


def run(path: Path, embedder_name: str, locomo: Path | None = None) -> dict[str, Any]:
    pairs = load_pairs(path)
    embedder = None
    if embedder_name != "none":
        from pipelines.embedders import make_embedder
        from pipelines.settings import Settings

        embedder = make_embedder(Settings(embedder=embedder_name))
    result = judge(pairs, embedder)
    if locomo is not None and embedder is not None:
        result["locomo_write"] = write_false_alarms(locomo, embedder)
    result.update({
        "benchmark": "conflicts",
        "data": {"path": str(path), "pairs": len(pairs), "conflicting": sum(p["conflict"] for p in pairs)},
        "config": {"embedder": embedder_name, "locomo": None if locomo is None else str(locomo)},
        "machine": {"python": platform.python_version(), "platform": platform.platform()},
    })
    return result


def _short(claim: dict[str, str], width: int = 48) -> str:
    text = f"{claim['title']}: {claim['content']}"
    return text if len(text) <= width else text[: width - 1] + "…"


def print_table(result: dict[str, Any]) -> None:
    c = driver.console()
    cols = ["mode / kind", "pairs", "tp", "fp", "fn", "tn", "precision", "recall", "F1"]
    rows = []
    for mode, s in result["modes"].items():
        rows.append([mode] + [s[k] for k in ("pairs", "tp", "fp", "fn", "tn")]
                    + [driver.fmt(s[k], 3) for k in ("precision", "recall", "f1")])
        for kind, k in result["by_kind"][mode].items():
            rows.append([f"  {kind}"] + [k[x] for x in ("pairs", "tp", "fp", "fn", "tn")]
                        + [driver.fmt(k[x], 3) for x in ("precision", "recall", "f1")])
    d = result["data"]
    c.print(driver.table(f"conflict rule on {d['pairs']} labelled pairs ({d['conflicting']} conflicting; "
                         f"cosine: {result['config']['embedder']})", cols, rows))
    by_n = {r["n"]: r for r in result["per_pair"]}
    wrong = sorted({n for ns in result["errors"].values() for n in ns})
    if wrong:
        mrows = []
        for n in wrong:
            r = by_n[n]
            miss = "missed" if r["conflict"] else "false alarm"
            marks = ["x" if n in result["errors"][m] else "" for m in result["modes"]]
            mrows.append([str(n), r["kind"], miss, *marks, driver.fmt(r["cos"], 2), _short(r["a"]), _short(r["b"])])
        c.print(driver.table("misclassified pairs (x: wrong in that mode)",
                             ["#", "kind", "error", *result["modes"], "cos", "a", "b"], mrows,
                             left=("kind", "error", "a", "b")))
    fa = result.get("locomo_write")
    if fa:
        c.print(f"write check on {fa['turns']} LoCoMo turns (each against its speaker's {fa['near']} nearest "
                f"earlier turns): {fa['words']} matches words only, {fa['with_cosine']} with the cosine "
                "(nearly all false alarms)")


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    p = driver.parser("conflicts", __doc__, quick=None, workdir=False)
    p.add_argument("--data", type=Path, default=DEFAULT_PAIRS, help=f"pairs file (default {DEFAULT_PAIRS})")
    p.add_argument("--embedder", choices=("minilm", "hash", "none"), default="minilm",
                   help="embedder for the recall-time cosine (default minilm, the product's; none: words only)")
    p.add_argument("--locomo", type=Path, default=None,
                   help="LoCoMo file: also count the write check's false alarms on its turns (needs an embedder)")
    return p.parse_args(argv)


def measure(args: argparse.Namespace, workdir: Path, say: driver.Say) -> dict[str, Any]:
    if not args.data.is_file():
        raise driver.BenchDataError(f"pairs file not found: {args.data}")
    if args.locomo is not None and not args.locomo.is_file():
        raise driver.BenchDataError(f"LoCoMo file not found: {args.locomo}")
    say(f"judging the pairs of {args.data} ...")
    return run(args.data, args.embedder, args.locomo)


def main(argv: Sequence[str] | None = None) -> int:
    return driver.run(_parse(argv), measure, print_table)


if __name__ == "__main__":
    sys.exit(main())
