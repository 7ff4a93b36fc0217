"""Search queries through ONNX Runtime: same vectors as the stored ones, or torch as before."""

import logging

import numpy as np
import pytest

from memories.indexing import embedding
from memories.indexing.query_encoder import PROBE_TEXTS, load_query_encoder

QUERIES = ["how was the checkout screen laid out?", "ERR_CERT_DATE_INVALID", "a" * 3000]


@pytest.fixture(scope="module")
def embedder() -> embedding.Embedder:
    return embedding.get_embedder()


def test_queries_are_embedded_by_onnx_with_the_stored_vectors_meaning(embedder):
    assert embedder.query_encoder is not None
    stored = embedder.embed(QUERIES)  # sentence-transformers, as the worker embeds memories
    for text, vector in zip(QUERIES, stored, strict=True):
        query_vector = embedder.embed_query(text).result()
        assert query_vector.dtype == np.float32
        assert float(np.dot(query_vector, vector)) > 0.9999
        assert np.linalg.norm(query_vector) == pytest.approx(1.0, abs=1e-5)


def test_an_encoder_that_disagrees_with_torch_is_not_used(embedder, settings, caplog):
    rng = np.random.default_rng(7)

    def another_models_vectors(text: str) -> np.ndarray:
        vector = rng.normal(size=embedder.dimension).astype(np.float32)
        return vector / np.linalg.norm(vector)

    with caplog.at_level(logging.WARNING, logger="memories.indexing.query_encoder"):
        encoder = load_query_encoder(
            embedder.model, embedder.name, settings.GNOSEM_DATA_DIR / "models", another_models_vectors
        )
    assert encoder is None
    assert "differ from torch's" in caplog.text


def test_a_corrupt_exported_file_falls_back_to_torch(embedder, tmp_path, caplog):
    # Export into a fresh folder, then damage the file the next load would use.
    assert load_query_encoder(embedder.model, embedder.name, tmp_path, embedder.embed_query_with_torch)
    (exported,) = tmp_path.glob("*.onnx")
    exported.write_bytes(b"not an onnx model")
    with caplog.at_level(logging.ERROR, logger="memories.indexing.query_encoder"):
        assert load_query_encoder(embedder.model, embedder.name, tmp_path, embedder.embed_query_with_torch) is None
    assert "queries are embedded with torch" in caplog.text
    assert not list(tmp_path.glob("*.partial"))


def test_with_onnx_off_queries_use_torch(settings):
    settings.GNOSEM_ONNX_QUERIES = False
    torch_only = embedding.Embedder(name=embedding.DEFAULT_MODEL_NAME, source=embedding.get_embedder().source)
    assert torch_only.query_encoder is None
    vector = torch_only.embed_query(PROBE_TEXTS[0]).result()
    assert float(np.dot(vector, embedding.get_embedder().embed([PROBE_TEXTS[0]])[0])) > 0.9999
