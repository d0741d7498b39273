"""The public API: a whole output parsed at once, and the streaming filter for the Ollama proxy."""

from __future__ import annotations

import msgspec

from pipelines.records import ParsedOutput, ParsedProposal, ParseError

from .calls import _parse_tool_calls
from .scanner import _scan
from .tokens import _Fold, _Removed, _Token


def parse_assistant_output(text: str, tool_calls: list[dict] | None = None) -> ParsedOutput:
    """Split `text` into what the user sees and what the model proposed; never raises."""
    errors: list[ParseError] = []
    if text is None:
        text = ""
    elif not isinstance(text, str):
        errors.append(ParseError(form="api", message=f"text must be a string, got {type(text).__name__}"))
        text = ""
    try:
        tokens, _ = _scan(text, 0, final=True)
        fold = _Fold()
        proposals: list[ParsedProposal] = []
        for tok in tokens:
            fold.add(tok)
            if isinstance(tok, _Removed):
                proposals.extend(tok.proposals)
                errors.extend(tok.errors)
        fold.finish()
        visible = fold.text
    except Exception as exc:  # a bug must not break the chat: keep the text, report it
        return ParsedOutput(
            visible_text=text,
            errors=[*errors, ParseError(form="api", message=f"parser failure: {type(exc).__name__}: {exc}")],
        )
    call_props, call_errors = _parse_tool_calls(tool_calls)
    return ParsedOutput(visible_text=visible, proposals=[*call_props, *proposals], errors=[*call_errors, *errors])


class ProposalStreamFilter:
    """Streaming version for the Ollama proxy.

    `feed(chunk)` returns the text that is safe to show now: anything that may be the
    start of a `<MEMORY_PROPOSALS_JSON>` block, a `memory_save(` call or a tool-call JSON
    object (and a fence or trailing whitespace that may belong to it) is held back until
    resolved. `finish()` returns the remaining visible text and the parse of the whole
    output; the concatenation of all returned text equals `ParsedOutput.visible_text`.
    """

    def __init__(self, tool_calls: list[dict] | None = None) -> None:
        self._buf = ""
        self._pos = 0
        self._fold = _Fold()
        self._emitted = 0
        self._proposals: list[ParsedProposal] = []
        self._errors: list[ParseError] = []
        self._tool_calls = tool_calls
        self._finished: tuple[str, ParsedOutput] | None = None
        self._broken = False

    def feed(self, chunk: str) -> str:
        if self._finished is not None:
            return ""
        if chunk is None:
            return ""
        if isinstance(chunk, bytes):
            chunk = chunk.decode("utf-8", errors="replace")
        elif not isinstance(chunk, str):
            chunk = str(chunk)
        self._buf += chunk
        if self._broken:
            return ""
        try:
            tokens, self._pos = _scan(self._buf, self._pos, final=False)
            self._absorb(tokens)
        except Exception as exc:  # hold everything; finish() falls back to the batch parse
            self._broken = True
            self._errors.append(ParseError(form="api", message=f"stream parser failure: {exc}"))
            return ""
        return self._emit(self._fold.committed())

    def finish(self) -> tuple[str, ParsedOutput]:
        if self._finished is not None:
            return "", self._finished[1]
        if self._broken:
            parsed = parse_assistant_output(self._buf, self._tool_calls)
            parsed = msgspec.structs.replace(parsed, errors=[*self._errors, *parsed.errors])
        else:
            try:
                tokens, self._pos = _scan(self._buf, self._pos, final=True)
                self._absorb(tokens)
                self._fold.finish()
                call_props, call_errors = _parse_tool_calls(self._tool_calls)
                parsed = ParsedOutput(
                    visible_text=self._fold.text,
                    proposals=[*call_props, *self._proposals],
                    errors=[*call_errors, *self._errors],
                )
            except Exception:
                parsed = parse_assistant_output(self._buf, self._tool_calls)
        visible = parsed.visible_text
        already = visible[: self._emitted]
        # The emitted text is always a prefix of the final text; if a bug ever broke that,
        # we must not repeat what was shown, so only the tail past it is returned.
        remaining = visible[self._emitted :] if len(already) == self._emitted else ""
        self._finished = (remaining, parsed)
        return remaining, parsed

    def _absorb(self, tokens: list[_Token]) -> None:
        for tok in tokens:
            self._fold.add(tok)
            if isinstance(tok, _Removed):
                self._proposals.extend(tok.proposals)
                self._errors.extend(tok.errors)

    def _emit(self, committed: str) -> str:
        out = committed[self._emitted :]
        self._emitted = max(self._emitted, len(committed))
        return out
