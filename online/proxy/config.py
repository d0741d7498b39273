"""Proxy configuration: what is not in `Settings` (instructions, where the catalog goes;
the upstream timeouts are settings, `online.proxy.upstream.UpstreamTimeouts`), and the
feature flags read from `settings.flags` on every request.

Flags, all in `settings.flags`, read per request so a flip takes effect at once
(the proxy re-reads them from the config file when it changes, `pipelines.settings.LiveFlags`):
`enabled` (master switch: off = pure pass-through), `context_injection`,
`post_response_scan`, `recall_interception`, `reset_summarize`, and the proxy's own
`memory_tools` (add Loci's memory.* tools to /api/chat requests; default off). Their
defaults are `pipelines.settings.FLAG_DEFAULTS`; a flag missing from `settings.flags`
takes its default.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pipelines.records import Identity
from pipelines.settings import Settings, flag_on

DEFAULT_MAX_TOOL_ROUNDS = 2
DEFAULT_MAX_REQUEST_BYTES = 64 * 1024 * 1024  # chat bodies carry base64 images
DEFAULT_RESET_COMMAND = "!reset"
DEFAULT_RESET_MIN_MESSAGES = 4  # shorter histories hold too little to summarise on !reset
# Recall phrasings (pipelines.recall.intents triggers) that, in the *model's* answer, are a
# request to memory or a claim about the past worth checking. Left out: questions a model
# asks the user ("do you remember...?", "what did you say about...?") and "from memory",
# which models also use for their own general knowledge.
DEFAULT_MODEL_TEXT_TRIGGERS = ("recall", "search_memory", "know_about", "as_decided", "last_time")

PROPOSAL_INSTRUCTION = (
    "MEMORY PROPOSALS: if you see information that should persist (decisions, constraints, "
    "definitions, preferences, durable facts), append after your answer a block "
    '<MEMORY_PROPOSALS_JSON>[{"type": "decision", "title": "...", "content": "...", '
    '"tags": ["..."], "why_store": "..."}]</MEMORY_PROPOSALS_JSON>; it is removed before the '
    "user sees your answer. Only propose; never claim something was saved. Do not include secrets."
)
TOOLS_HINT = (
    "You can also propose with the memory_propose tool, and look things up with memory_search "
    "(then memory_read for full entries) instead of guessing."
)
TEXT_RECALL_HINT = (
    "If you need something from memory that is not shown, write `recall <topic>` and stop; "
    "the memory search results will be given to you."
)
RESULTS_INSTRUCTION = (
    "The memory search results above are everything memory holds on this question. Answer "
    "only from them; if they do not answer the question, say that memory does not contain it."
)
NOTHING_FOUND_NOTE = (
    "MEMORY SEARCH RESULT: memory holds nothing about {topic}. Tell the user plainly that "
    "memory does not contain it. Do not guess, and do not present anything as remembered."
)
NOTHING_NEW_NOTE = (
    "MEMORY SEARCH RESULT: memory holds nothing about {topic} beyond the memory already shown "
    "above. Answer the user from it, or tell them plainly that memory does not contain it. "
    "Do not write `recall` again."
)
SUMMARY_INSTRUCTION = (
    "Extract the durable facts, decisions, preferences and constraints from the conversation "
    "below. Answer ONLY with a block <MEMORY_PROPOSALS_JSON>[{\"type\": \"fact\", \"title\": "
    "\"...\", \"content\": \"one concise sentence\", \"importance\": 1-10, \"tags\": [\"...\"]}]"
    "</MEMORY_PROPOSALS_JSON>. Use an empty list if nothing is worth keeping. No secrets."
)


@dataclass(frozen=True)
class ProxyConfig:
    """Knobs of the proxy that are not `Settings` fields.

    - `proposal_instruction`: appended as a system message; None disables.
    - `intercept_model_text`: recall phrasing in the model's own answer ("recall X", "as we
      decided earlier") triggers a memory search and one re-ask (first round only);
      `model_text_triggers` names which phrasings count.
    - `max_tool_rounds`: re-asks after memory tool calls / recall phrasing, at most.
    - `catalog_field`: top-level key of the final JSON object that carries the pre-return
      Q* catalog and what the proxy did (`{"catalog", "injected_ids", "proposals", ...}`);
      clients ignore unknown keys. None: no catalog pass, nothing attached.
    - `default_identity`: whose memory a request without `X-Loci-*` headers uses (but a chat
      request's session, when no header names it, is its conversation:
      `identity.conversation_session`).
    - `openwebui_headers`: fall back to Open WebUI's forwarded `X-OpenWebUI-User-Id` /
      `X-OpenWebUI-Chat-Id` headers for user and session.
    - `flags_check_interval_s`: how often, at most, the config file is checked for flipped
      flags (when the app watches one).
    """

    proposal_instruction: str | None = PROPOSAL_INSTRUCTION
    intercept_model_text: bool = True
    model_text_triggers: tuple[str, ...] = DEFAULT_MODEL_TEXT_TRIGGERS
    max_tool_rounds: int = DEFAULT_MAX_TOOL_ROUNDS
    catalog_field: str | None = "loci"
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES
    reset_command: str = DEFAULT_RESET_COMMAND
    reset_min_messages: int = DEFAULT_RESET_MIN_MESSAGES
    default_identity: Identity = field(default_factory=Identity)
    openwebui_headers: bool = True
    flags_check_interval_s: float = 1.0

    def __post_init__(self) -> None:
        if self.max_tool_rounds < 0:
            raise ValueError("max_tool_rounds must be >= 0")
        if self.flags_check_interval_s < 0:
            raise ValueError("flags_check_interval_s must be >= 0")
        if self.max_request_bytes <= 0:
            raise ValueError("max_request_bytes must be > 0")
        if self.catalog_field is not None and not self.catalog_field.strip():
            raise ValueError("catalog_field must be a non-empty key or None")


def flag(settings: Settings, name: str) -> bool:
    """A feature flag of `settings`, with the master switch applied."""
    return flag_on(settings.flags, name)
