"""Find memory proposals in an assistant's output and return the visible answer without them.

Three forms (a tool call, a tagged JSON block, and narrated calls for models without tools):

- tool call   `memory.propose` in OpenAI/Ollama shape (`{"function": {"name", "arguments"}}`,
              arguments as object or JSON string), `{"name": ..., "arguments": ...}`, the
              seed's `{"action": "memory.propose", "items": [...]}`, and `memory_save` tool
              calls. Passed in `tool_calls`, or written as a bare JSON object in the text
              (also inside a ```json fence), which is then stripped.
- json block  `<MEMORY_PROPOSALS_JSON> [...] </MEMORY_PROPOSALS_JSON>`; a list of items or
              `{"items": [...]}`; several blocks allowed; an unterminated block is stripped
              to the end of the text and reported. The tag in any case, with `-` or a space
              for `_`, PROPOSAL for PROPOSALS, or without _JSON (`<memory-proposals>`).
- narrated    `memory_save(topic=..., content=..., importance=..., tags=[...], type=...)` in
              the text. Parsed with Python's `ast` (quotes, escaped quotes, apostrophes and
              triple quotes handled by the real parser); sloppy forms (`content=Alice's cat`,
              unquoted values) fall back to a key=value splitter. `topic` maps to title.

Never raises: malformed input yields `ParseError` records. Items are coerced leniently
(unknown keys dropped, "7" -> 7, "a, b" -> ["a", "b"]); what is stored is the policy's call.

The scanner emits a token stream (plain text / removed proposal) and a small fold joins the
plain pieces, tidying only the whitespace around what was removed. The streaming filter for
the Ollama proxy runs the same scanner on a growing buffer and holds back anything that
could still become a proposal, so streamed text + `finish()` remainder always equals the
batch result.

The package, by job: `output` (the public API: `parse_assistant_output`, `ProposalStreamFilter`),
`scanner` (tokens for a text: tagged blocks, bare JSON calls, fences, what streaming holds
back), `narrated` (`memory_save(...)` in the text), `calls` (the items of tool calls),
`coerce` (`coerce_item`), `tokens` (the token stream and its fold), `json_text` (lenient
JSON, excerpts).
"""

from .coerce import coerce_item
from .output import ProposalStreamFilter, parse_assistant_output

__all__ = ["ProposalStreamFilter", "coerce_item", "parse_assistant_output"]
