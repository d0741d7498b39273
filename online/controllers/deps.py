"""Dependencies shared by the controllers: the service, the caller identity of GET
requests (query parameters or `X-Loci-*` headers), and the strict decoding of request
bodies."""

from __future__ import annotations

import re
from typing import Annotated

import msgspec
from litestar import Request
from litestar.datastructures import State
from litestar.exceptions import ClientException, ServiceUnavailableException
from litestar.openapi import ResponseSpec
from litestar.params import Parameter

from online.proxy.identity import HEADERS, header_text
from online.schemas import ID_PART_PATTERN, ErrorResponse
from online.state import MemoryService
from online.tools.args import args_hint
from pipelines.records import Identity

_ERROR_DESCRIPTIONS = {
    400: "Bad input: malformed JSON, unknown fields, wrong types or values out of range.",
    404: "Unknown id, or an item the caller may not see (answered alike).",
    409: "In conflict with what is stored: an item not in a state the action applies to (e.g. a review "
         "of an item not in quarantine), or a turn_id already taken by another turn.",
    413: "Request body larger than max_body_bytes.",
    422: "Refused by the policy; nothing was stored (`detail.verdict`).",
    500: "Unexpected error (logged); never caused by bad input.",
    503: "The memory service is still starting.",
}


def error_responses(*codes: int) -> dict[int, ResponseSpec]:
    """OpenAPI entries for the error answers a route can give: every error is the JSON
    `ErrorResponse` (the app's exception handlers), not Litestar's default error shape."""
    return {code: ResponseSpec(data_container=ErrorResponse, description=_ERROR_DESCRIPTIONS[code],
                               generate_examples=False)
            for code in (*codes, 500)}


def provide_service(state: State) -> MemoryService:
    service = state.get("service")
    if service is None:
        raise ServiceUnavailableException("the memory service is still starting")
    return service


# A non-empty, non-blank id without NUL (an empty one would be a tenant of its own).
_ID_PART = {"min_length": 1, "max_length": 200, "pattern": ID_PART_PATTERN}


def _pick(name: str, query: str | None, header: str | None) -> str:
    if query is not None and header is not None and query != header:
        raise ClientException(f"{name} given twice with different values (query and header)")
    return query if query is not None else (header if header is not None else "default")


def provide_identity(
    request: Request,
    user_id: Annotated[str | None, Parameter(query="user_id", **_ID_PART,
                                             description="Caller user id (or header X-Loci-User).")] = None,
    project_id: Annotated[str | None, Parameter(query="project_id", **_ID_PART,
                                                description="Caller project id (or X-Loci-Project).")] = None,
    session_id: Annotated[str | None, Parameter(query="session_id", **_ID_PART,
                                                description="Caller session id (or X-Loci-Session).")] = None,
    org_id: Annotated[str | None, Parameter(query="org_id", **_ID_PART,
                                            description="Caller org id (or X-Loci-Org).")] = None,
    h_user: Annotated[str | None, Parameter(header="X-Loci-User", **_ID_PART)] = None,
    h_project: Annotated[str | None, Parameter(header="X-Loci-Project", **_ID_PART)] = None,
    h_session: Annotated[str | None, Parameter(header="X-Loci-Session", **_ID_PART)] = None,
    h_org: Annotated[str | None, Parameter(header="X-Loci-Org", **_ID_PART)] = None,
) -> Identity:
    """Who is asking, for GET endpoints. Each id comes from its query parameter or its
    header (both given and different: 400; a header's UTF-8 read as such, `header_text`);
    an id given in neither is "default", the same default as everywhere else in Loci."""
    for header in HEADERS.values():  # sent twice, Litestar would join them into one id "a, b"
        if len({header_text(v).strip() for v in request.headers.getall(header, [])}) > 1:
            raise ClientException(f"header {header} given twice with different values")
    h_user, h_project, h_session, h_org = (None if h is None else header_text(h)
                                           for h in (h_user, h_project, h_session, h_org))
    return Identity(
        user_id=_pick("user_id", user_id, h_user),
        project_id=_pick("project_id", project_id, h_project),
        session_id=_pick("session_id", session_id, h_session),
        org_id=_pick("org_id", org_id, h_org),
    )


_IDENTITY_PART = re.compile(r"at `\$\.identity\.(\w+)`")


async def strict_body(request: Request) -> None:
    """Before-request hook: decode a JSON body strictly against the handler's `data` Struct.

    Litestar converts bodies leniently (`"trace": "0"` becomes False, `"k": "5"` becomes 5),
    so without this a request the schema calls invalid would be served. Returns None, so
    the handler then runs as usual; malformed JSON is left to Litestar's own 400."""
    if request.method not in ("POST", "PUT", "PATCH"):
        return None
    field = request.route_handler.parsed_fn_signature.parameters.get("data")
    kind = field.annotation if field is not None else None
    if not (isinstance(kind, type) and issubclass(kind, msgspec.Struct)):
        return None
    try:
        msgspec.json.decode(await request.body(), type=kind)
    except msgspec.ValidationError as exc:
        raise ClientException(_body_error(kind, str(exc))) from None
    except msgspec.DecodeError:
        return None
    return None


def _body_error(kind: type, message: str) -> str:
    """msgspec's complaint about a body of `kind`, with what to send instead (`args_hint`,
    the rule of tool calls' args: a field's choices, the fields there are)."""
    part = _IDENTITY_PART.search(message)
    if part and ("length" in message or "regex" in message):
        return (f"identity.{part.group(1)} must be a non-empty id "
                f"(leave it out to mean 'default')")
    return f"invalid request body: {message}{args_hint(kind, message)}"
