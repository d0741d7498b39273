"""The proxy's parts without HTTP: identity headers, flags, config checks, dialects, header
hygiene, error mapping, turn ids and the text joiner."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from online.proxy.config import ProxyConfig, flag
from online.proxy.dialects import CHAT, GENERATE
from online.proxy.exchange import Exchange
from online.proxy.identity import IdentityError, identity_from_headers
from online.proxy.memory_tools import is_loci_call
from online.proxy.reset import confirmation, is_reset
from online.proxy.shown import RequestHold, VisibleText, visible_of
from online.proxy.upstream import Upstream, UpstreamTimeouts, loop_error, request_headers
from online.state import MemoryService
from pipelines.records import Identity
from pipelines.settings import FLAG_DEFAULTS, LiveFlags, Settings, load_settings, set_flag


def test_identity_comes_from_loci_headers_with_defaults() -> None:
    assert identity_from_headers({}) == Identity()
    who = identity_from_headers({"X-Loci-User": "dana", "x-loci-project": " atlas "})
    assert who == Identity(user_id="dana", project_id="atlas")
    default = Identity(user_id="solo", project_id="home")
    assert identity_from_headers({"X-Loci-Session": "s1"}, default) == Identity(
        user_id="solo", project_id="home", session_id="s1")


def test_a_chat_without_a_session_header_is_its_conversation_in_its_project() -> None:
    """Two chats opening with "Hi!" in two projects are two sessions (a session's audience
    is the user's in any project: one client's chat wish reached the other's); a header
    still names the session itself."""
    hi = [{"role": "user", "content": "Hi!"}]
    acme, birch, again = (identity_from_headers({"X-Loci-Project": p}, conversation=m) for p, m in (
        ("acme", hi), ("birch", hi), ("acme", [*hi, {"role": "assistant", "content": "Hey"}])))
    assert acme.session_id.startswith("chat-") and acme.session_id != birch.session_id
    assert again.session_id == acme.session_id  # the same chat, a later request
    assert identity_from_headers({"X-Loci-Session": "s1"}, conversation=hi).session_id == "s1"


def test_open_webui_headers_are_a_fallback_only() -> None:
    headers = {"X-OpenWebUI-User-Id": "u-42", "X-OpenWebUI-Chat-Id": "chat-7"}
    assert identity_from_headers(headers) == Identity(user_id="u-42", session_id="chat-7")
    assert identity_from_headers({**headers, "X-Loci-User": "dana"}).user_id == "dana"
    assert identity_from_headers(headers, openwebui=False) == Identity()


@pytest.mark.parametrize("value", ["", "   ", "x" * 201, "bad\nvalue"])
def test_a_malformed_identity_header_is_refused(value: str) -> None:
    with pytest.raises(IdentityError, match="x-loci-user"):
        identity_from_headers({"X-Loci-User": value})


def test_the_master_switch_overrides_every_flag() -> None:
    settings = Settings()
    assert flag(settings, "context_injection") and not flag(settings, "memory_tools")
    settings.flags["memory_tools"] = True
    assert flag(settings, "memory_tools")
    settings.flags["enabled"] = False
    assert not flag(settings, "context_injection") and not flag(settings, "memory_tools")


@pytest.mark.parametrize("bad", [{"max_tool_rounds": -1}, {"catalog_field": " "},
                                 {"max_request_bytes": 0}])
def test_config_rejects_nonsense(bad: dict) -> None:
    with pytest.raises(ValueError):
        ProxyConfig(**bad)


def test_chat_memory_goes_after_the_clients_system_messages() -> None:
    body = {"model": "m", "messages": [{"role": "system", "content": "A"}, {"role": "system", "content": "B"},
                                       {"role": "user", "content": "hi"}]}
    out = CHAT.inject(body, ["MEM", "", "INSTR"])
    assert [m["content"] for m in out["messages"]] == ["A", "B", "MEM", "INSTR", "hi"]
    assert [m["content"] for m in body["messages"]] == ["A", "B", "hi"]  # the original is untouched


def test_generate_memory_goes_into_system_or_before_the_prompt() -> None:
    assert GENERATE.inject({"model": "m", "prompt": "Q"}, ["MEM"])["prompt"] == "MEM\n\nQ"
    out = GENERATE.inject({"model": "m", "prompt": "Q", "system": "S"}, ["MEM"])
    assert out["system"] == "S\n\nMEM" and out["prompt"] == "Q"


@pytest.mark.parametrize("body, reason", [
    ({"model": "m", "prompt": ""}, "no prompt"),
    ({"model": "m", "prompt": "x", "raw": True}, "raw prompt"),
    ({"model": "m", "prompt": "def f(", "suffix": "return 1"}, "fill-in-the-middle"),
    ([1, 2], "not a JSON object"),
])
def test_generate_requests_that_cannot_take_memory_are_named(body, reason: str) -> None:
    assert reason in GENERATE.unsupported(body)


@pytest.mark.parametrize("body", [None, {"model": "m", "messages": []}, {"model": "m", "messages": ["hi"]},
                                  {"model": "m", "messages": [{"role": "user", "content": 3}]},
                                  {"messages": [{"role": "user", "content": "hi"}]}])
def test_chat_bodies_without_usable_messages_are_passed_through(body) -> None:
    assert CHAT.unsupported(body) is not None


def test_request_headers_drop_hop_by_hop_and_identity() -> None:
    incoming = [("Host", "x"), ("Connection", "keep-alive"), ("Content-Length", "3"), ("X-Loci-User", "dana"),
                ("Authorization", "Bearer t"), ("Accept-Encoding", "gzip")]
    hop = {"x-loci-proxied": "me"}
    assert request_headers(incoming, keep_encoding=True, hop_id="me") == {
        "authorization": "Bearer t", "accept-encoding": "gzip", **hop}
    assert request_headers(incoming[:1], keep_encoding=True, hop_id="me") == {"accept-encoding": "identity", **hop}
    assert request_headers(incoming, keep_encoding=False, hop_id="me") == {"authorization": "Bearer t", **hop}


def test_a_request_that_comes_back_to_the_same_proxy_is_a_loop() -> None:
    chained = request_headers([("X-Loci-Proxied", "other")], keep_encoding=False, hop_id="me")
    assert chained["x-loci-proxied"] == "other,me"  # another proxy before us: fine
    assert loop_error({"X-Loci-Proxied": "other"}, "me", "http://u") is None
    loop = loop_error(chained, "me", "http://u")
    assert loop is not None and loop.status == 508 and "loop" in loop.message


def test_upstream_failures_map_to_502_and_504() -> None:
    up = Upstream("http://127.0.0.1:9", timeouts=UpstreamTimeouts(connect_s=1.5))
    refused = up.error_for(httpx.ConnectError("connection refused"))
    assert refused.status == 502 and "http://127.0.0.1:9" in refused.message
    slow = up.error_for(httpx.ConnectTimeout("slow"))
    assert slow.status == 504 and "connecting (limit 1.5 s)" in slow.message
    assert up.error_for(httpx.WriteTimeout("stuck")).status == 504
    assert up.error_for(httpx.RemoteProtocolError("cut")).status == 502


def test_client_defined_memory_tools_stay_the_clients() -> None:
    call = {"function": {"name": "memory_search", "arguments": {"query": "x"}}}
    assert is_loci_call(call, set()) and not is_loci_call(call, {"memory_search"})
    assert not is_loci_call({"function": {"name": "get_weather"}}, set())


def test_turn_ids_are_deterministic_per_identity_and_conversation(tmp_path: Path) -> None:
    service = MemoryService(Settings(embedder="hash", data_dir=str(tmp_path)))
    try:
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        later = {"model": "m", "messages": [*body["messages"], {"role": "assistant", "content": "x"},
                                            {"role": "tool", "content": "42"}]}

        def ex(who: Identity, b: dict) -> Exchange:
            return Exchange(service, service.settings, ProxyConfig(), who, CHAT, b)

        a, b = ex(Identity(user_id="dana"), body), ex(Identity(user_id="dana"), body)
        assert a.user_turn_id == b.user_turn_id and a.assistant_turn_id("x") == b.assistant_turn_id("x")
        assert a.assistant_turn_id("x") != a.assistant_turn_id("y")
        assert ex(Identity(user_id="eve"), body).user_turn_id != a.user_turn_id
        # A client tool loop resends the same user turn: the same id, so it lands once.
        assert ex(Identity(user_id="dana"), later).user_turn_id == a.user_turn_id
    finally:
        service.close()


def test_rounds_are_joined_on_a_new_paragraph() -> None:
    shown = VisibleText()
    assert shown.emit("recall x") == "recall x"
    shown.start_round()
    assert shown.emit("") == "" and shown.emit("Answer") == "\n\nAnswer" and shown.emit(".") == "."
    assert shown.text == "recall x\n\nAnswer."


def test_visible_text_and_reset_helpers() -> None:
    assert visible_of('Hi. memory_save(topic="a", content="b")') == "Hi."
    assert is_reset({"messages": [{"role": "user", "content": " !RESET "}]}, ProxyConfig())
    assert not is_reset({"messages": [{"role": "user", "content": "please !reset"}]}, ProxyConfig())
    text = confirmation({"messages": 6, "accept": 2, "quarantine": 1, "reject": 1})
    assert text.startswith("[memory] Summarized 6 messages → 3 memories saved (1 held for review, "
                           "1 refused by the policy)")


def test_flags_follow_the_config_file_checked_at_most_once_per_interval(tmp_path: Path) -> None:
    cfg = tmp_path / "loci.toml"
    set_flag("context_injection", True, cfg)
    settings = load_settings(cfg, environ={})
    now = [0.0]
    live = LiveFlags(settings, cfg, interval_s=1.0, environ={}, clock=lambda: now[0])
    set_flag("context_injection", False, cfg)
    assert live.refresh()["context_injection"] is True  # checked less than a second ago
    now[0] = 1.0
    assert live.refresh()["context_injection"] is False and settings.flags["context_injection"] is False
    cfg.write_text("[flags\ncontext_inj", encoding="utf-8")  # caught mid-write: flags kept
    now[0] = 2.0
    assert live.refresh() == {**FLAG_DEFAULTS, "context_injection": False}
    with pytest.raises(ValueError, match="unknown flag"):
        set_flag("telepathy", True, cfg)


def test_the_environment_still_wins_over_a_flipped_file(tmp_path: Path) -> None:
    cfg = tmp_path / "loci.toml"
    settings = load_settings(cfg, environ={"LOCI_FLAGS": '{"memory_tools": true}'})
    live = LiveFlags(settings, cfg, interval_s=0, environ={"LOCI_FLAGS": '{"memory_tools": true}'})
    set_flag("memory_tools", False, cfg)
    set_flag("enabled", False, cfg)
    flags = live.refresh()
    assert flags["memory_tools"] is True and flags["enabled"] is False


def feed_by_char(hold: RequestHold, text: str) -> str:
    return "".join(hold.feed(c) for c in text)


def test_a_streamed_recall_request_line_is_held_back_and_other_lines_pass_at_once() -> None:
    hold = RequestHold(active=True)
    assert feed_by_char(hold, "Let me check.\n") == "Let me check.\n"
    assert feed_by_char(hold, "Re") == "" and hold.feed("gions vary.") == "Regions vary."
    assert feed_by_char(hold, "\n`recall staging` and more") == "\n"  # held to the end of the round
    assert hold.release() == "`recall staging` and more"
    assert RequestHold(active=False).feed("recall x") == "recall x"


def test_the_proxy_knows_every_memory_api_path_loci_serve_has() -> None:
    """`MEMORY_API_PATHS` (answered by the proxy with a 404 naming `loci serve`) holds every
    `/v1/` route of the memory service's controllers."""
    from litestar.handlers import HTTPRouteHandler

    from online.controllers import CONTROLLERS
    from online.proxy.app import MEMORY_API_PATHS

    served = {f"{c.path if isinstance(c.path, str) else ''}/{p.lstrip('/')}".rstrip("/")
              for c in CONTROLLERS for h in vars(c).values() if isinstance(h, HTTPRouteHandler) for p in h.paths}
    api = {p for p in served if p.startswith("/v1/")}
    assert api and all(any(p == m or p.startswith(f"{m}/") for m in MEMORY_API_PATHS) for p in api), api
