"""Shared helpers for the asset tests: settings on a temporary data dir, a small chat log
landed through the real ingestion path, and warehouse/snapshot state dumps."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from bench.harness import (  # noqa: F401 - shared with the durability benchmark
    active_items,
    block,
    child_summary,
    dana,
    erin,
    faults,
    ingest,
    make_settings,
    settings_env,
    snapshot_state,
    start_child_run,
    write_jsonl,
)
from pipelines.inbox import Inbox
from pipelines.settings import Settings
from pipelines.warehouse import Warehouse

REPO = Path(__file__).resolve().parents[2]


LATENCY = {"tags": ["latency", "tiles"], "entities": ["tile server"]}

# Two owners. Dana's project gets three near-duplicate facts about one topic (one cluster
# to merge), a decision (auto-promoted), a low-confidence proposal (quarantined) and a
# credential (rejected). Erin's project has the same topic: it must never merge with Dana's.
BATCH_1 = [
    dana("What is our latency budget for map tiles?", role="user"),
    dana("The budget is 50 ms. " + block(
        {"type": "fact", "title": "Tile latency budget", "content": "The tile latency budget is 50 ms at p95.",
         **LATENCY},
    )),
    dana("Confirmed again. " + block(
        {"type": "fact", "title": "Tile latency budget p95",
         "content": "The tile latency budget is 50 ms at p95 for map tiles.", **LATENCY},
    ), session="s2"),
    dana("Yes. " + block(
        {"type": "fact", "title": "Latency budget for tiles", "content": "Map tile latency budget: 50 ms at p95.",
         **LATENCY},
    ), session="s3"),
    dana("Decided. " + block(
        {"type": "decision", "title": "Use PostGIS for tile storage",
         "content": "We decided to store tiles in PostGIS, not S3.", "tags": ["storage"]},
        {"type": "note", "title": "Maybe cache", "content": "Perhaps a CDN cache could help someday.",
         "confidence": 0.1, "tags": ["cache"]},
        {"type": "fact", "title": "Deploy key", "content": "The deploy key is AKIAIOSFODNN7EXAMPLE for the bucket.",
         "tags": ["aws"]},
    ), session="s3"),
    erin("Borealis budget. " + block(
        {"type": "fact", "title": "Tile latency budget", "content": "The tile latency budget is 50 ms at p95.",
         **LATENCY},
    )),
]

# A second topic for Dana, stated twice (one more cluster to merge).
BATCH_2 = [
    dana("Another topic: when is the standup?", role="user", session="s4"),
    dana("Noted. " + block(
        {"type": "fact", "title": "Standup time", "content": "The team standup is at 9:30 every weekday.",
         "tags": ["meetings"]},
    ), session="s4"),
    dana("Right. " + block(
        {"type": "fact", "title": "Standup time weekday", "content": "Team standup is at 9:30 on every weekday.",
         "tags": ["meetings"]},
    ), session="s5"),
]


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
        ids = [r[0] for r in wh.query("SELECT id FROM items ORDER BY id")]
        items = {i.id: msgspec.to_builtins(i) for i in wh.get_items(ids)}
        return {
            "items": items,
            "counts": table_counts_open(wh),
            "watermark": wh.last_ingested_seq(),
            "runs": [(r["run_id"], r["status"]) for r in wh.runs()],
            "events": [tuple(r) for r in wh.query('SELECT id, action, item_id FROM events ORDER BY id')],
        }


def table_counts_open(wh: Warehouse) -> dict[str, int]:
    return {t: int(wh.query(f"SELECT count(*) FROM {t}")[0][0]) for t in TABLES}


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
