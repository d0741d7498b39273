"""Item writes: create, update, archive, supersede, link. Each runs in one transaction
with its revisions and audit events (see `ItemJournal`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from pipelines.item_rows import gc_paused
from pipelines.records import MemoryItem, item_content_hash, sha256_text, utcnow
from pipelines.warehouse.connection import (
    ItemConflictError,
    as_list,
    check_id,
    unique_ids,
)
from pipelines.warehouse.journal import LINK_RELS, ItemJournal, Origin, check_all_stored, check_origin

_FIELD_NAMES = frozenset(f.name for f in msgspec.structs.fields(MemoryItem))
# Not patchable: identity, derived hash, links (append-only, see link()), learn time.
_FROZEN_FIELDS = frozenset({"id", "content_hash", "links", "created_at"})
PATCHABLE_FIELDS: frozenset[str] = _FIELD_NAMES - _FROZEN_FIELDS
_ITEMS_DECODER = msgspec.json.Decoder(list[MemoryItem])


class ItemWrites(ItemJournal):
    def put_items(
        self,
        items: Sequence[MemoryItem],
        *,
        reason: str = "create",
        origin: Origin | Mapping[str, Origin] | None = None,
    ) -> list[MemoryItem]:
        """Insert many items in one transaction through arrow (no per-row INSERTs).
        Their `links` are stored too (targets are not checked: they may arrive later).
        Idempotent for the same id and content; `ItemConflictError` for other content.
        `origin`: one for every item, or item id -> origin (missing ids: none)."""
        self._writable()
        check_id(reason, "reason")
        origin_of = origin.get if isinstance(origin, Mapping) else lambda _id: origin
        batch = _validated_items(as_list(items, "items"))
        if not batch:
            return []
        first: dict[str, MemoryItem] = {}
        for item in batch:
            seen = first.setdefault(item.id, item)
            if seen.content_hash != item.content_hash:
                raise ItemConflictError(f"item {item.id!r} appears twice with different content")
        with self.transaction():
            stored = self._stored_hashes(list(first))
            for item_id, content_hash in stored.items():
                if content_hash != first[item_id].content_hash:
                    raise ItemConflictError(
                        f"item {item_id!r} exists with other content; use update_items()"
                    )
            new = [i for i in first.values() if i.id not in stored]
            if new:
                now = utcnow()
                self._insert_item_rows(new)
                origins = [origin_of(i.id) for i in new]
                self._insert_revisions([(i, 1) for i in new], reason, now, origins)
                self._insert_links(
                    [(i.id, link.to, link.rel) for i in new for link in i.links], now
                )
                self._insert_events(
                    [
                        ("create", i.id, {"reason": reason, "tier": i.tier, "type": i.type},
                         i.content_hash)
                        for i in new
                    ],
                    now,
                    origins,
                )  # fmt: skip
            existing = self._load_items([i for i in first if i in stored])
        resolved = {i.id: i for i in new}
        resolved.update(existing)
        return [resolved[i.id] for i in batch]

    def update_items(
        self,
        patches: Mapping[str, Mapping[str, Any]],
        *,
        reason: str = "update",
        origin: Origin | None = None,
        touch: bool = True,
        current: Mapping[str, MemoryItem] | None = None,
    ) -> list[MemoryItem]:
        """Patch many items in one transaction; always a new revision and event each.
        Patchable: every MemoryItem field except id, content_hash (recomputed), links (see
        link()) and created_at. updated_at is set to now unless the patch gives it, or
        `touch` is False: bookkeeping (promotion, palace placement, usage counts) does not
        change what an item says, and updated_at is what makes a claim the newer one.
        `current`: the stored versions of the patched items the caller read while holding
        the warehouse (a run's stage under its lock), patched as given instead of read again
        (only that each is stored with that content is checked, `ItemConflictError` else)."""
        self._writable()
        check_id(reason, "reason")
        check_origin(origin)
        if not isinstance(patches, Mapping):
            raise TypeError(
                f"patches must be a mapping of item id -> patch, not {type(patches).__name__}"
            )
        for item_id, patch in patches.items():
            _check_patch(item_id, patch)
        if not patches:
            return []
        with self.transaction():
            current = self._require_items(list(patches)) if current is None else self._as_stored(patches, current)
            now = utcnow()
            changes = [(current[i], _patched(current[i], p, now if touch else current[i].updated_at))
                       for i, p in patches.items()]
            actions = [_update_action(old, new) for old, new in changes]
            for action in dict.fromkeys(actions):
                group = [c for c, a in zip(changes, actions) if a == action]
                details = [{"reason": reason, "fields": sorted(patches[old.id])} for old, _ in group]
                self._write_changes(group, reason, action, details, now, origin)
        return [new for _, new in changes]

    def _as_stored(self, patches: Mapping[str, Any], given: Mapping[str, MemoryItem]) -> Mapping[str, MemoryItem]:
        """`given` (id -> the version a caller holds) for the ids of `patches`, checked to be
        stored with that content: its full read (columns and links) is not made again."""
        ids = list(patches)
        stored = self._stored_hashes(ids)
        check_all_stored(ids, stored)
        for i in ids:
            if i not in given or given[i].content_hash != stored[i]:
                raise ItemConflictError(f"item {i!r}: the version given as current is not the stored one")
        return given

    def archive_items(
        self, item_ids: Sequence[str], *, reason: str, origin: Origin | None = None
    ) -> list[MemoryItem]:
        """Mark items archived (expiry, aging); those already archived are unchanged."""
        self._writable()
        check_id(reason, "reason")
        check_origin(origin)
        ids = unique_ids(item_ids, "item_ids")
        with self.transaction():
            current = self._require_items(ids)
            now = utcnow()
            changes = [
                (current[i], _patched(current[i], {"archived": True}, now))
                for i in ids
                if not current[i].archived
            ]
            details = [{"reason": reason} for _ in changes]
            self._write_changes(changes, reason, "archive", details, now, origin)
            result = {new.id: new for _, new in changes}
        return [result.get(i, current[i]) for i in ids]

    def supersede(
        self,
        old_ids: Sequence[str],
        new_id: str,
        *,
        reason: str = "consolidation_merge",
        origin: Origin | None = None,
    ) -> list[MemoryItem]:
        """Mark `old_ids` as superseded by `new_id` (a revision and a `supersede` event
        each) and link new -derived_from-> old and new -supersedes-> old. Returns the old
        items as now stored. Idempotent for items already superseded by `new_id`."""
        self._writable()
        check_id(reason, "reason")
        check_origin(origin)
        ids = unique_ids(old_ids, "old_ids")
        check_id(new_id, "new_id")
        if new_id in ids:
            raise ValueError(f"item {new_id!r} cannot supersede itself")
        with self.transaction():
            current = self._require_items([*ids, new_id])
            if not current[new_id].active:
                raise ItemConflictError(f"canonical item {new_id!r} is itself inactive")
            for i in ids:
                other = current[i].superseded_by
                if other is not None and other != new_id:
                    raise ItemConflictError(f"item {i!r} is already superseded by {other!r}")
            now = utcnow()
            changes = [
                (current[i], _patched(current[i], {"superseded_by": new_id}, now))
                for i in ids
                if current[i].superseded_by is None
            ]
            details = [{"reason": reason, "new_id": new_id} for _ in changes]
            self._write_changes(changes, reason, "supersede", details, now, origin)
            links = [(new_id, i, rel) for i in ids for rel in ("derived_from", "supersedes")]
            self._insert_links(links, now, log=True, origins=origin)
            result = {new.id: new for _, new in changes}
        return [result.get(i, current[i]) for i in ids]

    def refuse(
        self,
        item_id: str,
        *,
        attempted: str,
        reason: str,
        origin: Origin,
        details: Mapping[str, Any] | None = None,
    ) -> None:
        """Record a change someone attempted and was refused (by the policy, or on an item
        they may not change): a `refused` audit event only, nothing else is written. The
        item need not exist (an attempt on an unknown id is recorded too); the event's
        content hash is the item's unchanged one, or the hash of nothing."""
        self._writable()
        check_id(item_id, "item_id")
        check_id(attempted, "attempted")
        check_id(reason, "reason")
        check_origin(origin)
        with self.transaction():
            stored = self._stored_hashes([item_id]).get(item_id, sha256_text(""))
            why = {"attempted": attempted, "reason": reason, **(details or {})}
            self._insert_events([("refused", item_id, why, stored)], utcnow(), origin)

    def link(self, src_id: str, dst_id: str, rel: str, *, origin: Origin | None = None) -> bool:
        """Add a typed link between two stored items; True when it is new (idempotent)."""
        self._writable()
        check_origin(origin)
        check_id(src_id, "src_id")
        check_id(dst_id, "dst_id")
        if rel not in LINK_RELS:
            raise ValueError(f"unknown link rel {rel!r}; known: {sorted(LINK_RELS)}")
        with self.transaction():
            self._require_items([src_id, dst_id])
            return bool(
                self._insert_links([(src_id, dst_id, rel)], utcnow(), log=True, origins=origin)
            )


def _update_action(old: MemoryItem, new: MemoryItem) -> str:
    """`retract` for an update that marks an item known false (the never-delete form of a
    deletion: it stays, with its history, and is never recalled), `supersede` for one that
    retires it in favour of another (a correction), else `update`."""
    if new.validation == "retracted" != old.validation:
        return "retract"
    return "supersede" if new.superseded_by is not None and old.superseded_by is None else "update"


def _check_patch(item_id: Any, patch: Any) -> None:
    check_id(item_id, "item id")
    if not isinstance(patch, Mapping):
        raise TypeError(f"the patch for {item_id!r} must be a mapping, not {type(patch).__name__}")
    unknown = set(patch) - _FIELD_NAMES
    if unknown:
        raise ValueError(f"unknown MemoryItem fields in patch for {item_id!r}: {sorted(unknown)}")
    frozen = set(patch) & _FROZEN_FIELDS
    if frozen:
        raise ValueError(
            f"fields {sorted(frozen)} cannot be patched (id and created_at are fixed, "
            "content_hash is recomputed, links are added with link())"
        )


def _validated_items(items: list[Any]) -> list[MemoryItem]:
    """Type-checked copies of `items` with content hashes recomputed (msgspec does not
    validate on construction, and a caller may have edited title/content since). One
    msgspec call for the whole batch keeps 100k items fast."""
    for item in items:
        if not isinstance(item, MemoryItem):
            raise TypeError(f"expected MemoryItem records, not {type(item).__name__}")
    try:
        # A JSON round trip validates every field in C without intermediate dicts.
        with gc_paused():
            validated = _ITEMS_DECODER.decode(msgspec.json.encode(items))
    except (TypeError, msgspec.ValidationError, msgspec.EncodeError) as exc:
        raise ValueError(f"invalid memory item: {exc}") from exc
    for item in validated:
        check_id(item.id, "item id")
        item.content_hash = item_content_hash(item.title, item.content)
    return validated


def _patched(item: MemoryItem, patch: Mapping[str, Any], now: str) -> MemoryItem:
    try:
        raw = msgspec.to_builtins(item)
        raw.update(msgspec.to_builtins(dict(patch)))
        if "updated_at" not in patch:
            raw["updated_at"] = now
        raw["content_hash"] = ""  # recomputed from the (possibly new) title and content
        return msgspec.convert(raw, MemoryItem)
    except (TypeError, msgspec.ValidationError, msgspec.EncodeError) as exc:
        raise ValueError(f"invalid patch for {item.id!r}: {exc}") from exc
