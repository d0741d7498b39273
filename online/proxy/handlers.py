"""The memory path of the proxy: /api/chat, /api/generate and the OpenAI-compatible
/v1/chat/completions with the four hooks around the upstream call, streamed or not, plus
`!reset` (the two chat APIs). What differs between the APIs (shapes, stream framing, errors) is the
dialect's (`online.proxy.dialects`, `online.proxy.openai_chat`); the path here is one.

A stream keeps streaming: each piece of text goes to the client as soon as it is known not
to be part of a memory proposal (`ProposalStreamFilter`); the final object is the
upstream's own (counters, `done_reason`, `context`, usage) with its text adjusted and the
`loci` field added. A re-ask (memory tool call or recall phrasing) streams its answer on a
new paragraph; only the last round's final object is sent.

A failure inside memory (recall, landing a turn) never costs the user the answer: the
request goes on without memory and the `loci` field lists the problem. Upstream failures
become the API's own error answers (502/504), or a last error piece once a stream has
started; nothing is landed unless the upstream answered completely.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

import anyio
import httpx
from litestar import Request

from online.proxy import reset
from online.proxy.config import ProxyConfig, flag
from online.proxy.dialects import CHAT, ChatDialect, GenerateDialect, OllamaWire
from online.proxy.exchange import Exchange, RoundResult
from online.proxy.forward import forward
from online.proxy.identity import IdentityError, identity_from_headers, names_chat, timezone_from_headers
from online.proxy.responses import RawResponse, json_response, stream_response
from online.proxy.shown import RequestHold, VisibleText, visible_of
from online.proxy.upstream import Upstream, UpstreamError, loop_error, relayed_headers, request_headers
from online.state import MemoryService
from pipelines.proposals import ProposalStreamFilter
from pipelines.records import Identity, replace_lone_surrogates
from pipelines.settings import LiveFlags, Settings

log = logging.getLogger("loci.proxy")
T = TypeVar("T")


def dialect_error(dialect: OllamaWire, status: int, message: str) -> RawResponse:
    """An error answer in the dialect's own shape."""
    return json_response(dialect.error_body(message, status), status)


class MemoryHandlers:
    """The memory path of the chat APIs, bound to one app's settings and config."""

    def __init__(self, settings: Settings, config: ProxyConfig, live_flags: LiveFlags | None = None) -> None:
        self.settings = settings
        self.config = config
        self.live_flags = live_flags  # re-reads flags flipped in the config file

    # -- helpers ------------------------------------------------------------------------------

    @staticmethod
    def state(request: Request) -> tuple[MemoryService, Upstream]:
        return request.app.state.service, request.app.state.upstream

    async def guarded(self, what: str, fn: Callable[..., T], *args: Any, fallback: T) -> tuple[T, str | None]:
        """Run a blocking memory step in a worker thread; a failure is logged and reported,
        never passed on to the user as a failed chat."""
        try:
            return await anyio.to_thread.run_sync(lambda: fn(*args)), None
        except Exception as exc:  # memory must never break the chat itself
            log.exception("memory step %s failed; continuing without it", what)
            return fallback, f"{what} failed: {type(exc).__name__}: {exc}"

    # -- memory path ---------------------------------------------------------------------------

    async def memory(self, request: Request, dialect: ChatDialect | GenerateDialect) -> RawResponse:
        if self.live_flags is not None:
            self.live_flags.refresh()
        if request.method != "POST" or not flag(self.settings, "enabled"):
            return await forward(request, self.state(request)[1])
        service, upstream = self.state(request)
        loop = loop_error(request.headers, upstream.hop_id, upstream.base_url)
        if loop is not None:
            return dialect_error(dialect, loop.status, loop.message)
        raw = await request.body()
        try:
            # A lone surrogate escape ("\\ud83d") is U+FFFD, as Ollama reads it: never a 500.
            body = replace_lone_surrogates(json.loads(raw), raw) if raw else None
        except (json.JSONDecodeError, UnicodeDecodeError):
            # Ollama refuses it too: a 400 here, not a round trip (nor a 502 when it is down).
            return dialect_error(dialect, 400, "loci proxy: the request body must be a JSON object")
        invalid = dialect.invalid(body)
        if invalid is not None:
            return dialect_error(dialect, 400, f"loci proxy: {invalid}")
        if dialect.unsupported(body) is not None or dialect.background_task(body):
            # Ollama answers (or rejects) it itself; a UI's background task is not the user's chat.
            return await forward(request, self.state(request)[1], raw)
        try:
            identity = identity_from_headers(request.headers, self.config.default_identity,
                                             openwebui=self.config.openwebui_headers,
                                             conversation=body.get("messages"))
            tz = timezone_from_headers(request.headers)
        except IdentityError as exc:
            return dialect_error(dialect, 400, f"loci proxy: {exc}")
        headers = request_headers(request.headers.multi_items(), keep_encoding=False, hop_id=upstream.hop_id)
        streaming = dialect.streams(body)
        if dialect.supports_reset and flag(self.settings, "reset_summarize") \
                and reset.is_reset(body, self.config):
            return await self.reset(request, dialect, body, identity, headers, streaming)
        ex = Exchange(service, self.settings, self.config, identity, dialect, body, tz=tz,
                      names_chat=names_chat(request.headers, openwebui=self.config.openwebui_headers))
        first, problem = await self.guarded("memory recall", ex.prepare, fallback=body)
        problems = [problem] if problem else []
        if streaming:
            return await self.stream(ex, first, upstream, headers, problems)
        return await self.blocking(ex, first, upstream, headers, problems)

    async def blocking(self, ex: Exchange, first: dict[str, Any], upstream: Upstream,
                       headers: dict[str, str], problems: list[str]) -> RawResponse:
        dialect, sent = ex.dialect, first
        shown = VisibleText()
        while True:
            try:
                answer, data = await upstream.post_json(dialect.path, dialect.with_stream(sent, False),
                                                        headers=headers)
            except UpstreamError as exc:
                return dialect_error(dialect, exc.status, exc.message)
            if answer.status_code != 200:  # Ollama's own error (unknown model...): as it is
                return relay_error(answer, data)
            try:
                obj = json.loads(data)
                assert isinstance(obj, dict)
            except (json.JSONDecodeError, UnicodeDecodeError, AssertionError):
                return dialect_error(dialect, 502, "loci proxy: upstream answer is not a JSON object")
            raw = dialect.text(obj)
            visible = visible_of(raw) if ex.scans else raw
            if ex.scans and dialect.thinking(obj):  # a block drafted while thinking is not shown either
                obj = dialect.with_thinking(obj, visible_of(dialect.thinking(obj)))
            step, problem = await self.guarded(
                "recall interception", ex.after_round, sent, raw, visible, dialect.calls(obj),
                fallback=RoundResult(None, dialect.calls(obj)))
            problems += [problem] if problem else []
            sent = shown.end_round(step, visible)
            if sent is None:
                break
        ex.add_closing(shown)
        out = dialect.rewrite(obj, shown.text, step.client_calls)
        await self.attach(ex, out, shown.text, problems)
        return json_response(out, headers=relayed_headers(answer))

    async def stream(self, ex: Exchange, first: dict[str, Any], upstream: Upstream,
                     headers: dict[str, str], problems: list[str]) -> RawResponse:
        dialect = ex.dialect
        try:
            answer = await upstream.open("POST", dialect.path, headers=headers,
                                         json_body=dialect.with_stream(first, True))
        except UpstreamError as exc:
            return dialect_error(dialect, exc.status, exc.message)
        if answer.status_code != 200:
            try:
                data = await answer.aread()
            except httpx.HTTPError as exc:
                err = upstream.error_for(exc)
                return dialect_error(dialect, err.status, err.message)
            finally:
                await answer.aclose()
            return relay_error(answer, data)
        return stream_response(self._stream_rounds(ex, first, answer, upstream, headers, problems),
                               relayed_headers(answer), dialect.media_type)

    async def _stream_rounds(self, ex: Exchange, sent: dict[str, Any], answer: httpx.Response,
                             upstream: Upstream, headers: dict[str, str],
                             problems: list[str]) -> AsyncIterator[bytes]:
        dialect = ex.dialect
        shown = VisibleText()
        try:
            while True:
                filt = ProposalStreamFilter() if ex.scans else None
                thought = ProposalStreamFilter() if ex.scans else None  # blocks drafted while thinking
                hold = RequestHold(active=ex.takes_requests)
                raw_parts: list[str] = []
                round_visible: list[str] = []
                calls: list[dict[str, Any]] = []
                final: dict[str, Any] | None = None
                async for obj in dialect.read(upstream, answer):
                    if "error" in obj:  # Ollama (and OpenAI) report mid-stream failures this way
                        yield dialect.encode(obj)
                        return
                    if dialect.is_final(obj):
                        final = obj
                        break
                    if thought is not None and dialect.thinking(obj):
                        obj = dialect.with_thinking(obj, thought.feed(dialect.thinking(obj)))
                    piece = dialect.text(obj)
                    raw_parts.append(piece)
                    chunk_calls = dialect.calls(obj)
                    calls += chunk_calls
                    visible = filt.feed(piece) if filt else piece
                    round_visible.append(visible)
                    _, client_calls = ex.split_calls(chunk_calls)
                    out = dialect.rewrite(obj, shown.emit(hold.feed(visible)),
                                          client_calls if chunk_calls else None)
                    if not dialect.is_empty(out):
                        yield dialect.encode(out)
                await answer.aclose()
                if final is None:
                    raise UpstreamError(502, "loci proxy: upstream stream ended without its final object")
                if thought is not None:
                    held = thought.feed(dialect.thinking(final)) + thought.finish()[0]
                    final = dialect.with_thinking(final, held) if held or dialect.thinking(final) else final
                piece = dialect.text(final)
                raw_parts.append(piece)
                calls += dialect.calls(final)
                tail = filt.feed(piece) if filt else piece
                if filt:
                    tail += filt.finish()[0]
                round_visible.append(tail)
                step, problem = await self.guarded(
                    "recall interception", ex.after_round, sent, "".join(raw_parts),
                    "".join(round_visible), calls, fallback=RoundResult(None, ex.split_calls(calls)[1]))
                problems += [problem] if problem else []
                tail = hold.feed(tail) + ("" if step.withhold else hold.release())
                if step.reask is None:
                    break
                flushed = shown.emit(tail)
                if flushed:
                    yield dialect.encode(dialect.chunk(final, flushed))
                shown.start_round()
                sent = step.reask
                answer = await upstream.open("POST", dialect.path, headers=headers,
                                             json_body=dialect.with_stream(sent, True))
                if answer.status_code != 200:
                    data = await answer.aread()
                    await answer.aclose()
                    yield dialect.encode(dialect.error_body(upstream_error_text(answer.status_code, data),
                                                            answer.status_code))
                    return
            text = shown.emit(tail)
            text += ex.add_closing(shown)
            out = dialect.rewrite(final, text, step.client_calls)
            await self.attach(ex, out, shown.text, problems)
            yield dialect.encode_last(out)
        except UpstreamError as exc:
            yield dialect.encode(dialect.error_body(exc.message, exc.status))
        finally:
            await answer.aclose()

    async def attach(self, ex: Exchange, out: dict[str, Any], visible: str, problems: list[str]) -> None:
        """Land the turns, run the catalog pass, attach the `loci` field to `out`."""
        loci, problem = await self.guarded("landing the turns", ex.finish, visible, fallback={})
        problems = problems + ([problem] if problem else [])
        if problems:
            loci = {**loci, "problems": problems}
        if self.config.catalog_field:
            out[self.config.catalog_field] = loci

    # -- !reset ---------------------------------------------------------------------------------

    async def reset(self, request: Request, dialect: ChatDialect, body: dict[str, Any], identity: Identity,
                    headers: dict[str, str], streaming: bool) -> RawResponse:
        service, upstream = self.state(request)
        history = reset.history_of(body)
        summary: dict[str, Any] | None = None
        if len(history) < self.config.reset_min_messages:
            text = reset.too_short(len(history), self.config.reset_min_messages)
        else:
            try:
                answer, data = await upstream.post_json("/api/chat", reset.summary_request(body, history),
                                                        headers=headers)
            except UpstreamError as exc:
                return dialect_error(dialect, exc.status, exc.message)
            if answer.status_code != 200:
                return dialect_error(dialect, answer.status_code, upstream_error_text(answer.status_code, data))
            try:
                reply = CHAT.text(json.loads(data))  # the summary is asked of Ollama's own /api/chat
            except (json.JSONDecodeError, UnicodeDecodeError, AttributeError):
                return dialect_error(dialect, 502, "loci proxy: upstream answer is not a JSON object")
            summary, problem = await self.guarded("summarising on reset", reset.land_summary,
                                                  service, identity, reply, history, fallback=None)
            if summary is None:
                return dialect_error(dialect, 500, f"loci proxy: {problem}")
            text = reset.confirmation(summary)
        final = dialect.reply(body["model"], "" if streaming else text, streaming)
        if self.config.catalog_field:
            final[self.config.catalog_field] = {"reset": summary or {"messages": len(history), "proposed": 0}}
        if not streaming:
            return json_response(final)
        return stream_response(_pieces(dialect, dialect.chunk(final, text), final), media_type=dialect.media_type)


async def _pieces(dialect: OllamaWire, first: dict[str, Any], last: dict[str, Any]) -> AsyncIterator[bytes]:
    yield dialect.encode(first)
    yield dialect.encode_last(last)


def relay_error(answer: httpx.Response, data: bytes) -> RawResponse:
    """An error status from the upstream, relayed as it came (its body re-sized)."""
    headers = relayed_headers(answer)  # httpx has decoded the body
    headers["content-length"] = str(len(data))
    return RawResponse(answer.status_code, headers.items(), data)


def upstream_error_text(status: int, data: bytes) -> str:
    try:
        message = OllamaWire.error_text(json.loads(data))
    except (json.JSONDecodeError, UnicodeDecodeError):
        message = None
    return message or f"loci proxy: upstream answered HTTP {status}"
