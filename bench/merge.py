"""Merge benchmark: does consolidation merge restatements, and never contradictions or
two people's / two scopes' claims?

    loci bench merge [--data PAIRS.jsonl ...] [--embedder hash|minilm] [--no-groups] [--json OUT]

The labelled claim pairs of the conflict benchmark (`bench/conflicts.py`; default its five
sets: `conflict_pairs` tuned, `conflict_pairs_heldout` held out, `_blind2/3/4` blind) go
through consolidation's real merge stage (`consolidate.merges.merge_clusters`: which
members may merge, `merging.members`, then `merging.merge_cluster` with the deterministic
extractive merger and the write policy), in a real warehouse, each pair as a 2-member
cluster as clustering hands it over (`ClusterRef`), in four cases:

- `same author`: one user's two project claims, the second said a day later;
- `teammates`: the same, said by two users of the project;
- `two scopes`: the first a project claim, the second the same user's personal one;
- `two people`: each a different user's personal claim.

Reported per set: conflicting pairs merged (must be 0), restatements merged (and of those,
both sources kept and the later wording leading), other non-conflicting pairs merged, and
pairs of two people or scopes merged (must be 0: two scopes or people's personal claims
never share a cluster, and first-person claims of two teammates, "I'm vegetarian", are about
two people). With groups (default), every `same author` claim of a set is also clustered by
the real clustering stage (`consolidate.clusters.cluster_stm`, HDBSCAN over the embedder's
vectors) and merged: a conflicting pair both of whose claims end in one merged item is a
failure. Exit status 1 when a must-be-0 count is not 0.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from bench import driver
from bench.conflicts import load_pairs

DATA_DIR = Path(__file__).parent / "data"
# (file, role): the role says whether a set was tuned on (the merge rule was chosen on it)
DEFAULT_SETS = (("conflict_pairs.jsonl", "tuned"), ("conflict_pairs_heldout.jsonl", "held out"),
                ("conflict_pairs_blind2.jsonl", "blind"), ("conflict_pairs_blind3.jsonl", "blind"),
                ("conflict_pairs_blind4.jsonl", "blind"))
CASES = ("same author", "teammates", "two scopes", "two people")
NOW = datetime(2026, 11, 1, 12, tzinfo=timezone.utc)
MUST_BE_ZERO = ("conflicting merged", "teammates' conflicting merged", "people or scopes merged",
                "groups: conflicting blended")


def _scopes(case: str) -> tuple[Any, Any]:
    from pipelines.records import Scope

    def scope(kind: str, user: str) -> Any:
        return Scope(kind=kind, org_id="acme", project_id="p", user_id=user)  # type: ignore[arg-type]

    return {"same author": (scope("project", "u1"), scope("project", "u1")),
            "teammates": (scope("project", "u1"), scope("project", "u2")),
            "two scopes": (scope("project", "u1"), scope("user", "u1")),
            "two people": (scope("user", "u1"), scope("user", "u2"))}[case]


def pair_items(pair: dict[str, Any], key: str, case: str) -> tuple[Any, Any]:
    """The pair's two claims as short-term facts of `case`'s owners, `b` said a day after
    `a`; each with its own source (a merge must keep both)."""
    from pipelines.records import MemoryItem, Provenance

    items = []
    for side, scope, days in (("a", _scopes(case)[0], 2), ("b", _scopes(case)[1], 1)):
        at = (NOW - timedelta(days=days)).isoformat(timespec="microseconds")
        src = f"{key}-{side}"
        items.append(MemoryItem(
            id=src, tier="stm", type="fact", title=pair[side]["title"], content=pair[side]["content"],
            scope=scope, confidence=0.9, created_at=at, updated_at=at,
            provenance=Provenance(source_kind="chat", source_id=src, turn_refs=[src], created_at=at)))
    return items[0], items[1]


def _warehouse(path: Path, items: Sequence[Any], embedder: Any) -> Any:
    from pipelines.consolidate.embedding import embed_items
    from pipelines.warehouse import Warehouse

    wh = Warehouse(path)
    wh.put_items(list(items))
    embed_items(wh, embedder)
    return wh


def _merged_sets(wh: Any, new_ids: Sequence[str]) -> list[Any]:
    return [it for it in wh.get_items(list(new_ids)) if it.metadata.get("merged_from")]


def judge_pairs(pairs: Sequence[dict[str, Any]], workdir: Path, embedder: Any, settings: Any,
                merger: Any, policy: Any) -> tuple[list[dict[str, Any]], dict[str, int], float]:
    """Every pair through the merge stage in each case; per pair and case whether it merged,
    and for a merge whether both sources were kept and the later claim's wording leads."""
    from pipelines.consolidate.clusters import ClusterRef
    from pipelines.consolidate.merges import merge_clusters
    from pipelines.recall.conflicts import read_claim

    built = {(n, case): pair_items(p, f"{case.replace(' ', '')}-{n:04d}", case)
             for n, p in enumerate(pairs) for case in CASES}
    refs = [ClusterRef(a.scope.partition_key(), n, [a.id, b.id], "bench") for n, (a, b) in enumerate(built.values())]
    wh = _warehouse(workdir / "pairs.duckdb", [it for ab in built.values() for it in ab], embedder)
    try:
        started = time.process_time()
        report = merge_clusters(wh, refs, merger, policy, embedder, settings=settings, now=NOW)
        cpu = time.process_time() - started
        merged = {tuple(sorted(it.metadata["merged_from"])): it for it in _merged_sets(wh, report.new_ids)}
    finally:
        wh.close()
    rows = []
    for n, p in enumerate(pairs):
        a, b = built[(n, "same author")]
        row = {"n": n + 1, "kind": p["kind"], "conflict": p["conflict"], "a": p["a"], "b": p["b"],
               "first_person": read_claim(a).of_writer and read_claim(b).of_writer}
        for case in CASES:
            a, b = built[(n, case)]
            item = merged.get(tuple(sorted((a.id, b.id))))
            row[case] = None if item is None else {
                "content": item.content,
                "both_sources": {a.id, b.id} <= set(item.provenance.turn_refs),
                "later_leads": item.content.startswith(b.content.strip()),
            }
        rows.append(row)
    return rows, dict(sorted(report.skipped.items())), cpu


def judge_groups(pairs: Sequence[dict[str, Any]], workdir: Path, embedder: Any, settings: Any,
                 merger: Any, policy: Any) -> dict[str, Any]:
    """Every claim of the set, one author's, clustered by the real clustering stage and
    merged: which labelled pairs end in one merged item."""
    from pipelines.consolidate.clusters import cluster_stm
    from pipelines.consolidate.merges import merge_clusters

    built = [pair_items(p, f"group-{n:04d}", "same author") for n, p in enumerate(pairs)]
    wh = _warehouse(workdir / "groups.duckdb", [it for ab in built for it in ab], embedder)
    try:
        started = time.process_time()
        clusters = cluster_stm(wh, embedder.name, settings)
        report = merge_clusters(wh, clusters.clusters, merger, policy, embedder, settings=settings, now=NOW)
        cpu = time.process_time() - started
        merged = [set(it.metadata["merged_from"]) for it in _merged_sets(wh, report.new_ids)]
    finally:
        wh.close()
    together = [any({a.id, b.id} <= m for m in merged) for a, b in built]
    clustered = [any({a.id, b.id} <= set(c.item_ids) for c in clusters.clusters) for a, b in built]
    return {
        "items": 2 * len(built), "clusters": len(clusters.clusters), "sizes": sorted(clusters.sizes, reverse=True),
        "merged_items": len(merged), "merged_members": sum(len(m) for m in merged),
        "conflicting_clustered": sum(c for c, p in zip(clustered, pairs) if p["conflict"]),
        "conflicting_blended": [n + 1 for n, (t, p) in enumerate(zip(together, pairs)) if t and p["conflict"]],
        "restated_clustered": sum(c for c, p in zip(clustered, pairs) if p["kind"] == "restated"),
        "restated_merged": sum(t for t, p in zip(together, pairs) if p["kind"] == "restated"),
        "skipped": dict(sorted(report.skipped.items())), "cpu_s": round(cpu, 3),
    }


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    def merged(case: str, keep: Any) -> tuple[int, int]:
        chosen = [r for r in rows if keep(r)]
        return sum(r[case] is not None for r in chosen), len(chosen)

    restated = [r["same author"] for r in rows if r["kind"] == "restated" and r["same author"] is not None]
    people = [r for r in rows for case in ("two scopes", "two people") if r[case] is not None]
    people += [r for r in rows if r["first_person"] and r["teammates"] is not None]
    return {
        "conflicting merged": merged("same author", lambda r: r["conflict"]),
        "teammates' conflicting merged": merged("teammates", lambda r: r["conflict"]),
        "restated merged": merged("same author", lambda r: r["kind"] == "restated"),
        "restated: both sources kept": (sum(m["both_sources"] for m in restated), len(restated)),
        "restated: later wording leads": (sum(m["later_leads"] for m in restated), len(restated)),
        "other non-conflicting merged": merged("same author", lambda r: not r["conflict"] and r["kind"] != "restated"),
        "teammates' restated merged": merged("teammates", lambda r: r["kind"] == "restated"),
        "people or scopes merged": (len(people), 2 * len(rows) + sum(r["first_person"] for r in rows)),
        "conflicting_merged_pairs": [r["n"] for r in rows if r["conflict"] and r["same author"] is not None],
    }


def run(sets: Sequence[tuple[Path, str]], workdir: Path, embedder_name: str, groups: bool, say: driver.Say
        ) -> dict[str, Any]:
    from pipelines.embedders import make_embedder
    from pipelines.merging import ExtractiveMerger
    from pipelines.policy import Policy
    from pipelines.settings import Settings

    settings = Settings(embedder=embedder_name)
    embedder, policy = make_embedder(settings), Policy(settings)
    merger = ExtractiveMerger(settings.max_content_chars)
    out: dict[str, Any] = {"benchmark": "merge", "sets": [], "config": {
        "embedder": embedder_name, "merger": merger.name, "groups": groups, "cases": list(CASES)},
        "machine": {"python": platform.python_version(), "platform": platform.platform()}}
    for n, (path, role) in enumerate(sets):
        say(f"merging the pairs of {path} ({role}) ...")
        pairs = load_pairs(path)
        folder = workdir / f"set{n}"
        folder.mkdir(parents=True, exist_ok=True)
        rows, skipped, cpu = judge_pairs(pairs, folder, embedder, settings, merger, policy)
        entry = {"path": str(path), "role": role, "pairs": len(pairs),
                 "conflicting": sum(p["conflict"] for p in pairs), "summary": summarise(rows),
                 "skipped": skipped, "cpu_s": round(cpu, 3), "per_pair": rows}
        if groups:
            entry["groups"] = judge_groups(pairs, folder, embedder, settings, merger, policy)
        out["sets"].append(entry)
    out["failures"] = failures(out)
    return out


def failures(out: dict[str, Any]) -> list[str]:
    """What breaks the promise: a must-be-0 count that is not 0, per set."""
    bad = []
    for s in out["sets"]:
        name = _name(s["path"])
        for key in MUST_BE_ZERO[:3]:
            if s["summary"][key][0]:
                bad.append(f"{name}: {key} {s['summary'][key][0]}")
        if s.get("groups", {}).get("conflicting_blended"):
            bad.append(f"{name}: groups: conflicting blended {len(s['groups']['conflicting_blended'])}")
    return bad


def _cell(v: tuple[int, int]) -> str:
    return f"{v[0]}/{v[1]}"


def _name(path: str) -> str:
    return Path(path).stem.replace("conflict_pairs", "pairs")


def print_table(result: dict[str, Any]) -> None:
    c = driver.console()
    keys = [k for k in result["sets"][0]["summary"] if not k.endswith("_pairs")] if result["sets"] else []
    cols = ["set", "role", *keys]
    rows = [[_name(s["path"]), s["role"], *(_cell(s["summary"][k]) for k in keys)] for s in result["sets"]]
    c.print(driver.table(f"merge decisions on labelled pairs, 2-member clusters (merger {result['config']['merger']}; "
                         "must be 0: conflicting, teammates' conflicting, people or scopes)", cols, rows,
                         left=("role",)))
    if result["config"]["groups"]:
        gcols = ["set", "items", "clusters", "merged items", "members merged", "conflicting clustered",
                 "conflicting blended (must be 0)", "restated clustered", "restated merged"]
        grows = [[_name(s["path"]), g["items"], g["clusters"], g["merged_items"], g["merged_members"],
                  g["conflicting_clustered"], len(g["conflicting_blended"]), g["restated_clustered"],
                  g["restated_merged"]] for s in result["sets"] if (g := s.get("groups"))]
        c.print(driver.table(f"whole sets clustered by the clustering stage ({result['config']['embedder']} vectors) "
                             "and merged", gcols, grows))
    wrong = [(_name(s["path"]), r) for s in result["sets"] for r in s["per_pair"]
             if r["conflict"] and r["same author"] is not None]
    if wrong:
        c.print(driver.table("conflicting pairs merged (same author)", ["set", "#", "kind", "a", "b"],
                             [[name, str(r["n"]), r["kind"], r["a"]["content"][:60], r["b"]["content"][:60]]
                              for name, r in wrong], left=("kind", "a", "b")))
    for line in result["failures"]:
        c.print(f"FAIL {line}")


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    p = driver.parser("merge", __doc__, quick="the tuned set only")
    p.add_argument("--data", type=Path, action="append", default=None,
                   help="a labelled pairs file (repeatable; default the conflict benchmark's five sets)")
    p.add_argument("--embedder", choices=("hash", "minilm"), default="hash",
                   help="vectors for the group clustering and the merged items (default hash: lexical, fast)")
    p.add_argument("--groups", action=argparse.BooleanOptionalAction, default=True,
                   help="also cluster each whole set with the clustering stage and merge (default on)")
    return p.parse_args(argv)


def measure(args: argparse.Namespace, workdir: Path, say: driver.Say) -> dict[str, Any]:
    if args.data:
        sets = [(path, "given") for path in args.data]
    else:
        sets = [(DATA_DIR / name, role) for name, role in DEFAULT_SETS[: 1 if args.quick else None]]
    for path, _ in sets:
        if not path.is_file():
            raise driver.BenchDataError(f"pairs file not found: {path}")
    return run(sets, workdir, args.embedder, args.groups, say)


def main(argv: Sequence[str] | None = None) -> int:
    return driver.run(_parse(argv), measure, print_table, passed=lambda out: not out["failures"])


if __name__ == "__main__":
    sys.exit(main())
