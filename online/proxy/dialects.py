"""The chat APIs the proxy adds memory to, as "dialects": where the user's text is, how to
inject system context, where the answer text sits in a (streamed) object, how to re-ask,
and how answers, stream pieces and errors are framed on the wire. Everything else about a
request (model, options, keep_alive, images, think, client tools...) is carried through
untouched.

- `/api/chat`: messages; memory goes in as system messages right after the client's leading
  system messages; tool calls and re-asks use the `tool` role.
- `/api/generate`: one prompt; memory goes into the client's `system` when it sent one, or
  before the prompt otherwise (setting `system` would replace the model's own system prompt).
  `raw` prompts (already templated), fill-in-the-middle (`suffix`) and empty prompts (a
  model load) are passed through without memory.
- `/v1/chat/completions` (OpenAI-compatible, `online.proxy.openai_chat`): the chat dialect
  in OpenAI's shapes.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from online.proxy.responses import NDJSON_TYPE, ndjson_line
from online.proxy.tasks import is_task_prompt

if TYPE_CHECKING:
    import httpx

    from online.proxy.upstream import Upstream


def _is_text(value: Any) -> bool:
    return value is None or isinstance(value, str)


def content_text(content: Any) -> str:
    """A message's text: a string, or the text parts of a list of content parts (OpenAI)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p["text"] for p in content
                         if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str))
    return ""


class OllamaWire:
    """How Ollama frames requests and answers: NDJSON lines, the last one `done`; errors `{"error": text}`."""

    media_type = NDJSON_TYPE
    supports_reset = False

    def invalid(self, body: Any) -> str | None:
        """Why this body is refused with a 400; None: Ollama answers (or rejects) it itself."""
        return None

    @staticmethod
    def streams(body: dict[str, Any]) -> bool:
        return body.get("stream") is not False  # Ollama streams unless told not to

    @staticmethod
    def structured(body: dict[str, Any]) -> bool:
        """Whether the answer is asked for as structured output (Ollama's `format`)."""
        return bool(body.get("format"))

    @staticmethod
    def with_stream(body: dict[str, Any], stream: bool) -> dict[str, Any]:
        return {**body, "stream": stream}

    def background_task(self, body: dict[str, Any]) -> bool:
        """Whether the request is a chat UI's background task (a title, tags, follow-ups),
        not the user's chat (`online.proxy.tasks`): forwarded without memory."""
        return is_task_prompt(self.user_text(body), earlier_turns=self.earlier_turns(body),
                              format_asked=self.structured(body), stream_off=body.get("stream") is False)

    @staticmethod
    def error_body(message: str, status: int = 500) -> dict[str, Any]:
        return {"error": message}

    @staticmethod
    def error_text(obj: Any) -> str | None:
        """The message of an error body or streamed error object, or None."""
        err = obj.get("error") if isinstance(obj, dict) else None
        if isinstance(err, dict):
            err = err.get("message")
        return err if isinstance(err, str) and err else None

    @staticmethod
    def is_final(obj: dict[str, Any]) -> bool:
        return bool(obj.get("done"))

    @staticmethod
    def read(upstream: Upstream, response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
        return upstream.ndjson(response)

    @staticmethod
    def encode(obj: dict[str, Any]) -> bytes:
        return ndjson_line(obj)

    def encode_last(self, obj: dict[str, Any]) -> bytes:
        """The final object of a stream, and whatever closes the stream."""
        return self.encode(obj)


def ollama_time() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class ChatDialect(OllamaWire):
    name = "chat"
    path = "/api/chat"
    supports_tools = True
    supports_reset = True

    def unsupported(self, body: Any) -> str | None:
        """Why this body cannot get memory (it is then forwarded untouched), or None."""
        if not isinstance(body, dict):
            return "body is not a JSON object"
        msgs = body.get("messages")
        if not isinstance(msgs, list) or not msgs:
            return "no messages"
        for m in msgs:
            if not isinstance(m, dict) or not isinstance(m.get("role"), str) or not _is_text(m.get("content")):
                return "a message is not {role, content}"
        if not isinstance(body.get("model"), str):
            return "no model"
        return None

    @staticmethod
    def user_text(body: dict[str, Any]) -> str:
        for m in reversed(body["messages"]):
            if m["role"] == "user":
                return content_text(m.get("content"))
        return ""

    @staticmethod
    def history_until_user(body: dict[str, Any]) -> list[list[str]]:
        """Role and text of the messages up to the last user message (turn identity)."""
        msgs = body["messages"]
        last = max((i for i, m in enumerate(msgs) if m["role"] == "user"), default=-1)
        return [[m["role"], content_text(m.get("content"))] for m in msgs[: last + 1]]

    @staticmethod
    def history(body: dict[str, Any]) -> list[list[str]]:
        return [[m["role"], content_text(m.get("content"))] for m in body["messages"]]

    @staticmethod
    def earlier_turns(body: dict[str, Any]) -> bool:
        """Whether the conversation holds turns before the user's message."""
        return sum(m["role"] != "system" for m in body["messages"]) > 1

    @staticmethod
    def earlier_texts(body: dict[str, Any]) -> list[str]:
        """What the user and the assistant said before the last user message: the
        conversation the client resends, in the model's context already."""
        msgs = body["messages"]
        last = max((i for i, m in enumerate(msgs) if m["role"] == "user"), default=0)
        return [content_text(m.get("content")) for m in msgs[:last] if m["role"] in ("user", "assistant")]

    @staticmethod
    def client_tool_names(body: dict[str, Any]) -> set[str]:
        names = set()
        for tool in body.get("tools") or []:
            fn = tool.get("function") if isinstance(tool, dict) else None
            if isinstance(fn, dict) and isinstance(fn.get("name"), str):
                names.add(fn["name"])
        return names

    LEADING_ROLES = ("system",)

    @classmethod
    def inject(cls, body: dict[str, Any], blocks: Sequence[str]) -> dict[str, Any]:
        """A copy of `body` with `blocks` as system messages after the leading ones."""
        out = dict(body)
        msgs = list(body["messages"])
        lead = 0
        while lead < len(msgs) and msgs[lead]["role"] in cls.LEADING_ROLES:
            lead += 1
        extra = [{"role": "system", "content": b} for b in blocks if b]
        out["messages"] = msgs[:lead] + extra + msgs[lead:]
        return out

    @classmethod
    def add_tools(cls, body: dict[str, Any], specs: Sequence[dict[str, Any]]) -> dict[str, Any]:
        out = dict(body)
        taken = cls.client_tool_names(body)
        out["tools"] = list(body.get("tools") or []) + [s for s in specs if s["function"]["name"] not in taken]
        return out

    @staticmethod
    def text(obj: dict[str, Any]) -> str:
        msg = obj.get("message")
        content = msg.get("content") if isinstance(msg, dict) else None
        return content if isinstance(content, str) else ""

    @staticmethod
    def thinking(obj: dict[str, Any]) -> str:
        """The model's reasoning text in an answer or chunk (`think`), shown by many clients."""
        msg = obj.get("message")
        value = msg.get("thinking") if isinstance(msg, dict) else None
        return value if isinstance(value, str) else ""

    @staticmethod
    def with_thinking(obj: dict[str, Any], text: str) -> dict[str, Any]:
        msg = obj.get("message")
        return {**obj, "message": {**msg, "thinking": text}} if isinstance(msg, dict) else obj

    @staticmethod
    def calls(obj: dict[str, Any]) -> list[dict[str, Any]]:
        msg = obj.get("message")
        calls = msg.get("tool_calls") if isinstance(msg, dict) else None
        return [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []

    @staticmethod
    def rewrite(obj: dict[str, Any], text: str, calls: list[dict[str, Any]] | None) -> dict[str, Any]:
        """A copy of a chat object with the message text (and tool calls) replaced."""
        out = dict(obj)
        msg = dict(obj.get("message") or {"role": "assistant"})
        msg["content"] = text
        if calls is not None:
            if calls:
                msg["tool_calls"] = calls
            else:
                msg.pop("tool_calls", None)
        out["message"] = msg
        return out

    @staticmethod
    def is_empty(obj: dict[str, Any]) -> bool:
        """A non-final chunk with nothing left for the client (held-back text only)."""
        msg = obj.get("message") or {}
        return not msg.get("content") and not msg.get("thinking") and not msg.get("tool_calls") \
            and not msg.get("images") and not obj.get("logprobs")

    @staticmethod
    def chunk(template: dict[str, Any], text: str) -> dict[str, Any]:
        """A non-final chunk carrying `text` (a round's tail flushed before a re-ask)."""
        base = {k: template[k] for k in ("model", "created_at") if k in template}
        return {**base, "message": {"role": "assistant", "content": text}, "done": False}

    @staticmethod
    def reply(model: str, text: str, streaming: bool) -> dict[str, Any]:
        """The final object of an answer the proxy gives itself (`!reset`), with `text`."""
        return {"model": model, "created_at": ollama_time(), "message": {"role": "assistant", "content": text},
                "done": True, "done_reason": "stop"}

    @staticmethod
    def reask_with_tools(body: dict[str, Any], said: str, calls: list[dict[str, Any]],
                         tool_messages: list[dict[str, Any]], notes: Sequence[str]) -> dict[str, Any]:
        out = dict(body)
        out["messages"] = [
            *body["messages"],
            {"role": "assistant", "content": said, "tool_calls": copy.deepcopy(calls)},
            *tool_messages,
            *({"role": "system", "content": n} for n in notes if n),
        ]
        return out

    @staticmethod
    def reask_with_context(body: dict[str, Any], said: str, blocks: Sequence[str]) -> dict[str, Any]:
        out = dict(body)
        out["messages"] = [
            *body["messages"],
            {"role": "assistant", "content": said},
            *({"role": "system", "content": b} for b in blocks if b),
            {"role": "user", "content": "Continue your answer using the memory results above."},
        ]
        return out

    @staticmethod
    def tool_message(name: str, content: str, call_id: str | None = None) -> dict[str, Any]:
        """A tool result; the call's id is echoed when the model gave one (OpenAI-style
        clients pair them by id, Ollama by name)."""
        msg = {"role": "tool", "tool_name": name, "content": content}
        if isinstance(call_id, str) and call_id:
            msg["tool_call_id"] = call_id
        return msg


class GenerateDialect(OllamaWire):
    name = "generate"
    path = "/api/generate"
    supports_tools = False

    def unsupported(self, body: Any) -> str | None:
        if not isinstance(body, dict):
            return "body is not a JSON object"
        if not isinstance(body.get("model"), str):
            return "no model"
        prompt = body.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            return "no prompt (a model load or unload)"
        if body.get("raw"):
            return "raw prompt (already templated)"
        if body.get("suffix"):
            return "fill-in-the-middle completion"
        if not _is_text(body.get("system")):
            return "system is not a string"
        return None

    @staticmethod
    def user_text(body: dict[str, Any]) -> str:
        return body.get("prompt") or ""

    @staticmethod
    def history_until_user(body: dict[str, Any]) -> list[Any]:
        return [body.get("system") or "", body.get("prompt") or "", list(body.get("context") or [])[-64:]]

    history = history_until_user

    @staticmethod
    def earlier_turns(body: dict[str, Any]) -> bool:
        return bool(body.get("context"))  # the model's tokens of an earlier exchange

    @staticmethod
    def earlier_texts(body: dict[str, Any]) -> list[str]:
        return []  # /api/generate carries no earlier messages (only the model's token context)

    @staticmethod
    def client_tool_names(body: dict[str, Any]) -> set[str]:
        return set()

    @staticmethod
    def inject(body: dict[str, Any], blocks: Sequence[str]) -> dict[str, Any]:
        blocks = [b for b in blocks if b]
        if not blocks:
            return dict(body)
        out = dict(body)
        memory = "\n\n".join(blocks)
        if body.get("system"):
            out["system"] = f"{body['system']}\n\n{memory}"
        else:
            out["prompt"] = f"{memory}\n\n{body['prompt']}"
        return out

    @staticmethod
    def add_tools(body: dict[str, Any], specs: Sequence[dict[str, Any]]) -> dict[str, Any]:
        return dict(body)

    @staticmethod
    def text(obj: dict[str, Any]) -> str:
        value = obj.get("response")
        return value if isinstance(value, str) else ""

    @staticmethod
    def thinking(obj: dict[str, Any]) -> str:
        value = obj.get("thinking")
        return value if isinstance(value, str) else ""

    @staticmethod
    def with_thinking(obj: dict[str, Any], text: str) -> dict[str, Any]:
        return {**obj, "thinking": text}

    @staticmethod
    def calls(obj: dict[str, Any]) -> list[dict[str, Any]]:
        return []

    @staticmethod
    def rewrite(obj: dict[str, Any], text: str, calls: list[dict[str, Any]] | None) -> dict[str, Any]:
        out = dict(obj)
        out["response"] = text
        return out

    @staticmethod
    def is_empty(obj: dict[str, Any]) -> bool:
        return not obj.get("response") and not obj.get("thinking") and not obj.get("logprobs")

    @staticmethod
    def chunk(template: dict[str, Any], text: str) -> dict[str, Any]:
        base = {k: template[k] for k in ("model", "created_at") if k in template}
        return {**base, "response": text, "done": False}

    @staticmethod
    def reask_with_tools(body: dict[str, Any], said: str, calls: list[dict[str, Any]],
                         tool_messages: list[dict[str, Any]], notes: Sequence[str]) -> dict[str, Any]:
        results = [m["content"] for m in tool_messages]
        return GenerateDialect.reask_with_context(body, said, [*results, *notes])

    @staticmethod
    def reask_with_context(body: dict[str, Any], said: str, blocks: Sequence[str]) -> dict[str, Any]:
        out = dict(body)
        context = "\n\n".join(b for b in blocks if b)
        out["prompt"] = (f"{body['prompt']}\n\n[Your answer so far]\n{said}\n\n{context}\n\n"
                         "Continue your answer using the memory results above.")
        out.pop("context", None)  # the tokens of the first answer would repeat it
        return out

    @staticmethod
    def tool_message(name: str, content: str, call_id: str | None = None) -> dict[str, Any]:
        return {"role": "tool", "tool_name": name, "content": content}


CHAT = ChatDialect()
GENERATE = GenerateDialect()
