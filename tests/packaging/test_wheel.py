"""An installed Loci (a wheel, not this checkout) carries what it reads at run time.

The warehouse cannot be opened writable without its migrations, so a wheel without
`sql/migrations/*.sql` installs fine and then fails at the first consolidation.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def unpacked_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # Build from a copy: a checkout's stale build/ folder would otherwise leak into the wheel.
    source = out / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".venv*", "build", "dist", "*.egg-info", "data", ".dagster_home", "bench-*", "__pycache__",
        ".pytest_cache", ".hypothesis", "tests"))
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--no-build-isolation",
         "--disable-pip-version-check", "-q", "-w", str(out)],
        capture_output=True, text=True, timeout=300,
    )
    assert build.returncode == 0, build.stderr
    (wheel,) = out.glob("loci-*.whl")
    site = out / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    return site


def test_the_wheel_carries_every_migration_unchanged(unpacked_wheel: Path) -> None:
    shipped = sorted(p.name for p in (unpacked_wheel / "sql" / "migrations").glob("*.sql"))
    source = sorted(p.name for p in (ROOT / "sql" / "migrations").glob("*.sql"))
    assert shipped == source and shipped
    for name in source:
        assert (unpacked_wheel / "sql" / "migrations" / name).read_bytes() == \
            (ROOT / "sql" / "migrations" / name).read_bytes()


def test_a_warehouse_opens_from_the_installed_package(unpacked_wheel: Path, tmp_path: Path) -> None:
    # Run from an unrelated folder with only the unpacked wheel first on the path, so the
    # checkout's sql/ cannot be what makes it work.
    script = (
        "import pipelines.migrations as m, pipelines.warehouse as w, sys\n"
        "assert m.__file__.startswith(sys.argv[1]), m.__file__\n"
        "wh = w.Warehouse(sys.argv[2])\n"
        "print(m.current_version(wh._con), m.latest_version(), len(wh.applied_migrations))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(unpacked_wheel), str(tmp_path / "warehouse.duckdb")],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env={"PYTHONPATH": str(unpacked_wheel), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    current, latest, applied = done.stdout.split()
    assert current == latest == applied and int(latest) >= 3  # every migration applied from the wheel


def test_the_wheel_carries_the_memory_browser_templates(unpacked_wheel: Path) -> None:
    source = sorted(p.name for p in (ROOT / "online" / "templates" / "ui").glob("*.html"))
    shipped = sorted(p.name for p in (unpacked_wheel / "online" / "templates" / "ui").glob("*.html"))
    assert shipped == source and "card.html" in shipped
