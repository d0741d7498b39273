"""Memory palace: a deterministic location index `domain/room/shelf/card` of every active item.

- domain: the corpus (`metadata["corpus"]`, for document-derived items) else the place of
  the item's audience (`scope_domain`): the org for an org-wide item, the user for a
  user's own memory, else the project (a session's items and chat turns are its project's);
- room: the topic cluster — `room_of` (from clustering: item id -> topic, as a dict or a
  function of the item) when it names one, else the item's most salient tag (models list
  the main tag first), else its first entity, else "general";
- shelf: the memory type;
- card: the item id.

Every segment is slugified (NFKC, lower case, runs of anything but letters and digits of
any script become "-", at most 40 characters) so a path always splits back into its four parts. The card
keeps the id, with "/" and whitespace replaced by "_".

Browsing (the `memory.palace.list` / `memory.palace.get` actions) works on a list of
locations: `palace_list` gives the children one level below a path ("" lists domains),
`palace_get` the item ids at a location or below it. A malformed path raises PalaceError
(a ValueError); a well-formed path that names nothing returns [].
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pipelines.records import MemoryItem, PalaceLocation, Scope

GENERAL_ROOM = "general"
DEFAULT_DOMAIN = "default"
SLUG_LIMIT = 40
_NON_SLUG = re.compile(r"[\W_]+")  # anything but letters and digits (any script)
_CARD_UNSAFE = re.compile(r"[/\s]+")
_LEVELS = ("domain", "room", "shelf", "card")

RoomOf = Mapping[str, str] | Callable[[MemoryItem], "str | None"]


class PalaceError(ValueError):
    """A malformed palace path, or locations/items of the wrong type."""


def slugify(text: str, limit: int = SLUG_LIMIT) -> str:
    """"Postgres 16 / Replicas" -> "postgres-16-replicas"; letters of any script are kept
    ("Café" -> "café"); "" when nothing is left."""
    normal = unicodedata.normalize("NFKC", str(text)).lower()
    return _NON_SLUG.sub("-", normal).strip("-")[:limit].strip("-")


def salient_topic(item: MemoryItem) -> str | None:
    """The item's own topic: first tag that slugifies, else first entity, else None."""
    for value in (*item.tags, *item.entities):
        slug = slugify(value)
        if slug:
            return slug
    return None


def scope_domain(item: MemoryItem) -> str:
    """The palace domain of `item` by its scope: the place of those who read it, so an
    org-wide rule is not filed under the project of whoever stated it, nor a user's own
    memory (a preference that follows them everywhere) under the project they said it in,
    which others who read it may not even see. A chat turn (user-scoped so its speaker
    recalls it anywhere) stays in the project it was said in, as a session's items do."""
    scope = item.scope
    if scope.kind == "org":
        owner = scope.org_id
    elif scope.kind == "user" and item.type != "message":
        owner = scope.user_id
    else:
        owner = scope.project_id
    return slugify(owner) or DEFAULT_DOMAIN


def location_of(item: MemoryItem, room: str | None = None) -> PalaceLocation:
    """Where `item` lives: a location a caller assigned (`metadata["palace_pin"]`, set by
    the memory.palace.assign action) wins over the derived one."""
    pin = item.metadata.get("palace_pin")
    if isinstance(pin, dict) and all(isinstance(pin.get(k), str) and slugify(pin[k]) for k in _LEVELS[:3]):
        card = _CARD_UNSAFE.sub("_", item.id.strip()) or "_"
        return PalaceLocation(item_id=item.id, domain=slugify(pin["domain"]), room=slugify(pin["room"]),
                              shelf=slugify(pin["shelf"]), card=card)
    corpus = item.metadata.get("corpus") if isinstance(item.metadata.get("corpus"), str) else None
    domain = slugify(corpus or "") or scope_domain(item)
    room_slug = slugify(room or "") or salient_topic(item) or GENERAL_ROOM
    card = _CARD_UNSAFE.sub("_", item.id.strip()) or "_"
    return PalaceLocation(item_id=item.id, domain=domain, room=room_slug, shelf=slugify(item.type) or "note", card=card)


def domain_of_inputs(inputs: Mapping[str, Any]) -> str:
    """The domain `location_of` gives an item with these inputs (the warehouse's
    `DOMAIN_INPUTS`: scope kind and owners, type, and the metadata's corpus and pin as JSON
    text or None): what a store located under an older rule is compared against."""
    metadata = {key: json.loads(inputs[name]) for key, name in (("corpus", "corpus"), ("palace_pin", "pin"))
                if inputs.get(name) is not None}
    scope = Scope(kind=inputs["scope_kind"], org_id=inputs["org_id"], user_id=inputs["user_id"],
                  project_id=inputs["project_id"])
    item = MemoryItem(id="_", tier="ltm", type=inputs["type"], title="", content="", scope=scope, metadata=metadata)
    return location_of(item).domain


def assign_locations(items: Sequence[MemoryItem], *, room_of: RoomOf | None = None) -> list[PalaceLocation]:
    """One location per item, sorted by item id (the same for any order of `items`)."""
    seen: set[str] = set()
    for item in items:
        if not isinstance(item, MemoryItem):
            raise PalaceError(f"items must be MemoryItem records, not {type(item).__name__}")
        if item.id in seen:
            raise PalaceError(f"duplicate item id {item.id!r}")
        seen.add(item.id)
    if room_of is None:
        lookup: Callable[[MemoryItem], str | None] = lambda item: None  # noqa: E731
    elif isinstance(room_of, Mapping):
        lookup = lambda item: room_of.get(item.id)  # noqa: E731
    elif callable(room_of):
        lookup = room_of
    else:
        raise PalaceError(f"room_of must be a mapping or a function, not {type(room_of).__name__}")
    out = []
    for item in sorted(items, key=lambda i: i.id):
        room = lookup(item)
        out.append(location_of(item, room if isinstance(room, str) else None))
    return out


def parse_path(path: str, *, max_depth: int = 4) -> list[str]:
    """Segments of a palace path ("" = the root). Leading/trailing "/" and surrounding
    spaces are ignored; empty inner segments, "." / "..", whitespace or control characters
    in a segment, or more than `max_depth` segments raise PalaceError."""
    if not isinstance(path, str):
        raise PalaceError(f"a palace path must be a string, not {type(path).__name__}")
    text = path.strip().strip("/")
    if not text:
        return []
    parts = text.split("/")
    for part in parts:
        if not part:
            raise PalaceError(f"malformed palace path {path!r}: empty segment")
        if part in (".", "..") or any(c.isspace() or unicodedata.category(c).startswith("C") for c in part):
            raise PalaceError(f"malformed palace path {path!r}: bad segment {part!r}")
    if len(parts) > max_depth:
        levels = "/".join(_LEVELS[:max_depth])
        raise PalaceError(f"malformed palace path {path!r}: at most {max_depth} segments ({levels})")
    return parts


def _checked(locations: Sequence[PalaceLocation]) -> list[PalaceLocation]:
    out = list(locations)
    for loc in out:
        if not isinstance(loc, PalaceLocation):
            raise PalaceError(f"locations must be PalaceLocation records, not {type(loc).__name__}")
    return out


def _parts(loc: PalaceLocation) -> tuple[str, str, str, str]:
    return (loc.domain, loc.room, loc.shelf, loc.card)


def palace_list(locations: Sequence[PalaceLocation], path: str) -> list[str]:
    """Children one level below `path`: "" -> domains, "d" -> rooms, "d/r" -> shelves,
    "d/r/s" -> cards. Sorted. A card has no children (PalaceError)."""
    prefix = tuple(parse_path(path, max_depth=3))
    depth = len(prefix)
    return sorted({_parts(loc)[depth] for loc in _checked(locations) if _parts(loc)[:depth] == prefix})


def palace_get(locations: Sequence[PalaceLocation], location: str) -> list[str]:
    """Item ids at `location` or below it ("" = everything), ordered by location path."""
    prefix = tuple(parse_path(location, max_depth=4))
    depth = len(prefix)
    found = [loc for loc in _checked(locations) if _parts(loc)[:depth] == prefix]
    return [loc.item_id for loc in sorted(found, key=lambda loc: (_parts(loc), loc.item_id))]
