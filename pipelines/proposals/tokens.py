"""What the scanner emits: plain text or a removed proposal, and the fold that joins the
plain pieces, tidying only the whitespace around what was removed."""

from __future__ import annotations

from dataclasses import dataclass, field

from pipelines.records import ParsedProposal, ParseError


@dataclass(slots=True)
class _Plain:
    text: str


@dataclass(slots=True)
class _Removed:
    proposals: list[ParsedProposal] = field(default_factory=list)
    errors: list[ParseError] = field(default_factory=list)


_Token = _Plain | _Removed


class _Fold:
    """Joins plain pieces; where something was removed, the whitespace on both sides is
    merged: at most one blank line, a space between words, nothing before punctuation,
    the indentation of the following line kept. Text far from a removal is untouched, and
    text without removals comes back byte for byte."""

    def __init__(self) -> None:
        self.text = ""
        self._pending = False  # a removal waits for the next non-blank text
        self._left_ws = ""
        self._right_ws = ""

    def add(self, tok: _Token) -> None:
        if isinstance(tok, _Removed):
            if self._pending:  # back-to-back removals: one gap, as wide as the widest
                self._left_ws = max(self._left_ws, self._right_ws, key=lambda w: w.count("\n"))
                self._right_ws = ""
            else:
                core = self.text.rstrip()
                self._left_ws = self.text[len(core) :]
                self.text = core
                self._right_ws = ""
                self._pending = True
            return
        piece = tok.text
        if not piece:
            return
        if not self._pending:
            self.text += piece
            return
        body = piece.lstrip()
        self._right_ws += piece[: len(piece) - len(body)]
        if not body:
            return
        self.text += self._separator(body) + body
        self._pending = False

    def _separator(self, body: str) -> str:
        newlines = min(2, max(self._left_ws.count("\n"), self._right_ws.count("\n")))
        if not self.text:
            newlines = 0
        indent = self._right_ws.rsplit("\n", 1)[1] if "\n" in self._right_ws else ""
        if newlines:
            return "\n" * newlines + indent
        if not self.text:
            return indent
        return "" if body[0] in ".,;:!?)]}" else " "

    def committed(self) -> str:
        """The prefix no later token can change."""
        return self.text if self._pending else self.text.rstrip()

    def finish(self) -> None:
        if self._pending:
            self._pending = False
            self._left_ws = self._right_ws = ""


class _Pending(Exception):
    """More text is needed to decide (streaming only)."""


_MAX_CONSTRUCT = 200_000  # a "call" longer than this is prose, not a proposal
