"""memories.indexing.embedding: the models that embed memories and queries."""

from memories.indexing.embedding import get_embedder


def test_a_query_is_embedded_exactly_as_the_same_text_written_as_a_memory():
    embedder = get_embedder()
    text = "How was the checkout screen laid out?"
    assert abs(embedder.embed_query(text).result() - embedder.embed([text])[0]).max() < 1e-5
