"""Stage 4: HDBSCAN clusters of the mergeable short-term items."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pipelines.consolidate.common import MERGEABLE_TYPES, mergeable_kind
from pipelines.records import MemoryItem, Scope
from pipelines.settings import Settings
from pipelines.warehouse import Warehouse


def _slug(text: str, limit: int = 40) -> str:
    words = "".join(c.lower() if c.isalnum() else " " for c in text).split()
    return "-".join(words)[:limit].strip("-")


def cluster_room(items: Sequence[MemoryItem]) -> str:
    """A palace room name for a cluster: its most shared tag, else entity, else the first
    words of its first title (deterministic)."""
    for attr in ("tags", "entities"):
        counts = Counter(_slug(v) for i in items for v in dict.fromkeys(getattr(i, attr)) if _slug(v))
        if counts:
            best = max(counts.values())
            return sorted(k for k, n in counts.items() if n == best)[0]
    titles = sorted(i.title for i in items if _slug(i.title))
    return _slug(" ".join(titles[0].split()[:4])) if titles else "misc"


@dataclass
class ClusterRef:
    """A cluster as passed between assets (plain data, safe to pickle)."""

    partition: str
    label: int
    item_ids: list[str]
    room: str = ""
    family: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"partition": self.partition, "label": self.label, "item_ids": list(self.item_ids),
                "room": self.room, "family": self.family}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ClusterRef":
        return cls(str(data["partition"]), int(data["label"]), [str(i) for i in data["item_ids"]],
                   str(data.get("room", "")), str(data.get("family", "")))


@dataclass
class ClusterReport:
    clusters: list[ClusterRef]
    candidates: int
    noise: int
    sizes: list[int]
    per_partition: dict[str, dict[str, int]]


def cluster_stm(warehouse: Warehouse, model_name: str, settings: Settings) -> ClusterReport:
    """HDBSCAN clusters of the mergeable active STM items, per owner partition (never
    across owners). Reads only; nothing is written. The candidates are read as ids, owners
    and types (`Warehouse.active_item_kinds`); only the clustered items are loaded, to name
    their rooms (decoding a large store's short-term items cost ~0.15 s a run)."""
    from pipelines.clustering import cluster_keyed

    rows = [(item_id, Scope(**owner).partition_key(), item_type)
            for item_id, owner, item_type, verdict, validation
            in warehouse.active_item_kinds(tier="stm", types=MERGEABLE_TYPES)
            if mergeable_kind("stm", item_type, verdict, validation)]
    per_partition: dict[str, dict[str, int]] = {}
    for _, partition, _ in rows:
        entry = per_partition.setdefault(partition, {"items": 0, "clusters": 0})
        entry["items"] += 1
    if len(rows) < 2:
        return ClusterReport([], len(rows), len(rows), [], dict(sorted(per_partition.items())))
    ids = [r[0] for r in rows]
    vectors = warehouse.embedding_matrix(model_name, ids)
    found = cluster_keyed(ids, [r[1] for r in rows], [r[2] for r in rows], vectors,
                          min_cluster_size=settings.cluster_min_size, reduce_dim=settings.cluster_reduce_dim)
    found = [c for c in found if len(c.item_ids) >= 2]
    by_id = {i.id: i for i in warehouse.get_items(sorted({str(i) for c in found for i in c.item_ids}))}
    refs = []
    for c in found:
        ids = [str(i) for i in c.item_ids]
        room = cluster_room([by_id[i] for i in ids if i in by_id])
        refs.append(ClusterRef(str(c.partition), int(c.label), ids, room, str(getattr(c, "family", ""))))
        per_partition.setdefault(str(c.partition), {"items": 0, "clusters": 0})["clusters"] += 1
    sizes = [len(r.item_ids) for r in refs]
    return ClusterReport(refs, len(rows), len(rows) - sum(sizes), sizes, dict(sorted(per_partition.items())))
