"""The one driver every benchmark runs through: its common command-line options, where its
data comes from, a working folder, the JSON result and the printed tables.

A benchmark module builds its parser with `parser(...)`, measures in a function
`measure(args, workdir, say) -> dict` and prints with `show(out)` (tables via `table`), and
its `main(argv)` is `run(parser.parse_args(argv), measure, show)`.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from bench.metrics import write_json

DATA_ENV = "LOCI_BENCH_DATA"
DEFAULT_DATA_DIR = Path("bench-data")  # relative to where `loci bench` runs
LOCOMO_FILE = "locomo_dev.json"
POLICY_DIR = "policy"

Say = Callable[[str], None]
Measure = Callable[[argparse.Namespace, Path, Say], dict[str, Any]]


class BenchDataError(Exception):
    """A data file or folder a benchmark needs is missing or not what it should be."""


def say(msg: str) -> None:
    """Progress lines: on stderr, so stdout carries only the result tables."""
    print(msg, file=sys.stderr, flush=True)


def parser(name: str, doc: str | None, *, quick: str | None = "smoke run",
           workdir: bool = True) -> argparse.ArgumentParser:
    """`loci bench NAME`'s parser with the options every benchmark has: `--json OUT`,
    `--workdir DIR` (keep the data; default a temporary folder) and `--quick HELP`."""
    p = argparse.ArgumentParser(prog=f"loci bench {name}", description=(doc or "").split("\n\n")[0])
    p.add_argument("--json", dest="json_out", type=Path, default=None, help="write the results as JSON")
    if workdir:
        p.add_argument("--workdir", type=Path, default=None, help="keep the data here (default: a temporary dir)")
    if quick is not None:
        p.add_argument("--quick", action="store_true", help=quick)
    return p


def add_vector_options(p: argparse.ArgumentParser) -> None:
    """The stored-vector options of benchmarks that consolidate with MiniLM (`--precision`,
    `--composed`, `--pooled`); `vector_settings` turns them into `Settings` fields."""
    from pipelines.embedders import MINILM_PRECISIONS

    p.add_argument("--precision", default=None, choices=MINILM_PRECISIONS,
                   help="MiniLM precision of the stored vectors (default: the settings' default)")
    p.add_argument("--composed", action="store_true", default=None,
                   help="message vectors composed from bare turn vectors (setting message_context_composed)")
    p.add_argument("--pooled", action=argparse.BooleanOptionalAction, default=None,
                   help="message vectors from pooled windows (setting message_context_pooled, on by "
                   "default); --no-pooled: message + context text vectors")


def vector_settings(precision: str | None = None, composed: bool | None = None,
                    pooled: bool | None = None) -> dict[str, Any]:
    """`Settings` fields for the options `add_vector_options` adds; None keeps the default."""
    from pipelines.settings import Settings

    default = Settings()
    return {"minilm_precision": precision or default.minilm_precision,
            "message_context_composed": default.message_context_composed if composed is None else composed,
            "message_context_pooled": default.message_context_pooled if pooled is None else pooled}


def data_dir() -> Path:
    """The folder of benchmark data sets: `$LOCI_BENCH_DATA`, else `./bench-data`."""
    return Path(os.environ.get(DATA_ENV) or DEFAULT_DATA_DIR)


def data_path(given: Path | None, name: str, what: str) -> Path:
    """`given` (a `--data` argument) if set, else `name` in `data_dir()`; it must exist."""
    path = given if given is not None else data_dir() / name
    if not path.exists():
        hint = "" if given is not None else (f" (the default: set {DATA_ENV} to the folder holding "
                                             f"{name}, or pass --data)")
        raise BenchDataError(f"{what} not found: {path}{hint}")
    return path


def locomo_data(given: Path | None) -> tuple[Path, list[Any]]:
    """The LoCoMo-format file (`--data`, else `locomo_dev.json` in `data_dir()`) and its
    parsed conversations."""
    from bench.metrics import MetricError, load_locomo

    path = data_path(given, LOCOMO_FILE, "LoCoMo file")
    if not path.is_file():
        raise BenchDataError(f"--data {path} is not a file")
    try:
        return path, load_locomo(path)
    except MetricError as exc:
        raise BenchDataError(str(exc)) from exc


def run(args: argparse.Namespace, measure: Measure, show: Callable[[dict[str, Any]], None], *,
        passed: Callable[[dict[str, Any]], bool] = lambda out: True,
        errors: tuple[type[BaseException], ...] = ()) -> int:
    """Measure in `args.workdir` (or a temporary folder), write `--json`, print the tables.
    Exit status: 2 for missing data, 1 for one of `errors` or a result `passed` rejects."""
    name = measure.__module__.rsplit(".", 1)[-1]
    try:
        workdir = getattr(args, "workdir", None)
        if workdir is not None:
            workdir.mkdir(parents=True, exist_ok=True)
            out = measure(args, workdir.resolve(), say)
        else:
            with tempfile.TemporaryDirectory(prefix=f"loci-{name}-") as tmp:
                out = measure(args, Path(tmp), say)
    except BenchDataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except errors as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    write_json(args.json_out, out)
    show(out)
    if args.json_out:
        print(f"wrote {args.json_out}")
    return 0 if passed(out) else 1


def argv_record(args: argparse.Namespace) -> dict[str, Any]:
    """The options a result was measured with, JSON-ready."""
    return {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}


# -- tables -------------------------------------------------------------------------------------


def console():
    """A rich Console wide enough for the result tables even when piped."""
    from rich.console import Console

    c = Console()
    return c if c.is_terminal and c.width >= 150 else Console(width=160)


def fmt(v: Any, digits: int = 1) -> str:
    """A table cell: '-' for missing, floats to `digits` places."""
    if v is None:
        return "-"
    return f"{v:.{digits}f}" if isinstance(v, float) else str(v)


def table(title: str, columns: Sequence[str], rows: Iterable[Sequence[Any]], *,
          left: Iterable[str] = ()) -> Any:
    """A rich Table: the first column and those named in `left` left-aligned, numbers right."""
    from rich.table import Table

    t = Table(title=title)
    lefts = {columns[0], *left} if columns else set()
    for col in columns:
        t.add_column(col, justify="left" if col in lefts else "right")
    for row in rows:
        t.add_row(*(cell if isinstance(cell, str) else fmt(cell) for cell in row))
    return t
