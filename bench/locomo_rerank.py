"""Fit and cross-validate the weights of the turn re-ranker (`pipelines/recall/rerank.py`) on
LoCoMo.

Every question is ranked once by the product with the re-ranker off (`rerank_pool` = 0);
the first `--pool` raw turns give the model's inputs (`rerank.turn_signals`, the product's
code) and the labels (a turn is evidence of the question). A logistic regression (L2,
`--C`, inputs standardised) is fitted on questions of categories 1-4 that do not ask when,
and each fitted model re-orders the turns with the product's `rerank_turns`. Rows:

- `first_ranking`: the re-ranker off;
- `shipped`: the product's `WEIGHTS`;
- `fit_on_tune`: fitted on the `--tune` conversations, scored everywhere (the held-out
  columns are what the fit did not see);
- `leave_one_out`: one model per conversation, fitted on the others and scored on it, so
  every number is out of sample;
- `shipped_no_spread`, `leave_one_out_no_spread`: the same without the session spread of
  questions that ask across sessions (`--session-penalty` 0; default the product's).

Recall is turn recall@10 as in `locomo.py`. The weights fitted on the tune conversations are
printed (raw-input scale, the order of `rerank.WEIGHTS`) and written to the JSON.
"""

from __future__ import annotations

import argparse
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench import driver
from bench.locomo import DEV_TUNE, identity_for
from bench.metrics import CATEGORY_NAMES, RecallAccumulator, machine_info, normalise_dia_id

K = 10


@dataclass
class Ranked:
    """One question's first ranking: the candidates, the search, the re-rankable turns and
    their inputs and labels."""

    conv: str
    category: str
    question: str
    evidence: list[str]
    query: Any
    signals: np.ndarray
    labels: np.ndarray
    fit: bool  # used for fitting (categories 1-4, not a question that asks when)


def _refs(cands: Sequence[Any]) -> list[list[str]]:
    return [list(c.item.provenance.turn_refs) for c in cands]


def collect(service, view, conversations, pool: int) -> list[Ranked]:
    from pipelines.recall import RecallOptions
    from pipelines.recall.rerank import asks_for_several, asks_when, rerankable, turn_signals

    opts = RecallOptions(rerank_pool=0, qstar=False)
    out = []
    for conv in conversations:
        ident = identity_for(conv)
        for q in conv.questions:
            if not q.evidence:
                continue
            rq = service.engine.ranking(q.question, ident, view.corpora, opts)
            turns = rerankable(rq.ranked, pool)
            # the product re-ranks on the question's subject (without the time words of one
            # about our own conversation), so the inputs and the 'when' gate read it too
            signals = np.asarray(turn_signals(rq.search, turns, asks_for_several(rq.subject)), dtype=np.float64)
            wanted = set(q.evidence)
            labels = np.asarray([any(normalise_dia_id(r) in wanted for r in c.item.provenance.turn_refs)
                                 for _, c in turns], dtype=np.int64)
            out.append(Ranked(conv.sample_id, str(q.category), q.question, list(q.evidence), rq,
                              signals.reshape(len(turns), -1), labels,
                              str(q.category) != "5" and not asks_when(rq.subject)))
    return out


def fit(rows: Sequence[Ranked], c: float) -> list[float]:
    """Logistic regression weights on the raw-input scale (the intercept does not order)."""
    from sklearn.linear_model import LogisticRegression

    x = np.vstack([r.signals for r in rows if r.fit and len(r.labels)])
    y = np.concatenate([r.labels for r in rows if r.fit and len(r.labels)])
    mu, sd = x.mean(axis=0), x.std(axis=0) + 1e-9
    model = LogisticRegression(C=c, max_iter=5000).fit((x - mu) / sd, y)
    return [round(float(w), 3) for w in model.coef_[0] / sd]


def score(rows: Sequence[Ranked], weights_for, pool: int, tune: Collection[str],
          session_penalty: float) -> dict[str, Any]:
    """Turn recall@10 per split and category; `weights_for(conv)` -> weights or None (off)."""
    from pipelines.recall.rerank import rerank_turns

    accs = {"tune": RecallAccumulator(ks=(K,)), "held_out": RecallAccumulator(ks=(K,))}
    for r in rows:
        weights = weights_for(r.conv)
        ranked = r.query.ranked
        if weights is not None:
            ranked = rerank_turns(r.query.search, list(ranked), r.query.subject, pool, weights,
                                  session_penalty)
        accs["tune" if r.conv in tune else "held_out"].add(r.category, r.evidence, _refs(ranked))
    merged = RecallAccumulator(ks=(K,))
    for acc in accs.values():
        merged.merge(acc)
    accs["all"] = merged
    return {name: acc.summary()["turn_recall"][str(K)] for name, acc in accs.items()}


def run(args: argparse.Namespace, workdir: Path, say: driver.Say) -> dict[str, Any]:
    from bench.locomo import _embed_questions, _settings, _start_service
    from pipelines.recall.rerank import SESSION_PENALTY, WEIGHTS

    machine_before = machine_info()
    _, conversations = driver.locomo_data(args.data)
    settings = _settings(workdir, "extractive", args.precision)
    if not (settings.snapshots_path / "CURRENT").exists():
        raise driver.BenchDataError(f"no published snapshot under {workdir}: run `loci bench locomo "
                                    f"--workdir {workdir}` first")
    embedder, service, view, _, _ = _start_service(settings)
    _embed_questions(embedder, conversations, service, view)
    rows = collect(service, view, conversations, args.pool)
    penalty = SESSION_PENALTY if args.session_penalty is None else args.session_penalty
    tune = set(args.tune)
    convs = sorted({r.conv for r in rows})
    on_tune = fit([r for r in rows if r.conv in tune], args.C)
    folds = {conv: fit([r for r in rows if r.conv != conv], args.C) for conv in convs}
    result = {
        "benchmark": "locomo_rerank",
        "config": {"pool": args.pool, "C": args.C, "k": K, "session_penalty": penalty, "tune": sorted(tune),
                   "held_out": sorted(set(convs) - tune)},
        "weights": {"shipped": list(WEIGHTS), "fit_on_tune": on_tune, "leave_one_out": folds},
        "rows": {
            "first_ranking": score(rows, lambda conv: None, args.pool, tune, penalty),
            "shipped_no_spread": score(rows, lambda conv: WEIGHTS, args.pool, tune, 0.0),
            "shipped": score(rows, lambda conv: WEIGHTS, args.pool, tune, penalty),
            "fit_on_tune": score(rows, lambda conv: on_tune, args.pool, tune, penalty),
            "leave_one_out_no_spread": score(rows, lambda conv: folds[conv], args.pool, tune, 0.0),
            "leave_one_out": score(rows, lambda conv: folds[conv], args.pool, tune, penalty),
        },
        "machine": {**machine_before, "loadavg_after": machine_info()["loadavg_1_5_15"]},
    }
    service.close()
    return result


def _print(result: dict[str, Any]) -> None:
    cats = ("1", "2", "3", "4")
    head = ["row", "all", "tune", "held out", *(f"c{c}" for c in cats), "h1", "h2", "h3", "h4"]
    body = []
    for name, block in result["rows"].items():
        body.append([name, *(f"{block[s]['overall_1_4']:.3f}" for s in ("all", "tune", "held_out")),
                     *(f"{block['all'][c]:.3f}" for c in cats),
                     *(f"{block['held_out'][c]:.3f}" for c in cats)])
    console = driver.console()
    console.print(driver.table("Turn re-ranker: turn recall@10, categories 1-4 "
                                      f"({', '.join(CATEGORY_NAMES[c] for c in cats)})", head, body))
    console.print(f"weights fitted on {', '.join(result['config']['tune'])}: {result['weights']['fit_on_tune']}")
    console.print(f"shipped weights: {result['weights']['shipped']}")


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    p = driver.parser("locomo_rerank", __doc__, quick=None)
    p.add_argument("--data", type=Path, default=None, help="LoCoMo-format JSON")
    p.add_argument("--tune", type=lambda s: [x.strip() for x in s.split(",") if x.strip()],
                   default=list(DEV_TUNE), help="conversations to fit on (default %(default)s)")
    p.add_argument("--pool", type=int, default=60, help="raw turns re-ordered (default %(default)s)")
    p.add_argument("--C", type=float, default=0.1, help="inverse L2 strength (default %(default)s)")
    p.add_argument("--session-penalty", type=float, default=None,
                   help="session spread of questions that ask across sessions (default: the product's)")
    p.add_argument("--precision", default=None, help="MiniLM precision of the stored vectors")
    args = p.parse_args(argv)
    if args.workdir is None:
        p.error("--workdir is required: the folder of a `loci bench locomo` run (its snapshot is used)")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(argv)
    return driver.run(args, run, _print)


if __name__ == "__main__":
    raise SystemExit(main())
