"""A small Ollama-compatible HTTP server for tests, on 127.0.0.1.

Ollama itself cannot run here, so every Ollama path (embedder, Granite merger, proxy) is
tested with the official `ollama` client against this server. It speaks the parts of the
Ollama REST API that Loci uses: /api/chat and /api/generate (streaming NDJSON or not),
/api/embed and /api/embeddings, /api/tags, /api/show, /api/version, /api/pull, and Ollama's
OpenAI-compatible /v1/chat/completions (server-sent events or not; `chat_reply` scripts it
too, tool calls given in Ollama's shape are sent in OpenAI's: ids, JSON-text arguments).

Behaviour is scripted per test:
    with FakeOllama() as fake:
        fake.chat_reply = lambda req: '{"title": ...}'       # text of the assistant message
        fake.delay_s = 5                                     # answer slowly (timeouts)
        fake.chunk_delay_s = 0.5                             # stream slowly
        fake.tool_call_pieces = True                         # OpenAI-style: arguments in pieces
        client = ollama.Client(host=fake.url)
    fake.requests  # [(path, json_body)] in arrival order, to assert what upstream saw
"""

from __future__ import annotations

import hashlib
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

import numpy as np

Reply = str | dict[str, Any]  # text, or a full message dict (e.g. with tool_calls)


def fake_embedding(text: str, dim: int = 16) -> list[float]:
    """Deterministic unit vector from the text's hash (stands in for a real model)."""
    seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
    vec = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return (vec / np.linalg.norm(vec)).tolist()


def _default_chat_reply(req: dict[str, Any]) -> Reply:
    last = next((m for m in reversed(req.get("messages", [])) if m.get("role") == "user"), {})
    return f"echo: {last.get('content', '')}"


def _default_generate_reply(req: dict[str, Any]) -> Reply:
    return f"echo: {req.get('prompt', '')}"


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gave up (timeouts, cancelled streams) closes its socket while we
        # still write: expected in these tests, so no traceback. Anything else is a bug.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class FakeOllama:
    def __init__(self, *, embed_dim: int = 16, models: list[str] | None = None) -> None:
        self.embed_dim = embed_dim
        self.models = models or ["granite3.2:2b", "nomic-embed-text:latest", "llama3.2:latest"]
        self.chat_reply: Callable[[dict[str, Any]], Reply] = _default_chat_reply
        self.generate_reply: Callable[[dict[str, Any]], Reply] = _default_generate_reply
        self.delay_s: float = 0.0
        self.fail_status: int | None = None  # answer every call with this HTTP status
        self.stream_chunk_chars: int = 7  # streaming splits replies into chunks this size
        self.chunk_delay_s: float = 0.0  # pause before each streamed line after the first
        # /v1 streams: each tool call whole in one chunk (Ollama), or its arguments spread
        # over several chunks after a first one naming it (OpenAI).
        self.tool_call_pieces: bool = False
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------
    @property
    def url(self) -> str:
        assert self._server is not None, "server not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> "FakeOllama":
        fake = self

        class Handler(_Handler):
            owner = fake

        self._server = _Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> "FakeOllama":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def record(self, path: str, body: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append((path, body))

    def paths(self) -> list[str]:
        with self._lock:
            return [p for p, _ in self.requests]


class _Handler(BaseHTTPRequestHandler):
    owner: FakeOllama
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:  # keep test output clean
        return

    # -- plumbing --------------------------------------------------------------------------
    def _body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw) if raw else {}
        except json.JSONDecodeError:
            return {"_raw": raw.decode("utf-8", "replace")}

    def _send_json(self, obj: Any, status: int = 200) -> None:
        data = json.dumps(obj).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_ndjson(self, lines: list[dict[str, Any]]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for n, obj in enumerate(lines):
            if n and self.owner.chunk_delay_s:
                time.sleep(self.owner.chunk_delay_s)
            data = (json.dumps(obj) + "\n").encode("utf-8")
            self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _send_sse(self, events: list[dict[str, Any]]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for n, obj in enumerate([*events, None]):
            if n and self.owner.chunk_delay_s:
                time.sleep(self.owner.chunk_delay_s)
            data = b"data: " + (json.dumps(obj).encode("utf-8") if obj is not None else b"[DONE]") + b"\n\n"
            self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _pre(self, path: str, body: dict[str, Any]) -> bool:
        """Record, delay, fail. Returns False when the request was already answered."""
        self.owner.record(path, body)
        if self.owner.delay_s:
            time.sleep(self.owner.delay_s)
        if self.owner.fail_status:
            error: Any = "fake upstream failure"
            if path.startswith("/v1/"):  # Ollama's OpenAI-compatible errors
                error = {"message": error, "type": "api_error", "param": None, "code": None}
            self._send_json({"error": error}, self.owner.fail_status)
            return False
        return True

    # -- routes ----------------------------------------------------------------------------
    def do_GET(self) -> None:  # noqa: N802 (http.server naming)
        path = self.path.split("?")[0]
        if not self._pre(path, {}):
            return
        if path == "/api/tags":
            self._send_json(
                {
                    "models": [
                        {
                            "name": m,
                            "model": m,
                            "modified_at": "2026-01-01T00:00:00Z",
                            "size": 1000,
                            "digest": hashlib.sha256(m.encode()).hexdigest(),
                            "details": {"format": "gguf", "family": m.split(":")[0]},
                        }
                        for m in self.owner.models
                    ]
                }
            )
        elif path == "/api/version":
            self._send_json({"version": "0.0.0-fake"})
        elif path in ("/", ""):
            data = b"Ollama is running"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        else:
            self._send_json({"error": f"not found: {path}"}, 404)

    def do_HEAD(self) -> None:  # noqa: N802
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:  # noqa: N802
        path = self.path.split("?")[0]
        body = self._body()
        if not self._pre(path, body):
            return
        model = body.get("model", "fake")
        if path == "/api/chat":
            reply = self.owner.chat_reply(body)
            message = reply if isinstance(reply, dict) else {"role": "assistant", "content": reply}
            message.setdefault("role", "assistant")
            message.setdefault("content", "")
            self._answer(body, model, message=message)
        elif path == "/api/generate":
            reply = self.owner.generate_reply(body)
            text = reply if isinstance(reply, str) else str(reply.get("content", ""))
            self._answer(body, model, response=text)
        elif path == "/v1/chat/completions":
            reply = self.owner.chat_reply(body)
            message = reply if isinstance(reply, dict) else {"role": "assistant", "content": reply}
            self._answer_openai(body, model, message)
        elif path == "/api/embed":
            inputs = body.get("input", [])
            inputs = [inputs] if isinstance(inputs, str) else list(inputs)
            self._send_json(
                {
                    "model": model,
                    "embeddings": [fake_embedding(t, self.owner.embed_dim) for t in inputs],
                }
            )
        elif path == "/api/embeddings":
            self._send_json({"embedding": fake_embedding(body.get("prompt", ""), self.owner.embed_dim)})
        elif path == "/api/show":
            self._send_json({"modelfile": f"FROM {model}", "details": {"family": "fake"}})
        elif path == "/api/pull":
            lines = [{"status": "pulling manifest"}, {"status": "success"}]
            if body.get("stream", True):
                self._send_ndjson(lines)
            else:
                self._send_json(lines[-1])
        else:
            self._send_json({"error": f"not found: {path}"}, 404)

    def _answer(
        self,
        body: dict[str, Any],
        model: str,
        *,
        message: dict[str, Any] | None = None,
        response: str | None = None,
    ) -> None:
        counters = {
            "total_duration": 1_000_000,
            "load_duration": 1000,
            "prompt_eval_count": 10,
            "prompt_eval_duration": 1000,
            "eval_count": 20,
            "eval_duration": 1000,
        }
        created = "2026-01-01T00:00:00.000000Z"
        stream = body.get("stream", True)  # Ollama streams unless told otherwise
        if not stream:
            out: dict[str, Any] = {"model": model, "created_at": created, "done": True,
                                   "done_reason": "stop", **counters}
            if message is not None:
                out["message"] = message
            else:
                out["response"] = response
            self._send_json(out)
            return
        text = message["content"] if message is not None else (response or "")
        n = max(1, self.owner.stream_chunk_chars)
        pieces = [text[i : i + n] for i in range(0, len(text), n)] or [""]
        lines = []
        for piece in pieces:
            line: dict[str, Any] = {"model": model, "created_at": created, "done": False}
            if message is not None:
                line["message"] = {"role": "assistant", "content": piece}
            else:
                line["response"] = piece
            lines.append(line)
        final: dict[str, Any] = {"model": model, "created_at": created, "done": True,
                                 "done_reason": "stop", **counters}
        if message is not None:
            final["message"] = {"role": "assistant", "content": ""}
            if message.get("tool_calls"):
                final["message"]["tool_calls"] = message["tool_calls"]
        else:
            final["response"] = ""
        lines.append(final)
        self._send_ndjson(lines)

    def _answer_openai(self, body: dict[str, Any], model: str, message: dict[str, Any]) -> None:
        """An answer as Ollama's /v1/chat/completions gives it."""
        text = message.get("content") or ""
        calls = [_openai_call(c, n) for n, c in enumerate(message.get("tool_calls") or [])]
        head = {"id": "chatcmpl-42", "created": 1767225600, "model": model, "system_fingerprint": "fp_ollama"}
        finish = "tool_calls" if calls else "stop"
        usage = {"prompt_tokens": 10, "completion_tokens": 20, "total_tokens": 30}
        if not body.get("stream"):  # OpenAI answers whole unless asked to stream
            msg: dict[str, Any] = {"role": "assistant", "content": text}
            if calls:
                msg["tool_calls"] = calls
            self._send_json({**head, "object": "chat.completion", "usage": usage, "choices": [
                {"index": 0, "message": msg, "finish_reason": finish}]})
            return
        head = {**head, "object": "chat.completion.chunk"}

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
            return {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}

        n = max(1, self.owner.stream_chunk_chars)
        events = [chunk({"role": "assistant", "content": text[i : i + n]}) for i in range(0, len(text), n)]
        for i, call in enumerate(calls):
            if not self.owner.tool_call_pieces:
                events.append(chunk({"role": "assistant", "content": "", "tool_calls": [{**call, "index": i}]}))
                continue
            args = call["function"]["arguments"]
            events.append(chunk({"tool_calls": [{"index": i, "id": call["id"], "type": "function",
                                                 "function": {"name": call["function"]["name"], "arguments": ""}}]}))
            events += [chunk({"tool_calls": [{"index": i, "function": {"arguments": args[j : j + n]}}]})
                       for j in range(0, len(args), n)]
        events.append(chunk({"role": "assistant", "content": ""}, finish))
        if (body.get("stream_options") or {}).get("include_usage"):
            events.append({**head, "choices": [], "usage": usage})
        self._send_sse(events)


def _openai_call(call: dict[str, Any], n: int) -> dict[str, Any]:
    fn = call.get("function", {})
    args = fn.get("arguments", {})
    return {"id": call.get("id") or f"call_fake{n}", "type": "function",
            "function": {"name": fn.get("name", ""), "arguments": args if isinstance(args, str) else json.dumps(args)}}
