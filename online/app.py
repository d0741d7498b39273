"""The Litestar app factory.

    app = create_app(settings)              # uvicorn online.server:... or TestClient(app)

State (the `MemoryService`: snapshot, delta, engine) is built in the lifespan, off the
event loop, and kept on `app.state.service`. Handlers that embed, search FAISS or touch
SQLite are sync handlers run in the thread pool (`sync_to_thread=True`).

Errors are always JSON `{"ok": false, "status_code", "error", "detail"}`: 4xx for bad input
(unknown fields, wrong types, oversize bodies -> 413, empty queries, unknown ids, unknown
tool actions), 503 with the reason when the inbox cannot be reached or written (a
PostgreSQL server down, a SQLite file locked too long: retry later), and a logged, generic
500 for anything unexpected (counted in
`app.state.internal_errors`, so tests can prove bad input never gets there).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from litestar import Litestar, Request, Response
from litestar.datastructures import State
from litestar.exceptions import HTTPException, MethodNotAllowedException, ValidationException
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import SwaggerRenderPlugin
from litestar.plugins.jinja import JinjaTemplateEngine
from litestar.status_codes import HTTP_404_NOT_FOUND, HTTP_500_INTERNAL_SERVER_ERROR, HTTP_503_SERVICE_UNAVAILABLE
from litestar.template.config import TemplateConfig

from online.controllers import CONTROLLERS
from online.controllers.deps import strict_body
from online.controllers.tools import no_route
from online.schemas import ErrorResponse
from online.state import DEFAULT_CHECK_INTERVAL_MS, MemoryService
from online.tools import ToolError
from pipelines.inbox import InboxError
from pipelines.settings import Settings

log = logging.getLogger("loci.online")

API_VERSION = "1"
# The /ui pages' Jinja2 templates, shipped in the package (pyproject package-data).
TEMPLATES = Path(__file__).parent / "templates"


def _error(status: int, message: str, detail: Any = None) -> Response[ErrorResponse]:
    return Response(ErrorResponse(status_code=status, error=message, detail=detail), status_code=status)


def _http_error(request: Request, exc: HTTPException) -> Response[ErrorResponse]:
    if exc.status_code == HTTP_404_NOT_FOUND and request.scope.get("route_handler") is None:
        # A path no route serves (a route's own 404, an unknown id, is answered below): told
        # the routes there are and the action it may have meant (`no_route`).
        routes = ((route.path, getattr(route, "methods", ())) for route in request.app.routes)
        return _error(exc.status_code, *no_route(request.method, request.url.path, routes))
    message = str(exc.detail)
    extra = exc.extra
    if isinstance(exc, ValidationException) and isinstance(extra, list) and extra:
        # Say what is wrong, not only that something is: the first problem goes in `error`.
        first = extra[0] if isinstance(extra[0], dict) else {"message": str(extra[0])}
        where = f" ({first.get('source', '')} {first.get('key', '')})".replace("( ", "(").rstrip()
        message = f"{message}: {first.get('message', '')}{where if first.get('key') else ''}"
    allowed = (exc.headers or {}).get("allow")
    if isinstance(exc, MethodNotAllowedException) and allowed:
        allowed = ", ".join(m for m in allowed.split(", ") if m not in ("OPTIONS", "HEAD"))
        message = f"{request.method} {request.url.path} is not served: it takes {allowed} (the API: /schema)"
    response = _error(exc.status_code, message, extra or None)
    if exc.headers:
        response.headers.update(exc.headers)
    return response


def _tool_error(request: Request, exc: ToolError) -> Response[ErrorResponse]:
    return _error(exc.status, exc.message, exc.detail)


def _inbox_unavailable(request: Request, exc: InboxError) -> Response[ErrorResponse]:
    """The store every write and read goes through is out of reach: the request was not
    acknowledged, and is answered as unavailable rather than as a server bug."""
    log.warning("inbox unavailable on %s %s: %s", request.method, request.url.path, exc)
    response = _error(HTTP_503_SERVICE_UNAVAILABLE, f"the memory inbox is unavailable, retry later: {exc}")
    response.headers["Retry-After"] = "5"
    return response


def _internal_error(request: Request, exc: Exception) -> Response[ErrorResponse]:
    state = request.app.state
    state.internal_errors = int(state.get("internal_errors", 0)) + 1
    log.exception("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    return _error(HTTP_500_INTERNAL_SERVER_ERROR, "internal server error (logged)")


STALE_HEADER = "X-Loci-Stale-Since"  # set while the inbox is down (`MemoryService.inbox_outage`)


def create_app(
    settings: Settings | None = None,
    *,
    embedder: Any = None,
    policy: Any = None,
    service: MemoryService | None = None,
    check_interval_ms: float = DEFAULT_CHECK_INTERVAL_MS,
) -> Litestar:
    """The recall service. Pass `service` to share an already-built MemoryService (it is then
    not closed on shutdown); otherwise one is built from `settings`/`embedder` at start-up."""
    settings = settings or (service.settings if service else Settings())

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        owned = service is None
        svc = service or await anyio.to_thread.run_sync(
            lambda: MemoryService(settings, embedder=embedder, policy=policy,
                                  check_interval_ms=check_interval_ms)
        )
        await anyio.to_thread.run_sync(svc.warm)  # load the embedding model before serving
        app.state.service = svc
        try:
            yield
        finally:
            app.state.service = None
            if owned:
                svc.close()

    state = State({"service": None, "internal_errors": 0, "settings": settings})

    async def label_stale(response: Response) -> Response:
        """Every answer given while the inbox cannot be read says since when it may miss writes.
        Async on purpose: Litestar runs a sync hook in the thread pool, a second thread hop
        per request (and a wait for the GIL behind a running recall) for an attribute read."""
        svc = state.get("service")
        outage = getattr(svc, "inbox_outage", None)
        if outage is not None:
            response.headers[STALE_HEADER] = outage.since_iso
        return response

    return Litestar(
        route_handlers=CONTROLLERS,
        after_request=label_stale,
        before_request=strict_body,
        lifespan=[lifespan],
        state=state,
        request_max_body_size=settings.max_body_bytes,
        template_config=TemplateConfig(directory=TEMPLATES, engine=JinjaTemplateEngine),
        exception_handlers={
            HTTPException: _http_error,
            ToolError: _tool_error,
            InboxError: _inbox_unavailable,
            Exception: _internal_error,
        },
        openapi_config=OpenAPIConfig(
            title="Loci recall service",
            version=API_VERSION,
            description=(
                "Governed, tiered long-term memory for LLM chat loops: capture turns, recall, "
                "memory.* tools. GET endpoints take the caller identity from the query "
                "parameters user_id/project_id/session_id/org_id or the headers X-Loci-User, "
                "X-Loci-Project, X-Loci-Session, X-Loci-Org; POST bodies carry `identity`."
            ),
            path="/schema",
            render_plugins=[SwaggerRenderPlugin()],
        ),
        debug=False,
    )
