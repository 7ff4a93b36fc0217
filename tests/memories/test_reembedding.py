"""Changing the embedding model (DESIGN.md §2): search keeps working on the old vectors until
every memory has the new model's, then `manage.py reembedmemories` switches it over."""

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from memories import embedding, services, vectors
from memories.models import Chunk, IndexingStatus, Memory, ServingModel
from memories.search.pipeline import search_hybrid

DEFAULT = embedding.DEFAULT_MODEL_NAME
MEMORIES = [
    "Maria is on vacation in Lisbon from August 3 to August 17.",
    "Production deploys need two approvals in GitHub and only happen Monday to Thursday.",
    "Postgres backups run nightly at 02:00 UTC and are kept for 30 days in the S3 bucket db-backups-eu.",
]
HOLIDAY_QUESTION = "who is away on holiday in Portugal?"


@pytest.fixture(scope="session")
def second_model(tmp_path_factory) -> str:
    """A second real sentence-transformers model on disk: the shipped MiniLM with a fixed random
    orthogonal projection to 128 dimensions on top (cosines roughly kept, vectors of another size)."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Dense, Normalize

    shipped = embedding.get_embedder(DEFAULT).model
    generator = torch.Generator().manual_seed(7)
    projection = torch.nn.init.orthogonal_(torch.empty(128, 384), generator=generator)
    dense = Dense(384, 128, bias=False, activation_function=torch.nn.Identity(), init_weight=projection)
    path = tmp_path_factory.mktemp("models") / "minilm-128"
    SentenceTransformer(modules=[shipped[0], shipped[1], dense, Normalize()]).save(str(path))
    return str(path)


@pytest.fixture
def indexed(owner) -> list[Memory]:
    """The memories, indexed with the shipped model (which thereby becomes the serving one)."""
    written = [services.memory_write(owner=owner, content=content) for content in MEMORIES]
    services.memories_index(memory_ids=[memory.pk for memory in written])
    return written


def reembed(*args) -> str:
    out = StringIO()
    call_command("reembedmemories", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def models_of(memory: Memory) -> set[str]:
    return set(Chunk.objects.filter(memory=memory).values_list("model", flat=True))


def first_hit(owner, query: str) -> str:
    return search_hybrid(owner=owner, query=query, top_k=3)[0].memory.content


def test_search_keeps_the_old_model_until_reembedding_switches_it_over(owner, indexed, settings, second_model, client):
    settings.GNOSEM_EMBEDDING_MODEL = second_model
    settings.GNOSEM_HEALTHZ_DETAILS = True  # monitoring reads the model state there
    late = services.memory_write(owner=owner, content="The office wifi password rotates on the first Monday.")
    services.memories_index(memory_ids=[late.pk])

    # Written after the change: vectors of both models. Search still embeds with the old one.
    assert models_of(late) == {DEFAULT, second_model}
    assert vectors.serving_model_name() == DEFAULT
    assert first_hit(owner, HOLIDAY_QUESTION) == MEMORIES[0]
    assert client.get("/healthz").json()["embedding"] == {"reembedding_needed": True}

    report = reembed()
    assert "3 memories embedded with" in report and "(128 dimensions)" in report
    assert f"switched from {DEFAULT}" in report and "vectors of other models dropped" in report
    assert vectors.serving_model_name() == second_model
    assert set(Chunk.objects.values_list("model", "dimension")) == {(second_model, 128)}
    assert all(models_of(memory) == {second_model} for memory in [*indexed, late])
    assert first_hit(owner, HOLIDAY_QUESTION) == MEMORIES[0]
    assert client.get("/healthz").json()["embedding"] == {"reembedding_needed": False}


def test_an_interrupted_run_goes_on_where_it_stopped(indexed, settings, second_model, monkeypatch):
    settings.GNOSEM_EMBEDDING_MODEL = second_model
    target = embedding.get_embedder(second_model)
    calls = []

    def fails_on_the_second_batch(texts):
        calls.append(texts)
        if len(calls) == 2:
            raise RuntimeError("out of memory")
        return embedding.Embedder.embed(target, texts)

    monkeypatch.setattr(target, "embed", fails_on_the_second_batch)
    failed = r"failed after 1 memories: RuntimeError: out of memory.*run the command again"
    with pytest.raises(CommandError, match=failed):
        reembed("--batch-size", "1")
    assert vectors.serving_model_name() == DEFAULT  # nothing switched: every memory still has old vectors
    assert [bool(second_model in models_of(memory)) for memory in indexed] == [True, False, False]

    monkeypatch.undo()
    assert "2 memories embedded" in reembed()
    assert vectors.serving_model_name() == second_model


def test_a_memory_edited_while_being_reembedded_gets_no_vectors_of_its_old_text(owner, indexed, settings, second_model):
    settings.GNOSEM_EMBEDDING_MODEL = second_model
    batch = list(vectors.memories_missing_vectors(second_model))
    services.memory_update(owner=owner, public_id=indexed[1].public_id, content="Deploys now happen any weekday.")

    # The memory written right after it read its old text in context: it waits for the worker too.
    assert vectors.reembed_batch(batch, embedding.get_embedder(second_model)) == 1
    assert second_model not in models_of(indexed[1]) | models_of(indexed[2])
    # They wait for the worker, which embeds the new text (and the new reading) with both models.
    assert Memory.objects.get(pk=indexed[1].pk).indexing_status == IndexingStatus.PENDING
    services.memories_index(memory_ids=[indexed[1].pk])
    assert models_of(indexed[1]) == models_of(indexed[2]) == {DEFAULT, second_model}


def test_keep_old_switches_search_but_keeps_the_previous_vectors(indexed, settings, second_model):
    settings.GNOSEM_EMBEDDING_MODEL = second_model
    assert "old vectors kept" in reembed("--keep-old")
    assert vectors.serving_model_name() == second_model
    assert all(models_of(memory) == {DEFAULT, second_model} for memory in indexed)


def test_with_nothing_to_do_it_says_so(indexed):
    report = reembed()
    assert "0 memories embedded" in report
    assert f"Search uses {DEFAULT}: already used it; 0 vectors of other models dropped." in report


def test_a_worker_whose_vectors_lack_the_new_serving_model_stores_nothing_and_retries(owner):
    memory = services.memory_write(owner=owner, content="The on-call rotation changes every Wednesday.")
    claimed = services._claim_for_indexing(memory.pk, 8)
    pieces = services.embedding_pieces(claimed)
    chunks = vectors.embed_memories(claimed, vectors.indexing_embedders(), pieces)
    ServingModel.objects.filter(pk=1).update(name="another-model")  # a re-embedding switched meanwhile

    with pytest.raises(vectors.ServingModelChanged):
        services._store_chunks(claimed, chunks, pieces)
    memory.refresh_from_db()
    assert memory.indexing_status == IndexingStatus.PENDING and not Chunk.objects.filter(memory=memory).exists()


def test_a_model_that_cannot_be_loaded_is_named(settings, db):
    settings.GNOSEM_EMBEDDING_MODEL = "/nowhere/no-such-model"
    with pytest.raises(CommandError, match=r"Cannot load GNOSEM_EMBEDDING_MODEL='/nowhere/no-such-model'"):
        reembed()


def test_a_batch_size_below_one_is_refused(db):
    with pytest.raises(CommandError, match="--batch-size must be at least 1"):
        reembed("--batch-size", "0")
