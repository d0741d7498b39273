"""The learned layer beside the rules: one logistic regression per kind (secret, injection).

Features (`features`): hashed character n-grams of the *raw* text (so Cyrillic or Greek
look-alikes and full-width letters are visible to the model before `text.normalise` folds
them away), hashed word n-grams of the normalised text (so folded trigger words count as
the words they spell), which rules fired, and a few shape numbers (longest token's entropy,
digit and capital share, placeholder marks, and the shape of the most random-looking token:
length, character mix, dictionary-word share, repeats), and how often each cue family of text
addressing the reading model occurs (`_CUES`: the reader named, an obligation, a standing
order, secrecy, a target outside the conversation, a tool call, ... in several languages).
The secret model (`DENSE_ONLY_KINDS`) reads only the rule and shape numbers: n-grams of
secrets memorise the sources' values. The injection model's rows are weighted by source
(`SOURCE_BALANCED_KINDS`, `sample_weights`); without the cue families or the weights,
leave-one-source-out finds no threshold at which it helps.
Hashing keeps the model free of a vocabulary: the artefact is two coefficient vectors, a few
thresholds and a manifest.

How it decides (`LearnedLayer.decide`), per scanned string:
- injection: a rule hit stands (rules are the clear-cut cases and the explanations);
  without one, a probability >= `add_threshold` adds `hard.injection.model`.
- secret: a hit of a strong rule (vendor formats, PEM keys, plain-sentence secrets, cards)
  stands; a hit of a grey-zone rule (`VETOABLE`: keyword assignments, bare high-entropy
  tokens, URL and header credentials) stands only when the probability is >=
  `veto_threshold`; with no hit left, a probability >= `add_threshold` adds
  `hard.secret.model`.

Thresholds are chosen by leave-one-source-out cross-validation inside the training data
(`train`), never on the rows they are scored on; a kind no threshold helps is shipped
`inert` and not scored. `loci policy train` rebuilds the shipped
artefact (`MODEL_DIR`) bit-for-bit from the labelled files (the public dev sets and the `tune`
halves of the repository's blind injection sets, `REPO_TUNE_SETS`; rows marked `half: blind`
are never trained on); `load` reads it.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from itertools import chain
from pathlib import Path

import numpy as np

from pipelines.policy_rules.secrets import PASSWORD_KEYWORD, SECRET_KEYWORD, is_periodic, is_words
from pipelines.policy_rules.text import OnePass, char_classes, fold_lookalikes, normalise, shannon_entropy, unfold

FORMAT_VERSION = 3  # 3: the injection cue families among the dense features
MODEL_DIR = Path(__file__).with_name("model")
MANIFEST = "manifest.json"
COEF_FILE = "coef.npy"
KINDS: tuple[str, ...] = ("secret", "injection")
# Labelled sets kept in the repository whose `half: tune` rows the layer also trains on (rows
# marked `half: blind` never are: they stay out-of-sample for the benchmark). Both were
# written before the policy was read, and unlike the public sources each holds attacks and
# their look-alikes side by side, in the same voice.
REPO_TUNE_SETS: tuple[Path, ...] = tuple(
    Path(__file__).resolve().parents[2] / "bench" / "data" / name
    for name in ("injection_blind.jsonl", "injection_blind2.jsonl")
)
HELD_OUT_HALF = "blind"
MODEL_RULE = {"secret": "hard.secret.model", "injection": "hard.injection.model"}
# Secret rules whose hits the model may overrule: the patterns that also match look-alike
# non-secrets (names assigned a placeholder, random-looking ids, example URLs).
VETOABLE: frozenset[str] = frozenset(
    {
        "hard.secret.keyword_assignment",
        "hard.secret.high_entropy",
        "hard.secret.url_credentials",
        "hard.secret.auth_header",
    }
)
# Rule families that become features (the rule id's middle part, then its last part).
RULE_FEATURES: tuple[str, ...] = (
    "secret.keyword_assignment",
    "secret.high_entropy",
    "secret.url_credentials",
    "secret.auth_header",
    "secret.plain_sentence",
    "secret.private_key",
    "secret.jwt",
    "secret.other",
    "injection.override",
    "injection.role_hijack",
    "injection.system_prompt",
    "injection.memory_poisoning",
    "injection.output_control",
    "injection.exfiltration",
    "injection.fake_delimiter",
    "injection.authority_claim",
    "injection.token_flood",
    "injection.encoded_payload",
    "injection.homoglyph",
    "injection.other",
)
_TOKEN = re.compile(r"[A-Za-z0-9+/_\-.~=]{8,}")
_PLACEHOLDER_MARK = re.compile(r"(?i)x{5,}|\*{4,}|#{4,}|<[a-z_\-]+>|\$\{|\{\{|\byour[_\-]|example|dummy|changeme")
_NON_ASCII_LETTER = re.compile(r"[^\x00-\x7f]")


@dataclass(frozen=True)
class FeatureConfig:
    char_ngrams: tuple[int, int] = (1, 4)
    char_features: int = 2**16
    word_ngrams: tuple[int, int] = (1, 2)
    word_features: int = 2**15
    max_chars: int = 500  # longer strings: head and tail, so the model's cost stays flat (~1 ms)
    C: float = 1.0

    @property
    def n_features(self) -> int:
        return self.char_features + self.word_features + _N_DENSE


_SHAPE_NAMES = ("max_entropy", "length", "tokens", "placeholder", "digits", "capitals", "non_ascii",
                # the most random-looking token (`_candidate`): what a secret would be
                "token_length", "token_classes", "token_digits", "token_capitals", "token_symbols",
                "token_words", "token_repeats", "secret_keyword", "password_keyword")
# Cue families of text that addresses the reading model (the injection model's dense
# features, `_cues`): counts of words that name the reader, an obligation put on it, a
# standing order, secrecy, a target outside the conversation, a tool call, a claim of
# authority, its instructions, an overriding verb, a disclosure, a role, an encoding, hidden
# markup, a sensitive object, a harmful act, other people; reported speech (what someone said or
# found, told rather than ordered); and first-person statements about oneself (what a user's own
# preference says). Each is a vocabulary, in several languages,
# not a phrase: the model weighs them, and the rules stay the clear-cut cases. They carry
# over to sources never trained on where n-grams learn each source's style.
_CUES: tuple[tuple[str, str], ...] = (
    ("reader", r"\b(?:assistant|ai|a\.i\.|llm|language model|chatbot|bot|agent|gpt|chatgpt|claude|model)s?\b"
               r"|asistente|\bia\b|\bki\b|\bии\b|ассистент|助手|アシスタント|어시스턴트"),
    ("obligation", r"\byou\s+(?:must|should|shall|will|need to|have to|are to|are required|are allowed|are "
                   r"permitted|may now|can now|are no longer|no longer need|don'?t need|do not need)\b"
                   r"|\b(?:debes|tienes que|tu dois|vous devez|du musst|du sollst|devi|você deve|moet je)\b"
                   r"|должен|必须|しなければ"),
    ("standing", r"\b(?:from now on|going forward|henceforth|forever|permanently|persist\w*|every (?:future|later|"
                 r"next)|all (?:future|later)|future (?:sessions?|chats?|conversations?)|next session|for all|"
                 r"standing|whenever|every time|each time|from this point|survives?|after (?:this|a) reset)\b"
                 r"|para siempre|a partir de ahora|de ahora en adelante|désormais|pour toujours|à partir de "
                 r"maintenant|ab jetzt|dauerhaft|für immer|per sempre|d'ora in poi|a partir de agora|"
                 r"voortaan|navsegda|навсегда|отныне|永久|以后|今後|앞으로|kalıcı"),
    ("secrecy", r"\b(?:silently|quietly|secretly|covertly|discreetly|without (?:telling|asking|informing|"
                r"confirm\w*|any checks?|review)|(?:don'?t|do not|never) (?:tell|mention|inform|show|reveal "
                r"this)|not visible|isn'?t visible|hidden|invisible|no need to (?:ask|confirm|tell)|pretend "
                r"(?:it|this) (?:doesn'?t|does not) exist)\b|sin (?:decir|avisar)|sans (?:le )?dire|heimlich"),
    ("outside", r"https?://|www\.|\b[\w.-]+@[\w-]+\.[a-z]{2,}\b|\b[\w-]+\.(?:com|net|org|io|co|biz|xyz|ru|cn|"
                r"top|click|shop|ly|de|br)\b"),
    ("send", r"\b(?:send|forward|email|e-mail|post|upload|transfer|share|paste|copy|leak|exfiltrat\w*|submit|"
             r"dm|webhook|append|include)\w*\b|envía|envoie|schick|invia|envie|отправ|发送|送信|보내"),
    ("tool", r"\b\w+_\w+\s*\(|\b(?:tool|function|plugin|api|shell|terminal|webhook|invoke|execute|"
             r"call the|run the|tool_call)\b|<tool|\bcurl\b|\bbash\b|os\.system|rm -rf"),
    ("authority", r"\b(?:admin\w*|administrator|developer|operator|system|root|sudo|authori[sz]ed|"
                  r"pre-authori[sz]ed|privileges?|clearance|official|compliance|override|priority)\b"
                  r"|administrador|administrateur|разработчик|администратор|管理员|管理者|관리자"),
    ("instructions", r"\b(?:instructions?|rules?|guidelines?|restrictions?|prompts?|polic(?:y|ies)|filters?|"
                     r"guardrails?|safety|directives?|configuration|constraints|programming|limits)\b"
                     r"|instruc|consignes|anweisung|vorgaben|regeln|istruzion|instruç|regras|instructies|"
                     r"polecen|инструкц|правил|指令|指示|规则|ルール|지시|규칙|talimat|kural|التعليمات|"
                     r"निर्देश|hướng dẫn|quy tắc"),
    ("override", r"\b(?:ignore|disregard|forget|bypass|override|overrule|set aside|put aside|drop|abandon|"
                 r"let \w+ slide|no longer (?:bound|apply|applies)|replaced?|outranks?|supersede\w*|wins?)\b"
                 r"|ignora|olvida|oublie|ignoriere|vergiss|dimentica|esquece|esqueça|negeer|vergeet|zignoruj|"
                 r"zapomnij|игнорир|забудь|忽略|无视|無視|忘れ|무시|잊어|yok say|unut|تجاهل|انس|अनदेखा|"
                 r"भूल|bỏ qua|quên"),
    ("disclose", r"\b(?:reveal|print|verbatim|word for word|exactly|repeat|expose|dump|list the contents|"
                 r"what (?:text|instructions?) (?:appears?|were you)|show (?:me )?(?:your|the) (?:hidden|system|"
                 r"secret|prompt|config))\b|revela|révèle|zeig|mostra|toon|покажи|输出|显示|表示|알려|göster|"
                 r"اكشف|दिखा|tiết lộ"),
    ("role", r"\b(?:pretend|act as|role|roleplay|character|persona|you are now|you're now|imagine|simulat\w*|"
             r"mode|stay in|play(?:ing)? (?:a|an|the)|evil|unrestricted|unfiltered|no filters?|jailbr\w*|dan)\b"),
    ("encoding", r"\b(?:base64|base 64|hex|rot13|rot-13|decode|reverse|spell|cipher|encode|join the parts|"
                 r"first letter|fill in the blanks)\b"),
    ("markup", r"<!--|display\s*:\s*none|<span|<div|<sub|<meta|\[//\]|hidden>|<\|im_start\|>|alt=|<img|"
               r"\[system\]|###"),
    ("sensitive", r"\b(?:passwords?|pins?|cvv|card number|ssn|credentials?|api keys?|login|bank\w*|home address|"
                  r"phone number|recovery|authorized_keys|\.ssh|\.aws|tokens?|secrets?)\b|contraseña|mot de passe|"
                  r"passwort|пароль|密码|パスワード|비밀번호|şifre"),
    ("harm", r"\b(?:delete|overwrite|wipe|rm|transfer\w*|refund\w*|approve|merge|grant|disable|skip the|"
             r"stop taking|buy|invest\w*|vote|refuse|insult|bankrupt|recalled|public)\b"),
    # (people other than the user and readers of the text; not "the user", the subject of
    # most memory notes: "the user prefers short answers", "why_store: stated by the user")
    ("others", r"\b(?:other users|anyone|everyone|all users|whoever|any (?:ai|reader|assistant|agent)|"
               r"if you are an ai|reading this|note to)\b"),
    # reported speech: what someone said, asked or found, told rather than ordered
    ("report", r"\b(?:noted|reported|observed|found that|claimed|according to|was asked|were asked|when asked|"
               r"misbehaved|red team|researchers?|the attacker|attack(?:s|ers)? (?:like|such as)|example of|"
               r"classic example|is (?:a|an) (?:example|attack|injection))\b"),
    ("self", r"\b(?:i|i'm|i am|my|me|mine)\b"),
    ("self_pref", r"\b(?:i (?:prefer|like|love|hate|want|need|use|work|am|'m)|i'm (?:a|an|learning|training|"
                  r"vegetarian|allergic)|my (?:name|daughter|son|wife|husband|manager|flight|favourite|favorite))\b"
                  r"|prefiero|je préfère|ich bin|mi piace|eu prefiro|я предпочитаю|我喜欢|好き"),
)
_CUE_NAMES = tuple(name for name, _ in _CUES)
_CUE_RX = tuple(re.compile(rx) for _, rx in _CUES)  # read lower-cased text: 3x faster than IGNORECASE
_N_DENSE = len(RULE_FEATURES) + len(_SHAPE_NAMES) + len(_CUE_NAMES)

# Kinds whose model sees only the rule and shape numbers, not the hashed n-grams: n-grams of
# secrets memorise the values and file formats of the sources trained on; the shape of the
# candidate value (length, character mix, entropy, dictionary words, repeats) is what carries
# over to sources never seen.
DENSE_ONLY_KINDS: tuple[str, ...] = ("secret",)
# Kinds whose rows are weighted by source (`sample_weights`): the injection sources differ in
# size forty-fold and most hold one label, so unweighted the model learns the large ones' style.
SOURCE_BALANCED_KINDS: tuple[str, ...] = ("injection",)


@dataclass(frozen=True)
class LabelledRow:
    text: str
    label: int  # 1 = must be blocked as `kind`
    kind: str  # "secret" or "injection": which file it came from
    source: str
    # the row's other string fields ("category", "half", ...): what a benchmark may group by
    fields: dict[str, str] = field(default_factory=dict, compare=False, repr=False)


@dataclass
class KindModel:
    coef: np.ndarray  # float32, (n_features,)
    intercept: float
    add_threshold: float
    veto_threshold: float = 0.0
    weights: np.ndarray = field(init=False, repr=False)  # float64 copy, made once

    def __post_init__(self) -> None:
        self.weights = self.coef.astype(np.float64)

    @property
    def inert(self) -> bool:
        """Thresholds under which no probability changes a verdict (training found no
        setting that helps out of sample): the rules alone, and nothing to compute."""
        return self.add_threshold > 1.0 and self.veto_threshold <= 0.0

    def probability(self, x) -> np.ndarray:
        z = np.asarray(x @ self.weights).ravel() + self.intercept
        return 1.0 / (1.0 + np.exp(-z))


@dataclass
class LearnedLayer:
    config: FeatureConfig
    models: dict[str, KindModel]
    manifest: dict = field(default_factory=dict)

    def scores(self, texts: Sequence[str], rule_ids: Sequence[Sequence[str]]) -> dict[str, np.ndarray]:
        """Probability per kind for each text, given the rule ids the rules found in it (0 for
        an `inert` kind): the same numbers as `probability(features(...))`, row by row from the hashed
        n-grams (`hashed_row`) without building sparse matrices, whose input checks cost
        several times the arithmetic on one short field."""
        cfg = self.config
        _, words = _analyzers(cfg)
        n_dense = _N_DENSE
        w_start, d_start = cfg.char_features, cfg.char_features + cfg.word_features
        out = {kind: np.zeros(len(texts)) for kind in self.models}
        active = {kind: m for kind, m in self.models.items() if not m.inert}
        if not active:
            return out
        for row, (text, ids) in enumerate(zip(texts, rule_ids)):
            clipped = _clip(text, cfg.max_chars)
            c_idx, c_val = _normalised(char_wb_columns(clipped, cfg))
            w_idx, w_val = hashed_row(words(normalise(clipped)), cfg.word_features)
            dense = _dense_row(clipped, ids)
            for kind, m in active.items():
                w = m.weights
                z = (m.intercept + float(w[c_idx] @ c_val) + float(w[w_start + w_idx] @ w_val)
                     + float(w[d_start:d_start + n_dense] @ dense))
                out[kind][row] = 1.0 / (1.0 + math.exp(-z))
        return out

    def needs_scores(self, rule_ids: Sequence[str], text: str | None = None) -> bool:
        """Whether a probability can change `decide` for a string with these rule hits: an
        inert kind's never can, the injection model's not once an injection rule fired (a
        rule hit stands) nor on a string too short to judge (`enough_text`). Without, the
        rule hits stand as they are."""
        for kind, m in self.models.items():
            if m.inert or (kind == "injection" and (any(r.startswith("hard.injection.") for r in rule_ids)
                                                    or (text is not None and not enough_text(text)))):
                continue
            return True
        return False

    def decide(self, rule_ids: Sequence[str], scores: dict[str, float],
               text: str | None = None) -> tuple[list[str], list[str]]:
        """(rule ids that stand, model rule ids to add) for one scanned string (`text`, when
        given, must be long enough for the injection model to add: `enough_text`)."""
        kept = list(rule_ids)
        added: list[str] = []
        sec = self.models.get("secret")
        if sec is not None:
            p = scores["secret"]
            if p < sec.veto_threshold:
                kept = [r for r in kept if r not in VETOABLE]
            if not any(r.startswith("hard.secret.") for r in kept) and p >= sec.add_threshold:
                added.append(MODEL_RULE["secret"])
        inj = self.models.get("injection")
        if (inj is not None and not any(r.startswith("hard.injection.") for r in kept)
                and (text is None or enough_text(text))):
            if scores["injection"] >= inj.add_threshold:
                added.append(MODEL_RULE["injection"])
        return kept, added


# ------------------------------------------------------------------------------ features


@lru_cache(maxsize=4)
def _vectorizers(config: FeatureConfig):
    from sklearn.feature_extraction.text import HashingVectorizer

    chars = HashingVectorizer(analyzer="char_wb", ngram_range=config.char_ngrams, n_features=config.char_features,
                              alternate_sign=False, lowercase=False, norm="l2", dtype=np.float32)
    words = HashingVectorizer(analyzer="word", ngram_range=config.word_ngrams, n_features=config.word_features,
                              alternate_sign=False, lowercase=True, norm="l2", token_pattern=r"(?u)\b\w+\b",
                              dtype=np.float32)
    return chars, words


@lru_cache(maxsize=4)
def _analyzers(config: FeatureConfig):
    """The vectorizers' own n-gram functions (text -> list of n-grams)."""
    chars, words = _vectorizers(config)
    return chars.build_analyzer(), words.build_analyzer()


def hashed_row(ngrams: Sequence[str], n_features: int) -> tuple[np.ndarray, np.ndarray]:
    """(column indices, l2-normalised counts) of one row, as `HashingVectorizer` makes them
    with `alternate_sign=False`: signed 32-bit MurmurHash3 of the UTF-8 n-gram, seed 0,
    |h| mod n_features."""
    cache = _HASHES.setdefault(n_features, {})
    if len(cache) > _HASH_CACHE_SIZE:
        cache.clear()
    counts: dict[int, int] = {}
    for g in ngrams:
        i = cache.get(g)
        if i is None:
            i = cache[g] = _hash_index(g, n_features)
        counts[i] = counts.get(i, 0) + 1
    return _normalised(counts)


def _normalised(counts: dict[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """(column indices, l2-normalised counts), columns in the order of `counts`."""
    if not counts:
        return np.zeros(0, dtype=np.intp), np.zeros(0)
    idx = np.fromiter(counts.keys(), dtype=np.intp, count=len(counts))
    val = np.fromiter(counts.values(), dtype=np.float64, count=len(counts))
    return idx, val / math.sqrt(float(val @ val))


_WHITE_SPACES = re.compile(r"\s\s+")  # what sklearn's char_wb analyzer folds to one space


def char_wb_columns(text: str, config: FeatureConfig) -> Counter:
    """Column -> count of the character n-grams `HashingVectorizer(analyzer="char_wb",
    lowercase=False)` reads in `text`, the columns in the order `hashed_row` puts them (the
    first n-gram of each): the n-grams lie inside one space-padded word each, and prose
    repeats its words, so each word's columns are looked up once (`_WORD_COLUMNS`), the
    n-grams of the words not seen before hashed in one batch, and the counting is `Counter`'s
    (one n-gram at a time was most of the model's time on a long field)."""
    cache = _WORD_COLUMNS.setdefault(config, {})
    if len(cache) > _WORD_CACHE_SIZE:
        cache.clear()
    words = _WHITE_SPACES.sub(" ", text).split()
    new = [w for w in dict.fromkeys(words) if w not in cache]
    fresh: dict[str, tuple[int, ...]] = {}
    if new:
        grams = [_word_ngrams(w, config.char_ngrams) for w in new]
        flat = hash_columns([g for gs in grams for g in gs], config.char_features)
        at = 0
        for w, gs in zip(new, grams):
            fresh[w] = tuple(flat[at : at + len(gs)])
            at += len(gs)
            if len(w) <= _CACHED_WORD_CHARS:
                cache[w] = fresh[w]
    return Counter(chain.from_iterable(cache.get(w) or fresh[w] for w in words))


def _word_ngrams(word: str, ngram_range: tuple[int, int]) -> list[str]:
    """One word's n-grams in sklearn's `_char_wb_ngrams` order: by width, then left to right;
    a padded word no longer than a width counts once, whole, and ends it."""
    w = " " + word + " "
    size = len(w)
    grams: list[str] = []
    for n in range(ngram_range[0], ngram_range[1] + 1):
        if n >= size:
            grams.append(w)
            break
        grams.extend(w[i : i + n] for i in range(size - n + 1))
    return grams


def hash_columns(grams: Sequence[str], n_features: int) -> list[int]:
    """Each n-gram's column (`_hash_index`), in one call of sklearn's own hashing loop (what
    `FeatureHasher` runs; ~4x faster than a call per n-gram) when this sklearn has it."""
    if _HASH_BATCH is not None:
        return list(_HASH_BATCH([[(g, 1) for g in grams]], n_features, np.float64, False, 0)[0])
    return [_hash_index(g, n_features) for g in grams]


try:  # private to sklearn: checked against `_hash_index` by the tests, a call per n-gram without it
    from sklearn.feature_extraction._hashing_fast import transform as _HASH_BATCH
except ImportError:  # pragma: no cover
    _HASH_BATCH = None


# Words of prose, not tokens (a key's lines never come again); bounded, cleared when full.
_WORD_COLUMNS: dict[FeatureConfig, dict[str, tuple[int, ...]]] = {}
_WORD_CACHE_SIZE = 20_000
_CACHED_WORD_CHARS = 24


# n-gram -> column, per width: prose repeats its n-grams, and a dict look-up costs a
# fraction of a hash call. Cleared when full, so memory stays bounded.
_HASHES: dict[int, dict[str, int]] = {}
_HASH_CACHE_SIZE = 200_000


def _hash_index(ngram: str, n_features: int) -> int:
    from sklearn.utils import murmurhash3_32

    h = murmurhash3_32(ngram, 0)
    return (2147483647 - (n_features - 1)) % n_features if h == -2147483648 else abs(h) % n_features


def _dense_row(clipped: str, ids: Sequence[str]) -> np.ndarray:
    """Rule and shape numbers of one (clipped) text."""
    dense = np.zeros(_N_DENSE, dtype=np.float32)
    for rule_id in ids:
        name = _rule_feature(rule_id)
        if name:
            dense[_RULE_INDEX[name]] = 1.0
    dense[len(RULE_FEATURES):] = _shape(clipped)
    return dense


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return text[:half] + "\n" + text[-half:]


# The injection model adds a verdict only on a string of at least this many words (or, in
# scripts written without spaces, twice as many letters): a bag of n-grams and cue counts
# has too little to go on in a tag or a why_store ("stated by the user" scored 0.74). The
# rules still judge every string.
MIN_MODEL_WORDS = 6
_WORDLESS_SCRIPT = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\u0e00-\u0e7f]")


def enough_text(text: str) -> bool:
    """Whether `text` is long enough for the injection model to judge (`MIN_MODEL_WORDS`)."""
    words = len(text.split())
    return words >= MIN_MODEL_WORDS or words + len(_WORDLESS_SCRIPT.findall(text)) / 2 >= MIN_MODEL_WORDS


def _rule_feature(rule_id: str) -> str:
    parts = rule_id.split(".")
    if len(parts) < 3 or parts[1] not in KINDS:
        return ""
    name = f"{parts[1]}.{parts[2]}"
    return name if name in _RULE_INDEX else f"{parts[1]}.other"


_RULE_INDEX = {name: i for i, name in enumerate(RULE_FEATURES)}


def _shape(text: str) -> list[float]:
    tokens = _TOKEN.findall(text)
    n = max(1, len(text))
    entropies = [shannon_entropy(t) for t in tokens]
    return [
        max(entropies, default=0.0) / 6.0,
        min(len(text), 400) / 400.0,
        math.log1p(len(tokens)) / 4.0,
        float(bool(_PLACEHOLDER_MARK.search(text))),
        sum(map(str.isdigit, text)) / n,
        sum(map(str.isupper, text)) / n,
        min(1.0, len(_NON_ASCII_LETTER.findall(text)) / n * 4),
        *_token_shape(_candidate(tokens, entropies)),
        float(bool(SECRET_KEYWORD.search(text))),
        float(bool(PASSWORD_KEYWORD.search(text))),
        *_cues(text),
    ]


def _cues(text: str) -> list[float]:
    """How often each `_CUES` family occurs (0, 1/3, 2/3, 1 for three or more), in the text
    as written (NFKC, invisible characters dropped: other scripts intact) and, where they
    differ, with look-alike letters folded."""
    u = unfold(text)
    n = fold_lookalikes(u)
    seen = (u if n == u else u + "\n" + n).lower()
    may = _CUE_ONE_PASS.candidates(seen)  # a family the one pass rules out counts 0 (most do)
    return [min(len(rx.findall(seen)), 3) / 3.0 if may is None or k in may else 0.0 for k, rx in enumerate(_CUE_RX)]


_CUE_ONE_PASS = OnePass(_CUE_RX)


def _candidate(tokens: Sequence[str], entropies: Sequence[float]) -> str:
    """The token most like a generated value: highest entropy times log length."""
    best, score = "", 0.0
    for t, e in zip(tokens, entropies):
        v = e * math.log(len(t))
        if v > score:
            best, score = t, v
    return best


def _token_shape(token: str) -> list[float]:
    """Length, character mix, dictionary words and repeats of one token (zeros for none)."""
    if not token:
        return [0.0] * 7
    n = len(token)
    letters = "".join(p for p in re.split(r"[^A-Za-z]+", token) if p)
    words = 0.0
    parts = [p for p in re.split(r"[^A-Za-z]+|(?<=[a-z])(?=[A-Z])", token) if len(p) >= 3]
    if parts:
        words = sum(len(p) for p in parts if is_words(p)) / max(1, len(letters))
    return [
        min(math.log(n), 5.0) / 5.0,
        char_classes(token) / 4.0,
        sum(map(str.isdigit, token)) / n,
        sum(map(str.isupper, token)) / n,
        (n - sum(map(str.isalnum, token))) / n,
        words,
        float(is_periodic(token[:64])),
    ]


def feature_blocks(texts: Sequence[str], rule_ids: Sequence[Sequence[str]], config: FeatureConfig):
    """The three blocks of the model's input, in column order: hashed character n-grams of
    the raw text (CSR), hashed word n-grams of the normalised text (CSR), rule and shape
    numbers (dense)."""
    import sklearn

    chars, words = _vectorizers(config)
    clipped = [_clip(t, config.max_chars) for t in texts]
    dense = np.zeros((len(texts), _N_DENSE), dtype=np.float32)
    for i, (text, ids) in enumerate(zip(clipped, rule_ids)):
        dense[i] = _dense_row(text, ids)
    # The vectorizers' argument checks cost more than hashing a short field; the inputs
    # here are always lists of str.
    with sklearn.config_context(skip_parameter_validation=True, assume_finite=True):
        char_rows = chars.transform(clipped)
        word_rows = words.transform([normalise(t) for t in clipped])
    return char_rows, word_rows, dense


def features(texts: Sequence[str], rule_ids: Sequence[Sequence[str]], config: FeatureConfig):
    """The model's input rows (scipy CSR, float32), one per text: the blocks side by side."""
    import scipy.sparse as sp

    char_rows, word_rows, dense = feature_blocks(texts, rule_ids, config)
    return sp.hstack([char_rows, word_rows, sp.csr_matrix(dense)], format="csr")


# ------------------------------------------------------------------------------ training


def task_rows(rows: Sequence[LabelledRow], kind: str) -> list[tuple[int, int]]:
    """(row index, label) of the rows one kind trains on: its own rows, and every row of
    the other kind as a negative unless it is a positive of that kind (an attack may well
    carry a password; it is not a clean negative for secrets)."""
    out = []
    for i, row in enumerate(rows):
        if not row.kind:
            continue
        if row.kind == kind:
            out.append((i, row.label))
        elif row.label == 0 or kind == "injection":
            out.append((i, 0))
    return out


def sample_weights(y: np.ndarray, sources: np.ndarray | None = None) -> np.ndarray:
    """Per-row weights: each class weighs as much as the other (sklearn's "balanced"), and,
    with `sources`, inside a class each source weighs as the square root of its row count
    (each row 1/sqrt(n) of its source and label), so that a source forty times the size of
    another does not teach the model its own style as what an attack or a benign text is."""
    w = np.ones(len(y))
    if sources is not None:
        for source in sorted(set(sources.tolist())):
            for label in (0, 1):
                group = (sources == source) & (y == label)
                if group.any():
                    w[group] = 1.0 / math.sqrt(float(group.sum()))
    for label in (0, 1):
        group = y == label
        if group.any():
            w[group] *= len(y) / 2.0 / float(w[group].sum())
    return w


def _fit(x, y: np.ndarray, config: FeatureConfig, sources: np.ndarray | None = None) -> tuple[np.ndarray, float]:
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=config.C, solver="liblinear", dual=True, max_iter=2000, random_state=0)
    model.fit(x, y, sample_weight=sample_weights(y, sources))
    # float32 and a fixed intercept precision: the artefact's bytes do not depend on the
    # last bits of the solver's float64 arithmetic.
    coef = np.round(model.coef_.ravel(), 6).astype(np.float32)
    return coef, round(float(model.intercept_[0]), 6)


_GRID = tuple(round(t, 2) for t in np.arange(0.05, 1.0, 0.01))
# The share of a held-out source's benign rows an injection add threshold may block beyond
# the rules (the issue-14 budget for benign prompts blocked, on every source, not on average).
MAX_ADDED_FPR = 0.03
MIN_GAIN = 0.01  # macro F1 (secret) or macro recall (injection) over held-out sources a threshold must add
NEVER = 1.01  # an add threshold no probability reaches: the rules alone


def _pick_thresholds(kind: str, p: np.ndarray, y: np.ndarray, certain: np.ndarray, vetoable: np.ndarray,
                     sources: np.ndarray) -> tuple[float, float]:
    """Thresholds from out-of-fold probabilities (each source scored by a model trained
    without it), chosen so that the layer does no harm on any source it was not trained on:

    - secret: the (veto, add) pair with the best macro F1 over sources among those that
      leave every source's F1 at least where the rules alone put it and add at least
      `MIN_GAIN` to the macro F1; (0, never) when none does, i.e. the rules alone.
    - injection: the lowest add threshold that blocks at most `MAX_ADDED_FPR` of any
      source's benign rows beyond the rules alone, if it adds at least `MIN_GAIN` to the macro
      recall over sources with attacks (a lower threshold only adds recall, so when the
      lowest allowed one adds none, no threshold does); never, i.e. the rules alone, when not."""
    groups = [sources == s for s in sorted(set(sources.tolist()))]
    if kind == "secret":
        def f1s(pred: np.ndarray) -> list[float]:
            out = []
            for g in groups:
                tp = int((pred & g & (y == 1)).sum())
                fp = int((pred & g & (y == 0)).sum())
                fn = int((~pred & g & (y == 1)).sum())
                if tp + fn:
                    out.append(2 * tp / (2 * tp + fp + fn))
            return out

        floor = f1s(certain | vetoable)
        # A setting must beat the rules alone by MIN_GAIN: smaller gains on the held-out
        # sources inside the training data are noise that does not carry to a new source.
        best = ((float(np.mean(floor)) if floor else 0.0) + MIN_GAIN - 1e-9, NEVER, 0.0)
        for veto in (0.0, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5):
            kept = certain | (vetoable & (p >= veto))
            for add in (*_GRID[::5], NEVER):
                scores = f1s(kept | (p >= add))
                if not scores or any(a < b - 1e-9 for a, b in zip(scores, floor)):
                    continue
                if float(np.mean(scores)) > best[0] + 1e-9:
                    best = (float(np.mean(scores)), add, veto)
        return best[1], best[2]
    for add in _GRID:
        pred = certain | (p >= add)
        ok = True
        for g in groups:
            neg = g & (y == 0)
            if neg.sum() and (pred & neg).sum() > (certain & neg).sum() + MAX_ADDED_FPR * neg.sum():
                ok = False
                break
        if ok:
            gains = [float((pred & g & (y == 1)).sum() - (certain & g & (y == 1)).sum()) / float((g & (y == 1)).sum())
                     for g in groups if (g & (y == 1)).any()]
            return (add, 0.0) if gains and float(np.mean(gains)) >= MIN_GAIN - 1e-9 else (NEVER, 0.0)
    return NEVER, 0.0


def train(rows: Sequence[LabelledRow], rule_ids: Sequence[Sequence[str]], config: FeatureConfig = FeatureConfig(),
          *, data_digests: dict[str, str] | None = None) -> LearnedLayer:
    """Fit both kinds on `rows` (with the rules' findings per row), thresholds chosen by
    leave-one-source-out inside `rows`."""
    x_all = features([r.text for r in rows], rule_ids, config)
    models: dict[str, KindModel] = {}
    oof_report: dict[str, dict] = {}
    for kind in KINDS:
        picked = task_rows(rows, kind)
        if not picked or len({label for _, label in picked}) < 2:
            continue
        idx = np.array([i for i, _ in picked])
        y = np.array([label for _, label in picked])
        x = x_all[idx]
        dense_from = config.char_features + config.word_features if kind in DENSE_ONLY_KINDS else 0
        x = x[:, dense_from:]
        sources = np.array([rows[i].source for i in idx])
        balance = sources if kind in SOURCE_BALANCED_KINDS else None
        ids = [rule_ids[i] for i in idx]
        prefix = f"hard.{kind}."
        if kind == "secret":
            certain = np.array([any(r.startswith(prefix) and r not in VETOABLE for r in rs) for rs in ids])
            vetoable = np.array([any(r in VETOABLE for r in rs) for rs in ids])
        else:
            certain = np.array([any(r.startswith(prefix) for r in rs) for rs in ids])
            vetoable = np.zeros(len(ids), dtype=bool)
        oof = np.full(len(y), np.nan)
        own_sources = sorted({rows[i].source for i in idx if rows[i].kind == kind})
        for held in own_sources:
            test = sources == held
            if len(set(y[~test].tolist())) < 2:
                continue
            coef, b = _fit(x[~test], y[~test], config, balance[~test] if balance is not None else None)
            oof[test] = KindModel(coef, b, 1.0).probability(x[test])
        scored = ~np.isnan(oof)
        if scored.any():
            add, veto = _pick_thresholds(kind, oof[scored], y[scored], certain[scored], vetoable[scored],
                                         sources[scored])
        else:
            add, veto = NEVER, 0.0
        coef, b = _fit(x, y, config, balance)
        coef = np.concatenate([np.zeros(dense_from, dtype=np.float32), coef])
        models[kind] = KindModel(coef, b, add, veto)
        oof_report[kind] = {"rows": int(len(y)), "positives": int(y.sum()), "sources": own_sources,
                            "add_threshold": add, "veto_threshold": veto}
    manifest = {
        "format_version": FORMAT_VERSION,
        "features": {**asdict(config), "rule_features": list(RULE_FEATURES), "shape_features": list(_SHAPE_NAMES),
                     "cue_features": list(_CUE_NAMES),
                     "dense_only_kinds": [k for k in KINDS if k in DENSE_ONLY_KINDS],
                     "source_balanced_kinds": [k for k in KINDS if k in SOURCE_BALANCED_KINDS]},
        "data": dict(sorted((data_digests or {}).items())),
        "models": {kind: {**oof_report[kind], "intercept": m.intercept} for kind, m in models.items()},
    }
    return LearnedLayer(config, models, manifest)


def rule_ids(texts: Sequence[str]) -> list[list[str]]:
    """What the rules alone find in each text (the learned layer's rule features)."""
    from pipelines.policy import rules_only_ids  # the policy imports this module

    return [rules_only_ids(t) for t in texts]


def train_from(paths: Path | Sequence[Path], config: FeatureConfig = FeatureConfig()) -> LearnedLayer:
    """Train on the labelled JSONL file(s) at `paths` (files or folders, in the order given),
    without the rows marked `half: blind`; the manifest records the files' sha256."""
    paths = [paths] if isinstance(paths, Path) else list(paths)
    rows = [row for path in paths for row, _ in read_labelled(path) if row.fields.get("half") != HELD_OUT_HALF]
    if not any(row.kind for row in rows):
        raise LabelledDataError(f"{', '.join(map(str, paths))}: no file named secrets*.jsonl or injection*.jsonl")
    found: dict[str, str] = {}
    for path in paths:
        found.update(digests(path))
    return train(rows, rule_ids([r.text for r in rows]), config, data_digests=found)


# ------------------------------------------------------------------------------ artefact


def save(layer: LearnedLayer, directory: Path) -> list[Path]:
    """Write `coef.npy` (float32, one row per kind in `manifest.models` order) and
    `manifest.json` (sorted keys, fixed float precision). Same layer, same bytes."""
    directory.mkdir(parents=True, exist_ok=True)
    kinds = list(layer.models)
    coef = np.stack([layer.models[k].coef for k in kinds]).astype("<f4")
    manifest = dict(layer.manifest)
    manifest["kinds"] = kinds
    manifest["models"] = {
        k: {**manifest.get("models", {}).get(k, {}), "intercept": layer.models[k].intercept,
            "add_threshold": layer.models[k].add_threshold, "veto_threshold": layer.models[k].veto_threshold}
        for k in kinds
    }
    manifest["coef_sha256"] = hashlib.sha256(coef.tobytes()).hexdigest()
    coef_path, manifest_path = directory / COEF_FILE, directory / MANIFEST
    with coef_path.open("wb") as fh:
        np.save(fh, coef, allow_pickle=False)
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return [coef_path, manifest_path]


class ModelFormatError(ValueError):
    """The artefact is missing, of another format version, or its coefficients do not
    match the manifest."""


def load(directory: Path = MODEL_DIR) -> LearnedLayer:
    manifest_path, coef_path = directory / MANIFEST, directory / COEF_FILE
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        coef = np.load(coef_path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise ModelFormatError(f"no policy model in {directory}: {exc}") from exc
    if manifest.get("format_version") != FORMAT_VERSION:
        raise ModelFormatError(f"policy model format {manifest.get('format_version')} != {FORMAT_VERSION}")
    if hashlib.sha256(coef.astype("<f4").tobytes()).hexdigest() != manifest.get("coef_sha256"):
        raise ModelFormatError(f"{coef_path} does not match its manifest")
    feats = manifest["features"]
    config = FeatureConfig(
        char_ngrams=tuple(feats["char_ngrams"]), char_features=feats["char_features"],
        word_ngrams=tuple(feats["word_ngrams"]), word_features=feats["word_features"],
        max_chars=feats["max_chars"], C=feats["C"],
    )
    if coef.shape != (len(manifest["kinds"]), config.n_features):
        raise ModelFormatError(f"{coef_path} has shape {coef.shape}, expected ({len(manifest['kinds'])}, "
                               f"{config.n_features})")
    models = {
        kind: KindModel(coef[i], float(m["intercept"]), float(m["add_threshold"]), float(m["veto_threshold"]))
        for i, (kind, m) in enumerate((k, manifest["models"][k]) for k in manifest["kinds"])
    }
    layer = LearnedLayer(config, models, manifest)
    layer.scores(["warm up"], [[]])  # imports and vectorizers now, not in the first verdict
    return layer


@lru_cache(maxsize=1)
def shipped() -> LearnedLayer:
    """The artefact committed with the code, loaded once per process."""
    return load(MODEL_DIR)


# ------------------------------------------------------------------------------ data


class LabelledDataError(ValueError):
    """A labelled file is missing or a row is not `{text, label, ...}`."""


def kind_of_file(path: Path) -> str:
    """Which kind a labelled file holds, from its name ("secrets_dev.jsonl" -> secret);
    "" when the name says neither."""
    name = path.name.lower()
    return next((kind for kind in KINDS if name.startswith(kind)), "")


def source_group(obj: dict) -> str:
    """A row's source: its `subset` when present, else the repository part of `source`."""
    subset = obj.get("subset")
    if isinstance(subset, str) and subset:
        return subset
    return str(obj.get("source", "unknown")).split("@", 1)[0]


def read_labelled(path: Path) -> list[tuple[LabelledRow, str]]:
    """(row, file name) for every line of a JSONL file, or of every `*.jsonl` in a folder
    (sorted by name, then line order: the training order, so a retrain is reproducible)."""
    if path.is_dir():
        files = sorted(path.glob("*.jsonl"))
        if not files:
            raise LabelledDataError(f"no .jsonl files in {path}")
    elif path.is_file():
        files = [path]
    else:
        raise LabelledDataError(f"no such file or directory: {path}")
    out = []
    for file in files:
        kind = kind_of_file(file)
        with file.open(encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                    text, label = obj["text"], int(obj["label"])
                except (ValueError, KeyError, TypeError) as exc:
                    raise LabelledDataError(f"{file}:{lineno}: not a {{text, label}} row ({exc})") from exc
                if not isinstance(text, str) or label not in (0, 1):
                    raise LabelledDataError(f"{file}:{lineno}: text must be a string and label 0 or 1")
                fields = {k: v for k, v in obj.items() if k not in ("text", "label") and isinstance(v, str)}
                out.append((LabelledRow(text, label, kind, source_group(obj), fields), file.name))
    return out


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def digests(path: Path) -> dict[str, str]:
    """sha256 of each labelled file `read_labelled(path)` reads."""
    files = sorted(path.glob("*.jsonl")) if path.is_dir() else [path]
    return {p.name: sha256_file(p) for p in files}
