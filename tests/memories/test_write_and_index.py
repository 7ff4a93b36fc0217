import json
from itertools import pairwise
from pathlib import Path

import pytest

from memories import services, vectors
from memories.exceptions import ValidationError
from memories.models import MAX_CONTENT_CHARS, Chunk, IndexingStatus, Memory
from memories.search.context import embedding_pieces


def write_and_index(owner, content, **kwargs) -> Memory:
    memory = services.memory_write(owner=owner, content=content, **kwargs)
    services.memories_index(memory_ids=[memory.pk])
    memory.refresh_from_db()
    return memory


def test_a_written_memory_starts_pending_and_gets_indexed(owner):
    memory = services.memory_write(owner=owner, content="The staging database runs on port 5433.", tags=["Infra"])
    assert memory.indexing_status == IndexingStatus.PENDING
    assert memory.tags == ["infra"]
    assert services.memories_index(memory_ids=[memory.pk]) == 1
    memory.refresh_from_db()
    assert memory.indexing_status == IndexingStatus.INDEXED
    chunk = Chunk.objects.get(memory=memory)
    assert chunk.dimension == 384 and len(chunk.embedding) == 384


def test_it_derives_token_estimates_in_the_database(owner):
    memory = services.memory_write(owner=owner, content="x" * 401)
    memory.refresh_from_db()
    assert memory.tokens_raw == 101  # ceil(401 / 4)
    assert memory.tokens_optimized is None


def test_long_content_is_chunked_and_each_chunk_embedded(owner):
    sentence = "The release train leaves every second Tuesday and hotfixes go out on demand. "
    memory = write_and_index(owner, sentence * 60)
    spans = list(Chunk.objects.filter(memory=memory).order_by("position").values_list("start", "end"))
    assert len(spans) > 3
    assert spans[0][0] == 0 and spans[-1][1] == len(memory.content)
    assert all(later[0] < earlier[1] for earlier, later in pairwise(spans))  # overlapping, no gaps


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "must not be empty"),
        ("   \n", "must not be empty"),
        ("x" * (MAX_CONTENT_CHARS + 1), "the limit is"),
        (42, "string"),
    ],
)
def test_it_refuses_bad_content_and_stores_nothing(owner, content, message):
    with pytest.raises(ValidationError, match=message):
        services.memory_write(owner=owner, content=content)
    assert not Memory.objects.exists()


@pytest.mark.parametrize("tags", ["infra", [1], ["has space"], ["-leading"], [f"t{i}" for i in range(21)], ["x" * 65]])
def test_it_refuses_malformed_tags(owner, tags):
    with pytest.raises(ValidationError, match="tags"):
        services.memory_write(owner=owner, content="fine", tags=tags)
    assert not Memory.objects.exists()


def test_an_embedding_failure_is_recorded_and_the_memory_stays_findable_by_keyword(owner, settings, monkeypatch):
    from memories import embedding
    from memories.search.pipeline import search_hybrid

    def broken_embed(self, texts):
        raise RuntimeError("model exploded")

    monkeypatch.setattr(embedding.Embedder, "embed", broken_embed)
    settings.GNOSEM_INDEXING_MAX_ATTEMPTS = 2
    memory = services.memory_write(owner=owner, content="Ticket OPS-4471 tracks the flaky payment webhook.")
    for attempt in (1, 2):
        with pytest.raises(RuntimeError):
            services.memories_index(memory_ids=[memory.pk])
        memory.refresh_from_db()
        assert memory.indexing_attempts == attempt
        assert "model exploded" in memory.indexing_error
    assert memory.indexing_status == IndexingStatus.FAILED
    hits = search_hybrid(owner=owner, query="OPS-4471")
    assert [hit.memory.pk for hit in hits] == [memory.pk]


def test_editing_content_while_it_is_being_embedded_does_not_mark_the_old_text_indexed(owner):
    memory = services.memory_write(owner=owner, content="first version")
    claimed = services._claim_for_indexing(memory.pk, 8)
    services.memory_update(owner=owner, public_id=memory.public_id, content="second version")
    pieces = embedding_pieces(claimed)
    chunks = vectors.embed_memories(claimed, vectors.indexing_embedders(), pieces)
    assert services._store_chunks(claimed, chunks, pieces) == 0
    memory.refresh_from_db()
    assert memory.indexing_status == IndexingStatus.PENDING


def test_a_query_is_embedded_exactly_as_the_same_text_written_as_a_memory():
    from memories.embedding import get_embedder

    embedder = get_embedder()
    text = "How was the checkout screen laid out?"
    assert abs(embedder.embed_query(text).result() - embedder.embed([text])[0]).max() < 1e-5


def misconfigured_model(tmp_path) -> str:
    """The shipped model, told to read up to 1,024 word pieces although it has positions for 512:
    it embeds ordinary text, and fails (a genuine torch error) on a text of more word pieces."""
    from memories.embedding import get_embedder

    source = Path(get_embedder().source)
    model = tmp_path / "misconfigured-minilm"
    model.mkdir()
    for item in source.iterdir():
        if item.name != "sentence_bert_config.json":
            (model / item.name).symlink_to(item)
    (model / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 1024, "do_lower_case": False}))
    return str(model)


# One chunk (1,000 characters), but about 1,000 word pieces: more than the model has positions for.
DENSE = "x," * 500


def test_a_memory_the_model_fails_on_spends_only_its_own_attempts(owner, stranger, settings, tmp_path):
    settings.GNOSEM_EMBEDDING_MODEL = misconfigured_model(tmp_path)
    breaking = services.memory_write(owner=owner, content=DENSE)
    others = [services.memory_write(owner=stranger, content=f"The stranger's garden note {i}.") for i in range(3)]
    with pytest.raises(RuntimeError, match="size of tensor"):
        services.memories_index(memory_ids=[breaking.pk])  # one batch: the model fails on all of it
    breaking.refresh_from_db()
    assert breaking.indexing_status == IndexingStatus.PENDING
    assert breaking.indexing_attempts == 1
    assert "size of tensor" in breaking.indexing_error
    for memory in others:
        memory.refresh_from_db()
        assert (memory.indexing_status, memory.indexing_attempts) == (IndexingStatus.INDEXED, 0)
    assert set(Chunk.objects.filter(memory__in=others).values_list("memory_id", flat=True)) == {m.pk for m in others}
