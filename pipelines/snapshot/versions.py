"""Version names and folders under the snapshots root: naming a new version, listing the
published ones, reading CURRENT, pruning old versions and crashed builds' leftovers."""

from __future__ import annotations

import os
import re
import shutil
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from pipelines.snapshot.layout import CURRENT_FILE, SnapshotError

STALE_TMP_SECONDS = 3600  # an unfinished .tmp-* folder older than this is a crashed build

_TS_FORMAT = "%Y%m%dT%H%M%S%fZ"
_VERSION_RE = re.compile(r"^(\d{8}T\d{12}Z)-([0-9a-f]{8,64})$")


def is_version_name(name: str) -> bool:
    return bool(_VERSION_RE.match(name))


def list_versions(root: Path) -> list[str]:
    """Published version folders under root, oldest first (names sort by time)."""
    root = Path(root)
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if p.is_dir() and is_version_name(p.name))


def current_version(root: Path) -> str | None:
    """The version named by CURRENT, or None when nothing was published yet.
    Raises SnapshotError when CURRENT holds something that is not a version name."""
    path = Path(root) / CURRENT_FILE
    try:
        text = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise SnapshotError(f"{path} unreadable: {exc}") from exc
    if not text:
        return None
    if not is_version_name(text):
        raise SnapshotError(f"{path} does not name a snapshot version: {text[:80]!r}")
    return text


def new_version(root: Path, content_digest: str) -> str:
    """Timestamp + content hash; strictly after every existing version even if the clock
    stepped back or two builds share a microsecond."""
    now = datetime.now(timezone.utc)
    existing = list_versions(root)
    if existing:
        latest = datetime.strptime(_VERSION_RE.match(existing[-1]).group(1), _TS_FORMAT)  # type: ignore[union-attr]
        latest = latest.replace(tzinfo=timezone.utc)
        if now <= latest:
            now = latest + timedelta(microseconds=1)
    return f"{now.strftime(_TS_FORMAT)}-{content_digest[:12]}"


def prune(root: Path, keep: int) -> list[str]:
    """Delete all but the newest `keep` versions (the CURRENT one always stays), plus
    leftovers of crashed builds. A folder is renamed away before deletion so it never
    appears half-deleted. Returns the removed versions."""
    root = Path(root)
    versions = list_versions(root)
    try:
        current = current_version(root)
    except SnapshotError:
        current = None
    survivors = set(versions[-keep:]) | ({current} if current else set())
    removed = []
    for version in versions:
        if version in survivors:
            continue
        trash = root / f".trash-{version}"
        try:
            os.rename(root / version, trash)
        except OSError:
            continue  # a concurrent pruner got there first
        shutil.rmtree(trash, ignore_errors=True)
        removed.append(version)
    now = time.time()
    for leftover in root.iterdir() if root.is_dir() else []:
        stale = leftover.name.startswith(".trash-") or (
            leftover.name.startswith((".tmp-", f"{CURRENT_FILE}.tmp-"))
            and now - leftover.stat().st_mtime > STALE_TMP_SECONDS
        )
        if stale:
            if leftover.is_dir():
                shutil.rmtree(leftover, ignore_errors=True)
            else:
                leftover.unlink(missing_ok=True)
    return removed
