#!/usr/bin/env python3
"""Set up Loci's own virtual environment, then run one job in it.

    python3 bootstrap.py demo     # sample chats in, consolidated memory + snapshot out, a recall
    python3 bootstrap.py test     # lint (ruff check) then the test suite (what CI runs); as root on
                                  # Debian it first installs Chromium and PostgreSQL where missing
    python3 bootstrap.py bench …  # benchmarks (see README)
    python3 bootstrap.py loci …   # any loci command

Needs nothing but Python 3.11 (and, for some tests, the two system packages above).
Idempotent: the environment is (re)installed only when pyproject.toml changed since the
last install.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / "python"
STAMP = VENV / ".installed"


def _run(cmd: list[str], **kw) -> int:
    print("+", " ".join(cmd), flush=True)
    return subprocess.call(cmd, cwd=ROOT, **kw)


def setup() -> None:
    wanted = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if STAMP.is_file() and STAMP.read_text().strip() == wanted and PY.exists():
        return
    if not PY.exists():
        if _run([sys.executable, "-m", "venv", str(VENV)]) != 0:
            sys.exit("could not create the virtual environment (is the venv module installed?)")
    pip = [str(PY), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    steps = [
        pip + ["--upgrade", "pip"],
        # torch first and pinned: the CPU build; a looser request pulls a multi-GB CUDA build.
        pip + ["torch==2.13.0"],
        pip + ["-e", ".[test]"],
    ]
    for step in steps:
        if _run(step) != 0:
            sys.exit(f"setup failed at: {' '.join(step)}")
    STAMP.write_text(wanted)


# What the test suite needs from the system, not from PyPI: the memory browser's tests drive
# Debian's Chromium (Playwright cannot download its own browser here) and the PostgreSQL
# inbox tests start a real server from the Debian binaries. (package, any of these commands)
SYSTEM_TEST_PACKAGES = [
    ("chromium", ["chromium", "chromium-browser"]),
    ("postgresql", ["initdb", "/usr/lib/postgresql/*/bin/initdb"]),
]


def _present(commands: list[str]) -> bool:
    import glob
    import shutil

    return any(glob.glob(c) if c.startswith("/") else shutil.which(c) for c in commands)


def system_test_packages() -> None:
    """Install the missing system packages the tests need, where that is possible (root on
    a Debian-like system); elsewhere say which are missing, and the tests that need them
    fail with the same advice."""
    missing = [pkg for pkg, commands in SYSTEM_TEST_PACKAGES if not _present(commands)]
    if not missing:
        return
    import shutil

    if shutil.which("apt-get") and hasattr(os, "geteuid") and os.geteuid() == 0:
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        if _run(["apt-get", "update", "-qq"], env=env) == 0 and _run(
                ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing], env=env) == 0:
            return
    print(f"note: system packages missing for some tests: {', '.join(missing)} "
          f"(Debian: apt-get install {' '.join(missing)})", file=sys.stderr, flush=True)


def _workers(args: list[str]) -> list[str]:
    """pytest-xdist options for the suite: one worker a core, up to 4, each test file kept
    on one worker (`--dist loadfile`: a module's fixtures are built once), handed out in the
    order tests/conftest.py sorts them (`--no-loadscope-reorder`: the longest files first,
    not the files with the most tests). Most of the suite's time is one Python process
    waiting on its own work, so two workers on CI's two cores take ~6 minutes where one took
    ~10. None when the caller chose (`-n`, `-p no:xdist`) or names single tests to run."""
    if any(a == "-n" or a.startswith(("-n", "--numprocesses", "--dist")) or a == "no:xdist" for a in args):
        return []
    if any(not a.startswith("-") for a in args):
        return []
    return ["-n", str(max(1, min(4, os.cpu_count() or 1))), "--dist", "loadfile", "--no-loadscope-reorder"]


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    job, rest = argv[0], argv[1:]
    setup()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    if job == "setup":
        return 0
    if job == "test":
        system_test_packages()
        lint = _run([str(BIN / "ruff"), "check", "."], env=env)
        if lint != 0:
            return lint
        return _run([str(PY), "-m", "pytest", *_workers(rest), *rest], env=env)
    if job == "demo":
        return _run([str(BIN / "loci"), "demo", *rest], env=env)
    if job == "bench":
        return _run([str(BIN / "loci"), "bench", *(rest or ["all"])], env=env)
    if job == "loci":
        return _run([str(BIN / "loci"), *rest], env=env)
    print(f"unknown job {job!r}\n{__doc__}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
