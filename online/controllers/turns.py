"""POST /v1/turns: capture a user or assistant turn (governed proposals included)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Annotated

import msgspec
from litestar import Controller, post
from litestar.di import Provide
from litestar.exceptions import ClientException
from litestar.params import Body

from online.controllers.deps import error_responses, provide_service
from online.schemas import CLOSED_OBJECT, TurnRequest, TurnResponse
from online.state import MemoryService
from online.tools import ToolError, asker_zone
from pipelines.capture import TurnIdConflict

# A turn "said" this far ahead of the service's clock is a mistake, not clock skew.
FUTURE_SLACK = timedelta(minutes=5)


def said_at(at: datetime | None) -> str | None:
    """The ISO-8601 UTC text of when a turn was said (naive = UTC); 400 when in the future."""
    if at is None:
        return None
    at = at.replace(tzinfo=timezone.utc) if at.tzinfo is None else at.astimezone(timezone.utc)
    if at > datetime.now(timezone.utc) + FUTURE_SLACK:
        raise ClientException(f"at is in the future ({at.isoformat()}): a turn is captured when or after it is said")
    return at.isoformat(timespec="microseconds")


class TurnsController(Controller):
    path = "/v1/turns"
    tags = ["turns"]
    dependencies = {"service": Provide(provide_service, sync_to_thread=False)}

    @post(sync_to_thread=True, summary="Capture one chat turn.", responses=error_responses(400, 409, 413, 503),
          description="Lands the turn in the inbox (committed before the answer). Assistant turns "
                      "are parsed for memory proposals, each governed by the policy; the answer "
                      "gives the text to show (proposals stripped) and each proposal's verdict. "
                      "Secrets in the turn text are redacted before storage.")
    def capture(self, data: Annotated[TurnRequest, Body(schema_extra=CLOSED_OBJECT)],
                service: MemoryService) -> TurnResponse:
        asker_zone(data.tz, "tz")
        try:
            result = service.capture(
                data.identity, data.role, data.text, tool_calls=data.tool_calls, turn_id=data.turn_id,
                turn_ref=data.turn_ref, speaker=data.speaker, default_scope=data.default_scope,
                at=said_at(data.at), zone=data.tz,
            )
        except TurnIdConflict as exc:
            raise ToolError(409, str(exc)) from None
        return TurnResponse(
            turn_id=result.turn_id,
            seq=result.seq,
            role=result.role,
            visible_text=result.visible_text,
            proposals=result.proposals,
            parse_errors=[msgspec.to_builtins(e) for e in result.parse_errors],
            redactions=result.redactions,
        )
