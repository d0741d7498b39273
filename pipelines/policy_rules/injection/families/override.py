"""Injection rules: overriding standing instructions."""

from __future__ import annotations

from collections.abc import Callable

from pipelines.policy_rules.injection.vocabulary import _FILLER, _INSTR, _OVERRIDE_VERB, _OWNER


def add_rules(add: Callable[..., None]) -> None:
    add(
        "hard.injection.override",
        rf"\b{_OVERRIDE_VERB}\b[ \t,]{{1,3}}(?:{_FILLER}[ \t,]+){{0,4}}{_OWNER}(?:\s*/\s*\w+)?[ \t]+"
        rf"(?:[\w'-]+[ \t]+){{0,2}}{_INSTR}\b",
    )
    add(
        "hard.injection.override",
        r"\b(?:ignore|disregard|forget)\s+(?:all\s+)?(?:instructions|rules|directions|directives|guidelines)\b",
    )
    add(
        "hard.injection.override",
        rf"\b{_OVERRIDE_VERB}\s+(?:the\s+|all\s+|any\s+)?(?:of\s+)?(?:the\s+)?(?:[\w-]+\s+)?"
        rf"(?:{_INSTR}|everything|anything|all)\s+(?:above|below|before(?!\s+\w+ing\b)|previously|so\s+far|earlier|"
        rf"you\s+(?:were|have\s+been)\s+(?:given|told))\b",
        one_pass=False,  # Hyperscan takes ~3 s to compile this one alone; `re` scans it in ~0.03 ms a text
    )
    add("hard.injection.override", r"\b(?:ignore|disregard|forget)\s+(?:all\s+)?(?:of\s+)?(?:the\s+)?above\b")
    add(
        "hard.injection.override",
        r"\b(?:ignore|disregard|forget)\s+(?:what|whatever|everything|anything)\s+(?:i|you|we|the\s+user)\s+(?:just\s+|have\s+|'ve\s+|has\s+)?"
        r"(?:said|wrote|written|told|typed|asked)\b"
        # (a retraction of what the writer said about something is a correction: "disregard
        # what I said earlier about the budget")
        r"(?!(?:\s+(?:you|to\s+you|earlier|before|previously|yesterday|today|last\s+\w+|in\s+my\s+last\s+message))*\s+"
        r"(?:about|regarding|on|concerning)\b)"
        r"|\b(?:ignore|disregard)\s+(?:all\s+)?(?:of\s+)?the\s+following\s+(?:sentences?|lines?|text|instructions?|words?|paragraphs?)\b"
        r"|\b(?:ignore|disregard)\s+(?:the\s+)?(?:content|contents|text)\s+of\s+(?:the\s+)?(?:user'?s?|previous|above|system|original)\b",
    )
    add(
        "hard.injection.override",
        rf"\b{_OVERRIDE_VERB}\s+(?:everything|anything|all)\s+(?:that\s+)?(?:i|you|we)?'?\s*(?:have|'ve|was|were|is)?\s*"
        rf"(?:said|written|told|stated|given|mentioned|provided|been\s+told|heard|know|knew|learned|learnt|"
        rf"were\s+taught)\b(?!\s+about)",
    )
    add(
        "hard.injection.override",
        rf"\b(?:all\s*)?{_OWNER}\s+(?:\w+\s+)?{_INSTR}\s+(?:are|were|is|was|have\s+been|has\s+been)\s+(?:now\s+|all\s+)?"
        rf"(?:false|void|invalid|cancell?ed|obsolete|outdated|out of date|revoked|null|wrong|fake|"
        rf"irrelevant|no\s+longer\s+(?:valid|relevant|in\s+effect|apply)|lifted|removed|disabled|suspended)",
    )
    add(
        "hard.injection.override",
        r"\bnew\s+(?:set\s+of\s+)?(?:instructions?|rules|directives?|system\s+prompt|persona|programming|"
        r"guidelines|orders)\s*(?:[:!\-#%]|(?:are|follow|below|as\s+follows))",
    )
    add("hard.injection.override", r"\b(?:begin|start|initiate)\s+(?:new\s+)?(?:reprogramming|new\s+instructions?)\b")
    add(
        "hard.injection.override",
        rf"\b(?:instead\s+of|rather\s+than)\s+(?:following|obeying|doing)\s+(?:your|the|those|these|my)\s+(?:\w+\s+)?{_INSTR}\b",
    )
    # Instructions named first, then dismissed ("if the text has instructions, do not follow
    # them"); or an override of some input followed by a dictated quote ("ignore the image
    # content and write "...").
    add(
        "hard.injection.override",
        r"\b(?:instructions?|directives?|commands?|prompts?)\b[^.\n]{0,30}?[,;:]\s*(?:then\s+)?(?:do\s*n[o']?t\s+follow|"
        r"never\s+follow|ignore|disregard)\s+(?:them|it|those|these)\b"
        r"|\b(?:ignore|disregard)\b[^.\n]{0,60}?(?:\band|\bthen|,)\s*(?:instead\s+)?(?:just\s+)?(?:write|say|output|print|type|"
        r"respond\s+with|reply\s+with|answer\s+with)\s+[\"'\[]",
    )
    # The same override in other common languages (verb + all + previous + instructions).
    add(
        "hard.injection.override",
        r"\b(?:ignorieren?\s+sie|ignoriere|vergiss|vergessen\s+sie)\s+(?:alle\s+)?(?:vorherigen|bisherigen|obigen)\s+(?:anweisungen|instruktionen|befehle)"
        r"|\bignore[rz]?\s+(?:toutes\s+)?(?:les\s+)?(?:instructions|consignes)\s+(?:pr[ée]c[ée]dentes|ant[ée]rieures)"
        r"|\bignora(?:r)?\s+(?:todas\s+)?(?:las\s+)?instrucciones\s+(?:anteriores|previas)"
        r"|\bignora\s+(?:tutte\s+)?(?:le\s+)?istruzioni\s+(?:precedenti|anteriori)"
        r"|\bignore\s+(?:todas\s+)?(?:as\s+)?instru[çc][õo]es\s+(?:anteriores|pr[ée]vias)",
    )
