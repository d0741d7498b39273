"""The shared benchmark driver and `loci bench`: where data comes from, what a missing data
set or benchmark says, and what a run writes and returns."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bench import driver
from loci import cli


def test_data_comes_from_the_argument_else_the_env_folder_else_bench_data(tmp_path, monkeypatch):
    given = tmp_path / "mine.json"
    given.write_text("[]", encoding="utf-8")
    assert driver.data_path(given, driver.LOCOMO_FILE, "LoCoMo file") == given

    monkeypatch.setenv(driver.DATA_ENV, str(tmp_path))
    (tmp_path / driver.LOCOMO_FILE).write_text("[]", encoding="utf-8")
    assert driver.data_path(None, driver.LOCOMO_FILE, "LoCoMo file") == tmp_path / driver.LOCOMO_FILE

    monkeypatch.delenv(driver.DATA_ENV)
    monkeypatch.chdir(tmp_path)
    assert driver.data_dir() == Path("bench-data")
    with pytest.raises(driver.BenchDataError, match=f"bench-data/{driver.LOCOMO_FILE}.*{driver.DATA_ENV}"):
        driver.data_path(None, driver.LOCOMO_FILE, "LoCoMo file")


def test_a_benchmark_without_its_data_says_where_it_looked_and_exits_2(tmp_path, monkeypatch):
    monkeypatch.setenv(driver.DATA_ENV, str(tmp_path / "nowhere"))
    result = CliRunner().invoke(cli.app, ["bench", "locomo", "--quick"])
    assert result.exit_code == 2
    assert f"{tmp_path / 'nowhere' / driver.LOCOMO_FILE}" in result.output
    assert driver.DATA_ENV in result.output

    result = CliRunner().invoke(cli.app, ["bench", "all", "--quick", "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and "benchmark data not found" in " ".join(result.output.split())
    assert not (tmp_path / "out").exists()  # nothing ran


def test_a_benchmark_missing_from_the_build_is_named(monkeypatch):
    monkeypatch.setitem(cli.BENCHMARKS, "governed", ("bench.no_such_benchmark", "not there"))
    result = CliRunner().invoke(cli.app, ["bench", "governed"])
    assert result.exit_code == 1
    said = " ".join(result.output.split())  # rich wraps long lines
    assert "'governed' benchmark is not in this build (bench.no_such_benchmark is missing)" in said


def _measure(args, workdir: Path, say) -> dict:
    (workdir / "scratch.txt").write_text("x", encoding="utf-8")
    return {"workdir": str(workdir), "failures": ["one"] if args.quick else []}


def test_run_measures_in_a_folder_writes_json_prints_and_returns_the_verdict(tmp_path, capsys):
    shown = []
    p = driver.parser("demo", "A demo benchmark.\n\nMore text.", quick="fail on purpose")
    out = tmp_path / "res" / "demo.json"
    keep = tmp_path / "keep"
    args = p.parse_args(["--json", str(out), "--workdir", str(keep)])
    assert driver.run(args, _measure, shown.append, passed=lambda r: not r["failures"]) == 0
    assert json.loads(out.read_text())["workdir"] == str(keep.resolve()) and (keep / "scratch.txt").exists()
    assert shown and f"wrote {out}" in capsys.readouterr().out

    args = p.parse_args(["--quick"])
    assert driver.run(args, _measure, shown.append, passed=lambda r: not r["failures"]) == 1
    assert not Path(shown[-1]["workdir"]).exists()  # the temporary folder is gone


def test_table_cells_format_missing_and_float_values():
    assert (driver.fmt(None), driver.fmt(1.234), driver.fmt(0.5, 3), driver.fmt(7)) == ("-", "1.2", "0.500", "7")
    table = driver.table("t", ("name", "value", "note"), [("a", 1.25, "x")], left=("note",))
    assert [c.justify for c in table.columns] == ["left", "right", "left"]
