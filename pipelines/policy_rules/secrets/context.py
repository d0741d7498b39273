"""Values whose shape alone is common in harmless text (64 hex digits, base32 runs, lists of
codes, lists of words) but which are credentials after a word naming them: wallet keys, OTP
seeds, recovery codes and recovery phrases.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from pipelines.policy_rules.secrets.generated import _is_sequential
from pipelines.policy_rules.secrets.hit import SecretHit
from pipelines.policy_rules.secrets.placeholders import _is_placeholder, _is_placeholder_token
from pipelines.policy_rules.secrets.sentences import _bip39_test_vector

# Values whose shape alone is common in harmless text (64 hex digits are also a transaction
# hash or a checksum; 16 base32 letters also an id; a list of codes also order numbers) but
# which are credentials when a word naming what they are stands just before them, on the
# same line or the line above: a context word, then a value the shape of that credential.
_CONTEXT_VALUES: tuple[tuple[str, re.Pattern[str], re.Pattern[str]], ...] = (
    # a wallet's private key: 64 hex digits (0x optional), 51-52 base58 (WIF), 87-88 base58
    # (a Solana secret key), or 64 byte values (a Solana keypair file)
    ("hard.secret.wallet_key",
     re.compile(r"(?i)private[ _\-]?key|secret[ _\-]?key|\bwallet\b|\bsigner\b|key[ _\-]?pair|\bWIF\b|paper wallet"),
     re.compile(r"(?<![\w])(?:0x)?[0-9a-fA-F]{64}(?![\w])|(?<![\w])[5KL][1-9A-HJ-NP-Za-km-z]{50,51}(?![\w])"
                r"|(?<![\w])[1-9A-HJ-NP-Za-km-z]{86,88}(?![\w])|\[(?:[ \t]*\d{1,3}[ \t]*,){63}[ \t]*\d{1,3}[ \t]*\]")),
    # a TOTP / HOTP shared secret: base32, 16 to 64 letters, often shown in groups of four
    ("hard.secret.otp_seed",
     re.compile(r"(?i)(?<![a-z])(?:t?otp|hotp|2fa|mfa|two[ \-]factor|authenticator|setup[ \-]key|shared[ _\-]secret"
                r"|google[ \-]auth[a-z]*)(?![a-z])|typed the key|enter (?:this|the) key"),
     re.compile(r"(?<![\w])(?:[A-Z2-7]{16,64}|[a-z2-7]{16,64}|(?:[A-Z2-7]{4}[ \-]){3,15}[A-Z2-7]{4}"
                r"|(?:[a-z2-7]{4}[ \-]){3,15}[a-z2-7]{4})(?![\w])")),
    # recovery and backup codes: several codes of one shape in a row, or one grouped recovery key
    ("hard.secret.recovery_code",
     re.compile(r"(?i)\b(?:recovery|backup|emergency|one[ \-]time|2fa|mfa|scratch)[ \-](?:codes?|keys?)\b"
                r"|\b(?:bitlocker|recovery)\b"),
     # (each code and the separator after it is an atomic group, and a code ends where its
     # characters do: a long run of letters is never split into "codes", so no backtracking)
     re.compile(r"(?<![\w\-])(?>[A-Za-z0-9]{4,10}(?:-[A-Za-z0-9]{4,10})?(?![A-Za-z0-9\-])"
                r"(?:[ \t]*[,;]?[ \t]*\n[ \t]*|[ \t]*[,;][ \t]*|[ \t]+)){3,}"
                r"[A-Za-z0-9]{4,10}(?:-[A-Za-z0-9]{4,10})?(?![\w\-])"
                r"|(?<![\w\-])(?:[A-Z0-9]{4,6}-){4,11}[A-Z0-9]{4,6}(?![\w\-])")),
)
_CONTEXT_WINDOW = 120  # characters before the value a context word may stand in
_CONTEXT_AGAINST = re.compile(
    r"(?i)\b(?:tx|txn|transaction|tx[ _\-]?hash|hash|sha\d*|digest|checksum|commit|block|address|public|pubkey"
    r"|order|tracking|invoice|serial|example|sample|test[ \-]?vector)\b"
)
# A recovery phrase (BIP-39 and alike): 12, 15, 18, 21 or 24 lower-case words of 3 to 8
# letters, none of them a function word of prose (word lists leave those out).
_PHRASE_WORDS = re.compile(r"(?<![\w'\-])[a-z]{3,8}(?:(?:[ \t]+|,[ \t]*)[a-z]{3,8}){11,23}(?![\w'\-])")
_PHRASE_CONTEXT = re.compile(r"(?i)\b(?:seed|recovery|mnemonic|backup|secret)[ \-]?(?:phrase|words?)?\b|\bwallet\b")
_PROSE_WORDS = frozenset(
    """the and was for you that with this have are not but from they his her she him had were been
    its our your their them then than what when where which who will would could should there
    here into onto some just like also very much more most only over about because after""".split()
)
_CONTEXT_LITERALS = ("key", "Key", "KEY", "allet", "igner", "WIF", "otp", "OTP", "2FA", "2fa", "MFA", "mfa",
                     "actor", "uthenticator", "code", "Code", "ecovery", "ECOVERY", "itLocker", "ackup", "eed",
                     "nemonic", "hrase", "ecret", "ALLET")


def _context_hits(text: str, out: frozenset[re.Pattern] = frozenset()) -> Iterator[SecretHit]:
    """Values of a credential's shape with a word naming that credential just before them
    (`_CONTEXT_VALUES`), and recovery phrases after a word naming one; a word saying the value
    is public, a hash or an example (`_CONTEXT_AGAINST`) between them rules it out. `out`:
    patterns the one pass ruled out (a context or value pattern among them: no hit)."""
    if not any(w in text for w in _CONTEXT_LITERALS):
        return
    for rule_id, context, value in _CONTEXT_VALUES:
        if context in out or value in out or context.search(text) is None:
            continue  # (the cheaper test first: most texts name none of these)
        for m in value.finditer(text):
            before = text[max(0, m.start() - _CONTEXT_WINDOW) : m.start()]
            if "\n\n" in before:
                before = before[before.rfind("\n\n") :]
            words = list(context.finditer(before))
            if not words or _CONTEXT_AGAINST.search(before, words[-1].end()):
                continue
            found = m.group()
            if rule_id == "hard.secret.otp_seed" and not (re.search(r"[2-7]", found) and re.search(r"[A-Za-z]", found)):
                continue  # base32 secrets mix letters and the digits 2-7
            if rule_id == "hard.secret.recovery_code" and not _code_list(found):
                continue
            bare = found.removeprefix("0x").replace(" ", "")
            if _is_placeholder(bare) or _is_placeholder_token(bare) or _is_sequential(bare):
                continue
            yield SecretHit(rule_id, m.start(), m.end())
    for m in (_PHRASE_WORDS.finditer(text) if _PHRASE_CONTEXT not in out and _PHRASE_CONTEXT.search(text) else ()):
        words = m.group().replace(",", " ").split()
        if len(words) not in (12, 15, 18, 21, 24) or any(w in _PROSE_WORDS for w in words):
            continue
        before = text[max(0, m.start() - _CONTEXT_WINDOW) : m.start()]
        if _PHRASE_CONTEXT.search(before) and not _CONTEXT_AGAINST.search(before) and len(set(words)) > 2 \
                and not _bip39_test_vector(m.group()):
            yield SecretHit("hard.secret.plain_sentence", m.start(), m.end())


def _code_list(found: str) -> bool:
    """Recovery codes: each holds a digit, and they share one shape (length and dash), or a
    single grouped key."""
    codes = re.split(r"[\s,;]+", found.strip())
    if not all(re.search(r"\d", c) for c in codes):
        return False
    if len(codes) == 1:
        return True
    shapes = {re.sub(r"[A-Za-z0-9]", "x", c) for c in codes}
    pairs = {len(c) for c in codes}
    return len(shapes) <= 2 and max(pairs) - min(pairs) <= 1 and len(codes) >= 4
