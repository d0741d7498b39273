"""Pass-through: a request forwarded to the upstream as it came, the answer relayed as it
arrives.

Method, raw path (percent-encoding kept), query string, headers (minus hop-by-hop and
Loci's identity headers) and body go upstream; status, headers and body bytes come back
unchanged (compressed bytes stay compressed, a stream stays a stream). Request bodies are
streamed without a size limit: `ollama create` uploads model blobs through here.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import httpx
from litestar import Request

from online.proxy.responses import RawResponse, error_response
from online.proxy.upstream import Upstream, UpstreamError, loop_error, request_headers, response_headers

log = logging.getLogger("loci.proxy")


def target_url(request: Request) -> str:
    raw_path = request.scope.get("raw_path") or request.url.path.encode("utf-8")
    query = request.scope.get("query_string") or b""
    return raw_path.decode("latin-1") + (f"?{query.decode('latin-1')}" if query else "")


async def forward(request: Request, upstream: Upstream, body: bytes | None = None) -> RawResponse:
    """Forward `request` (with `body` when it was already read) and relay the answer."""
    loop = loop_error(request.headers, upstream.hop_id, upstream.base_url)
    if loop is not None:
        return error_response(loop.status, loop.message)
    headers = request_headers(request.headers.multi_items(), keep_encoding=True, hop_id=upstream.hop_id)
    content: Any = body
    if body is None:
        length = request.headers.get("content-length")
        if "chunked" in request.headers.get("transfer-encoding", "").lower() or (length and length != "0"):
            content = request.stream()
            if length:
                headers["content-length"] = length  # relay the body as sized, not chunked
    try:
        answer = await upstream.open(request.method, target_url(request), headers=headers, content=content)
    except UpstreamError as exc:
        return error_response(exc.status, exc.message)
    out_headers = response_headers(answer, keep_length=True).items()
    status = answer.status_code
    if request.method == "HEAD" or status < 200 or status in (204, 304):
        await answer.aclose()
        return RawResponse(status, out_headers)
    return RawResponse(status, out_headers, relay(answer, upstream))


async def relay(answer: httpx.Response, upstream: Upstream) -> AsyncIterator[bytes]:
    try:
        async for chunk in upstream.paced(answer, answer.aiter_raw()):
            yield chunk
    except (httpx.HTTPError, UpstreamError) as exc:  # headers are sent: the client sees a cut body
        log.warning("upstream broke off a forwarded response: %s", exc)
    finally:
        await answer.aclose()
