"""Promises a demanding new user checks on the surfaces around the chat loop: the command
line, the OpenAI-compatible and Ollama proxy, the MCP tools and the memory browser, and a
few days of writing, correcting, retracting and consolidating.

- The CLI: a wrong argument is a one-line `error:` and exit code 2, never a traceback, and an
  empty identity part is refused as in every API body.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from loci.cli import app as cli_app


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)  # no loci.toml of the working tree
    monkeypatch.setenv("LOCI_EMBEDDER", "hash")
    monkeypatch.setenv("LOCI_MERGER", "extractive")
    return tmp_path / "data"


@pytest.mark.parametrize(("args", "message"), [
    (["--mode", "bogus"], "mode must be one of"),
    (["--k", "0"], "k must be a positive integer"),
    (["--user", ""], "identity"),
    (["--org", "  "], "identity"),
])
def test_loci_search_refuses_a_wrong_argument_with_a_message(data_dir: Path, args: list[str], message: str) -> None:
    result = CliRunner().invoke(cli_app, ["search", "tile cache", *args, "--data-dir", str(data_dir)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == 2, result.output
    assert "error:" in result.output and message in result.output
    assert "Traceback" not in result.output
