"""Style preferences: the standing orders a user may keep in memory.

"Always answer in French", "from now on, reply in bullet points", "please always respond
formally": what a user most often asks a chat assistant to remember. The injection rules
read the same words as a standing order planted in memory (`hard.injection.memory_poisoning`)
or a dictated reply (`hard.injection.output_control`), and rightly so where the words arrive
inside a document, a web page or an email: BIPIA's indirect injections say exactly "Provide
your answer in French".

So the two rules yield for an item that is all of:
- typed `preference` (the model or the user classed it as how to answer, not as a fact);
- from a trusted source (a chat turn or a memory.write, not a document);
- about *how* to answer: a language, a format, a length, a tone, units, or how to address
  the user (`_STYLE`);
- about nothing else: no quoted or bracketed text (a dictated phrase), no link, address or
  mention, no verb that governs memory, secrecy, tools or other instructions, and no words
  dictated into the answer ("answer that ...", "say ...", "include ...") (`_NOT_STYLE`);
- short (`MAX_CHARS`): one or two sentences.

Every other rule still applies (an override, a secret, a system-prompt probe). The verdict
names the yielded rules (`STYLE_RULE_ID` in its reasons), so the audit trail shows why such
an item was stored. Encodings (Base64, hex, Morse, ROT13, reversed text) are not a style:
they are how exfiltration hides; nor is replacing words (with emojis or anything else).
"""

from __future__ import annotations

import re

# The injection rules that read a standing order about the answer.
YIELDING_RULES = frozenset({"hard.injection.memory_poisoning", "hard.injection.output_control"})
STYLE_RULE_ID = "allow.style_preference"
MAX_CHARS = 240

_LANGUAGES = (
    "english|french|german|spanish|portuguese|italian|dutch|russian|ukrainian|polish|czech|swedish|"
    "norwegian|danish|finnish|greek|turkish|arabic|hebrew|hindi|bengali|urdu|persian|farsi|chinese|"
    "mandarin|cantonese|japanese|korean|vietnamese|thai|indonesian|malay|tagalog|swahili|romanian|"
    "hungarian|catalan|basque|welsh|irish|icelandic|estonian|latvian|lithuanian|slovak|slovenian|"
    "croatian|serbian|bulgarian"
)
_STYLE = re.compile(
    rf"\b(?:in\s+(?:{_LANGUAGES})|(?:{_LANGUAGES})\s+(?:only|please)\b"
    r"|bullet(?:s|ed|\s+points?)?|numbered|lists?|tables?|markdown|headings?|paragraphs?|plain\s+text|prose"
    r"|code\s+(?:blocks?|examples?|snippets?)|type\s+hints"
    r"|short|shorter|concise(?:ly)?|brief(?:ly)?|succinct(?:ly)?|terse(?:ly)?|detailed|in\s+detail|verbose|length"
    r"|one\s+(?:sentence|paragraph|line)|(?:a\s+)?summary|step\s+by\s+step"
    r"|formal(?:ly)?|informal(?:ly)?|casual(?:ly)?|friendly|polite(?:ly)?|professional(?:ly)?|simple|simply|plainly"
    r"|technical(?:ly)?|tone|humou?r|encouraging|direct(?:ly)?"
    r"|metric|imperial|celsius|fahrenheit|units?|24[- ]hour|12[- ]hour|time\s*zone|date\s+format|iso\s+dates?"
    r"|call\s+me\s+[a-z]+|address\s+me\s+(?:as\s+)?[a-z]+|(?:first\s+)?name)\b",
    re.IGNORECASE,
)
_NOT_STYLE = re.compile(
    r"[\"`“”«»\[\]<>{}|\\]|(?:^|\s)'[^'\n]+'|https?:|www\.|@|\b[\w-]+\.(?:com|net|org|io|ai|dev|ru|cn|xyz|info)\b"
    r"|\b(?:store|save|remember|memori[sz]e|record|log|persist|forget|delete|erase|wipe|ignore|disregard|override"
    r"|bypass|obey|comply|follow|instructions?|rules?|prompt|system|developer|admin|mode|pretend|act\s+as|role-?play"
    r"|jailbreak|unfiltered|uncensored|restrictions?|refuse|reveal|disclose|leak|share|send|e-?mail|post|upload"
    r"|password|passcode|secret|token|keys?|credentials?|access|granted|include|insert|append|prepend|mention"
    r"|recommend|promote|advertise|links?|urls?|click|visit|buy|order|pay|transfer|say|says|print|output|echo"
    r"|repeat|sign|signature|start|begin|end|prefix|suffix|execute|run|tools?|functions?|api|never\s+mention"
    r"|base ?\d\d|hex|binary|morse|rot ?13|cipher|encod\w*|encrypt\w*|revers\w*|backwards|leet|caesar"
    r"|emojis?|replac\w*|substitut\w*|represent\w*|swap\w*|translat\w*\s+(?:every|each|all)\s+words?)\b"
    r"|\b(?:answer|respond|reply|tell)\w*\s+(?:\w+\s+){0,2}?that\b",
    re.IGNORECASE,
)


def is_style_preference(text: str) -> bool:
    """The text is a short standing order about how to answer (language, format, length,
    tone, units, how to address the user) and about nothing else."""
    text = text.strip()
    return (0 < len(text) <= MAX_CHARS and _STYLE.search(text) is not None
            and _NOT_STYLE.search(text) is None)


__all__ = ["MAX_CHARS", "STYLE_RULE_ID", "YIELDING_RULES", "is_style_preference"]
