"""manage.py reembedmemories: search keeps working on the old vectors until every memory has the
new model's, then the command switches it over (docs/design.md §3)."""

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from memories import services
from memories.indexing import embedding, vectors
from memories.models import Chunk
from memories.search.pipeline import search_hybrid
from tests.memories.conftest import SHIPPED_MODEL_MEMORIES, models_of

DEFAULT = embedding.DEFAULT_MODEL_NAME
HOLIDAY_QUESTION = "who is away on holiday in Portugal?"


def reembed(*args) -> str:
    out = StringIO()
    call_command("reembedmemories", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def first_hit(owner, query: str) -> str:
    return search_hybrid(owner=owner, query=query, top_k=3)[0].memory.content


def test_search_keeps_the_old_model_until_reembedding_switches_it_over(
    owner, shipped_model_memories, settings, second_model, client
):
    settings.GNOSEM_EMBEDDING_MODEL = second_model
    settings.GNOSEM_HEALTHZ_DETAILS = True  # monitoring reads the model state there
    late = services.memory_write(owner=owner, content="The office wifi password rotates on the first Monday.")
    services.memories_index(memory_ids=[late.pk])

    # Written after the change: vectors of both models. Search still embeds with the old one.
    assert models_of(late) == {DEFAULT, second_model}
    assert vectors.serving_model_name() == DEFAULT
    assert first_hit(owner, HOLIDAY_QUESTION) == SHIPPED_MODEL_MEMORIES[0]
    assert client.get("/healthz").json()["embedding"] == {
        "reembedding_needed": True,
        "waiting_for_endpoint": 0,
        "notes_waiting_for_endpoint": 0,
    }

    report = reembed()
    assert "3 memories embedded with" in report and "(128 dimensions)" in report
    assert f"switched from {DEFAULT}" in report and "vectors of other models dropped" in report
    assert vectors.serving_model_name() == second_model
    assert set(Chunk.objects.values_list("model", "dimension")) == {(second_model, 128)}
    assert all(models_of(memory) == {second_model} for memory in [*shipped_model_memories, late])
    assert first_hit(owner, HOLIDAY_QUESTION) == SHIPPED_MODEL_MEMORIES[0]
    assert client.get("/healthz").json()["embedding"] == {
        "reembedding_needed": False,
        "waiting_for_endpoint": 0,
        "notes_waiting_for_endpoint": 0,
    }


def test_an_interrupted_run_goes_on_where_it_stopped(shipped_model_memories, settings, second_model, monkeypatch):
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
    assert [bool(second_model in models_of(memory)) for memory in shipped_model_memories] == [True, False, False]

    monkeypatch.undo()
    assert "2 memories embedded" in reembed()
    assert vectors.serving_model_name() == second_model


def test_keep_old_switches_search_but_keeps_the_previous_vectors(shipped_model_memories, settings, second_model):
    settings.GNOSEM_EMBEDDING_MODEL = second_model
    assert "old vectors kept" in reembed("--keep-old")
    assert vectors.serving_model_name() == second_model
    assert all(models_of(memory) == {DEFAULT, second_model} for memory in shipped_model_memories)


def test_with_nothing_to_do_it_says_so(shipped_model_memories):
    report = reembed()
    assert "0 memories embedded" in report
    assert f"Search uses {DEFAULT}: already used it; 0 vectors of other models dropped." in report


def test_a_model_that_cannot_be_loaded_is_named(settings, db):
    settings.GNOSEM_EMBEDDING_MODEL = "/nowhere/no-such-model"
    with pytest.raises(CommandError, match=r"Cannot load GNOSEM_EMBEDDING_MODEL='/nowhere/no-such-model'"):
        reembed()


def test_a_batch_size_below_one_is_refused(db):
    with pytest.raises(CommandError, match="--batch-size must be at least 1"):
        reembed("--batch-size", "0")
