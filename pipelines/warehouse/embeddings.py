"""Derived vectors: one per item and model, replaced when recomputed (an `embed` audit
event per batch), read back as float32 matrices."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from pipelines.message_context import (
    COMPOSITION,
    CONTEXT_TURNS_KEY,
    CONTEXT_WINDOWS_KEY,
    POOLING,
    POOLING_KEY,
    UNMARKED_POOLING,
)
from pipelines.records import sha256_text, utcnow
from pipelines.warehouse.connection import (
    STRING,
    UnknownItemError,
    as_list,
    check_id,
    ids_table,
    to_json,
)
from pipelines.warehouse.journal import ACTIVE_SQL, ItemJournal, items_narrowed

# pipelines.message_context.embedding_hash in SQL: which inputs a current vector is made from
# (a message with a retrieval context hashes it in, so a new context means a new vector, and
# the composition recipe when the context's turns are recorded, i.e. its vector is composed;
# the pooling recipe and the windows' turn ids when its vector is pooled).
_CONTEXT_SQL = "json_extract_string(i.metadata, '$.context')"
_HAS_CONTEXT_SQL = f"i.type = 'message' AND coalesce({_CONTEXT_SQL}, '') <> ''"
_POOLED_SQL = (f"json_type(i.metadata, '$.{CONTEXT_WINDOWS_KEY}') = 'ARRAY' "
               f"AND json_array_length(i.metadata, '$.{CONTEXT_WINDOWS_KEY}') > 0")
_COMPOSED_SQL = (f"json_type(i.metadata, '$.{CONTEXT_TURNS_KEY}') = 'OBJECT' "
                 f"AND json_type(i.metadata, '$.{CONTEXT_TURNS_KEY}.previous') = 'ARRAY' "
                 f"AND json_type(i.metadata, '$.{CONTEXT_TURNS_KEY}.following') = 'ARRAY'")
EMBEDDING_HASH_SQL = (
    f"CASE WHEN {_HAS_CONTEXT_SQL} THEN "
    f"CASE WHEN {_POOLED_SQL} "
    f"THEN sha256(i.content_hash || chr(10) || {_CONTEXT_SQL} || chr(10) || '{POOLING.recipe}' || chr(10) "
    f"|| json_extract(i.metadata, '$.{CONTEXT_WINDOWS_KEY}')::VARCHAR) "
    f"WHEN {_COMPOSED_SQL} "
    f"THEN sha256(i.content_hash || chr(10) || {_CONTEXT_SQL} || chr(10) || '{COMPOSITION.recipe}') "
    f"ELSE sha256(i.content_hash || chr(10) || {_CONTEXT_SQL}) END "
    "ELSE i.content_hash END"
)
# pipelines.message_context.vector_scheme in SQL: how a message's vector is made (NULL: no
# retrieval context).
_POOLING_SQL = f"coalesce(json_extract_string(i.metadata, '$.{POOLING_KEY}'), '{UNMARKED_POOLING}')"
VECTOR_SCHEME_SQL = (f"CASE WHEN {_HAS_CONTEXT_SQL} THEN CASE WHEN {_POOLED_SQL} THEN "
                     f"CASE WHEN {_POOLING_SQL} = '{POOLING.name}' THEN 'pooled' ELSE 'pooled ' || {_POOLING_SQL} END "
                     f"WHEN {_COMPOSED_SQL} THEN 'composed' ELSE 'text' END END")


class Embeddings(ItemJournal):
    def put_embeddings(
        self,
        rows: Sequence[tuple[str, str, np.ndarray]],
        *,
        model_name: str,
        dim: int,
    ) -> int:
        """Store (item_id, content_hash, vector) rows for `model_name`, replacing an
        item's previous vector for that model. Vectors are stored as float32. Returns the
        number of rows written (the last row wins for an id given twice)."""
        self._writable()
        check_id(model_name, "model_name")
        if isinstance(dim, bool) or not isinstance(dim, int) or dim <= 0:
            raise ValueError(f"dim must be a positive int, not {dim!r}")
        latest = _latest_vectors(rows, dim)
        if not latest:
            return 0
        ids = list(latest)
        matrix = np.stack([latest[i][1] for i in ids])
        if not np.isfinite(matrix).all():
            raise ValueError("embedding vectors must be finite (no NaN or inf)")
        offsets = np.arange(0, (len(ids) + 1) * dim, dim, dtype=np.int32)
        now = utcnow()
        table = pa.table(
            {
                "item_id": pa.array(ids, STRING),
                "model_name": pa.array([model_name] * len(ids), STRING),
                "dimension": pa.array([dim] * len(ids), pa.int32()),
                "vector": pa.ListArray.from_arrays(pa.array(offsets), pa.array(matrix.ravel())),
                "content_hash": pa.array([latest[i][0] for i in ids], STRING),
                "created_at": pa.array([now] * len(ids), STRING),
            }
        )
        with self.transaction():
            stored_dims = {d for (m, d) in self._models() if m == model_name}
            if stored_dims and stored_dims != {dim}:
                raise ValueError(
                    f"model {model_name!r} is stored with dimension "
                    f"{sorted(stored_dims)}, not {dim}"
                )
            with self._staged(table) as staged:
                missing = self._sql(
                    f"SELECT s.item_id FROM {staged} s "
                    "ANTI JOIN items i ON i.id = s.item_id LIMIT 5"
                )
                if missing:
                    raise UnknownItemError(
                        f"embeddings for unknown items: {[m[0] for m in missing]}"
                    )
                # Derived data: an item's older vector for this model is replaced.
                self._sql(
                    f"DELETE FROM embeddings WHERE model_name = ? "
                    f"AND item_id IN (SELECT item_id FROM {staged})",
                    [model_name],
                )
                self._sql(f"INSERT INTO embeddings SELECT * FROM {staged}")
            digest = sha256_text("\n".join(f"{i}:{latest[i][0]}" for i in sorted(ids)))
            details = {"model_name": model_name, "dim": dim, "count": len(ids)}
            self._insert_events([("embed", None, details, digest)], now, None)
        return len(ids)

    def drop_embeddings(self, model_names: Sequence[str]) -> dict[str, int]:
        """Delete every stored vector of `model_names` (models whose vectors were replaced
        by another's: `loci reembed`); the rows deleted per model, audited as an `embed`
        event with `dropped`. Call it in the transaction that stored the replacements, so
        the store is never left without vectors."""
        self._writable()
        names = sorted(set(as_list(model_names, "model_names")))
        for name in names:
            check_id(name, "model_name")
        if not names:
            return {}
        with self.transaction():
            counted = self._sql("SELECT model_name, count(*) FROM embeddings "
                                "WHERE model_name IN (SELECT unnest(?::VARCHAR[])) GROUP BY 1 ORDER BY 1", [names])
            if not counted:
                return {}
            self._sql("DELETE FROM embeddings WHERE model_name IN (SELECT unnest(?::VARCHAR[]))", [names])
            dropped = {str(m): int(n) for m, n in counted}
            self._insert_events([("embed", None, {"dropped": dropped}, sha256_text(to_json(dropped)))],
                                utcnow(), None)
        return dropped

    def embedding_matrix(self, model_name: str, item_ids: Sequence[str]) -> np.ndarray:
        """(len(item_ids), dim) float32 matrix in the order asked; every id must have a
        vector for the model (UnknownItemError otherwise)."""
        wanted = as_list(item_ids, "item_ids")
        ids, _, matrix = self._fetch_embeddings(model_name, wanted)
        if len(ids) != len(set(wanted)):
            missing = sorted(set(wanted) - set(ids))
            raise UnknownItemError(
                f"no {model_name!r} embedding for {missing[:5]} ({len(missing)} missing)"
            )
        if len(ids) == len(wanted):
            return matrix
        row = {i: k for k, i in enumerate(ids)}
        return matrix[[row[i] for i in wanted]]

    def stale_embedding_ids(self, model_name: str, *, active_only: bool = True,
                            ids: Sequence[str] | None = None, written_since: str | None = None) -> list[str]:
        """Items with no vector for the model, or one computed from older content; only
        among `ids` when given (hashing every item's content costs the whole store).
        `written_since` (ISO time): compare hashes only for items whose text changed at or
        after it (`_text_changed_ids`: an item's embedding inputs change only with a revision
        that changes its `text_hash`), while an item with no vector at all is looked for
        among every item (an anti-join, no hashing)."""
        check_id(model_name, "model_name")
        conditions = [ACTIVE_SQL] if active_only else []
        scope: list[Any] = []
        if ids is not None:
            conditions.append("i.id IN (SELECT unnest(?::VARCHAR[]))")
            scope.append([i for i in as_list(ids, "ids") if isinstance(i, str)])
        where = " AND ".join(conditions) or "TRUE"
        differs = f"e.content_hash <> {EMBEDDING_HASH_SQL}"
        with self.transaction():
            if written_since is None and ids is None:  # every item's hash
                rows = self._sql(
                    "SELECT i.id FROM items i LEFT JOIN embeddings e ON e.item_id = i.id AND e.model_name = ? "
                    f"WHERE {where} AND (e.item_id IS NULL OR {differs}) ORDER BY i.id", [model_name, *scope])
                return [r[0] for r in rows]
            hashed, hashed_params = where, list(scope)
            if written_since is not None:
                check_id(written_since, "written_since")
                # Hashes are computed only for the few items whose text changed since (a
                # promotion or a palace move keeps a vector's inputs).
                hashed += " AND i.id IN (SELECT unnest(?::VARCHAR[]))"
                hashed_params.append(self._text_changed_ids(written_since, compare_unhashed=False))
            # Two narrow queries, not one join that reads the hash inputs of every row: the
            # items with no vector (ids only), then those whose vector's hash differs (their
            # hash inputs read for the compared rows only).
            rows = self._sql(
                "SELECT i.id FROM items i ANTI JOIN (SELECT item_id FROM embeddings WHERE model_name = ?) e "
                f"ON e.item_id = i.id WHERE {where} UNION "
                f"SELECT i.id FROM {items_narrowed('WHERE ' + hashed)} "
                "JOIN embeddings e ON e.item_id = i.id AND e.model_name = ? "
                f"WHERE {differs} ORDER BY 1",
                [model_name, *scope, *hashed_params, model_name],
            )
        return [r[0] for r in rows]

    def vector_schemes(self) -> dict[str, int]:
        """How many active messages have their vector made each way (`VECTOR_SCHEME_SQL`:
        "text", "composed", "pooled"); messages without a context are not counted. Reads
        every active message's metadata."""
        rows = self.query(f"SELECT s, count(*) FROM (SELECT {VECTOR_SCHEME_SQL} AS s FROM items i "
                          f"WHERE i.type = 'message' AND {ACTIVE_SQL}) WHERE s IS NOT NULL GROUP BY s")
        return {str(s): int(n) for s, n in rows}

    def stored_embedding_models(self) -> list[tuple[str, int]]:
        with self.transaction():
            return self._models()

    def _models(self) -> list[tuple[str, int]]:
        return [
            (m, int(d))
            for m, d in self._sql(
                "SELECT DISTINCT model_name, dimension FROM embeddings ORDER BY 1, 2"
            )
        ]

    def _fetch_embeddings(
        self, model_name: str, item_ids: list[str]
    ) -> tuple[list[str], list[str], np.ndarray]:
        check_id(model_name, "model_name")
        for i in item_ids:
            check_id(i, "item id")
        with self.transaction():
            dims = [d for m, d in self._models() if m == model_name]
            dim = dims[0] if dims else 0
            with self._staged(ids_table(list(dict.fromkeys(item_ids)))) as staged:
                # Rows found by id first, vectors fetched by row id (`_items_where`): a join
                # selecting the vectors reads every stored vector to return a few.
                result = self._arrow(
                    "WITH hit AS MATERIALIZED (SELECT e.rowid AS row_, w.ord AS ord_ "
                    f"FROM {staged} w JOIN embeddings e ON e.item_id = w.id WHERE e.model_name = $model) "
                    "SELECT e.item_id, e.content_hash, e.vector FROM embeddings e "
                    "JOIN hit h ON e.rowid = h.row_ ORDER BY h.ord_",
                    {"model": model_name},
                )
        ids = result.column("item_id").to_pylist()
        hashes = result.column("content_hash").to_pylist()
        if not ids:
            return [], [], np.zeros((0, dim), dtype=np.float32)
        flat = result.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False)
        return ids, hashes, flat.astype(np.float32, copy=False).reshape(len(ids), dim)


def _latest_vectors(rows: Sequence[tuple[str, str, np.ndarray]], dim: int) -> dict[str, tuple[str, np.ndarray]]:
    """id -> (content_hash, float32 vector), the last row winning; shapes checked."""
    latest: dict[str, tuple[str, np.ndarray]] = {}
    for row in as_list(rows, "rows"):
        if not isinstance(row, (tuple, list)) or len(row) != 3:
            raise TypeError("embedding rows must be (item_id, content_hash, vector) tuples")
        item_id, content_hash, vector = row
        check_id(item_id, "item_id")
        check_id(content_hash, "content_hash")
        vec = np.asarray(vector, dtype=np.float32)
        if vec.shape != (dim,):
            raise ValueError(f"vector for {item_id!r} has shape {vec.shape}, expected ({dim},)")
        latest[item_id] = (content_hash, vec)
    return latest
