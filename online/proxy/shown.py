"""What the user is shown of an exchange's rounds: the answer without proposals, a
re-asked round's text on a new paragraph, and a streamed `recall <topic>` line (a request to
Loci, `Exchange.find_request`) held back until the round tells whether it was one."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from pipelines.proposals import ProposalStreamFilter

if TYPE_CHECKING:
    from online.proxy.exchange import RoundResult

# A model's `recall <topic>` request may come wrapped in markdown (`recall x`, **recall x**).
REQUEST_LEAD = " \t\r\n`*>_"
REQUEST_START = re.compile(r"recall[\s:]", re.I)


def cut_at(raw: str, visible: str, at: int) -> str:
    """`raw` without the request line that starts at `visible[at:]` (and what follows it)."""
    line = visible[at:].split("\n", 1)[0]
    where = raw.find(line) if line else -1
    return raw[:where] if where >= 0 else visible[:at]


def visible_of(raw: str) -> str:
    """The answer without proposals: the same filter as for streams, in one go."""
    filt = ProposalStreamFilter()
    head_text = filt.feed(raw)
    return head_text + filt.finish()[0]


class VisibleText:
    """What the user has been shown across rounds; a re-asked round's text starts on a
    new paragraph."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self._new_round = False

    @property
    def text(self) -> str:
        return "".join(self.parts)

    def start_round(self) -> None:
        self._new_round = bool(self.parts)

    def emit(self, piece: str) -> str:
        if not piece:
            return ""
        if self._new_round:
            self._new_round = False
            shown = self.text
            if shown and not shown[-1].isspace() and not piece[0].isspace():
                piece = "\n\n" + piece
        self.parts.append(piece)
        return piece

    def end_round(self, step: RoundResult, visible: str) -> dict[str, Any] | None:
        """Show what a round's text shows (`RoundResult.shown`); the body of the next round
        (started here) when the round asked again, else None: that was the last round."""
        self.emit(step.shown(visible))
        if step.reask is not None:
            self.start_round()
        return step.reask


class RequestHold:
    """Holds back a streamed line while it may still be a `recall <topic>` request
    (`Exchange.find_request`): such a request is for Loci, so it never reaches the user.
    The first line that starts like one is held to the end of the round (the driver then
    drops it, or releases it when it was not a request); any other line passes as soon as
    it cannot be one."""

    def __init__(self, active: bool) -> None:
        self.held = ""
        self.active = active
        self.holding = False  # a line started like a request: everything after is held
        self.mid_line = False  # inside a line already judged not to be a request

    def feed(self, piece: str) -> str:
        if not self.active:
            return piece
        if self.holding:
            self.held += piece
            return ""
        out = ""
        if self.mid_line:
            before, nl, piece = piece.partition("\n")
            out += before + nl
            if not nl:
                return out
            self.mid_line = False
        self.held += piece
        while self.held:
            line, nl, rest = self.held.partition("\n")
            head = line.lstrip(REQUEST_LEAD)
            if REQUEST_START.match(head):
                self.holding = True
                return out
            if not nl:
                if "recall".startswith(head.lower()):
                    return out  # too short to tell
                out, self.held, self.mid_line = out + self.held, "", True
                return out
            out, self.held = out + line + nl, rest
        return out

    def release(self) -> str:
        """What is held, now (the round ended and it was not a request)."""
        out, self.held, self.holding = self.held, "", False
        return out
