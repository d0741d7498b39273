"""A raw ASGI response: exactly the status, headers and body bytes given.

Litestar's own responses add a content type when there is none and normalise headers; a
proxy must not, so the handlers return this ASGI app instead (Litestar calls it as is).
A streamed body is sent piece by piece as it is produced; when the client goes away the
body iterator is closed at once (so an interrupted answer is never landed as complete).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable
from typing import Any

import anyio
from litestar.types import Receive, Scope, Send

JSON_TYPE = "application/json; charset=utf-8"
NDJSON_TYPE = "application/x-ndjson"


class RawResponse:
    def __init__(self, status: int, headers: Iterable[tuple[str, str]],
                 body: bytes | AsyncIterator[bytes] | None = None) -> None:
        self.status = status
        self.headers = [(k.lower().encode("latin-1"), str(v).encode("latin-1")) for k, v in headers]
        self.body = body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": self.status, "headers": self.headers})
        if self.body is None or isinstance(self.body, bytes):
            await send({"type": "http.response.body", "body": self.body or b"", "more_body": False})
            return
        body = self.body
        try:
            async with anyio.create_task_group() as tg:
                async def watch_disconnect() -> None:
                    while True:
                        message = await receive()
                        if message["type"] == "http.disconnect":
                            tg.cancel_scope.cancel()
                            return

                tg.start_soon(watch_disconnect)
                async for chunk in body:
                    if chunk:
                        await send({"type": "http.response.body", "body": chunk, "more_body": True})
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                tg.cancel_scope.cancel()
        finally:
            closer = getattr(body, "aclose", None)
            if closer is not None:
                with anyio.CancelScope(shield=True):
                    await closer()


def json_response(obj: Any, status: int = 200, headers: dict[str, str] | None = None) -> RawResponse:
    """`obj` as JSON; `headers` (e.g. the upstream's CORS headers) kept, type and length set."""
    data = json.dumps(obj, ensure_ascii=False).encode("utf-8")
    out = {**(headers or {}), "content-type": JSON_TYPE, "content-length": str(len(data))}
    return RawResponse(status, out.items(), data)


def error_response(status: int, message: str) -> RawResponse:
    """An Ollama-style error (`{"error": message}`); a dialect's own: `Dialect.error_body`."""
    return json_response({"error": message}, status)


def ndjson_line(obj: dict[str, Any]) -> bytes:
    return (json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def stream_response(pieces: AsyncIterator[bytes], headers: dict[str, str] | None = None,
                    media_type: str = NDJSON_TYPE) -> RawResponse:
    """A streamed answer (chunked; NDJSON lines or server-sent events); `headers` kept, the
    content type defaulted."""
    out = {"content-type": media_type, **(headers or {})}
    out.pop("content-length", None)
    return RawResponse(200, out.items(), pieces)
