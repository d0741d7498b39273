"""How MiniLM runs a call's inputs (`MiniLMRunner`): tokenized, each input alone (never
batched with others), several at once on threads, longest first, pooled to unit vectors;
and the CPU seconds of work done on threads of their own (`CpuMeter`)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pipelines.embedders.protocol import l2_normalise


class CpuMeter:
    """CPU seconds of work done on several threads, added up (`thread()` around a piece of
    work on one thread: its thread CPU clock); `seconds` counts work still running too."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._total = 0.0
        self._running: dict[int, tuple[int, float]] = {}  # per piece: (its thread's CPU clock, start)

    @property
    def seconds(self) -> float:
        with self._lock:
            return self._total + sum(time.clock_gettime(clock) - start for clock, start in self._running.values())

    @contextlib.contextmanager
    def thread(self) -> Iterator[None]:
        if not hasattr(time, "pthread_getcpuclockid"):  # not on every platform: counted at the end
            started = time.thread_time()
            try:
                yield
            finally:
                with self._lock:
                    self._total += time.thread_time() - started
            return
        clock = time.pthread_getcpuclockid(threading.get_ident())
        piece = object()
        with self._lock:
            self._running[id(piece)] = (clock, time.clock_gettime(clock))
        try:
            yield
        finally:
            with self._lock:
                _, start = self._running.pop(id(piece))
                self._total += time.clock_gettime(clock) - start


# The CPU seconds of this process's `prefetch_windows` work, off the thread that asked for
# it: a consolidation run gives them to its embedding stage (`assets.run`), not to the
# stages they ran beside.
PREFETCH_CPU = CpuMeter()


class MiniLMRunner:
    """One encoder of MiniLM (`OnnxEncoder` or `TorchBF16Encoder`) plus its tokenizer:
    texts in, unit vectors out.

    Each model input (a text, or a pooled window) is run alone, never batched with others:
    the int8 model quantizes its activations over the whole input tensor, so a batched
    input's vector depended on its batch-mates (cosine 0.993 mean between two batchings),
    and the pipeline, `loci reembed` and the service's delta stored different vectors for
    one text. Alone, a vector is a function of its text only (bit-identical, whatever else
    is embedded in the same call: tests/pipelines/test_embedders.py), and no padding is
    run. Measured 2026-11-28 (int8, LoCoMo, quiet 2-core machine): model CPU-seconds -11
    to -21% against batches of 8, consolidation the same; held-out turn recall@10 0.824
    against 0.828 (within the noise of 377 questions). Mean pooling over the tokens, then
    L2 normalisation: sentence-transformers' Pooling and Normalize modules.

    The encoder runs each operator on one thread; `parallel` > 1 runs that many inputs at
    once, longest first (ONNX Runtime and torch release the GIL). On a busy 2-core machine
    this beats intra-op threads, which wait for each other at every operator (measured: 2
    intra-op threads 17.6 texts/s, 2 batches at once 20-55/s, 1 thread 15-20/s, while other
    work ran)."""

    def __init__(self, encoder: Callable[[np.ndarray, np.ndarray], np.ndarray], model_dir: Path) -> None:
        import json

        from tokenizers import Tokenizer

        config = json.loads((model_dir / "sentence_bert_config.json").read_text())
        self.max_tokens = int(config.get("max_seq_length", 256))
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=self.max_tokens)
        self._tokenizer_lock = threading.Lock()  # a tokenizer instance is not for two threads at once
        self.hidden = encoder  # (input_ids, attention_mask) -> last hidden state, float32

    def hidden_alone(self, ids: Sequence[int]) -> np.ndarray:
        """The last hidden state (tokens, dim) of one model input, run alone."""
        row = np.asarray([ids], dtype=np.int64)
        return self.hidden(row, np.ones_like(row))[0]

    @staticmethod
    def _each(work: Callable[[int], Any], lengths: Sequence[int], parallel: int,
              meter: CpuMeter | None = None) -> list[Any]:
        """`work(i)` for every input i, on `parallel` threads, longest inputs first (the
        last ones, which one thread may run while the other has nothing left, are then
        the shortest); results in input order. `meter` adds up the CPU seconds of the
        work run on threads of their own (the caller's thread is the caller's to measure)."""
        order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
        if parallel > 1 and len(order) > 1:
            from concurrent.futures import ThreadPoolExecutor

            def on_worker(i: int) -> Any:
                if meter is None:
                    return work(i)
                with meter.thread():
                    return work(i)

            with ThreadPoolExecutor(max_workers=parallel, thread_name_prefix="loci-embed") as pool:
                done = list(pool.map(on_worker, order))
        else:
            done = [work(i) for i in order]
        out: list[Any] = [None] * len(order)
        for i, value in zip(order, done):
            out[i] = value
        return out

    def encode(self, texts: list[str], parallel: int = 1) -> np.ndarray:
        with self._tokenizer_lock:
            encodings = self.tokenizer.encode_batch(texts, add_special_tokens=True)
        ids = [e.ids for e in encodings]
        pooled = self._each(lambda i: self.hidden_alone(ids[i]).mean(axis=0), [len(t) for t in ids], parallel)
        return l2_normalise(np.vstack(pooled))

    def pool_windows(self, windows: list[list[str]], parallel: int = 1, meter: CpuMeter | None = None
                     ) -> list[tuple[np.ndarray, list[np.ndarray]]]:
        """Per window (its part texts, `message_context.window_parts`): the mean last hidden
        state over the window and over each part's own tokens but the last
        (`message_context.pool_spans`). The parts are read together, in one model input per
        window ([CLS] parts [SEP], cut at `max_tokens`), each window alone like `encode`'s
        texts. `meter`: as `_each`'s."""
        from pipelines.message_context import pool_spans, window_tokens

        cls, sep = self.tokenizer.token_to_id("[CLS]"), self.tokenizer.token_to_id("[SEP]")
        # Each distinct part tokenized once, in one call: windows every 2 turns share half their
        # turns, and a session's windows share the day (half the tokenizer's CPU time on LoCoMo).
        distinct = list(dict.fromkeys(part for parts in windows for part in parts))
        with self._tokenizer_lock:
            encoded = self.tokenizer.encode_batch(distinct, add_special_tokens=False)
        part_ids = {part: e.ids for part, e in zip(distinct, encoded)}
        inputs = [window_tokens([part_ids[part] for part in parts], cls, sep, self.max_tokens) for parts in windows]

        def run(i: int) -> tuple[np.ndarray, list[np.ndarray]]:
            ids, spans = inputs[i]
            return pool_spans(self.hidden_alone(ids), len(ids), spans)

        return self._each(run, [len(ids) for ids, _ in inputs], parallel, meter)
