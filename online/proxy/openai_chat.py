"""The OpenAI-compatible chat API (`POST /v1/chat/completions`, which Ollama serves too) as a
dialect of the chat one: the same messages, tools and re-asks, in OpenAI's shapes.

- A request: `messages` (content a string, null or a list of content parts, whose text
  parts are the text), `stream` false unless asked, `response_format` for structured output,
  `developer` messages leading like `system` ones. Several choices (`n` > 1) are forwarded
  without memory; a body that is not a chat request is refused with an OpenAI-style 400.
- An answer: `choices[0].message` (content, `tool_calls` with JSON-string arguments);
  streamed, server-sent events `data: {chunk}` with `choices[0].delta`, then `data: [DONE]`.
- A stream is read with its tool calls gathered: OpenAI sends a call's arguments in pieces
  over several chunks (Ollama sends each call whole), so calls are only judged complete
  (Loci's or the client's) at the end of the round, and the client's go out, whole, in the
  final chunk. A usage-only chunk (`stream_options.include_usage`) is kept and sent last.
- The pre-return catalog: the top-level `loci` key of the completion, or of the last chunk
  before `[DONE]`; OpenAI clients keep unknown keys aside (the `openai` client's
  `model_extra`) and parse the rest as usual.
- Errors: `{"error": {"message", "type", "param", "code"}}`, in a body or as a `data:` event.
- `!reset` works as on /api/chat (`online.proxy.reset`); the answer is written by `reply`.
"""

from __future__ import annotations

import copy
import json
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any

from online.proxy.dialects import ChatDialect

if TYPE_CHECKING:
    import httpx

    from online.proxy.upstream import Upstream

SSE_TYPE = "text/event-stream"
DONE = b"data: [DONE]\n\n"
# The keys of a chunk that belong with its choices; everything else (usage, `loci`, what
# the upstream added) goes in the last chunk.
CHUNK_KEYS = ("id", "object", "created", "model", "system_fingerprint", "service_tier", "choices")
STRUCTURED_FORMATS = ("json_object", "json_schema")
REASONING_KEYS = ("reasoning", "reasoning_content")  # Ollama's, and other servers' name for it


def _first_choice(obj: dict[str, Any]) -> dict[str, Any] | None:
    choices = obj.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        return choices[0]
    return None


def _part(obj: dict[str, Any]) -> dict[str, Any]:
    """The message (a completion) or delta (a chunk) of the first choice."""
    choice = _first_choice(obj) or {}
    part = choice.get("message", choice.get("delta"))
    return part if isinstance(part, dict) else {}


def _gather(calls: dict[int, dict[str, Any]], pieces: list[Any]) -> None:
    """Add streamed tool-call pieces to `calls` (by index): the first piece of a call names
    it, the later ones carry more of its arguments."""
    for n, piece in enumerate(pieces):
        if not isinstance(piece, dict):
            continue
        index = piece.get("index", n)
        fn = piece.get("function") if isinstance(piece.get("function"), dict) else {}
        call = calls.get(index)
        if call is None:
            calls[index] = {k: v for k, v in piece.items() if k != "index"}
            calls[index]["function"] = dict(fn)
            continue
        if piece.get("id") and not call.get("id"):
            call["id"] = piece["id"]
        have, more = call["function"].get("arguments"), fn.get("arguments")
        if isinstance(have, str) and isinstance(more, str):
            call["function"]["arguments"] = have + more
        elif more is not None:
            call["function"]["arguments"] = more
        if fn.get("name") and not call["function"].get("name"):
            call["function"]["name"] = fn["name"]


def _wire_call(call: dict[str, Any], n: int) -> dict[str, Any]:
    """A tool call as an OpenAI request message carries it: an id, arguments as JSON text."""
    fn = call.get("function") if isinstance(call.get("function"), dict) else {}
    args = fn.get("arguments", "{}")
    return {"id": call.get("id") or f"call_loci_{n}", "type": "function",
            "function": {"name": fn.get("name", ""),
                         "arguments": args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)}}


class OpenAIChatDialect(ChatDialect):
    name = "openai-chat"
    path = "/v1/chat/completions"
    media_type = SSE_TYPE
    LEADING_ROLES = ("system", "developer")

    def invalid(self, body: Any) -> str | None:
        if not isinstance(body, dict):
            return "the request body must be a JSON object"
        if not isinstance(body.get("model"), str) or not body["model"]:
            return "'model' is required (a string)"
        msgs = body.get("messages")
        if not isinstance(msgs, list) or not msgs:
            return "'messages' must be a non-empty array"
        for i, m in enumerate(msgs):
            if not isinstance(m, dict) or not isinstance(m.get("role"), str):
                return f"messages[{i}] must be an object with a string 'role'"
            content = m.get("content")
            if not (content is None or isinstance(content, str)
                    or (isinstance(content, list) and all(isinstance(p, dict) for p in content))):
                return f"messages[{i}].content must be a string, null or an array of content parts"
        if body.get("stream") not in (None, True, False):
            return "'stream' must be a boolean"
        for key in ("tools", "response_format", "stream_options"):
            expected = list if key == "tools" else dict
            if body.get(key) is not None and not isinstance(body[key], expected):
                return f"'{key}' must be {'an array' if expected is list else 'an object'}"
        return None

    def unsupported(self, body: Any) -> str | None:
        n = body.get("n")
        if isinstance(n, int) and n > 1:
            return "several choices (n > 1)"
        return None

    @staticmethod
    def streams(body: dict[str, Any]) -> bool:
        return body.get("stream") is True  # OpenAI answers whole unless asked to stream

    @staticmethod
    def with_stream(body: dict[str, Any], stream: bool) -> dict[str, Any]:
        out = {**body, "stream": stream}
        if not stream:
            out.pop("stream_options", None)  # only valid with a stream
        return out

    @staticmethod
    def structured(body: dict[str, Any]) -> bool:
        fmt = body.get("response_format")
        return isinstance(fmt, dict) and fmt.get("type") in STRUCTURED_FORMATS

    @staticmethod
    def error_body(message: str, status: int = 500) -> dict[str, Any]:
        kind = "invalid_request_error" if 400 <= status < 500 else "api_error"
        return {"error": {"message": message, "type": kind, "param": None, "code": None}}

    # -- reading answers ------------------------------------------------------------------------

    @staticmethod
    def is_final(obj: dict[str, Any]) -> bool:
        choice = _first_choice(obj)
        return choice is not None and choice.get("finish_reason") is not None

    @staticmethod
    async def read(upstream: Upstream, response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
        """The chunks of a streamed answer, tool calls gathered into the final chunk (the
        one with a `finish_reason`), which comes last, with the usage if any."""
        final: dict[str, Any] | None = None
        usage: Any = None
        calls: dict[int, dict[str, Any]] = {}
        async for obj in upstream.sse(response):
            if "error" in obj:
                yield obj
                return
            choice = _first_choice(obj)
            if choice is None:  # a usage-only chunk
                usage = obj.get("usage", usage)
                continue
            delta = choice.get("delta") if isinstance(choice.get("delta"), dict) else {}
            if isinstance(delta.get("tool_calls"), list):
                _gather(calls, delta["tool_calls"])
                delta = {k: v for k, v in delta.items() if k != "tool_calls"}
                obj = {**obj, "choices": [{**choice, "delta": delta}, *obj["choices"][1:]]}
            if choice.get("finish_reason") is not None and final is None:
                final = obj
            else:
                yield obj
        if final is not None:
            if calls:
                choice = _first_choice(final) or {}
                delta = {**(choice.get("delta") or {}), "tool_calls": [calls[i] for i in sorted(calls)]}
                final = {**final, "choices": [{**choice, "delta": delta}, *final["choices"][1:]]}
            if usage is not None and final.get("usage") is None:
                final = {**final, "usage": usage}
            yield final

    @staticmethod
    def text(obj: dict[str, Any]) -> str:
        content = _part(obj).get("content")
        return content if isinstance(content, str) else ""

    @staticmethod
    def thinking(obj: dict[str, Any]) -> str:
        part = _part(obj)
        return next((part[k] for k in REASONING_KEYS if isinstance(part.get(k), str)), "")

    @staticmethod
    def with_thinking(obj: dict[str, Any], text: str) -> dict[str, Any]:
        choice = _first_choice(obj)
        key = "message" if choice is not None and "message" in choice else "delta"
        part = _part(obj)
        reasoning = next((k for k in REASONING_KEYS if isinstance(part.get(k), str)), None)
        if choice is None or reasoning is None:
            return obj
        return {**obj, "choices": [{**choice, key: {**part, reasoning: text}}, *obj["choices"][1:]]}

    @staticmethod
    def calls(obj: dict[str, Any]) -> list[dict[str, Any]]:
        calls = _part(obj).get("tool_calls")
        return [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []

    # -- writing answers --------------------------------------------------------------------------

    @staticmethod
    def rewrite(obj: dict[str, Any], text: str, calls: list[dict[str, Any]] | None) -> dict[str, Any]:
        """A copy of a completion or chunk with the first choice's text (and tool calls)
        replaced; a choice whose calls all went to Loci finishes with `stop`."""
        choices = obj.get("choices") if isinstance(obj.get("choices"), list) else []
        choice = dict(_first_choice(obj) or {"index": 0, "delta": {}, "finish_reason": None})
        key = "message" if "message" in choice else "delta"
        part = dict(choice.get(key) or {})
        if text or part.get("content") is not None:
            part["content"] = text
        if calls is not None:
            if calls:
                part["tool_calls"] = [{**c, "index": i} if key == "delta" else c for i, c in enumerate(calls)]
            else:
                part.pop("tool_calls", None)
                if choice.get("finish_reason") == "tool_calls":
                    choice["finish_reason"] = "stop"
        choice[key] = part
        return {**obj, "choices": [choice, *choices[1:]]}

    @staticmethod
    def is_empty(obj: dict[str, Any]) -> bool:
        choice = _first_choice(obj) or {}
        part = _part(obj)
        return not any(part.get(k) for k in ("content", "tool_calls", "reasoning", "reasoning_content",
                                              "refusal")) and not choice.get("logprobs")

    @staticmethod
    def chunk(template: dict[str, Any], text: str) -> dict[str, Any]:
        base = {k: template[k] for k in ("id", "object", "created", "model", "system_fingerprint") if k in template}
        return {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": text},
                                     "finish_reason": None}]}

    @staticmethod
    def reply(model: str, text: str, streaming: bool) -> dict[str, Any]:
        head = {"id": f"chatcmpl-loci-{uuid.uuid4().hex[:12]}", "created": int(time.time()), "model": model}
        if streaming:
            return {**head, "object": "chat.completion.chunk",
                    "choices": [{"index": 0, "delta": {"content": text} if text else {}, "finish_reason": "stop"}]}
        return {**head, "object": "chat.completion",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]}

    @staticmethod
    def encode(obj: dict[str, Any]) -> bytes:
        return b"data: " + json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n\n"

    def encode_last(self, obj: dict[str, Any]) -> bytes:
        """The final chunk, then (when there is more than the choices: usage, `loci`) one
        chunk with no choices carrying the rest, as OpenAI sends usage; then `[DONE]`."""
        rest = {k: v for k, v in obj.items() if k not in CHUNK_KEYS}
        if not rest:
            return self.encode(obj) + DONE
        finish = {k: obj[k] for k in CHUNK_KEYS if k in obj}
        last = {**{k: v for k, v in finish.items() if k != "choices"}, "choices": [], **rest}
        return self.encode(finish) + self.encode(last) + DONE

    # -- re-asking ------------------------------------------------------------------------------------

    @staticmethod
    def reask_with_tools(body: dict[str, Any], said: str, calls: list[dict[str, Any]],
                         tool_messages: list[dict[str, Any]], notes: Sequence[str]) -> dict[str, Any]:
        """The calls go back with ids (made up when the model gave none) and each result
        answers its call by id, as OpenAI requires."""
        wire = [_wire_call(c, n) for n, c in enumerate(calls)]
        results = [{**m, "tool_call_id": c["id"]} for m, c in zip(tool_messages, wire, strict=False)]
        out = dict(body)
        out["messages"] = [
            *body["messages"],
            {"role": "assistant", "content": said, "tool_calls": copy.deepcopy(wire)},
            *results,
            *({"role": "system", "content": n} for n in notes if n),
        ]
        return out

    @staticmethod
    def tool_message(name: str, content: str, call_id: str | None = None) -> dict[str, Any]:
        return {"role": "tool", "tool_call_id": call_id or "", "content": content}


OPENAI_CHAT = OpenAIChatDialect()
