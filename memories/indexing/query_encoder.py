"""Search queries embedded through ONNX Runtime: the same model, in less time.

A query is one short text, so torch's per-call overhead (dispatch, autograd bookkeeping, OpenMP)
costs more than its arithmetic; ONNX Runtime on one thread runs the same graph without that
overhead (docs/benchmarks.md, "Query embedding"). The sentence-transformers model (transformer,
pooling, normalisation) is exported once per model and library versions into the data folder, then
checked against torch on probe texts at every load: if the vectors differ, queries stay on torch.
Stored embeddings are always computed by sentence-transformers; only the query path uses this.
"""

import copy
import hashlib
import logging
import os
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

logger = logging.getLogger(__name__)

# Vectors from both runtimes must agree to this cosine on every probe, or ONNX is not used.
MIN_PROBE_COSINE = 0.9999
PROBE_TEXTS = (
    "how was the checkout screen laid out?",
    "ERR_CERT_DATE_INVALID after the proxy upgrade to 2.4.1 (ticket OPS-1182)",
    "Anna prefers window seats and flies TP1351 to Lisbon every second Friday; "
    "she keeps her notes in Obsidian with the #travel tag and a dark theme.",
)


class OnnxQueryEncoder:
    """One text in, one normalised float32 vector out, on one CPU thread."""

    def __init__(self, model_path: Path, tokenizer: Any, max_length: int | None) -> None:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1  # the web process's other thread runs the keyword query
        options.inter_op_num_threads = 1
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        self._session = onnxruntime.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
        self._input_names = [node.name for node in self._session.get_inputs()]
        self._tokenizer = tokenizer
        self._max_length = max_length

    def encode(self, text: str) -> np.ndarray:
        features = self._tokenizer([text], truncation=True, max_length=self._max_length, return_tensors="np")
        inputs = {name: features[name].astype(np.int64) for name in self._input_names}
        vector = self._session.run(None, inputs)[0][0].astype(np.float32)
        return vector / np.linalg.norm(vector)


def load_query_encoder(
    model: "SentenceTransformer", name: str, cache_dir: Path, reference: Callable[[str], np.ndarray]
) -> OnnxQueryEncoder | None:
    """An ONNX encoder for this sentence-transformers `model`, or None when it cannot be had or
    does not reproduce `reference(text)` (torch's query vectors) on the probe texts."""
    try:
        path = _exported_model(model, name, cache_dir)
        # A tokenizer of its own: the model's is shared with the batches other threads embed.
        encoder = OnnxQueryEncoder(path, copy.deepcopy(model.tokenizer), model.max_seq_length)
        worst = min(float(np.dot(encoder.encode(text), reference(text))) for text in PROBE_TEXTS)
    except Exception:
        logger.exception("exporting %s to ONNX failed; search queries are embedded with torch", name)
        return None
    if worst < MIN_PROBE_COSINE:
        logger.warning("ONNX vectors of %s differ from torch's (cosine %.6f); queries use torch", name, worst)
        return None
    return encoder


def _exported_model(model: "SentenceTransformer", name: str, cache_dir: Path) -> Path:
    """The model's ONNX file, exported on first use. Processes racing to export each write a
    temporary file and rename it into place, so a reader never sees a partial file."""
    path = cache_dir / f"{_fingerprint(model, name)}.onnx"
    if path.exists():
        return path
    cache_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=cache_dir, suffix=".onnx.partial", delete=False) as partial:
        try:
            export_onnx(model, Path(partial.name))
            os.replace(partial.name, path)
        finally:
            Path(partial.name).unlink(missing_ok=True)
    logger.info("exported %s to %s for search queries", name, path)
    return path


def _fingerprint(model: "SentenceTransformer", name: str) -> str:
    import onnxruntime
    import sentence_transformers
    import torch
    import transformers

    versions = (torch.__version__, transformers.__version__, sentence_transformers.__version__, onnxruntime.__version__)
    first_weights = next(model.parameters()).detach().flatten()[:64].numpy().tobytes()
    digest = hashlib.sha256(repr((name, versions, model.max_seq_length)).encode() + first_weights).hexdigest()
    safe_name = "".join(c if c.isalnum() or c in "-." else "-" for c in name)[:60]
    return f"{safe_name}-{digest[:16]}"


def export_onnx(model: "SentenceTransformer", path: Path) -> None:
    """Export the sentence-transformers `model` (transformer, pooling, normalisation) to an ONNX file."""
    import torch

    # Tracing may set flags on the modules it runs: export a copy, never the model serving the
    # process's stored embeddings.
    exported = copy.deepcopy(model).eval()
    for module in exported.modules():
        config = getattr(module, "config", None)
        if config is not None and hasattr(config, "_attn_implementation"):
            config._attn_implementation = "eager"  # SDPA's mask shortcuts do not trace
    sample = exported.tokenizer(["a sample query"], return_tensors="pt")
    input_names = [key for key in ("input_ids", "attention_mask", "token_type_ids") if key in sample]

    class SentenceEmbedding(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = exported

        def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
            return self.model(dict(zip(input_names, inputs, strict=True)))["sentence_embedding"]

    dynamic = {key: {0: "batch", 1: "tokens"} for key in input_names}
    with torch.inference_mode(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tracer warnings about shape-dependent branches
        torch.onnx.export(
            SentenceEmbedding(),
            tuple(sample[key] for key in input_names),
            str(path),
            input_names=input_names,
            output_names=["sentence_embedding"],
            dynamic_axes={**dynamic, "sentence_embedding": {0: "batch"}},
            opset_version=17,
            dynamo=False,
        )
