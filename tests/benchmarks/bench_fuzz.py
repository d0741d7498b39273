"""Long schema fuzzing of every HTTP endpoint (schemathesis), thousands of cases.

    python -m tests.benchmarks.bench_fuzz --examples 400 --json out.json
    python -m tests.benchmarks.bench_fuzz --transport http --examples 200   # real uvicorn process
    python -m tests.benchmarks.bench_fuzz --quick                          # 40 per operation and mode

Cases are generated from the service's own `/schema/openapi.json`, `--examples` per
operation and generation mode (schema-valid and schema-invalid), with a random seed
(`--seed` to replay). `--transport asgi` (default) drives `create_app(...)` in-process
through the full ASGI stack (the count of requests that reached the generic 500 handler is
reported too); `--transport http` fuzzes a real service process on 127.0.0.1. The store
holds a snapshot of `--items` synthetic items, some owned by the default identity so
generated callers get real hits. Two passes: the schema as published, then /v1/tools again
with each memory.* action's real argument schema (the published one says `args: object`),
so the generator reaches every action's logic rather than only its 400. Checks: no 5xx, documented status codes, content types,
headers and bodies, schema-invalid input refused (see `tests.reliability.helpers.fuzz_checks`).
Exit status 1 when anything failed; every distinct failure is listed with its input.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pipelines.embedders import HashEmbedder
from pipelines.records import Identity
from pipelines.settings import Settings
from tests.benchmarks.metrics import machine_info, write_json
from tests.reliability.helpers import ServiceProcess, fuzz_app, fuzz_url, publish, synthetic_items


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="loci bench fuzz", description=__doc__.split("\n\n")[0])
    p.add_argument("--examples", type=int, default=None,
                   help="cases per operation and mode (default 400; --quick 40)")
    p.add_argument("--transport", choices=["asgi", "http"], default="asgi")
    p.add_argument("--items", type=int, default=200, help="snapshot items to fuzz against")
    p.add_argument("--seed", type=int, default=None, help="hypothesis seed (default: random, reported)")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--workdir", type=Path, default=None, help="keep the data here (default: a temp dir)")
    p.add_argument("--json", dest="json_out", type=Path, default=None, help="write the results as JSON")
    args = p.parse_args(argv)
    args.examples = args.examples if args.examples is not None else (40 if args.quick else 400)
    if args.examples < 1 or args.items < 0:
        p.error("--examples must be >= 1 and --items >= 0")
    if args.seed is None:
        args.seed = random.randrange(2**32)
    return args


def run_pass(args: argparse.Namespace, settings: Settings, embedder: Any, *, refine_tools: bool) -> dict[str, Any]:
    """One fuzzing pass over every operation (or, refined, over /v1/tools per action)."""
    from online.app import create_app

    only = ["POST /v1/tools"] if refine_tools else None
    started = time.monotonic()
    internal_errors = None
    if args.transport == "asgi":
        app = create_app(settings, embedder=embedder, check_interval_ms=0)
        report = fuzz_app(app, max_examples=args.examples, derandomize=False, seed=args.seed,
                          refine_tools=refine_tools, only=only)
        internal_errors = app.state.internal_errors
    else:
        with ServiceProcess(settings) as service:
            report = fuzz_url(service.url, max_examples=args.examples, seed=args.seed,
                              refine_tools=refine_tools, only=only)
            if service.proc is not None and service.proc.poll() is not None:
                report.errors.append(f"the service died: {service.log_tail()}")
    elapsed = time.monotonic() - started
    by_op: dict[str, dict[str, Any]] = {}
    for op in report.operations:
        statuses = {key.rsplit(" ", 1)[1]: n for key, n in report.statuses.items() if key.rsplit(" ", 1)[0] == op}
        by_op[op] = {"positive": report.cases[f"{op} positive"], "negative": report.cases[f"{op} negative"],
                     "statuses": dict(sorted(statuses.items())),
                     "failures": sum(n for k, n in report.failure_counts.items() if k[0] == op)}
    server_errors = sum(n for k, n in report.statuses.items() if k.rsplit(" ", 1)[1].startswith("5"))
    return {
        "duration_s": round(elapsed, 1),
        "cases": report.total_cases,
        "operations": by_op,
        "server_errors_5xx": server_errors,
        "internal_errors": internal_errors,
        "failures": report.failures,
        "failure_counts": {" | ".join(map(str, k)): n for k, n in report.failure_counts.items()},
        "generation_errors": report.errors,
        "ok": not report.failures and not report.errors and server_errors == 0 and not internal_errors,
    }


def run(args: argparse.Namespace, workdir: Path, say) -> dict[str, Any]:
    settings = Settings(embedder="hash", data_dir=str(workdir / "data"), max_body_bytes=200_000)
    embedder = HashEmbedder(settings.embedder_dim)
    owners = [Identity(), Identity(user_id="ann", project_id="atlas"), Identity(user_id="bob", org_id="globex")]
    publish(settings, synthetic_items(args.items, random.Random(args.seed), owners), embedder)
    passes = {}
    for name, refine in (("schema", False), ("tool-args", True)):
        say(f"fuzzing ({name}) over {args.transport}: {args.examples} cases per operation and mode, "
            f"seed {args.seed} ...")
        passes[name] = run_pass(args, settings, embedder, refine_tools=refine)
    cases = sum(p["cases"] for p in passes.values())
    elapsed = sum(p["duration_s"] for p in passes.values())
    return {
        "bench": "fuzz",
        "argv": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "machine": machine_info(),
        "cases": cases,
        "duration_s": round(elapsed, 1),
        "cases_per_s": round(cases / elapsed, 1) if elapsed else None,
        "passes": passes,
        "ok": all(p["ok"] for p in passes.values()),
    }


def _print(out: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=max(Console().width, 150))
    for name, res in out["passes"].items():
        table = Table(title=f"Schema fuzzing, pass {name!r} ({out['argv']['transport']}, seed {out['argv']['seed']}): "
                            f"{res['cases']} cases in {res['duration_s']} s")
        for col in ("operation", "positive", "negative", "statuses", "failures"):
            table.add_column(col)
        for op, row in res["operations"].items():
            table.add_row(op, str(row["positive"]), str(row["negative"]),
                          " ".join(f"{s}:{n}" for s, n in row["statuses"].items()), str(row["failures"]))
        console.print(table)
        console.print(f"5xx answers: {res['server_errors_5xx']}; generic-500 handler hits: {res['internal_errors']}")
        for f in res["failures"]:
            console.print(f"FAILURE {f['operation']} [{f['mode']}] {f['check']} -> {f['status']}\n{f['message']}\n")
        for e in res["generation_errors"]:
            console.print(f"generation error: {e}")
    console.print(f"{out['cases']} cases, {out['cases_per_s']} per s: {'OK' if out['ok'] else 'FAILED'}")


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(argv)

    def say(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    if args.workdir is not None:
        args.workdir.mkdir(parents=True, exist_ok=True)
        out = run(args, args.workdir.resolve(), say)
    else:
        with tempfile.TemporaryDirectory(prefix="loci-fuzz-") as tmp:
            out = run(args, Path(tmp), say)
    write_json(args.json_out, out)
    _print(out)
    return 0 if out["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
