"""Shared helpers for the asset tests: settings on a temporary data dir, a small chat log
landed through the real ingestion path, and warehouse/snapshot state dumps."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec

from assets.resources import FaultInjectionResource
from pipelines.inbox import Inbox
from pipelines.ingest import ingest_chat_jsonl
from pipelines.settings import Settings, load_settings
from pipelines.snapshot import current_version, list_versions
from pipelines.warehouse import Warehouse

REPO = Path(__file__).resolve().parents[2]


def make_settings(tmp_path: Path, **overrides: Any) -> Settings:
    """Fast, deterministic settings: hash embedder, extractive merger, no config file."""
    values: dict[str, Any] = {
        "data_dir": str(tmp_path / "data"),
        "embedder": "hash",
        "merger": "extractive",
    }
    values.update(overrides)
    return load_settings(config_file=tmp_path / "absent.toml", environ={}, **values)


def block(*proposals: dict[str, Any]) -> str:
    return f"<MEMORY_PROPOSALS_JSON>{json.dumps(list(proposals))}</MEMORY_PROPOSALS_JSON>"


def dana(text: str, role: str = "assistant", session: str = "s1", **extra: Any) -> dict[str, Any]:
    return {"role": role, "text": text, "user_id": "dana", "project_id": "atlas", "session_id": session, **extra}


def erin(text: str, role: str = "assistant", session: str = "e1", **extra: Any) -> dict[str, Any]:
    return {"role": role, "text": text, "user_id": "erin", "project_id": "borealis", "session_id": session, **extra}


LATENCY = {"tags": ["latency", "tiles"], "entities": ["tile server"]}

# Two owners. Dana's project gets three near-duplicate facts about one topic (one cluster
# to merge), a decision (auto-promoted), a low-confidence proposal (quarantined) and a
# credential (rejected). Erin's project has the same topic: it must never merge with Dana's.
BATCH_1 = [
    dana("What is our latency budget for map tiles?", role="user"),
    dana("The budget is 50 ms. " + block(
        {"type": "fact", "title": "Tile latency budget", "content": "The tile latency budget is 50 ms at p95.", **LATENCY},
    )),
    dana("Confirmed again. " + block(
        {"type": "fact", "title": "Tile latency budget p95", "content": "The tile latency budget is 50 ms at p95 for map tiles.", **LATENCY},
    ), session="s2"),
    dana("Yes. " + block(
        {"type": "fact", "title": "Latency budget for tiles", "content": "Map tile latency budget: 50 ms at p95.", **LATENCY},
    ), session="s3"),
    dana("Decided. " + block(
        {"type": "decision", "title": "Use PostGIS for tile storage", "content": "We decided to store tiles in PostGIS, not S3.", "tags": ["storage"]},
        {"type": "note", "title": "Maybe cache", "content": "Perhaps a CDN cache could help someday.", "confidence": 0.1, "tags": ["cache"]},
        {"type": "fact", "title": "Deploy key", "content": "The deploy key is AKIAIOSFODNN7EXAMPLE for the bucket.", "tags": ["aws"]},
    ), session="s3"),
    erin("Borealis budget. " + block(
        {"type": "fact", "title": "Tile latency budget", "content": "The tile latency budget is 50 ms at p95.", **LATENCY},
    )),
]

# A second topic for Dana, stated twice (one more cluster to merge).
BATCH_2 = [
    dana("Another topic: when is the standup?", role="user", session="s4"),
    dana("Noted. " + block(
        {"type": "fact", "title": "Standup time", "content": "The team standup is at 9:30 every weekday.", "tags": ["meetings"]},
    ), session="s4"),
    dana("Right. " + block(
        {"type": "fact", "title": "Standup time weekday", "content": "Team standup is at 9:30 on every weekday.", "tags": ["meetings"]},
    ), session="s5"),
]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def ingest(settings: Settings, rows: list[dict[str, Any]], name: str = "chats.jsonl") -> dict[str, Any]:
    """Land rows in the inbox through `ingest_chat_jsonl` (parse, govern, append)."""
    from pipelines.policy import Policy

    folder = Path(settings.data_dir).parent
    folder.mkdir(parents=True, exist_ok=True)
    path = write_jsonl(folder / name, rows)
    with Inbox(settings.inbox_path) as inbox:
        return ingest_chat_jsonl(path, inbox, Policy(settings)).as_dict()


def inbox_max_seq(settings: Settings) -> int:
    with Inbox(settings.inbox_path) as inbox:
        return inbox.max_seq()


TABLES = ("items", "revisions", "events", "links", "embeddings", "palace_locations", "chat_turns",
          "proposals", "landed_events", "consolidation_runs")


def table_counts(settings: Settings) -> dict[str, int]:
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        return table_counts_open(wh)


def warehouse_state(settings: Settings) -> dict[str, Any]:
    """Everything a run could change, in comparable form."""
    if not settings.warehouse_path.exists():
        return {}
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        items = {i["id"]: i for i in wh.items_frame(active_only=False).to_dicts()}
        return {
            "items": items,
            "counts": table_counts_open(wh),
            "watermark": wh.last_ingested_seq(),
            "runs": [(r["run_id"], r["status"]) for r in wh.runs()],
            "events": [tuple(r) for r in wh.query('SELECT id, action, item_id FROM events ORDER BY id')],
        }


def table_counts_open(wh: Warehouse) -> dict[str, int]:
    return {t: int(wh.query(f"SELECT count(*) FROM {t}")[0][0]) for t in TABLES}


def snapshot_state(settings: Settings) -> dict[str, Any]:
    root = settings.snapshots_path
    files = {}
    if root.exists():
        for p in sorted(root.rglob("*")):
            if p.is_file():
                files[str(p.relative_to(root))] = p.read_bytes()
    return {"current": current_version(root) if root.exists() else None,
            "versions": list_versions(root), "files": files}


def active_items(settings: Settings):
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        return wh.active_items()


def settings_env(settings: Settings, **extra: str) -> dict[str, str]:
    """Environment that makes `load_settings()` in a child process reproduce `settings`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOCI_")}
    env["LOCI_CONFIG"] = str(Path(settings.data_dir).parent / "absent.toml")
    env["LOCI_DATA_DIR"] = settings.data_dir
    env["LOCI_EMBEDDER"] = settings.embedder
    env["LOCI_MERGER"] = settings.merger
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    env.update(extra)
    return env


def faults(point: str, action: str, marker_file: str | Path = "") -> FaultInjectionResource:
    """The `faults` resource that makes a run `action` ("fail", "sleep:<s>") at `point`."""
    return FaultInjectionResource(point=point, action=action, marker_file=str(marker_file))


# The child reads its fault from the environment: LOCI_TEST_HOOK="<point>=<action>" and
# LOCI_TEST_HOOK_MARKER (the file written when the point is reached).
RUN_IN_CHILD = (
    "import json, os\n"
    "from assets.run import run_consolidation\n"
    "from pipelines.settings import load_settings\n"
    "from tests.assets.support import faults\n"
    "point, _, action = os.environ.get('LOCI_TEST_HOOK', '').partition('=')\n"
    "resources = {'faults': faults(point, action, os.environ.get('LOCI_TEST_HOOK_MARKER', ''))}\n"
    "summary = run_consolidation(load_settings(), instance='ephemeral', resources=resources)\n"
    "print('SUMMARY ' + json.dumps(summary, default=str), flush=True)\n"
)


def start_child_run(settings: Settings, **env: str) -> subprocess.Popen:
    """`run_consolidation` in a separate process (as a second `loci consolidate` would);
    `LOCI_TEST_HOOK` / `LOCI_TEST_HOOK_MARKER` in `env` inject a fault (see RUN_IN_CHILD)."""
    return subprocess.Popen(
        [sys.executable, "-c", RUN_IN_CHILD],
        cwd=str(Path(settings.data_dir).parent),
        env=settings_env(settings, **env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def child_summary(stdout: str) -> dict[str, Any]:
    for line in stdout.splitlines():
        if line.startswith("SUMMARY "):
            return json.loads(line[len("SUMMARY "):])
    raise AssertionError(f"no summary in child output: {stdout[-2000:]}")


def decode(item: Any) -> dict[str, Any]:
    return msgspec.to_builtins(item)


_INSTANCE = None


def shared_instance():
    """One in-memory Dagster instance for the in-process runs of the whole test session
    (creating one per run costs more than the run itself)."""
    global _INSTANCE
    if _INSTANCE is None:
        import dagster as dg

        _INSTANCE = dg.DagsterInstance.ephemeral()
    return _INSTANCE
