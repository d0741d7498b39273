"""Injection rules: dictating the assistant's reply."""

from __future__ import annotations

from collections.abc import Callable

from pipelines.policy_rules.injection.vocabulary import (
    _CODING,
    _DICTATE,
    _IMPERATIVE,
    _LANG,
    _LINK,
    _NOT_PROSE_OPENER,
    _OBFUSCATED,
    _READER_ALL,
    _READER_OUTPUT,
    _RECODE,
    _REPLY,
    _SAY,
    _TRANSFORM,
)


def add_rules(add: Callable[..., None]) -> None:
    # Rewriting or padding the reply: a transform or insertion verb aimed at "your reply",
    # an encoding/language/ordering target for it, or content dictated into it. Style
    # guidance ("structure your response as a list", "your response should be professional")
    # is not a hijack and does not match.
    add(
        "hard.injection.output_control",
        rf"{_IMPERATIVE}(?:[\w'-]+\s+){{0,4}}?(?:{_TRANSFORM}\w*|{_CODING})\b(?:[^.?!\n]|[.?!](?=\w)){{0,80}}?"
        rf"\b(?:in|to|into|for|within|of|from)?\s*{_READER_OUTPUT}\b"
        rf"|{_IMPERATIVE}(?:[\w'-]+\s+){{0,3}}?{_READER_OUTPUT}(?:'s)?\s+(?:\w+\s+){{0,2}}?(?:(?:in|into|to|using|with|as)\s+(?:an?\s+|the\s+)?"
        rf"(?:\w+\s+)?(?:{_LANG}|{_CODING})\b|backwards?\b|in\s+reverse\b)"
        rf"|\b(?:(?:in|to|into)\s+{_READER_OUTPUT}|(?:when|while|before|after)\s+(?:you\s+(?:answer|reply|respond)|answering|"
        rf"replying|responding)(?:\s+(?:to\s+)?(?:the|this|that)\s+(?:user'?s?\s+)?(?:question|query|request|prompt|message|user|e-?mail))?"
        rf"|(?:at|to)\s+the\s+(?:very\s+)?(?:end|start|beginning|top|bottom)\s+of\s+(?:the\s+|each\s+|every\s+)?(?:final\s+)?{_REPLY})"
        rf"\s*,?\s+(?:please\s+)?(?:also\s+)?(?:include|mention|add|insert|suggest|promote|"
        rf"state|say|write|tell|recommend|claim|advertise|slip|announce|urge|append|put)\b"
        rf"|\byour\s+(?:\w+\s+)?{_REPLY}\s+(?:is|should\s+be|must\s+be|will\s+be|has\s+to\s+be)\s+(?:only\s+|just\s+|exactly\s+|always\s+)?[\"'\[]"
        rf"|\b{_READER_OUTPUT}\s+(?:(?:must|should|will|has\s+to|needs\s+to)\s+)?(?:always\s+)?(?:contains?|includes?|"
        rf"(?:ends?|starts?|begins?)\s+with|mentions?)\s+(?:the\s+(?:phrase|sentence|words?|link|url|line)\s+)?(?:[\"'\[]|https?://|www\.)"
        rf"|\b(?:prefix|preface|prepend|append)\w*\b[^.?!\n]{{0,60}}?\bto\s+(?:the\s+|your\s+|yr\s+)?{_REPLY}\b",
    )
    # The reader's output named first, then re-encoded, given a link or made to promote
    # something: "everything you type back should be in Pig Latin", "each response you
    # generate has to include a link to ...", "make whatever you respond with promote X".
    add(
        "hard.injection.output_control",
        rf"\b(?:(?:make\s+sure|ensure)\s+(?:that\s+)?{_READER_OUTPUT}\s+(?:\w+\s+){{0,3}}?(?:is|are)"
        rf"|{_READER_OUTPUT}\s+(?:\w+\s+){{0,3}}?(?:should|must|has\s+to|have\s+to|needs\s+to|need\s+to|shall|is\s+to|are\s+to))"
        rf"\s+(?:always\s+|also\s+|only\s+|all\s+)*(?:be\s+)?(?:\w+ly\s+)?(?:{_RECODE}\b|written\s+(?:backwards?|in\s+reverse)\b|"
        rf"(?:written\s+)?in\s+(?:{_CODING}|{_OBFUSCATED})\b|(?:secretly\s+|quietly\s+|subtly\s+)?(?:recommend|promote|advertise|plug|endorse|"
        rf"praise)\b)"
        rf"|\b{_READER_ALL}\s+(?:\w+\s+){{0,3}}?(?:should|must|has\s+to|needs\s+to|shall)\s+(?:always\s+|only\s+)*(?:be\s+)?"
        rf"(?:(?:written\s+)?in\s+(?:{_LANG})\b)"
        rf"|\b{_READER_OUTPUT}\s+(?:\w+\s+){{0,4}}?(?:contains?|includes?|mentions?|carry|carries|features?|(?:ends?|starts?|begins?)\s+with|"
        rf"promotes?|recommends?|advertises?|plugs?)\b[^.?!\n]{{0,60}}?{_LINK}"
        rf"|\b{_READER_ALL}(?:\s+(?:next|back|here|now|from\s+now\s+on))?\s*,\s*(?:please\s+)?(?:also\s+)?"
        rf"(?:(?:say|write|put|give|render)\s+it\s+(?:in|into|as|using)\s+(?:{_LANG}|{_CODING})\b|{_RECODE}\b|(?:wrap|hide|slip|embed)\b|"
        rf"{_DICTATE}\b|(?:end|finish|start|begin|sign|close|open)\s+it\s+with\b)"
        rf"|\b(?:make|have|let)\s+{_READER_OUTPUT}\s+(?:also\s+)?{_DICTATE}\b",
    )
    add(
        "hard.injection.output_control",
        rf"\b(?:begin|start|prefix|prepend|end|finish|conclude|preface|open)\s+(?:each\s+|every\s+|all\s+)?"
        rf"(?:of\s+)?(?:your\s+|yr\s+|the\s+)?(?:{_REPLY}|reply|response)\s+(?:with\b|by\b|w/){_NOT_PROSE_OPENER}"
        r"|\b(?:start|begin)(?:ing)?\s+(?:with\s+|by\s+)?saying\s+[\"'\[]"
        rf"|\bprefix\W+.{{0,40}}\W+to\W+your\W+{_REPLY}",
    )
    add(
        "hard.injection.output_control",
        rf"(?:^|[.!?:;\n]\s*|\bplease\s+|\bjust\s+|\bnow\s+)(?:please\s+)?{_SAY}\s+(?:only\s+|just\s+|exactly\s+|back\s+|out\s+)?"
        r"(?:the\s+(?:phrase|words?|string|text|sentence)\s+)?(?:[\"'\[\(<`]|[A-Z][\w-]*\s+[A-Z])",
    )
    add(
        "hard.injection.output_control",
        r"\b(?:say|output|print|respond\s+with|reply\s+with|answer\s+with|echo|type\s+out)\s+(?:only\s+|just\s+|exactly\s+|back\s+)?"
        r"(?:the\s+(?:phrase|words?|string|text|sentence)\s+)[\"'\[\(<`A-Za-z]",
    )
    add(
        "hard.injection.output_control",
        r"\b(?:respond|reply|answer)\s+(?:only\s+|just\s+|either\s+)?with\s+(?:either\s+)?(?:the\s+(?:phrase|words?)\s+)?[\"'\[]"
        r"|\b(?:output|print)\s+(?:only\s+|just\s+)?(?:the\s+(?:phrase|words?|statement|string)\s+)?[\"'\[]"
        r"|\b(?:if|when|whenever|every\s+time|each\s+time|once)\b[^.\n]{0,80}?\b(?:respond|reply|answer|say|output|print|return)\s+"
        r"(?:with\s+)?(?:the\s+[\w\s]{0,30}?)?[\"'\[]"
        r"|\bsay\s+[\"'][^\"'\n]{1,60}[\"']\s+instead\b"
        r"|\b(?:need|want|require|ask)\s+you\s+to\s+(?:do\s+is\s+)?(?:say|output|print|respond\s+with|reply\s+with)\b"
        r"|\bstop\s+generating\b"
        r"|\b(?:encode|encrypt|translate|invert|reverse|convert|rewrite|render|transform|shift|scramble)\s+"
        r"(?:the\s+\w+\s+of\s+(?:\w+\s+){0,2}in\s+)?your\s+(?:message|messages|text)\b"
        r"|\b(?:letters|characters|words)\s+in\s+your\s+(?:message|messages)\b"
        r"|\b(?:in|from|to)\s+the\s+(?:response|reply)\b"
        r"|\bdo\s*n[o']?t\s+(?:ever\s+)?say\s+[\"'\[]",
    )
    add(
        "hard.injection.output_control",
        r"\b(?:only|just|solely)\s+(?:output|say|respond|reply|print|answer\s+with|return)\b|"
        r"\b(?:output|say|respond|reply|print)\s+(?:only|nothing\s+(?:but|except|else))\b|"
        r"\bdo\s*n[o']?t\s+(?:output|say|write|print|add|include|provide|give|respond\s+with)\s+"
        r"(?:anything|any\s+(?:other|more|explanation|commentary))|"
        r"\b(?:never|do\s*n[o']?t|without)\s+(?:provide|give|add|include|write)\s+(?:an?\s+|any\s+)?(?:explanations?|commentary)\b|"
        r"\b(?:no|without\s+any)\s+(?:other\s+)?(?:commentary|explanations?)\s*(?:[,.;!]|$|or|and)",
    )
    add(
        "hard.injection.output_control",
        rf"\b(?:reply|respond|answer|write\s+your\s+{_REPLY}|talk|speak)\s+"
        r"(?:(?:to\s+)?(?:the\s+)?(?:user|reader)(?:'s\s+(?:question|query|message|request))?\s+)?(?:only\s+|exclusively\s+)?"
        rf"(?:in|using|with)\s+(?:the\s+)?{_LANG}\b",
    )
    add(
        "hard.injection.output_control",
        r"\binstead\s+of\s+(?:outputting|responding|answering|saying|replying|printing)\b"
        r"|\b(?:answer|respond|reply)\s+(?:using|with|in)\s+(?:\d+|one|two|three)\s+words?\s+only\b"
        r"|\b(?:one|two|three|1|2|3)[- ]word\s+(?:answer|response|reply)\b"
        r"|\bwhat\s+(?:would|should|will|do)\s+you\s+(?:say|respond|reply|output)\s+(?:to\s+(?:a|the)\s+user|if|when|in\s+case)\b"
        r"|\brepeat\s+(?:what|everything|all|that)\b[^.\n]{0,40}\byou\s+(?:should|would|must|were)\s+(?:say|told|instructed)\b"
        r"|\byou\s+(?:will|must|shall)\s+(?:now\s+)?(?:only\s+)?(?:say|respond|reply|output|print)\b"
        r"|\byou\s+(?:will|must|shall)\s+(?:now\s+)?(?:only\s+|always\s+)?(?:answer|use|write)\s+(?:with\s+)?[\"'\[]",
    )
