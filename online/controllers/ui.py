"""The memory browser at /ui: server-rendered pages (Jinja2 templates in online/templates/ui,
plain HTML forms, no script) over the same service, dispatcher and visibility rule as the
JSON API.

The caller is named by the query parameters `user_id`, `project_id`, `session_id`, `org_id`
(or the `X-Loci-*` headers), carried in every link and form; an empty part is a 400 page.
Times are shown in the viewer's zone: the `tz` query parameter (an IANA name, carried in
every link like the caller), else the `X-Loci-Timezone` header, else the `timezone`
setting; an unknown zone is a 400 page.
Pages: the palace (domains -> rooms -> shelves -> cards), search (the `memory.search`
action, filtered by tags: curated memories first, then what was said, as evidence), a card
(one memory with its revisions, audit events, inbox events and the earlier versions it
replaced), conflicts, and the quarantine queue, where a
reviewer approves or rejects a held proposal (POST, the `memory.review` action: an inbox
event like every write). Errors are 4xx pages, never a 500 for bad input.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Any
from urllib.parse import urlencode

import msgspec
from litestar import Controller, MediaType, Request, Response, get, post
from litestar.di import Provide
from litestar.enums import RequestEncodingType
from litestar.exceptions import HTTPException, NotFoundException, ValidationException
from litestar.params import Body, Parameter
from litestar.response import Redirect, Template

from online.controllers.deps import provide_identity, provide_service
from online.proxy.identity import TIMEZONE_HEADER
from online.review import awaiting_review, review_entry, review_refusal
from online.schemas import ID_PART_PATTERN, MAX_QUERY_CHARS
from online.state import MemoryService
from online.tools import ToolDispatcher, ToolError, item_summary
from online.tools.reads import SAID, shelved
from pipelines.item_report import (
    as_read,
    earlier_versions,
    history_as_read,
    history_rows,
    inbox_note,
    inbox_notes,
    shown_at,
    text_withheld,
)
from pipelines.materialize import held_edit, in_quarantine, pending_changes
from pipelines.palace import parse_path
from pipelines.recall.episodic import is_message, said_time
from pipelines.recall.render import pending_note
from pipelines.records import Identity, MemoryItem, scope_that_applies, time_zone

PALACE_LEVELS = ("domain", "room", "shelf", "card")
PAGE_SIZE = 50  # entries per page of a list (quarantine, conflicts, a shelf's cards, unplaced)
PageNumber = Annotated[int, Parameter(query="page", ge=1, le=1_000_000)]
SEARCH_HITS = 100  # what one search page reads (memory.search's largest `k`), PAGE_SIZE a page


@dataclass(frozen=True)
class Pager:
    """Which slice of a long list a page shows, and the links around it."""

    page: int
    pages: int
    total: int

    @property
    def start(self) -> int:
        return (self.page - 1) * PAGE_SIZE


def paged(entries: list[Any], page: int) -> tuple[list[Any], Pager]:
    """Page `page` (1-based) of `entries`; a page past the end is a 404, not an empty list
    that looks like "nothing here"."""
    pages = max(1, -(-len(entries) // PAGE_SIZE))
    if page > pages:
        raise NotFoundException(f"no page {page}: there {'is' if pages == 1 else 'are'} {pages}")
    pager = Pager(page=page, pages=pages, total=len(entries))
    return entries[pager.start:pager.start + PAGE_SIZE], pager


@dataclass
class ReviewForm:
    decision: str
    note: str = ""


def identity_query(who: Identity, **extra: Any) -> str:
    """The query string that names `who` (and `extra`), for links and form actions."""
    params = {"user_id": who.user_id, "project_id": who.project_id, "session_id": who.session_id,
              "org_id": who.org_id, **{k: v for k, v in extra.items() if v not in (None, "")}}
    return urlencode(params, doseq=True)  # a list (the search's tags) as one parameter each


@dataclass(frozen=True)
class ViewerZone:
    """The zone a page shows times in (`name`), and whether the request named it (`asked`:
    then every link carries it, as it carries the caller)."""

    name: str
    asked: str | None

    def shown(self, stamp: Any) -> str:
        """An ISO-8601 time on the viewer's clock (`item_report.shown_at`)."""
        return shown_at(stamp, self.name)


def viewer_zone(request: Request, default: str) -> ViewerZone:
    """The `tz` query parameter, else the `X-Loci-Timezone` header, else `default`."""
    asked = request.query_params.get("tz") or request.headers.get(TIMEZONE_HEADER) or None
    if asked is not None:
        try:
            time_zone(asked)
        except ValueError as exc:
            raise ToolError(400, f"tz: {exc}") from None
    return ViewerZone(asked or default, asked)


def _page(name: str, who: Identity | None, status_code: int = 200, zone: ViewerZone | None = None,
          **context: Any) -> Template:
    pager: Pager | None = context.get("pager")
    extra = context.pop("page_params", {})
    if zone is not None and zone.asked:
        extra = {**extra, "tz": zone.asked}
    if who is not None and pager is not None and pager.pages > 1:
        context["page_links"] = {
            "prev": identity_query(who, **extra, page=pager.page - 1) if pager.page > 1 else None,
            "next": identity_query(who, **extra, page=pager.page + 1) if pager.page < pager.pages else None,
        }
    zone = zone or ViewerZone("UTC", None)
    q = identity_query(who, tz=zone.asked) if who else ""
    return Template(template_name=f"ui/{name}.html", status_code=status_code,
                    context={"who": who, "q": q, "when": zone.shown, "zone": zone, **context})


def caller_of(request: Request) -> Identity | None:
    """Whom a /ui request names in its query, when every part it gives is an id (a 4xx page
    keeps the caller in its links, like every page); None when a part is malformed."""
    parts: dict[str, str] = {}
    for name in ("user_id", "project_id", "session_id", "org_id"):
        value = request.query_params.get(name)
        if value is not None:
            if len(value) > 200 or not re.match(ID_PART_PATTERN, value):
                return None
            parts[name] = value
    return Identity(**parts)


def error_page(request: Request, exc: HTTPException | ToolError) -> Response:
    """A 4xx of a /ui page (bad input, unknown or invisible id, a refused review) as an HTML
    page with its status and message. Anything unexpected still reaches the app's handler,
    which logs and counts it."""
    if isinstance(exc, ToolError):
        status, message = exc.status, exc.message
    else:
        status, message = exc.status_code, str(exc.detail)
        if isinstance(exc, ValidationException) and isinstance(exc.extra, list) and exc.extra:
            first = exc.extra[0] if isinstance(exc.extra[0], dict) else {"message": str(exc.extra[0])}
            message = f"{message}: {first.get('key', '')} {first.get('message', '')}".strip()
    who = caller_of(request)
    try:
        tz = viewer_zone(request, "UTC").asked
    except ToolError:
        tz = None  # the bad zone is what this page reports
    extra = getattr(exc, "extra", None)
    replaced_by = extra.get("replaced_by") if isinstance(extra, dict) else None
    template = request.app.template_engine.get_template("ui/error.html")
    return Response(template.render(status=status, message=message, who=who,
                                    q=identity_query(who, tz=tz) if who else "",
                                    replaced_by=replaced_by),
                    status_code=status, media_type=MediaType.HTML)


def earlier_of(service: MemoryService, item: MemoryItem, who: Identity) -> list[dict[str, Any]]:
    """The claims `item` replaced, newest first, with who stated each and when, as `loci show`
    lists them (`item_report.earlier_versions`), of what `who` may see (nothing forgotten:
    a forgotten claim's card shows none of its text either)."""
    view = service.view()

    def visible(old_id: str) -> MemoryItem | None:
        old = service.get_item(old_id, who, view)
        if old is None:
            retired = service.retired(old_id, who, view)
            old = retired[0] if retired is not None else None
        return None if old is None or text_withheld(old) else old

    return earlier_versions(item, visible, lambda old_id: service.item_history(old_id, view).audit, [],
                            lambda old_id: service.item_history(old_id, view).revisions)


def _location_of(item: MemoryItem) -> str | None:
    raw = item.metadata.get("palace")
    return raw if isinstance(raw, str) else None


class UIController(Controller):
    path = "/ui"
    tags = ["ui"]
    include_in_schema = False
    dependencies = {
        "service": Provide(provide_service, sync_to_thread=False),
        "identity": Provide(provide_identity, sync_to_thread=False),
    }
    exception_handlers = {HTTPException: error_page, ToolError: error_page}

    @get("/", sync_to_thread=True)
    def home(self, request: Request, service: MemoryService, identity: Identity) -> Template:
        view = service.view()
        report = service.visible_report(identity, view)
        quarantined = len(awaiting_review(view, identity))
        return _page("home", identity, zone=viewer_zone(request, service.settings.timezone), report=report,
                     quarantined=quarantined)

    @get("/palace", sync_to_thread=True)
    def palace(
        self,
        request: Request,
        service: MemoryService,
        identity: Identity,
        location: Annotated[str, Parameter(query="path", max_length=1000)] = "",
        page: PageNumber = 1,
    ) -> Template:
        dispatcher = ToolDispatcher(service)
        try:
            parts = parse_path(location, max_depth=3)
        except ValueError as exc:
            raise ToolError(400, f"palace path: {exc}") from None
        path = "/".join(parts)
        listed = dispatcher.dispatch("memory.palace.list", {"path": path}, identity)["result"]
        cards: list[dict[str, Any]] = []
        unplaced: list[dict[str, Any]] = []
        if len(parts) == 3:  # a shelf: its children are cards, shown with their items
            cards = dispatcher.dispatch("memory.palace.get", {"location": path}, identity)["result"]["items"]
        elif not parts:  # items the pipeline has not placed yet (written since the last run)
            unplaced = [item_summary(it) for it in shelved(service.view(), identity)
                        if _location_of(it) is None and it.type != "message"]
        shown, pager = paged(cards or unplaced, page)  # at most one of the two lists is non-empty
        cards, unplaced = (shown, []) if cards else ([], shown)
        crumbs = [("/".join(parts[: i + 1]), part) for i, part in enumerate(parts)]
        level = PALACE_LEVELS[len(parts)]
        return _page("palace", identity, zone=viewer_zone(request, service.settings.timezone), path=path,
                     crumbs=crumbs, children=listed["children"],
                     level=level, cards=cards, unplaced=unplaced, pager=pager, page_params={"path": path})

    @get("/items/{item_id:str}", sync_to_thread=True)
    def card(
        self,
        request: Request,
        item_id: Annotated[str, Parameter(min_length=1, max_length=200)],
        service: MemoryService,
        identity: Identity,
    ) -> Template:
        zone = viewer_zone(request, service.settings.timezone)
        found = service.read_item(item_id, identity, "ui.card")
        replaced: tuple[str, str] | None = None
        if found is None:  # merged or superseded: its history, and what took its place
            retired = service.read_replaced(item_id, identity, "ui.card")
            if retired is None:
                raise NotFoundException(f"{service.no_item(item_id, identity)} (or not visible to you)")
            item, replaced, history = retired
            source = "history"
        else:
            item, view, history = found
            source = view.source_of(item_id)
            replaced = service.replaced_by(item_id, identity, view)  # a correction since the snapshot
        # Forgotten: who forgot it and when stay, its words go (`as_read`, as in the export).
        forgotten = text_withheld(item)
        revisions, events, inbox = history_as_read(item, history.revisions, history.audit, history.inbox)
        item = as_read(item)
        published = [{**row, "note": ""} if forgotten else row
                     for row in history_rows({"revisions": revisions, "events": events})]
        # A pending edit's old values: the item as the last consolidation stored it.
        stored = revisions[-1]["snapshot"] if revisions else None
        pending = [ev for ev in inbox if ev["seq"] > history.watermark]
        notes = dict(zip((ev["seq"] for ev in pending), inbox_notes(pending, stored), strict=True))
        inbox = [{**ev, "note": notes.get(ev["seq"]) or inbox_note(ev), "pending": ev["seq"] > history.watermark}
                 for ev in inbox]
        edit = held_edit(item) if replaced is None else None  # an edit waiting beside it, for review
        # What waits for a reviewer, said as recall says it to the model (`pending_note`), and
        # the held claims contradicting it, each a link to its own card and review form.
        rivals = [] if replaced is not None or source == "history" else service.held_rivals(item, identity)
        # a turn whose claim a correction replaced since: what was said then, the correction holds
        said_otherwise = [] if source == "history" else service.said_otherwise_by(item, identity, view)
        said = said_time(item) if is_message(item) else None  # a turn's time: when said, no window
        return _page("card", identity, zone=zone, item=msgspec.to_builtins(item), source=source, replaced=replaced,
                     forgotten=forgotten, earlier=[] if forgotten else earlier_of(service, item, identity),
                     location=_location_of(item), quarantined=replaced is None and in_quarantine(item),
                     held=review_entry(item) if edit is not None else None,
                     refusal=review_refusal(item, identity, service.settings),  # who may decide what waits
                     pending=pending_note(pending_changes(item, rivals)) if replaced is None else "",
                     rivals=[review_entry(it) for it in rivals], said_otherwise=said_otherwise,
                     published=published, inbox=inbox, history_published=history.published,
                     watermark=history.watermark, said_at=said.isoformat() if said else None)

    @get("/search", sync_to_thread=True)
    def search(
        self,
        request: Request,
        service: MemoryService,
        identity: Identity,
        asked: Annotated[str | None, Parameter(query="q", max_length=MAX_QUERY_CHARS)] = None,
        tags: Annotated[list[str] | None, Parameter(query="tag")] = None,
        page: PageNumber = 1,
    ) -> Template:
        """The `memory.search` action as a page: the form alone until a query is given; its
        tags, type checks and answer (curated first, turns as evidence) are the action's."""
        zone = viewer_zone(request, service.settings.timezone)
        tags = [t for t in tags or [] if t]
        context: dict[str, Any] = {"query": asked or "", "tags": tags, "memories": [], "said": [],
                                   "message": "", "said_label": SAID}
        if asked is None:
            return _page("search", identity, zone=zone, **context)
        args = {"query": asked, "tags": tags, "k": SEARCH_HITS, **({"tz": zone.asked} if zone.asked else {})}
        found = ToolDispatcher(service).dispatch("memory.search", args, identity)["result"]
        shown, pager = paged(found["hits"], page)
        return _page("search", identity, zone=zone, pager=pager, page_params={"q": asked, "tag": tags},
                     **{**context, "message": found["message"], "found": found["found"],
                        "memories": [h for h in shown if "evidence" not in h],
                        "said": [h for h in shown if "evidence" in h]})

    @get("/conflicts", sync_to_thread=True)
    def conflicts(self, request: Request, service: MemoryService, identity: Identity,
                  page: PageNumber = 1) -> Template:
        pairs, pager = paged(service.conflicts(identity), page)
        return _page("conflicts", identity, zone=viewer_zone(request, service.settings.timezone), pager=pager,
                     conflicts=[{"a": review_entry(a), "b": review_entry(b), "reason": why,
                                 "applies": scope_that_applies(a.scope.kind, b.scope.kind)} for a, b, why in pairs])

    @get("/quarantine", sync_to_thread=True)
    def quarantine(
        self,
        request: Request,
        service: MemoryService,
        identity: Identity,
        done: Annotated[str | None, Parameter(query="done", max_length=300)] = None,
        page: PageNumber = 1,
    ) -> Template:
        view = service.view()
        held, pager = paged(awaiting_review(view, identity), page)
        service.audit(identity, "ui.quarantine", {"page": page}, [it.id for it in held])
        return _page("quarantine", identity, zone=viewer_zone(request, service.settings.timezone),
                     items=[{**review_entry(it), "refusal": review_refusal(it, identity, service.settings)}
                            for it in held], done=done, pager=pager)

    @post("/quarantine/{item_id:str}", sync_to_thread=True, status_code=303)
    def review(
        self,
        request: Request,
        item_id: Annotated[str, Parameter(min_length=1, max_length=200)],
        data: Annotated[ReviewForm, Body(media_type=RequestEncodingType.URL_ENCODED)],
        service: MemoryService,
        identity: Identity,
    ) -> Redirect:
        if data.decision not in ("approve", "reject"):
            raise ToolError(400, f"decision must be approve or reject, not {data.decision!r}")
        ToolDispatcher(service).dispatch("memory.review", {"id": item_id, "decision": data.decision,
                                                           "note": data.note}, identity)
        done = f"{'approved' if data.decision == 'approve' else 'rejected'} {item_id}"
        tz = viewer_zone(request, service.settings.timezone).asked
        return Redirect(path=f"/ui/quarantine?{identity_query(identity, done=done, tz=tz)}", status_code=303)


__all__ = ["UIController", "error_page", "identity_query", "inbox_note"]
