"""The Litestar app of the Ollama proxy.

    app = create_proxy_app(settings)        # then uvicorn, or `serve_proxy(settings)`

Routes: `/api/chat`, `/api/generate` and the OpenAI-compatible `/v1/chat/completions` (POST
gets memory, `online.proxy.handlers`; other methods are forwarded), and everything else
(`/api/tags`, `/api/show`, `/api/embed`, `/api/pull`, `/api/version`, `/`, HEAD, the rest of
`/v1/...`) forwarded unchanged
(`online.proxy.forward`), but the memory API's paths (`/v1/recall`, ...: `MEMORY_API_PATHS`),
answered with a 404 naming `loci serve`. With the `enabled` flag off, every model request is a pure
pass-through. Given a `flags_file` (the CLI passes the config file), flags flipped there
apply to the next request, without a restart. Handlers return raw ASGI responses, so Litestar adds nothing to what the
upstream said.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from litestar import Litestar, Request, Response, route
from litestar.datastructures import State
from litestar.enums import HttpMethod
from litestar.exceptions import HTTPException
from litestar.types import ASGIApp

from online.proxy.config import ProxyConfig
from online.proxy.dialects import CHAT, GENERATE
from online.proxy.forward import forward
from online.proxy.handlers import MemoryHandlers
from online.proxy.openai_chat import OPENAI_CHAT
from online.proxy.upstream import Upstream, UpstreamTimeouts, error_body
from online.state import MemoryService
from pipelines.settings import LiveFlags, Settings

log = logging.getLogger("loci.proxy")

FORWARD_METHODS = [HttpMethod.GET, HttpMethod.HEAD, HttpMethod.POST, HttpMethod.PUT, HttpMethod.PATCH,
                   HttpMethod.DELETE, HttpMethod.OPTIONS]
# The memory API's paths (`loci serve`, `online.controllers`), each with what lies below it: no
# model server has them, so the proxy answers them itself rather than pass on a bare 404.
MEMORY_API_PATHS = ("/v1/recall", "/v1/turns", "/v1/tools", "/v1/items", "/v1/review", "/v1/stats",
                    "/v1/conflicts", "/v1/admin")


def _error(request: Request, status: int, message: str) -> Response[Any]:
    """An error in the shape of the API asked (OpenAI's on its path, Ollama's elsewhere)."""
    if request.url.path == OPENAI_CHAT.path:
        return Response(OPENAI_CHAT.error_body(message, status), status_code=status, media_type="application/json")
    return Response(error_body(message), status_code=status, media_type="application/json")


def _http_error(request: Request, exc: HTTPException) -> Response[Any]:
    return _error(request, exc.status_code, str(exc.detail))


def _internal_error(request: Request, exc: Exception) -> Response[Any]:
    state = request.app.state
    state.internal_errors = int(state.get("internal_errors", 0)) + 1
    log.exception("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    return _error(request, 500, "loci proxy: internal error (logged)")


def create_proxy_app(
    settings: Settings | None = None,
    *,
    service: MemoryService | None = None,
    upstream: str | None = None,
    config: ProxyConfig | None = None,
    embedder: Any = None,
    flags_file: str | Path | None = None,
) -> Litestar:
    """The proxy app. `upstream` defaults to `settings.ollama_host` (OLLAMA_HOST honoured by
    `load_settings`). Pass `service` to share a MemoryService (then not closed on shutdown);
    otherwise one is built from `settings` (and `embedder`) at start-up."""
    settings = settings or (service.settings if service else Settings())
    config = config or ProxyConfig()
    base_url = upstream or settings.ollama_host
    timeouts = UpstreamTimeouts.from_settings(settings)  # a nonsense limit fails here, at start-up
    live_flags = None if flags_file is None else LiveFlags(
        settings, flags_file, interval_s=config.flags_check_interval_s)
    handlers = MemoryHandlers(settings, config, live_flags)

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        owned = service is None
        svc = service or await anyio.to_thread.run_sync(lambda: MemoryService(settings, embedder=embedder))
        await anyio.to_thread.run_sync(svc.warm)
        client = Upstream(base_url, timeouts=timeouts)
        app.state.service, app.state.upstream = svc, client
        log.info("loci proxy forwarding to %s", base_url)
        try:
            yield
        finally:
            await client.aclose()
            app.state.service = app.state.upstream = None
            if owned:
                svc.close()

    @route("/api/chat", http_method=FORWARD_METHODS, request_max_body_size=config.max_request_bytes)
    async def chat(request: Request) -> ASGIApp:
        return await handlers.memory(request, CHAT)  # type: ignore[return-value]

    @route("/api/generate", http_method=FORWARD_METHODS, request_max_body_size=config.max_request_bytes)
    async def generate(request: Request) -> ASGIApp:
        return await handlers.memory(request, GENERATE)  # type: ignore[return-value]

    @route(OPENAI_CHAT.path, http_method=FORWARD_METHODS, request_max_body_size=config.max_request_bytes)
    async def openai_chat(request: Request) -> ASGIApp:
        return await handlers.memory(request, OPENAI_CHAT)  # type: ignore[return-value]

    # Everything else, bodies streamed without a size limit (model uploads go through here).
    @route(["/", "/{path:path}"], http_method=FORWARD_METHODS, request_max_body_size=None)
    async def passthrough(request: Request) -> ASGIApp:
        path = request.url.path
        if any(path == p or path.startswith(f"{p}/") for p in MEMORY_API_PATHS):
            # (a route of their own would shadow the catch-all for the model server's /v1/ paths)
            served_at = f"http://{settings.host}:{settings.port}"
            return _error(request, 404, f"{path} is the memory API, served by `loci serve` (at {served_at} by the "
                                        "settings' host and port), not by `loci proxy`, which serves the chat APIs "
                                        f"with memory and forwards the rest to the model server ({base_url})")
        return await forward(request, request.app.state.upstream)  # type: ignore[return-value]

    return Litestar(
        route_handlers=[chat, generate, openai_chat, passthrough],
        lifespan=[lifespan],
        state=State({"service": None, "upstream": None, "internal_errors": 0, "settings": settings,
                     "proxy_config": config, "upstream_url": base_url}),
        exception_handlers={HTTPException: _http_error, Exception: _internal_error},
        openapi_config=None,
        debug=False,
    )

