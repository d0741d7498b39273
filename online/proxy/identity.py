"""Whose memory a proxied request uses, from its headers.

The same headers as the recall service (`X-Loci-User`, `X-Loci-Project`, `X-Loci-Session`,
`X-Loci-Org`; `X-Loci-Timezone` names the user's zone). Ollama clients cannot add query
parameters, so headers are the only way in; an id given in no header takes the configured
default ("default" everywhere, the single-user setup). Open WebUI, started with
`ENABLE_FORWARD_USER_INFO_HEADERS=true`, sends `X-OpenWebUI-User-Id` and
`X-OpenWebUI-Chat-Id`; they are used for user and session when the Loci headers are absent.
A chat request that names no session at all is its own conversation's
(`conversation_session`), so session-scoped memory stays in that chat.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from online.proxy.dialects import content_text
from pipelines.records import Identity, sha256_text, time_zone

HEADERS = {
    "user_id": "x-loci-user",
    "project_id": "x-loci-project",
    "session_id": "x-loci-session",
    "org_id": "x-loci-org",
}
OPENWEBUI_HEADERS = {"user_id": "x-openwebui-user-id", "session_id": "x-openwebui-chat-id"}
TIMEZONE_HEADER = "x-loci-timezone"  # the user's IANA zone: their "yesterday" (`timezone_from_headers`)
MAX_ID_CHARS = 200
_VALID = re.compile(r"^[^\x00-\x1f\x7f]+$")  # printable, no control characters


class IdentityError(ValueError):
    """A Loci identity header is empty, too long or holds control characters."""


def header_text(value: str) -> str:
    """A header value as the text the client meant. Servers hand values over decoded as
    Latin-1, HTTP's old default, but clients send a non-ASCII id ("dána") as UTF-8 (curl,
    Go, Open WebUI): read that way, it is the same caller as in a JSON identity or the
    browser's query, not a mojibake tenant of its own ("dÃ¡na")."""
    try:
        return value.encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):  # not UTF-8: Latin-1 it was
        return value


def _valid(header: str, value: str) -> str:
    value = header_text(value).strip()
    if not value or len(value) > MAX_ID_CHARS or not _VALID.match(value):
        raise IdentityError(
            f"header {header} must be 1-{MAX_ID_CHARS} printable characters, got {value[:40]!r}"
        )
    return value


def conversation_session(messages: Any, project_id: str) -> str | None:
    """The session of a chat whose client names none (no `X-Loci-Session`, no Open WebUI chat
    id): the conversation itself, named by its project and its first user message, which
    every later request of that chat repeats (`chat-` and 16 hex digits of their hash). Two
    chats of one project opening with the same words share it; in two projects they do not
    (a session's audience is its user's, whatever the project: without the project, a wish
    for one client's chat that opened with "Hi!" reached every other client's "Hi!" chat).
    A request without a user message names none."""
    if not isinstance(messages, list):
        return None
    first = next((m for m in messages if isinstance(m, dict) and m.get("role") == "user"), None)
    text = content_text(first.get("content")).strip() if first is not None else ""
    return f"chat-{sha256_text(project_id + chr(10) + text)[:16]}" if text else None


def identity_from_headers(
    headers: Mapping[str, str], default: Identity | None = None, *, openwebui: bool = True,
    conversation: Any = None,
) -> Identity:
    """The caller's identity. Raises `IdentityError` for a malformed Loci header, or one
    sent twice with different values (which one names the caller is anyone's guess: a
    client's own next to one an auth proxy in front added). `conversation`: a chat
    request's messages, whose `conversation_session` is the session when no header names
    one, before `default`'s."""
    base = default or Identity()
    lower: dict[str, str] = {}
    for key, value in headers.items():  # every pair, repeated names included
        key = key.lower()
        if key in lower and key in HEADERS.values() and header_text(value).strip() != header_text(lower[key]).strip():
            raise IdentityError(f"header {key} given twice with different values")
        lower[key] = value
    ids: dict[str, str] = {}
    for field_name, header in HEADERS.items():
        if header in lower:
            ids[field_name] = _valid(header, lower[header])
        elif openwebui and OPENWEBUI_HEADERS.get(field_name) in lower:
            raw = header_text(lower[OPENWEBUI_HEADERS[field_name]]).strip()
            if raw and _VALID.match(raw):  # a foreign header is a hint, never a reason to refuse the request
                ids[field_name] = raw[:MAX_ID_CHARS]
        if field_name == "session_id" and field_name not in ids:
            session = conversation_session(conversation, ids["project_id"])  # the project is read first
            if session:
                ids[field_name] = session
        if field_name not in ids:
            ids[field_name] = getattr(base, field_name)
    return Identity(**ids)


def names_chat(headers: Mapping[str, str], *, openwebui: bool = True) -> bool:
    """Whether the request names its chat (Open WebUI's `X-OpenWebUI-Chat-Id`, read when no
    `X-Loci-Session` names a session): a session may hold many chats, a chat id one."""
    lower = {k.lower() for k in headers}
    return openwebui and OPENWEBUI_HEADERS["session_id"] in lower and HEADERS["session_id"] not in lower


def timezone_from_headers(headers: Mapping[str, str]) -> str | None:
    """The user's IANA time zone from `X-Loci-Timezone` ("Europe/Berlin"), in which recall
    reads "what did we decide yesterday?"; None when absent (the `timezone` setting).
    Raises `IdentityError` for a zone that does not exist."""
    value = next((v for k, v in headers.items() if k.lower() == TIMEZONE_HEADER), None)
    if value is None:
        return None
    value = header_text(value).strip()
    try:
        time_zone(value)
    except ValueError as exc:
        raise IdentityError(f"header {TIMEZONE_HEADER}: {exc}") from exc
    return value
