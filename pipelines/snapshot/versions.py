"""Version names and folders under the snapshots root: naming a new version, listing the
published ones, reading CURRENT, pruning old versions and crashed builds' leftovers."""

from __future__ import annotations

import os
import re
import shutil
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import msgspec

from pipelines.snapshot.layout import CURRENT_FILE, MANIFEST_FILE, SnapshotError, StoreMismatch

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


class _StoreStamp(msgspec.Struct):
    """The one manifest field `folder_stores` reads."""

    store_id: str = ""


def folder_stores(root: Path) -> dict[str, list[str]]:
    """Store id -> the versions under `root` it published, oldest first (versions without a
    store id, or whose manifest cannot be read, are left out)."""
    out: dict[str, list[str]] = {}
    for version in list_versions(root):
        try:
            stamp = msgspec.json.decode((root / version / MANIFEST_FILE).read_bytes(), type=_StoreStamp)
        except (OSError, msgspec.DecodeError):
            continue
        if stamp.store_id:
            out.setdefault(stamp.store_id, []).append(version)
    return out


def mixed_stores_problem(root: Path, stores: dict[str, list[str]]) -> str | None:
    """What to tell an operator when `root` holds snapshots of several stores."""
    if len(stores) < 2:
        return None
    named = "; ".join(f"store {sid}: {', '.join(versions[-2:])}" for sid, versions in stores.items())
    return (f"the snapshots folder {root} holds snapshots of {len(stores)} different stores ({named}): two "
            "consolidations with their own warehouses publish into it; give each store its own "
            "snapshots_dir (docs/deploy.md, 'One consolidation')")


def check_folder_store(root: Path, store_id: str) -> None:
    """Refuse (`StoreMismatch`) to publish store `store_id`'s snapshot into `root` when it
    holds another store's snapshots. A store without an id, and snapshots published before
    stores had ids, are not checked."""
    if not store_id:
        return
    others = {sid: v for sid, v in folder_stores(Path(root)).items() if sid != store_id}
    if others:
        sid, versions = next(iter(others.items()))
        raise StoreMismatch(
            f"refusing to publish store {store_id}'s snapshot into {root}: it holds snapshots of another "
            f"store ({sid}: {', '.join(versions[-2:])}). Two consolidations with their own warehouses "
            "must not share a snapshots folder: give this one its own snapshots_dir, or remove the "
            "other store's versions if that store is gone (docs/deploy.md)")


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
