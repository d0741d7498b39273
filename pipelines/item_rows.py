"""MemoryItem <-> Arrow rows: one codec, derived from the record's fields.

Both stores of items keep one row per item with a column per field: the warehouse
(`items` table: scope flattened into owner columns, links in their own table, lists as
native list columns) and the snapshot (`items.parquet`: every nested field as JSON text).
`ItemRowCodec` derives either layout from `msgspec.structs.fields(MemoryItem)`, so a new
field reaches both without being written out by hand:
- a scalar field (str, literal of str, int, float, bool, or one of those `| None`) is a
  typed column;
- `list[str]` is a list column when `native_lists`, else JSON text;
- a field named in `flatten` (a struct) becomes one column per sub-field, renamed by the
  mapping given (unnamed sub-fields keep their own name);
- a field named in `omit` has no column (its value comes back through `extra`);
- anything else (structs, dicts, lists of structs) is JSON text, decoded exactly on read.
"""

from __future__ import annotations

import contextlib
import gc
import operator
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import msgspec
import pyarrow as pa

from pipelines.records import MemoryItem


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic GC while building many small objects at once: its collections
    rescan every live object (measured: 3x slower decoding of 20k items). The objects built
    under it hold no reference cycles."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


_SCALAR_ARROW: dict[type, pa.DataType] = {
    msgspec.inspect.StrType: pa.string(),
    msgspec.inspect.LiteralType: pa.string(),
    msgspec.inspect.IntType: pa.int64(),
    msgspec.inspect.FloatType: pa.float64(),
    msgspec.inspect.BoolType: pa.bool_(),
}


def _arrow_type(annotation: Any, native_lists: bool) -> pa.DataType | None:
    """Arrow type of a field stored as a typed column; None means 'store as JSON text'."""
    info = msgspec.inspect.type_info(annotation)
    if isinstance(info, msgspec.inspect.UnionType):
        kinds = [t for t in info.types if not isinstance(t, msgspec.inspect.NoneType)]
        if len(kinds) != 1:
            return None
        info = kinds[0]
    if isinstance(info, msgspec.inspect.LiteralType) and not all(isinstance(v, str) for v in info.values):
        return None
    if isinstance(info, msgspec.inspect.ListType) and native_lists:
        inner = _SCALAR_ARROW.get(type(info.item_type))
        return pa.list_(inner) if inner == pa.string() else None
    return _SCALAR_ARROW.get(type(info))


class ItemRowCodec:
    """One MemoryItem layout over Arrow columns (see the module docstring)."""

    def __init__(
        self,
        *,
        flatten: Mapping[str, Mapping[str, str]] | None = None,
        omit: Sequence[str] = (),
        native_lists: bool = False,
        metadata: Mapping[bytes, bytes] | None = None,
    ) -> None:
        flatten = dict(flatten or {})
        self.omitted = frozenset(omit)
        fields: list[pa.Field] = []
        json_columns: set[str] = set()
        # column -> (field, sub-field or None)
        self._sources: dict[str, tuple[str, str | None]] = {}
        self._struct_types: dict[str, type] = {}
        for f in msgspec.structs.fields(MemoryItem):
            if f.name in self.omitted:
                continue
            if f.name in flatten:
                self._struct_types[f.name] = f.type
                renames = flatten[f.name]
                for sub in msgspec.structs.fields(f.type):
                    column = renames.get(sub.name, sub.name)
                    fields.append(pa.field(column, _arrow_type(sub.type, native_lists) or pa.string()))
                    self._sources[column] = (f.name, sub.name)
                continue
            arrow = _arrow_type(f.type, native_lists)
            if arrow is None:
                json_columns.add(f.name)
                arrow = pa.string()
            fields.append(pa.field(f.name, arrow))
            self._sources[f.name] = (f.name, None)
        self.json_columns = frozenset(json_columns)
        types = {f.name: f.type for f in msgspec.structs.fields(MemoryItem)}
        self._decoders = {name: msgspec.json.Decoder(types[name]) for name in json_columns}
        self.schema = pa.schema(fields, metadata=dict(metadata) if metadata else None)
        self.columns: tuple[str, ...] = tuple(self.schema.names)

    def to_table(self, items: Sequence[MemoryItem]) -> pa.Table:
        """The items as one Arrow table in this layout."""
        encode = msgspec.json.encode
        with gc_paused():
            columns: dict[str, list[Any]] = {}
            for column, (name, sub) in self._sources.items():
                if sub is not None:
                    get = operator.attrgetter(f"{name}.{sub}")
                    columns[column] = [get(i) for i in items]
                elif name in self.json_columns:
                    columns[column] = [encode(getattr(i, name)).decode("utf-8") for i in items]
                else:
                    columns[column] = [getattr(i, name) for i in items]
            return pa.table(columns, schema=self.schema)

    def from_table(
        self,
        table: pa.Table,
        extra: Mapping[str, Sequence[Any]] | None = None,
        *,
        validate: bool = True,
    ) -> list[MemoryItem]:
        """Items from a table in this layout (its columns may come in any order); `extra`
        gives, per omitted field, one typed value per row. `validate=False` trusts the
        scalar columns (a store whose schema already checks them) and builds the records
        directly, which is about twice as fast."""
        missing = set(self.columns) - set(table.column_names)
        if missing:
            raise ValueError(f"items table lacks columns {sorted(missing)}")
        data = table.select(list(self.columns)).to_pydict()
        with gc_paused():
            fields = self._field_values(data, validate)
            for name, values in (extra or {}).items():
                fields[name] = list(values)
            if not validate:
                ordered = [fields[f.name] for f in msgspec.structs.fields(MemoryItem)]
                return [MemoryItem(*vals) for vals in zip(*ordered)]
            names = list(fields)
            rows = [dict(zip(names, vals)) for vals in zip(*fields.values())]
            return msgspec.convert(rows, list[MemoryItem])

    def _field_values(self, data: dict[str, list[Any]], validate: bool) -> dict[str, list[Any]]:
        """field name -> one value per row: JSON decoded and flattened structs rebuilt, as
        plain values for msgspec to validate, or (`validate=False`) as typed records."""
        fields: dict[str, list[Any]] = {}
        nested: dict[str, list[list[Any]]] = {}
        for column, (name, sub) in self._sources.items():
            values = data[column]
            if sub is not None:
                nested.setdefault(name, []).append(values)
            elif name in self.json_columns:
                decode = msgspec.json.decode if validate else self._decoders[name].decode
                fields[name] = [decode(v) for v in values]
            else:
                fields[name] = values
        for name, columns in nested.items():
            struct = self._struct_types[name]
            if validate:
                keys = [f.name for f in msgspec.structs.fields(struct)]
                fields[name] = [dict(zip(keys, vals)) for vals in zip(*columns)]
            else:
                fields[name] = [struct(*vals) for vals in zip(*columns)]
        return fields
