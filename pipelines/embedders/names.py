"""The names stored MiniLM vectors carry, per precision: vectors of one name mix in one
store, vectors of two names never do (a store is re-embedded, `loci reembed`, between)."""

from __future__ import annotations

MINILM_NAME = "all-MiniLM-L6-v2"
MINILM_PRECISIONS: tuple[str, ...] = ("auto", "float32", "int8", "bf16")
# "auto": int8 vectors in a new store (`MiniLMEmbedder.for_store`); a store that already
# holds float32 ones keeps float32 vectors, a large batch in bf16 on a CPU that does bf16
# natively (below), until `loci reembed`.
MINILM_DEFAULT_PRECISION = "auto"
# Stored vectors are keyed by embedder name. bf16 vectors are float32's within cosine
# 0.0001 (LoCoMo recall@10 the same, also in a store half one, half the other: README), so
# they share its name and mix in one store; int8 ones (cosine ~0.993; recall of pooled
# message vectors -0.001 to -0.005 by batch size, README) are named apart: a warehouse embedded with int8 is
# re-embedded (`loci reembed`) before another precision is used for storage, and the other
# way round. "auto" is named after float32 until `for_store` resolves it for a store.
# int8 vectors are made with every model input alone (`MiniLMRunner`) since 2026-11-29;
# before, in batches of 8, whose activations were quantized together, so a vector depended
# on its batch-mates (cosine 0.993 between batchings) and could not be made again from its
# text: those are named `MINILM_INT8_BATCHED`, and a store holding them is re-embedded by
# the next consolidation run itself (`consolidate.embedding.older_names`; or `loci reembed`)
# while the service keeps serving its snapshots (`stored_names`) in the meantime. float32 and bf16
# vectors were the same batched as alone (bit-identical float32, measured): no new name.
MINILM_NAMES = {"auto": MINILM_NAME, "float32": MINILM_NAME, "bf16": MINILM_NAME,
                "int8": f"{MINILM_NAME}-int8-alone"}
MINILM_INT8_BATCHED = f"{MINILM_NAME}-int8"
