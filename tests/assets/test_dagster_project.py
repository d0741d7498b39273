"""The Dagster conventions: `dg` loads the definitions through the project's pyproject
`[tool.dg]` configuration, and the `.env` that `loci dagster-home` / `loci ui` write makes
`dagster dev` and `dg dev` open the project's own instance (`.dagster_home/`) instead of
an empty temporary one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from assets.checks import CONSOLIDATION_CHECKS
from assets.graph import CONSOLIDATION_ASSETS
from assets.run import prepare_dagster_home
from tests.assets.support import make_settings

pytestmark = pytest.mark.slow  # one of the longest files: scheduled first (tests/conftest.py)

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def child_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "DAGSTER_HOME" and not k.startswith("LOCI_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env["PATH"] = os.pathsep.join((str(BIN), env.get("PATH", "")))
    return {**env, **extra}


def test_dg_lists_the_definitions_through_the_project_config(tmp_path: Path) -> None:
    home = prepare_dagster_home(make_settings(tmp_path))  # a home of its own: no telemetry notice, no .env
    done = subprocess.run([str(BIN / "dg"), "list", "defs", "--json"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env=child_env(DAGSTER_HOME=str(home), LOCI_EMBEDDER="hash"))
    assert done.returncode == 0, done.stderr[-3000:]
    listed = json.loads(done.stdout)
    assert {a["asset_key"] for a in listed["assets"]} == {a.key.to_user_string() for a in CONSOLIDATION_ASSETS}
    declared = [*CONSOLIDATION_CHECKS, *CONSOLIDATION_ASSETS]  # an asset may carry its own check
    assert {c["name"] for c in listed["asset_checks"]} == {spec.name for d in declared for spec in d.check_specs}
    assert "consolidate_job" in {j["name"] for j in listed["jobs"]}


def test_dotenv_points_dagster_dev_at_the_project_instance(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    project = tmp_path / "checkout"
    project.mkdir()
    (project / ".env").write_text("OTHER_SETTING=kept\n")
    home = prepare_dagster_home(settings, dotenv_dir=project)
    assert (project / ".env").read_text().splitlines() == ["OTHER_SETTING=kept", f"DAGSTER_HOME={home}"]
    # What `dagster dev` (and `dg dev`, from the project root) runs to choose its instance.
    probe = ("import logging\nfrom dagster._cli.utils import get_possibly_temporary_instance_for_cli as get\n"
             "with get('dagster dev', logger=logging.getLogger('x')) as instance:\n"
             "    print(instance.root_directory)\n")
    done = subprocess.run([sys.executable, "-c", probe], cwd=project, capture_output=True, text=True, timeout=120,
                          env=child_env())
    assert done.returncode == 0, done.stderr[-3000:]
    assert Path(done.stdout.strip().splitlines()[-1]) == home
    assert (home / "dagster.yaml").exists()  # the shipped instance config: the warehouse pool limit
