"""bench.message_vectors: the message-vector prototypes replace message vectors only, by
session, at unit length. Tiny hand-made items, the hash embedder; no model."""

from __future__ import annotations

import threading

import msgspec
import numpy as np

from bench.locomo import _parse
from bench.message_vectors import (
    _window_text,
    bare,
    capped_context,
    composed_with_date,
    own_previous_date,
    sessions_of,
    shared_windows,
)
from pipelines.embedders import HashEmbedder, MiniLMRunner
from pipelines.message_context import ContextWindow, bare_text, context_fields, embedding_text
from pipelines.records import Identity, MemoryItem, Scope


def _turn(n: int, text: str, session: str) -> MemoryItem:
    return MemoryItem(id=f"msg_{session}_{n}", tier="stm", type="message", title="Ann", content=text,
                      scope=Scope.for_identity("user", Identity(user_id="ann", session_id=session)),
                      created_at="2023-05-08T13:56:00+00:00", metadata={"session_id": session, "inbox_seq": n})


def _items() -> list[MemoryItem]:
    note = MemoryItem(id="mem_1", tier="ltm", type="note", title="Dog", content="Rex is a beagle.",
                      scope=Scope.for_identity("user", Identity(user_id="ann")))
    return [_turn(2, "A beagle?", "s1"), note, _turn(1, "I adopted a dog.", "s1"), _turn(3, "Hello", "s2")]


def test_sessions_are_grouped_and_ordered_by_turn() -> None:
    assert [[t.id for t in s] for s in sessions_of(_items())] == [["msg_s1_1", "msg_s1_2"], ["msg_s2_3"]]


def test_vector_variants_change_messages_by_their_session_and_keep_other_items() -> None:
    items, embed = _items(), HashEmbedder(64).embed
    plain = embed([bare_text(it) for it in items])
    np.testing.assert_allclose(bare(items, embed, None), plain)
    for variant in (composed_with_date, own_previous_date, shared_windows):
        vectors = variant(items, embed, None)
        np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
        np.testing.assert_allclose(vectors[1], plain[1])  # the note keeps its own vector
        assert not np.allclose(vectors[0], plain[0])  # a turn with a neighbour changes
        assert float(vectors[0] @ vectors[2]) > float(plain[0] @ plain[2])  # and moves towards it


def test_vector_prototypes_are_known_to_the_locomo_options() -> None:
    assert _parse(["--prototypes", "vec_bare,vec_late_chunk,ctx_prev"]).prototypes == "vec_bare,vec_late_chunk,ctx_prev"


def test_capped_context_at_the_default_cap_rebuilds_the_default_text() -> None:
    turns = [_turn(1, "I adopted a dog. " + "x" * 300, "s1"), _turn(2, "A beagle?", "s1"), _turn(3, "Yes!", "s1")]
    turns = [msgspec.structs.replace(t, metadata={**t.metadata, **context_fields(turns, i, ContextWindow())})
             for i, t in enumerate(turns)]
    seen: list[str] = []

    def embed(texts: list[str]) -> np.ndarray:
        seen.extend(texts)
        return HashEmbedder(64).embed(texts)

    capped_context(turns, embed, None)
    assert seen == [embedding_text(t) for t in turns]
    seen.clear()
    capped_context(turns, embed, None, cap=120, previous=1)
    assert "x" * 120 not in seen[1] and "in reply to" in seen[2] and "I adopted" not in seen[2]


def test_shared_windows_embed_each_window_once_and_give_a_turn_the_windows_holding_it() -> None:
    turns = [_turn(n, f"turn number {n}", "s1") for n in range(1, 6)]
    seen: list[str] = []

    def embed(texts: list[str]) -> np.ndarray:
        seen.extend(texts)
        return HashEmbedder(64).embed(texts)

    vectors = shared_windows(turns, embed, None, size=4, stride=2, own=0.0, pool="mean")
    windows = [_window_text(turns[0:4]), _window_text(turns[1:5])]  # starts 0, 2 -> 0 and the last full one, 1
    assert sorted(seen) == sorted(windows)
    w = HashEmbedder(64).embed(windows)
    np.testing.assert_allclose(vectors[0], w[0], rtol=1e-5)  # turn 1: only the first window
    both = (w[0] + w[1]) / np.linalg.norm(w[0] + w[1])
    np.testing.assert_allclose(vectors[2], both, rtol=1e-5)  # turn 3: in both


class _Encoding:
    def __init__(self, ids: list[int]) -> None:
        self.ids = ids


class _Tokenizer:
    """One id per word (by a fixed vocabulary), [CLS] 1 and [SEP] 2."""

    def __init__(self) -> None:
        self.vocab: dict[str, int] = {"[CLS]": 1, "[SEP]": 2}

    def token_to_id(self, token: str) -> int:
        return self.vocab[token]

    def encode(self, text: str, add_special_tokens: bool = False) -> _Encoding:
        return _Encoding([self.vocab.setdefault(w, len(self.vocab) + 1) for w in text.split()])

    def encode_batch(self, texts: list[str], add_special_tokens: bool = False) -> list[_Encoding]:
        return [self.encode(t, add_special_tokens) for t in texts]


class _Runner(MiniLMRunner):
    """MiniLM's runner with a stand-in encoder whose hidden state of a token is a fixed
    vector of its id, so a pooled vector says exactly which tokens it averaged."""

    max_tokens = 256

    def __init__(self) -> None:
        self.tokenizer, self.calls = _Tokenizer(), 0
        self._tokenizer_lock = threading.Lock()

    def hidden(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        self.calls += 1
        return np.random.default_rng(0).standard_normal((4096, 16)).astype(np.float32)[ids]


class _Embedder:
    precision = "float32"

    def __init__(self) -> None:
        self.run = _Runner()

    def pool_windows(self, windows: list[list[str]]) -> list[tuple[np.ndarray, list[np.ndarray]]]:
        return self.run.pool_windows(windows)  # MiniLM's code


def test_pooled_windows_read_each_window_once_and_pool_a_turn_over_its_own_tokens() -> None:
    from bench.message_vectors import _POOLED, pooled_windows

    _POOLED.clear()
    turns = [_turn(n, f"turn number {n}", "s1") for n in range(1, 6)]
    embedder = _Embedder()
    vectors = pooled_windows(turns, HashEmbedder(16).embed, embedder, size=4, stride=2, own=1000.0, aligned=True)
    assert embedder.run.calls == 3  # windows at turns 0, 2, 4 (the last ones shorter)
    table = np.random.default_rng(0).standard_normal((4096, 16)).astype(np.float32)
    tok = embedder.run.tokenizer

    def own(i: int) -> np.ndarray:
        v = table[tok.encode(f"Ann: turn number {i + 1}").ids].mean(axis=0)
        return v / np.linalg.norm(v)

    # Token vectors do not depend on their neighbours here, so a turn's own-token pool is the
    # same in every window holding it; the window part (weight 1 against 1000) hardly moves it.
    for i in range(5):
        np.testing.assert_allclose(vectors[i], own(i), atol=2e-3)
    _POOLED.clear()
    mixed = pooled_windows(turns, HashEmbedder(16).embed, embedder, size=4, stride=2, own=0.0, aligned=True)
    assert not np.allclose(mixed[0], own(0), atol=2e-3)  # the window alone is not the turn
    np.testing.assert_allclose(np.linalg.norm(mixed, axis=1), 1.0, rtol=1e-5)
