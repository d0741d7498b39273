"""Layer 4: secrets stated in a sentence, which no code scanner looks for: "my wifi password
is BlueFalcon!2024", "the PIN is 4921", the other way round ("4471 is my PIN"), beside the
name in any order, a keyword followed by its value, an account and its password.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from pipelines.policy_rules.recovery_phrases import find_recovery_phrases
from pipelines.policy_rules.secrets.dictionary import _CAMEL_HUMP, is_words
from pipelines.policy_rules.secrets.generated import _dotted_name, _is_sequential, _looks_generated
from pipelines.policy_rules.secrets.hit import SecretHit
from pipelines.policy_rules.secrets.keywords import token_literal
from pipelines.policy_rules.secrets.placeholders import (
    _HASHED_VALUE,
    _TEST_VALUE,
    _is_placeholder,
    _is_placeholder_token,
)
from pipelines.policy_rules.secrets.scanning import _scan, tried_at_leading_literals
from pipelines.policy_rules.secrets.values import (
    _CODE_REFERENCE,
    _HUMAN_PASSWORD,
    _is_passphrase,
    _is_password_value,
)
from pipelines.policy_rules.text import char_classes

# The words that name a credential a person states in a sentence.
_SENTENCE_KW = (
    r"pass\s?words?|passcodes?|pass\s?phrases?|pins?(?:\s?(?:code|number))?|pw|pwd|"
    r"passw[oö]rt|wachtwoord|mot\s+de\s+passe|l[öo]senord|has[łl]o|contrase[nñ]a|senha|kennwort|"
    r"(?:door|gate|alarm|safe|lock|garage|locker|access|security|verification|login|"
    r"otp|2fa|mfa|backup|recovery|unlock|entry|keypad|wifi|wi-fi|bank|atm|puk|sim|master)\s?codes?|"
    r"combination|seed\s?phrase|recovery\s?phrase|mnemonic|security\s?answer|"
    r"(?:api|access|secret|private)\s?key|(?:auth|access|api|bearer)\s?token"
)
# keyword, what it is of (up to four words: "the PIN for the new debit card", "the password for
# the shared family netflix account"), and the verb: every match of `_SENTENCE_KEYWORD` starts with one
_SENTENCE_HEAD = (
    r"\b(?P<kw>" + _SENTENCE_KW + r")\b"
    r"(?P<mid>(?:\s+(?:for|to|of|on)\s+(?:the\s+|my\s+|our\s+)?[\w'\-]+(?:\s+[\w'\-]+){0,3})?)"
    r"\s*(?P<verb>(?:is|was|has\s+been|have\s+been|got|gets)\s+(?:set|changed|reset|updated)\s+to|"
    r"(?:set|changed|reset|updated)\s+to|is\s+now|was\s+now|will\s+be|(?:ist|lautet|est|es|é|är|jest|è)(?=[ \t])|"
    r"is|was|are|=|:|-|became|reads)[ \t]*"
)
_SENTENCE_KEYWORD = re.compile(
    r"(?ix)" + _SENTENCE_HEAD +
    r"(?:(?P<q>[\"'`\u201c\u2018])(?P<qval>[^\"'`\u201d\u2019\n]{1,100})[\"'`\u201d\u2019]"
    r"|(?P<val>[^\s\"'`]{1,100}))"
)
tried_at_leading_literals(_SENTENCE_KEYWORD)
# What the one pass screens for it (its value's curly quotes and verbose flag are no
# Hyperscan's): where no head matches, no sentence does.
_SENTENCE_SCREEN = re.compile(r"(?i)" + _SENTENCE_HEAD)
# The same credential stated the other way round: set to a value ("I changed my wifi password to
# BlueFalcon!2024", "set the alarm code to 5812"), or the value first ("4471 is my PIN",
# "BlueFalcon!2024 is the wifi password"). Between the determiner and the keyword stand at most
# three words that are not determiners or verbs ("2019 was the year my PIN changed" is no PIN).
_OWNER = r"(?:my|the|our|his|her|their|your)\s+"
_DESCRIBING = r"(?:(?!(?:my|the|our|his|her|their|your|a|an|is|was|are)\b)[\w'\-]+\s+){0,3}?"
_SET_TO = re.compile(
    r"(?i)\b(?:set|changed?|reset|updated?|switched)\s+" + _OWNER + _DESCRIBING +
    r"(?P<kw>" + _SENTENCE_KW + r")\s+to\s*:?[ \t]*"
    r"(?:(?P<q>[\"'`\u201c\u2018])(?P<qval>[^\"'`\u201d\u2019\n]{1,100})[\"'`\u201d\u2019]|(?P<val>[^\s\"'`]{1,100}))"
)
# Where the noun phrase naming the credential ends: the clause ends, or a conjunction or a
# preposition follows ("4471 is my PIN for the bank"), not another noun ("Bitwarden2 is my
# password manager": the keyword only describes that noun).
_KW_ENDS = (r"(?=[ \t]*(?:$|[.,;:!?)\]\n\u2014\u2013]|(?:and|or|but|so|now|too|again|instead|please|today|"
            r"tonight|here|for|on|of|at|in|from|to|with|until|since|when|if|because)\b))")
_VALUE_FIRST = re.compile(
    r"(?i)(?<![\w@.$/\-])(?P<val>[^\s\"'`]{3,64}+)\s+(?:is|was|will\s+be)\s+" + _OWNER + r"(?:new\s+)?" + _DESCRIBING +
    r"(?P<kw>" + _SENTENCE_KW + r")\b(?![\-'])" + _KW_ENDS
)
# The value named by its role ("use 4471 as the PIN", "with hunter2! as password": after "as"
# the determiner may be left out), or set off before its name by a comma, a parenthesis or a
# dash ("4471, my PIN", "5812 (the door code)"), the name ending the clause there (not "room
# 1234, the access code for which ...").
_VALUE_AS = re.compile(
    r"(?i)(?<![\w@.$/\-])(?P<val>[^\s\"'`]{3,64}+)\s+as\s+(?:" + _OWNER + r")?(?:new\s+)?" + _DESCRIBING +
    r"(?P<kw>" + _SENTENCE_KW + r")\b(?![\-'])" + _KW_ENDS
)
_CLAUSE_ENDS = r"(?=[ \t]*(?:$|[.,;:!?)\]\n\u2014\u2013]|(?:and|or|but)\b))"
_VALUE_APPOSED = re.compile(
    r"(?i)(?<![\w@.$/\-])(?P<val>[^\s\"'`,(\u2014\u2013]{3,64}+)[ \t]*(?:,|\(|--|[\u2014\u2013])[ \t]*"
    + _OWNER + r"(?:new\s+)?" + _DESCRIBING + r"(?P<kw>" + _SENTENCE_KW + r")\b(?![\-'])" + _CLAUSE_ENDS
)
# The credential, then its value set off by a comma, a parenthesis or a dash ("my PIN, 4471",
# "the wifi password (BlueFalcon!2024)", "the door code, which is 5812"), the value standing
# alone: the clause, a conjunction or a verb after it.
_APPOSITION = re.compile(
    r"(?i)\b" + _OWNER + _DESCRIBING + r"(?P<kw>" + _SENTENCE_KW + r")[ \t]*(?:,|\(|--|[\u2014\u2013])[ \t]*"
    r"(?:(?:which|that)[ \t]+(?:is|was)[ \t]+(?:now[ \t]+)?|i\.e\.,?[ \t]*|namely[ \t]+)?"
    r"(?:(?P<q>[\"'`\u201c\u2018])(?P<qval>[^\"'`\u201d\u2019\n]{1,100})[\"'`\u201d\u2019]|(?P<val>[^\s\"'`,()]{3,100}))"
    r"(?=[ \t]*(?:$|[.,;:!?)\]\n\u2014\u2013]|(?:and|or|but|is|was|are|for|on|in)\b))"
)
# A word naming a credential: every match of the patterns above holds one (`_OTHER_ORDERS`).
# (A value-first pattern's value is possessive: only a whole run of its characters can be
# followed by the space that ends it, and trying shorter ones cost most of a long token's scan.)
_CREDENTIAL_NOUN = re.compile(r"(?i)\b(?:" + _SENTENCE_KW + r")\b")
# The patterns stating a value in another order; their values make them no Hyperscan's (a
# class without spaces), so the one pass screens them by the credential noun they all hold.
_OTHER_ORDERS = (_SET_TO, _APPOSITION, _VALUE_FIRST, _VALUE_AS, _VALUE_APPOSED)
_STATUS_WORDS = frozenset(
    """
    a an the my your his her our their its this that these those it not no none
    correct incorrect wrong right weak strong required optional expired invalid valid
    missing empty blank long short secure insecure unknown same different changed reset
    set saved stored hidden encrypted hashed sensitive case-sensitive too very still now
    also only being in on at for by with from protected needed mandatory displayed shown
    visible managed rotated shared compromised leaked taken good bad fine ok okay great
    simple complex easy hard secret private personal kept written there here changing
    expiring case what where which who how why when and or but if then so as is was be
    been being enabled disabled active inactive locked unlocked working broken lost
    forgotten known available printed written located attached included listed
    """.split()
)
_DIGIT_OR_SYMBOL = re.compile(r"[0-9!@#$%^&*+=~?]")

_BARE_PIN = re.compile(
    r"(?i)\b(?:pin(?:\s?code)?|passcode|(?:door|gate|alarm|safe|garage|keypad|locker)\s?code)\s*(?:#|no\.?)?\s*"
    r"(?P<val>\d{4,8})\b(?![.,]\d)"
)


# A BIP-39 recovery phrase: 12 to 24 lower-case words of 3 to 8 letters (its word list's
# lengths), in groups of three, ending the clause.
_MNEMONIC = re.compile(r"(?:[a-z]{3,8}(?:[ \t]+|,[ \t]*)){11,23}[a-z]{3,8}(?![\w'\-])(?![ \t]+[a-z])")
_PHRASE_KEYWORD = re.compile(r"(?i)seed|recovery|mnemonic")
# A credential keyword followed at once by its value, no verb between: "api key oy2m4r...",
# "the passcode BdDS7y", "bot token 8f2Kq...". The value must look generated.
_KEYWORD_THEN_VALUE = re.compile(
    r"(?i)\b(?P<kw>(?:api|access|secret|private|auth|bearer|bot|app|personal[ \t]+access)[ \t]?(?:key|token)s?|"
    r"(?:client|shared|signing|webhook|app|api|consumer)[ \t]secret|pass(?:\s?(?:word|code|phrase))?)[ \t]+"
    r"(?P<val>[^\s\"'`]{6,200})"
)
# An account and its password side by side: "robert@icloud.com / c#i8vaHYdK", "user@x.io, pw9!Lk2m"
# (not after a colon: "me@host.example.com:backup2024Q1" is an scp or ssh target).
_EMAIL_THEN_PASSWORD = re.compile(
    r"(?<![\w.+\-])[\w.+\-]{1,64}@[\w\-]+(?:\.[\w\-]+)+[ \t]*(?:/|\||,)[ \t]*(?P<pw>[^\s\"'`,;]{8,64})(?=[\s,;.]|$)"
)


def _sentence_hits(text: str, out: frozenset[re.Pattern] = frozenset()) -> Iterator[SecretHit]:
    for m in _scan(_BARE_PIN, text, out):
        yield SecretHit("hard.secret.plain_sentence", m.start("val"), m.end("val"))
    yield from _keyword_then_value_hits(text)
    if "@" in text:
        for m in _EMAIL_THEN_PASSWORD.finditer(text):
            pw = m.group("pw").rstrip(".")
            if char_classes(pw) >= 3 and "@" not in pw and "/" not in pw and _is_password_value(pw, quoted=True) \
                    and not _is_sequential(pw):
                yield SecretHit("hard.secret.plain_sentence", m.start("pw"), m.start("pw") + len(pw))
    for m in _scan(_SENTENCE_KEYWORD, text, out):
        quoted = m.group("qval") is not None
        value = m.group("qval") if quoted else m.group("val")
        start = m.start("qval") if quoted else m.start("val")
        if _PHRASE_KEYWORD.match(m.group("kw")):
            words = _MNEMONIC.match(text, start)
            if words is not None and len(words.group().replace(",", " ").split()) % 3 == 0:
                if _bip39_test_vector(words.group()):
                    continue  # the standard's own example ("abandon abandon ... about"): public
                yield SecretHit("hard.secret.plain_sentence", start, words.end())
                continue
        if not quoted:
            value = value.rstrip(".,;:!?)]}")
            if not value:
                continue
        kw = m.group("kw").lower()
        if m.group("verb") == "-" and text[m.start("kw") - 1 : m.start("kw")] in ("-", "_"):
            continue  # "to-set-a-password-for-your-vm": a slug or identifier, not a sentence
        if _sentence_value_is_secret(text, value, quoted, kw, start + len(value), m.group("verb")):
            yield SecretHit("hard.secret.plain_sentence", start, start + len(value))
    yield from _other_order_hits(text, out)


def _other_order_hits(text: str, out: frozenset[re.Pattern] = frozenset()) -> Iterator[SecretHit]:
    """The value and the credential's name in other orders (`_SET_TO` and `_APPOSITION`: the
    name first, the value quoted or bare; `_VALUE_FIRST`, `_VALUE_AS`, `_VALUE_APPOSED`: the
    value first), each value judged as the sentence rule judges a value after "set to" (a bare
    word never counts: "set the password to expire")."""
    for rx in (_SET_TO, _APPOSITION):
        for m in _scan(rx, text, out):
            quoted = m.group("qval") is not None
            value = m.group("qval") if quoted else m.group("val").rstrip(".,;:!?)]}")
            start = m.start("qval") if quoted else m.start("val")
            kw = m.group("kw").lower()
            if value and _sentence_value_is_secret(text, value, quoted, kw, start + len(value), "set to"):
                yield SecretHit("hard.secret.plain_sentence", start, start + len(value))
    for rx in (_VALUE_FIRST, _VALUE_AS, _VALUE_APPOSED):
        for m in _scan(rx, text, out):
            raw = m.group("val").rstrip(",;:")
            value = raw.lstrip("([{")
            start = m.start("val") + len(raw) - len(value)
            kw = m.group("kw").lower()
            if value and _sentence_value_is_secret(text, value, False, kw, start + len(value), "set to"):
                yield SecretHit("hard.secret.plain_sentence", start, start + len(value))


# Every match holds one of these (a cheap test before the case-blind scan).
_KEYWORD_THEN_VALUE_LITERALS = ("key", "Key", "KEY", "oken", "OKEN", "ecret", "ECRET", "ass", "ASS")


def _keyword_then_value_hits(text: str) -> Iterator[SecretHit]:
    if not any(w in text for w in _KEYWORD_THEN_VALUE_LITERALS):
        return
    for m in _KEYWORD_THEN_VALUE.finditer(text):
        value = m.group("val").rstrip(".,;:!?)]}")
        if (len(value) < 6 or "://" in value or value.startswith("/") or "=" in value.rstrip("=")
                or _sentence_value_is_stand_in(value) or _sentence_value_is_not_literal(value, False)):
            continue
        if _is_numeric_keyword(m.group("kw").lower()):
            ok = re.fullmatch(r"[A-Za-z0-9]{4,12}", value) is not None and bool(re.search(r"\d", value))
        elif m.group("kw").lower().startswith("pass") and (_HUMAN_PASSWORD.fullmatch(value) or _is_passphrase(value)):
            ok = m.group("kw").lower() != "pass" or _HUMAN_PASSWORD.fullmatch(value) is not None
        elif m.group("kw").lower() == "pass":
            ok = False  # "pass" alone is also a verb: only a value built like a password follows it
        else:
            ok = _looks_generated(value, min_len=12) and not _dotted_name(value) and not _is_placeholder_token(value)
        if ok:
            yield SecretHit("hard.secret.plain_sentence", m.start("val"), m.start("val") + len(value))


# The sentence keywords that, written as one word ("apiKey", "ACCESSTOKEN", "authToken"), are a
# name in code: its value is judged as layer 3 judges a token-like name's (`token_literal`),
# so a name made of words ("AbstractSingletonProxyFactoryBean") is no key there either.
_CODE_NAME_KW = re.compile(r"(?:api|access|private)key|(?:auth|access|api|bearer)token")


def _sentence_value_is_secret(text: str, value: str, quoted: bool, kw: str, end: int, verb: str = "is") -> bool:
    if _CODE_NAME_KW.fullmatch(kw):
        return not _sentence_value_is_stand_in(value) and token_literal(value, quoted=quoted)
    numeric_kw = _is_numeric_keyword(kw)
    if numeric_kw and re.fullmatch(r"\d[\d\s\-]{2,14}", value):
        return 3 <= len(re.sub(r"\D", "", value)) <= 12  # "the door code is 0000"
    if not numeric_kw and verb.strip() not in ("-", "") and _is_passphrase(value.strip("\"'`")):
        return True  # "the password is copper-cactus-willow-violet": words, but four of them
    if _sentence_value_is_stand_in(value) or _sentence_value_is_not_literal(value, quoted):
        return False
    if numeric_kw:
        return _is_code_value(value, quoted)
    if len(value) < 4:
        return False
    if quoted:
        return True
    if _DIGIT_OR_SYMBOL.search(value) or _is_mixed_case(value):
        return not _CODE_REFERENCE.match(value) or bool(_DIGIT_OR_SYMBOL.search(value))
    if verb.strip() in _FOREIGN_VERBS:
        return False  # a bare word after "ist" / "es" may be "falsch": no status-word list for these
    return _bare_word_ends_sentence(text, value, end, verb)


_FOREIGN_VERBS = frozenset({"ist", "lautet", "est", "es", "é", "är", "jest", "è"})


def _is_numeric_keyword(kw: str) -> bool:
    """PINs, door codes and combinations: their values are digits, not words."""
    return kw.startswith("pin") or "code" in kw or kw == "combination"


def _sentence_value_is_stand_in(value: str) -> bool:
    """A status word, placeholder or test value in place of the secret ("is required"), or a
    filler made mostly of one character ("AIzaaaaaaaaa...", "sk-xxxxxxxx")."""
    return (value.lower() in _STATUS_WORDS or _is_placeholder(value) or bool(_TEST_VALUE.match(value))
            or (len(value) >= 8 and _is_placeholder_token(value)))


def _sentence_value_is_not_literal(value: str, quoted: bool) -> bool:
    """Punctuation, a hash, a reference or template, a word naming a credential, a
    hyphenated or snake_case name, or (unquoted) code."""
    if not re.search(r"[A-Za-z0-9]", value) or _HASHED_VALUE.match(value) or re.match(r"[$&({\[<%=]", value):
        return True
    if re.search(r"(?i)pass(?:wor)?d|passwd|secret|token", value) or re.fullmatch(r"[a-z]+(?:[_\-][a-z]+)+", value):
        return True
    if _qualified_type_name(value):
        return True  # "PrivateKey = ed25519.PrivateKey": code naming a type
    return not quoted and bool(re.search(r"[(){}\[\]]", value))


def _qualified_type_name(value: str) -> bool:
    """A dotted name whose last part is capitalised words: a type or member in code
    ("ed25519.PrivateKey", "crypto.SecretKey"), not a value."""
    m = re.fullmatch(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*\.([A-Z][a-z]+(?:[A-Z][a-z]+)*)", value)
    return m is not None and all(is_words(w) for w in _CAMEL_HUMP.split(m.group(1)))


def _is_code_value(value: str, quoted: bool) -> bool:
    """The value of a PIN or code keyword: 3 to 12 digits, or something quoted or with
    digits or symbols."""
    digits = re.sub(r"[\s\-]", "", value)
    if digits.isdigit():
        return 3 <= len(digits) <= 12
    return quoted or (bool(_DIGIT_OR_SYMBOL.search(value)) and len(value) >= 4)


def _is_mixed_case(value: str) -> bool:
    """An upper-case letter after the first character and a lower-case one ("hunterTwo")."""
    return any(c.isupper() for c in value[1:]) and any(c.islower() for c in value)


def _bare_word_ends_sentence(text: str, value: str, end: int, verb: str) -> bool:
    """A bare lowercase word is a password only when the sentence ends right after it
    ("the password is swordfish."), not in "the password is kept in 1Password", and
    not after "set to" ("the password is set to expire")."""
    if re.search(r"\bto$", verb.strip()):
        return False
    rest = text[end : end + 2]
    return value.isalpha() and (rest == "" or rest[0] in ".!;,\n" or rest.startswith(" \n"))


def _bip39_test_vector(words: str) -> bool:
    """The words are a BIP-39 test vector (`recovery_phrases`): public, no secret."""
    return any(p.test_vector for p in find_recovery_phrases(words))
