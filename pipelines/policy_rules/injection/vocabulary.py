"""The phrase fragments the rules are built from: instruction nouns and their owners,
overriding verbs, the reader's output, re-encodings, dictating and disclosing verbs, access
verdicts; and Russian words made to match text whose look-alike letters were folded.
"""

from __future__ import annotations

from pipelines.policy_rules.text import fold_lookalikes

# Nouns that name the assistant's standing instructions.
_INSTR = (
    r"(?:instructions?|instruction\s+set|directions?|directives?|rules?|prompt(?:s|ing)?|guidelines?|"
    r"guidance|commands?|orders?|constraints?|restrictions?|programming|training|polic(?:y|ies)|"
    r"context|messages?|conversation|inputs?|text|content|safeguards?|guardrails?|evidence|"
    r"filters?|limitations?|tasks?)"
)
_OWNER = (
    r"(?:previous|prior|above|earlier|preceding|former|original|initial|old|system|existing|"
    r"current|given|provided|all|any|every|other|safety|security|your|these|those|the\s+above|"
    r"out[- ]of[- ]date|default|developer|openai|ethical|moral|content|underlying|hidden)"
)
_OVERRIDE_VERB = (
    r"(?:ignore|ignoring|disregard|disregarding|forget|forgetting|skip|bypass|override|"
    r"overrule|neglect|abandon|discard|erase|cancel|void|nullify|"
    r"stop\s+following|do\s*n[o']?t\s+follow|no\s+longer\s+follow|pay\s+no\s+attention\s+to|"
    r"throw\s+away|put\s+aside|set\s+aside)"
)
_FILLER = (
    r"(?:all|any|each|every|of|the|your|my|these|those|everything|anything|else|that|is|was|"
    r"written|said|stated|mentioned|provided|given|before|above|so\s+far|up\s+to\s+now|until\s+now|"
    r"prior\s+to\s+this|that\s+came|which\s+came|and|or|its|their)"
)
_REPLY = r"(?:reply|replies|response|responses|answer|answers|output|outputs|next\s+message)"
# What the reading model writes, also when it is not named "your reply": "whatever you say",
# "the text you return", "each answer you give", "the assistant's answer". ("Everything you
# send over Wi-Fi" names no output of the reader: "send" alone is not an output verb.)
_YOU_WRITE = (
    r"(?:say|write|type(?:\s+back)?|output|produce|generate|return|give|provide|send\s+back|"
    r"(?:reply|respond|answer)(?:\s+with)?)"
    # ... but not what one writes somewhere else: "everything you type in the terminal",
    # "whatever you write in the wiki" (the user or reader as the place is still the reply)
    r"(?!\s+(?:in|on|into|to|for|from|at)\s+(?:the|a|an|our|this|that|each|every|any|your)\s+(?!users?\b|readers?\b))"
)
_READER_OUTPUT = (
    rf"(?:your\s+(?:\w+\s+)?{_REPLY}"
    rf"|(?:whatever|everything|anything|all\s+of\s+what|all\s+(?:of\s+)?(?:the\s+)?(?:text|words))\s+(?:else\s+)?"
    rf"(?:text\s+)?you\s+(?:\w+\s+)?{_YOU_WRITE}"
    rf"|(?:the|each|every|any|all\s+the)\s+(?:\w+\s+)?(?:text|words?|{_REPLY}|message|content)\s+(?:that\s+)?you\s+"
    rf"(?:\w+\s+)?{_YOU_WRITE}"
    rf"|the\s+(?:assistant|ai|model|chatbot|bot|llm)(?:'s|s')\s+(?:\w+\s+)?{_REPLY})"
)
# The same with a pronoun head only ("whatever you write"), not "the text you produce for
# the README", which may name a work product.
_READER_ALL = (
    rf"(?:whatever|everything|anything|all\s+of\s+what|all\s+(?:of\s+)?(?:the\s+)?(?:text|words))\s+(?:else\s+)?"
    rf"(?:text\s+)?you\s+(?:\w+\s+)?{_YOU_WRITE}"
)
# Verbs that re-encode a text (a narrower `_TRANSFORM`).
_RECODE = r"(?:encrypt|encod|encipher|translat|revers|invert|shift|scrambl|obfuscat|convert)\w*"
# A web address dictated into a text.
_LINK = r"(?:https?://|www\.|\b[\w-]+\.(?:com|net|org|io|example|xyz|info|biz|ru|cn)\b|\blink\s+to\b)"
# Re-encodings of a text that are no natural language (`_LANG` without the languages).
_OBFUSCATED = (
    r"(?:base ?(?:64|32|16)|hex(?:adecimal)?|binary|morse(?: code)?|rot ?13|leet ?speak|pig latin|"
    r"upper ?case|lower ?case|all caps|reverse(?:d)?(?: order)?|emojis?|caesar cipher)"
)
# Words that dictate content into a text.
_DICTATE = r"(?:include|mention|add|insert|say|state|claim|recommend|promote|advertise|plug|tell)"
_LANG = (
    r"(?:base ?(?:64|32|16)|hex(?:adecimal)?|binary|morse(?: code)?|rot ?13|leet ?speak|pig latin|"
    r"upper ?case|lower ?case|all caps|reverse(?:d)?(?: order)?|emojis?|caesar cipher|"
    r"english|french|german|spanish|portuguese|italian|dutch|russian|chinese|mandarin|"
    r"japanese|korean|arabic|hindi|turkish|polish|swedish|greek|hebrew|latin|[a-z]+ese)"
)
# Verbs (stems) that transform a reply or slip extra content into it.
_TRANSFORM = (
    r"(?:encrypt|encod|encipher|cipher|translat|render|revers|invert|shift|scrambl|obfuscat|modif|alter|augment|"
    r"enhanc|embed|inject|insert|integrat|append|prepend|add(?!ition)|includ|mention|promot|advertis|hid|substitut|replac|"
    r"emoji|interleav|intersperse|incorporat|weav|slip|sneak|plant|put|convert|transform|rewrit|spread)"
)
# Where an imperative can start: a clause start, or after "please", "also", "can you", ...
# A leading subject ("I translated your answer") makes it a report, not an order.
_IMPERATIVE = (
    r"(?:^|[.!?;:\n]\s*|,\s+|\b(?:please|also|and|then|kindly|now|just|(?:can|could|would|will)\s+you|(?:you|sure)\s+to)\s+)"
    r"(?!(?:i|we|he|she|they|it|my|our|his|her|their|you)\b)"
)
_CODING = r"(?:(?:\w+\s+)?ciphers?|encoding|encryption|emojis?|base ?\d\d|reverse\s+(?:order|sequence))"
# A positive access verdict: "access granted", "authentication successful", "granted access".
_VERDICT_OK = (
    r"(?:(?:access|entry|authori[sz]ation|authentication|login|log-in|permission|clearance)\s+(?:is\s+|was\s+|has\s+been\s+)?"
    r"(?:granted|approved|allowed|accepted|confirmed|successful|succeeded)|granted\s+access)"
)
# A quoted opener of five or more words ("Begin your response with: "In this magical realm,
# it is ...") sets the tone of a writing task; the hijack form dictates a short fixed token.
_NOT_PROSE_OPENER = (
    r"(?!\s*(?:saying|the\s+(?:following\s+)?(?:sentence|phrase|line|words?)|the\s+following)?\s*[,:]?\s*"
    r"[\"'](?:[\w'-]*\w[,.;:]?\s+){4,})"
)
_SAY = r"(?:say|output|print|respond\s+with|reply\s+with|answer\s+with|echo|type\s+out|proclaim|utter|return)"
_DISCLOSE = (
    r"(?:reveal|show|print|repeat|output|display|tell|give|leak|disclose|write\s+out|recite|"
    r"spell\s+out|dump|list|share|paste|relay|return|provide|describe|summari[sz]e|copy)"
)


def _cyrillic(pattern: str) -> str:
    """`pattern` (Russian words) made to match text after `normalise`, which folds the
    Cyrillic letters that look Latin ("о", "р", "Н", ...) to Latin: each letter becomes a class
    of its two cases, as they are and as folded."""

    def letter(c: str) -> str:
        forms = dict.fromkeys((c, c.upper(), fold_lookalikes(c), fold_lookalikes(c.upper())))
        return f"[{''.join(forms)}]" if len(forms) > 1 and "\u0400" <= c <= "\u04ff" else c

    return "".join(letter(c) for c in pattern)
