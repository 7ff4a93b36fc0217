"""memories.indexing.vectors: which models a memory's vectors are made with while the embedding model changes,
and re-embedding a batch without storing vectors of text edited meanwhile."""

import pytest

from memories import services
from memories.indexing import embedding, vectors
from memories.models import Chunk, IndexingStatus, Memory, ServingModel
from tests.memories.conftest import models_of

DEFAULT = embedding.DEFAULT_MODEL_NAME


def test_until_a_memory_is_indexed_search_uses_the_configured_model_and_then_the_recorded_one(
    owner, settings, second_model, write_indexed
):
    settings.GNOSEM_EMBEDDING_MODEL = second_model
    assert vectors.serving_model_name() == second_model  # nothing recorded yet
    settings.GNOSEM_EMBEDDING_MODEL = embedding.DEFAULT_MODEL
    write_indexed(owner, "The first memory indexed records the model search uses.")
    settings.GNOSEM_EMBEDDING_MODEL = second_model
    assert vectors.serving_model_name() == DEFAULT
    assert [embedder.name for embedder in vectors.indexing_embedders()] == [second_model, DEFAULT]


def test_the_switch_waits_until_every_memory_has_the_new_models_vectors(shipped_model_memories, settings, second_model):
    settings.GNOSEM_EMBEDDING_MODEL = second_model
    target = embedding.get_embedder(second_model)
    assert vectors.reembed_batch(shipped_model_memories[:1], target) == 1
    assert vectors.switch_serving_model(second_model) is None  # two memories lack its vectors
    assert vectors.serving_model_name() == DEFAULT

    assert vectors.reembed_batch(list(vectors.memories_missing_vectors(second_model)), target) == 2
    dropped = vectors.switch_serving_model(second_model)
    assert dropped == Chunk.objects.filter(model=second_model).count()  # one for one: each old vector went
    assert vectors.serving_model_name() == second_model
    assert all(models_of(memory) == {second_model} for memory in shipped_model_memories)


def test_a_memory_edited_while_being_reembedded_gets_no_vectors_of_its_old_text(
    owner, shipped_model_memories, settings, second_model
):
    settings.GNOSEM_EMBEDDING_MODEL = second_model
    batch = list(vectors.memories_missing_vectors(second_model))
    _, edited, successor = shipped_model_memories
    services.memory_update(owner=owner, public_id=edited.public_id, content="Deploys now happen any weekday.")

    # The memory written right after it read its old text in context: it waits for the worker too.
    assert vectors.reembed_batch(batch, embedding.get_embedder(second_model)) == 1
    assert second_model not in models_of(edited) | models_of(successor)
    # They wait for the worker, which embeds the new text (and the new reading) with both models.
    assert Memory.objects.get(pk=edited.pk).indexing_status == IndexingStatus.PENDING
    services.memories_index(memory_ids=[edited.pk])
    assert models_of(edited) == models_of(successor) == {DEFAULT, second_model}


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
