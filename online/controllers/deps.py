"""Dependencies shared by the controllers: the service, and the caller identity of GET
requests (query parameters or `X-Loci-*` headers)."""

from __future__ import annotations

from typing import Annotated

from litestar.datastructures import State
from litestar.exceptions import ClientException, ServiceUnavailableException
from litestar.openapi import ResponseSpec
from litestar.params import Parameter

from online.schemas import ErrorResponse
from online.state import MemoryService
from pipelines.records import Identity

IdPart = Annotated[str, Parameter(min_length=1, max_length=200)]

_ERROR_DESCRIPTIONS = {
    400: "Bad input: malformed JSON, unknown fields, wrong types or values out of range.",
    404: "Unknown id, or an item the caller may not see (answered alike).",
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


def _pick(name: str, query: str | None, header: str | None) -> str:
    if query is not None and header is not None and query != header:
        raise ClientException(f"{name} given twice with different values (query and header)")
    return query if query is not None else (header if header is not None else "default")


def provide_identity(
    user_id: Annotated[str | None, Parameter(query="user_id", min_length=1, max_length=200,
                                             description="Caller user id (or header X-Loci-User).")] = None,
    project_id: Annotated[str | None, Parameter(query="project_id", min_length=1, max_length=200,
                                                description="Caller project id (or X-Loci-Project).")] = None,
    session_id: Annotated[str | None, Parameter(query="session_id", min_length=1, max_length=200,
                                                description="Caller session id (or X-Loci-Session).")] = None,
    org_id: Annotated[str | None, Parameter(query="org_id", min_length=1, max_length=200,
                                            description="Caller org id (or X-Loci-Org).")] = None,
    h_user: Annotated[str | None, Parameter(header="X-Loci-User", min_length=1, max_length=200)] = None,
    h_project: Annotated[str | None, Parameter(header="X-Loci-Project", min_length=1, max_length=200)] = None,
    h_session: Annotated[str | None, Parameter(header="X-Loci-Session", min_length=1, max_length=200)] = None,
    h_org: Annotated[str | None, Parameter(header="X-Loci-Org", min_length=1, max_length=200)] = None,
) -> Identity:
    """Who is asking, for GET endpoints. Each id comes from its query parameter or its
    header (both given and different: 400); an id given in neither is "default", the same
    default as everywhere else in Loci."""
    return Identity(
        user_id=_pick("user_id", user_id, h_user),
        project_id=_pick("project_id", project_id, h_project),
        session_id=_pick("session_id", session_id, h_session),
        org_id=_pick("org_id", org_id, h_org),
    )
