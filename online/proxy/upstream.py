"""The upstream Ollama: one `httpx.AsyncClient`, header hygiene, and Ollama-style errors.

Every failure to reach the upstream becomes an `UpstreamError` whose body is what Ollama
itself answers on errors, `{"error": "..."}`: 502 when the connection fails or breaks, 504
when the upstream does not answer in time. The message names the upstream URL and the
limit that was hit, so a user sees at once that the proxy is up and Ollama is not.

Four limits, all user settings (`UpstreamTimeouts.from_settings`): connecting; the first
byte of an answer (a `stream: false` answer arrives all at once, so this bounds its whole
generation); the gap between two pieces of a streamed answer; and the whole answer.
"""

from __future__ import annotations

import asyncio
import json
import uuid
import weakref
from collections.abc import AsyncIterator, Awaitable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx

from pipelines.settings import Settings

T = TypeVar("T")

# Hop-by-hop headers (RFC 9110 §7.6.1) and what httpx recomputes for a new request.
HOP_BY_HOP = frozenset({
    "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "proxy-connection",
    "te", "trailer", "trailers", "transfer-encoding", "upgrade",
})
_REQUEST_DROP = HOP_BY_HOP | {"host", "content-length"}
# Every upstream request carries the ids of the Loci proxies it went through: a request that
# arrives carrying our own id has gone round in a loop (the upstream is this proxy, e.g.
# OLLAMA_HOST pointed at the proxy). Chaining distinct proxies stays possible.
LOOP_HEADER = "x-loci-proxied"
# The proxy's own server adds Date and Server; duplicates would confuse clients.
_RESPONSE_DROP = HOP_BY_HOP | {"date", "server"}


class UpstreamError(Exception):
    """The upstream could not be reached or did not answer in time."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message

    def body(self) -> bytes:
        return error_body(self.message)


def error_body(message: str) -> bytes:
    return json.dumps({"error": message}).encode("utf-8")


def request_headers(incoming: Iterable[tuple[str, str]], *, keep_encoding: bool, hop_id: str) -> dict[str, str]:
    """Headers to send upstream: the client's, minus hop-by-hop ones and Loci's identity
    headers. `keep_encoding`: pass-through keeps the client's Accept-Encoding (and asks for
    `identity` when it sent none, so bytes reach it exactly as it asked); the memory path
    lets httpx negotiate, since it decodes the JSON itself."""
    out: dict[str, str] = {}
    hops: list[str] = []
    for name, value in incoming:
        key = name.lower()
        if key == LOOP_HEADER:
            hops += [h.strip() for h in value.split(",") if h.strip()]
        if key in _REQUEST_DROP or key.startswith("x-loci-"):
            continue
        if key == "accept-encoding" and not keep_encoding:
            continue
        out[key] = value
    if keep_encoding:
        out.setdefault("accept-encoding", "identity")
    out[LOOP_HEADER] = ",".join([*hops, hop_id])
    return out


def loop_error(headers: Mapping[str, str], hop_id: str, upstream: str) -> UpstreamError | None:
    """A 508 when this request was sent on by this very proxy before (a loop)."""
    hops = {h.strip() for k, v in headers.items() if k.lower() == LOOP_HEADER for h in v.split(",")}
    if hop_id not in hops:
        return None
    return UpstreamError(508, f"loci proxy: request loop: the upstream {upstream} leads back to a Loci "
                              "proxy; point the proxy at the real Ollama (LOCI_OLLAMA_HOST or --upstream)")


def response_headers(upstream: httpx.Response, *, keep_length: bool) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in upstream.headers.multi_items():
        key = name.lower()
        if key in _RESPONSE_DROP or (key == "content-length" and not keep_length):
            continue
        out[key] = value
    return out


def relayed_headers(answer: httpx.Response) -> dict[str, str]:
    """The upstream's response headers (CORS and the like) for a body the proxy rewrote or
    decoded: without length and encoding, which no longer hold."""
    headers = response_headers(answer, keep_length=False)
    headers.pop("content-encoding", None)
    return headers


@dataclass(frozen=True)
class UpstreamTimeouts:
    """Seconds; None = no limit. See the module docstring for what each one bounds."""

    connect_s: float = 10.0
    first_byte_s: float | None = 600.0
    between_bytes_s: float | None = 600.0
    total_s: float | None = None

    def __post_init__(self) -> None:
        for name in ("connect_s", "first_byte_s", "between_bytes_s", "total_s"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise ValueError(f"proxy timeout {name} must be > 0 seconds (or None: no limit)")

    @classmethod
    def from_settings(cls, settings: Settings) -> UpstreamTimeouts:
        def limit(value: float) -> float | None:
            if value < 0:
                raise ValueError(f"proxy timeouts must be >= 0 seconds (0: no limit), not {value:g}")
            return value or None  # 0 in the settings: no limit

        return cls(connect_s=settings.proxy_connect_timeout_s,
                   first_byte_s=limit(settings.proxy_first_byte_timeout_s),
                   between_bytes_s=limit(settings.proxy_between_bytes_timeout_s),
                   total_s=limit(settings.proxy_total_timeout_s))


class Upstream:
    """The Ollama the proxy forwards to (created in the app lifespan, closed at shutdown).

    httpx bounds connecting and sending; waiting for the answer is bounded here, per
    upstream request (`open` starts the clock of its answer's total limit)."""

    def __init__(self, base_url: str, *, timeouts: UpstreamTimeouts | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.hop_id = uuid.uuid4().hex[:12]  # this proxy, in the loop-detection header
        self.timeouts = timeouts or UpstreamTimeouts()
        t = self.timeouts
        self.client = httpx.AsyncClient(
            base_url=self.base_url,
            timeout=httpx.Timeout(connect=t.connect_s, read=None, write=t.between_bytes_s, pool=t.connect_s),
            follow_redirects=False,
        )
        # When each open answer must be complete (event-loop time), by response.
        self._deadlines: weakref.WeakKeyDictionary[httpx.Response, float] = weakref.WeakKeyDictionary()

    async def aclose(self) -> None:
        await self.client.aclose()

    def error_for(self, exc: Exception) -> UpstreamError:
        where = f"upstream Ollama at {self.base_url}"
        if isinstance(exc, httpx.TimeoutException):
            if isinstance(exc, httpx.ConnectTimeout):
                return UpstreamError(504, f"loci proxy: {where} timed out connecting "
                                          f"(limit {self.timeouts.connect_s:g} s)")
            return UpstreamError(504, f"loci proxy: {where} timed out answering ({exc})")
        if isinstance(exc, httpx.ConnectError):
            return UpstreamError(502, f"loci proxy: cannot connect to {where}: {exc or 'refused'}")
        return UpstreamError(502, f"loci proxy: {where} failed: {type(exc).__name__}: {exc}")

    async def open(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str],
        content: Any = None,
        json_body: Any = None,
    ) -> httpx.Response:
        """Send a request and return the response with its body not read yet (stream).
        The caller must `aclose()` it. Raises `UpstreamError`."""
        if json_body is not None:
            content = json.dumps(json_body, ensure_ascii=False).encode("utf-8")
            headers = {**headers, "content-type": "application/json"}
        request = self.client.build_request(method, url, headers=dict(headers), content=content)
        total = self.timeouts.total_s
        deadline = None if total is None else asyncio.get_running_loop().time() + total
        try:
            response = await self._within(self.client.send(request, stream=True), self.timeouts.first_byte_s,
                                          deadline, "before the first byte of its answer", "first-byte")
        except httpx.HTTPError as exc:
            raise self.error_for(exc) from exc
        if deadline is not None:
            self._deadlines[response] = deadline
        return response

    async def paced(self, response: httpx.Response, pieces: AsyncIterator[T]) -> AsyncIterator[T]:
        """`pieces` of `response`'s body, each within the between-bytes limit and all of
        them within the answer's total limit. Raises `UpstreamError` (504) past either."""
        deadline = self._deadlines.get(response)
        source = aiter(pieces)
        while True:
            try:
                piece = await self._within(anext(source), self.timeouts.between_bytes_s, deadline,
                                           "between two pieces of its answer", "between-bytes")
            except StopAsyncIteration:
                return
            yield piece

    async def _within(self, step: Awaitable[T], limit: float | None, deadline: float | None,
                      what: str, name: str) -> T:
        """`step`, or a 504 naming the limit that ran out first (`limit` or the total)."""
        now = asyncio.get_running_loop().time()
        left = None if deadline is None else deadline - now
        if limit is None and left is None:
            return await step
        by_total = limit is None or (left is not None and left <= limit)
        wait = max(0.0, left) if by_total else limit
        try:
            return await asyncio.wait_for(step, wait)
        except TimeoutError:
            which = (f"the whole answer took longer than its total limit ({self.timeouts.total_s:g} s)" if by_total
                     else f"it waited {what} longer than the {name} limit ({limit:g} s)")
            raise UpstreamError(504, f"loci proxy: upstream Ollama at {self.base_url} timed out: "
                                     f"{which}") from None

    async def post_json(self, path: str, body: Any, *, headers: Mapping[str, str]) -> tuple[httpx.Response, bytes]:
        """POST a JSON body and read the whole answer: (the closed response, its body)."""
        response = await self.open("POST", path, headers=headers, json_body=body)
        try:
            data = b"".join([chunk async for chunk in self.paced(response, response.aiter_bytes())])
        except httpx.HTTPError as exc:
            raise self.error_for(exc) from exc
        finally:
            await response.aclose()
        return response, data

    async def ndjson(self, response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
        """The objects of a streamed NDJSON answer. Raises `UpstreamError` when the stream
        breaks or times out, and for a line that is not a JSON object."""
        try:
            async for line in self.paced(response, response.aiter_lines()):
                if line.strip():
                    yield _json_object(line, "a line")
        except httpx.HTTPError as exc:
            raise self.error_for(exc) from exc

    async def sse(self, response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
        """The JSON objects in the `data:` fields of a server-sent event stream (OpenAI's
        streamed answers), up to `data: [DONE]`. One event's `data:` lines are joined;
        comments and other fields are skipped. Raises `UpstreamError` as `ndjson` does."""
        data: list[str] = []
        try:
            async for line in self.paced(response, response.aiter_lines()):
                if line.startswith("data:"):
                    data.append(line[5:].removeprefix(" "))
                elif not line.strip() and data:  # a blank line ends the event
                    event, data = "\n".join(data), []
                    if event.strip() == "[DONE]":
                        return
                    yield _json_object(event, "an event")
            if data and "\n".join(data).strip() != "[DONE]":  # the last event, unterminated
                yield _json_object("\n".join(data), "an event")
        except httpx.HTTPError as exc:
            raise self.error_for(exc) from exc


def _json_object(text: str, what: str) -> dict[str, Any]:
    """The JSON object an NDJSON line or an SSE event (`what`) holds; `UpstreamError` (502)
    when it is not JSON or not an object."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UpstreamError(502, f"loci proxy: upstream sent {what} that is not JSON: "
                                 f"{text[:80]!r} ({exc.msg})") from None
    if not isinstance(obj, dict):
        raise UpstreamError(502, f"loci proxy: upstream sent {what} that is not a JSON object")
    return obj
