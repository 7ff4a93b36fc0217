"""memories.services: writing, changing and deleting memories, and indexing them (the claim, owners
in turn, failures, the stale-queue sweep, failed memories given another try)."""

import json
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
from django.utils import timezone

from accounts.spaces import personal_space_of
from gnosem.errors import NotFound, ValidationError
from memories import services
from memories.indexing import embedding, queue, vectors
from memories.indexing import lifecycle as indexing_lifecycle
from memories.indexing.lifecycle import MEMORIES
from memories.indexing.sequences import embedding_pieces
from memories.models import MAX_CONTENT_CHARS, Chunk, CompressionStatus, IndexingStatus, Memory
from memories.search.pipeline import search_hybrid
from memories.transfer.document import FORMAT, VERSION
from memories.transfer.importing import import_memories
from tests.memories.stored import store


def stored_vector(memory: Memory) -> np.ndarray:
    """The memory's stored vector, in half precision: compare with atol=1e-3 (other texts' vectors
    differ by far more)."""
    return np.array(Chunk.objects.get(memory=memory).embedding)


def vector_of(text: str) -> np.ndarray:
    return embedding.get_embedder().embed([text])[0]


def test_a_written_memory_starts_pending_and_gets_indexed(owner):
    memory = services.memory_write(owner=owner, content="The staging database runs on port 5433.", tags=["Infra"])
    assert memory.indexing_status == IndexingStatus.PENDING
    assert memory.tags == ["infra"]
    assert services.memories_index(memory_ids=[memory.pk]) == 1
    memory.refresh_from_db()
    assert memory.indexing_status == IndexingStatus.INDEXED
    chunk = Chunk.objects.get(memory=memory)
    assert chunk.dimension == 384 and len(chunk.embedding) == 384


def test_memory_write_records_the_client_and_the_given_creation_time(owner):
    created_at = datetime(2024, 12, 24, 18, tzinfo=UTC)
    memory = services.memory_write(owner=owner, content="x", written_by="  claude-code  ", created_at=created_at)
    memory.refresh_from_db()
    assert memory.written_by == "claude-code"
    assert memory.created_at == created_at
    assert memory.updated_at > created_at
    assert memory.indexing_queued_at is not None


def test_memory_write_queues_indexing_on_commit(owner, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        services.memory_write(owner=owner, content="queued")
    assert len(callbacks) == 1


@pytest.mark.parametrize(("content", "status"), [("x" * 400, "skipped_short"), ("x" * 401, "disabled")])
def test_compression_status_says_why_a_memory_is_stored_raw(owner, content, status):
    assert services.memory_write(owner=owner, content=content).compression_status == status


def test_the_database_derives_the_token_estimates(owner):
    memory = services.memory_write(owner=owner, content="x" * 401)
    memory.refresh_from_db()
    assert memory.tokens_raw == 101  # ceil(401 / 4)
    assert memory.tokens_optimized is None


def test_long_content_is_chunked_and_each_chunk_embedded(owner, write_indexed):
    sentence = "The release train leaves every second Tuesday and hotfixes go out on demand. "
    memory = write_indexed(owner, sentence * 60)
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
def test_memory_write_refuses_bad_content_and_stores_nothing(owner, content, message):
    with pytest.raises(ValidationError, match=message):
        services.memory_write(owner=owner, content=content)
    assert not Memory.objects.exists()


@pytest.mark.parametrize("tags", ["infra", [1], ["has space"], ["-leading"], [f"t{i}" for i in range(21)], ["x" * 65]])
def test_memory_write_refuses_malformed_tags(owner, tags):
    with pytest.raises(ValidationError, match="tags"):
        services.memory_write(owner=owner, content="fine", tags=tags)
    assert not Memory.objects.exists()


def test_changing_the_content_queues_reindexing_and_keeps_the_old_vectors_until_then(
    owner, django_capture_on_commit_callbacks, write_indexed
):
    memory = write_indexed(owner, "The office plants need water on Mondays.")
    old_vector = stored_vector(memory)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        updated = services.memory_update(
            owner=owner, public_id=memory.public_id, content="The quarterly tax filing is due in April."
        )
    assert len(callbacks) == 1
    assert updated.indexing_status == IndexingStatus.PENDING
    assert updated.tokens_raw == 11  # generated columns follow the new content
    # Until the worker runs, search keeps serving the old vectors.
    assert np.allclose(stored_vector(memory), old_vector)
    hits = search_hybrid(owner=owner, query="watering houseplants")
    assert hits[0].memory == memory and "vector" in hits[0].signals

    assert services.memories_index(memory_ids=[memory.pk]) == 1
    assert Chunk.objects.filter(memory=memory).count() == 1
    assert np.allclose(stored_vector(memory), vector_of("The quarterly tax filing is due in April."), atol=1e-3)


def test_an_edit_while_a_worker_embeds_the_old_text_is_indexed_by_the_task_it_queues(owner):
    memory = services.memory_write(owner=owner, content="first version")
    services._claim_for_indexing(memory.pk, 8)  # a worker is busy embedding "first version"
    services.memory_update(owner=owner, public_id=memory.public_id, content="second version")
    # The task queued by the edit must not wait for the busy worker's lease to expire.
    assert services.memories_index(memory_ids=[memory.pk]) == 1
    memory.refresh_from_db()
    assert memory.indexing_status == IndexingStatus.INDEXED
    assert np.allclose(stored_vector(memory), vector_of("second version"), atol=1e-3)


def test_an_edit_that_keeps_the_content_does_not_reindex(owner, django_capture_on_commit_callbacks, write_indexed):
    memory = write_indexed(owner, "Same words.")
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        updated = services.memory_update(owner=owner, public_id=memory.public_id, content="Same words.", tags=["new"])
    assert callbacks == []
    assert updated.indexing_status == IndexingStatus.INDEXED
    assert updated.tags == ["new"]
    assert updated.updated_at > memory.updated_at


def test_changing_only_tags_or_client_does_not_reindex(owner, django_capture_on_commit_callbacks, write_indexed):
    memory = write_indexed(owner, "Tagged later.", tags=["old"], written_by="cursor")
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        updated = services.memory_update(owner=owner, public_id=memory.public_id, tags=["A", "b"], written_by="vscode")
    assert callbacks == []
    assert updated.tags == ["a", "b"]
    assert updated.written_by == "vscode"
    assert updated.content == "Tagged later."
    assert updated.indexing_status == IndexingStatus.INDEXED


def test_new_content_drops_the_compressed_form(owner):
    memory = services.memory_write(owner=owner, content="long text " * 50)
    store(memory.pk, content_optimized="TOPIC=text", compression_status=CompressionStatus.COMPRESSED)
    kept = services.memory_update(owner=owner, public_id=memory.public_id, content="long text " * 50)
    assert kept.content_optimized == "TOPIC=text"
    updated = services.memory_update(owner=owner, public_id=memory.public_id, content="short now")
    assert updated.content_optimized is None
    assert updated.tokens_optimized is None
    assert updated.compression_status == CompressionStatus.SKIPPED_SHORT


def test_new_content_gives_a_failed_memory_a_fresh_start(owner):
    memory = services.memory_write(owner=owner, content="first")
    Memory.objects.filter(pk=memory.pk).update(
        indexing_status=IndexingStatus.FAILED, indexing_attempts=5, indexing_error="RuntimeError: boom"
    )
    updated = services.memory_update(owner=owner, public_id=memory.public_id, content="second")
    assert updated.indexing_status == IndexingStatus.PENDING
    assert updated.indexing_attempts == 0
    assert updated.indexing_error == ""


def test_a_rejected_update_changes_nothing_and_queues_nothing(owner, django_capture_on_commit_callbacks):
    memory = services.memory_write(owner=owner, content="original", tags=["keep"])
    with django_capture_on_commit_callbacks(execute=False) as callbacks, pytest.raises(ValidationError):
        services.memory_update(owner=owner, public_id=memory.public_id, content="changed", tags=["not valid"])
    assert callbacks == []
    memory.refresh_from_db()
    assert memory.content == "original"
    assert memory.tags == ["keep"]


def test_a_stranger_cannot_update_the_owners_memory(owner, stranger):
    memory = services.memory_write(owner=owner, content="mine")
    with pytest.raises(NotFound):
        services.memory_update(owner=stranger, public_id=memory.public_id, content="theirs now")
    memory.refresh_from_db()
    assert memory.content == "mine"


def test_memory_delete_removes_the_memory_and_its_chunks(owner, write_indexed):
    sentence = "Chunked content for deletion, long enough to need several pieces. "
    memory = write_indexed(owner, sentence * 40)
    assert Chunk.objects.filter(memory_id=memory.pk).count() > 1
    services.memory_delete(owner=owner, public_id=memory.public_id)
    assert not Memory.objects.filter(pk=memory.pk).exists()
    assert not Chunk.objects.filter(memory_id=memory.pk).exists()
    assert search_hybrid(owner=owner, query="chunked content deletion") == []


def test_a_stranger_cannot_delete_the_owners_memory(owner, stranger, write_indexed):
    memory = write_indexed(owner, "mine")
    with pytest.raises(NotFound):
        services.memory_delete(owner=stranger, public_id=memory.public_id)
    assert Memory.objects.filter(pk=memory.pk).exists()
    assert Chunk.objects.filter(memory_id=memory.pk).exists()


def test_indexing_one_memory_also_takes_other_waiting_ones_up_to_a_batch(owner, stranger):
    first = services.memory_write(owner=owner, content="first")
    others = [services.memory_write(owner=stranger, content=f"other {i}") for i in range(3)]
    assert services.memories_index(memory_ids=[first.pk], batch_size=2) == 2
    statuses = dict(Memory.objects.values_list("pk", "indexing_status"))
    assert statuses[first.pk] == IndexingStatus.INDEXED  # the asked-for memory goes first
    assert [statuses[memory.pk] for memory in others].count(IndexingStatus.INDEXED) == 1
    # Each chunk belongs to its memory's space, so per-space filtering stays correct.
    mine, theirs = personal_space_of(owner).pk, personal_space_of(stranger).pk
    assert set(Chunk.objects.values_list("memory__space_id", "space_id").distinct()) <= {(mine, mine), (theirs, theirs)}


def test_a_task_claims_again_until_none_of_its_memories_waits(owner, stranger):
    """A claim serves the waiting owners in turn (and one made beside another worker's may come
    back short): the task's own memories must not be left for the re-queue sweep."""
    others = [services.memory_write(owner=stranger, content=f"waiting longer {i}") for i in range(5)]
    ids = [services.memory_write(owner=owner, content=f"bulk {i}").pk for i in range(5)]
    assert services.memories_index(memory_ids=ids, batch_size=2) > len(ids)
    assert set(Memory.objects.filter(pk__in=ids).values_list("indexing_status", flat=True)) == {IndexingStatus.INDEXED}
    other_ids = [memory.pk for memory in others]
    assert Memory.objects.filter(pk__in=other_ids, indexing_status=IndexingStatus.INDEXED).exists()


def test_a_task_leaves_the_memories_another_worker_holds(owner):
    held = services.memory_write(owner=owner, content="held by another worker")
    waiting = services.memory_write(owner=owner, content="waiting for this task")
    assert [claimed.pk for claimed in services._claim_for_indexing(held.pk, 1)] == [held.pk]
    assert services.memories_index(memory_ids=[held.pk, waiting.pk], batch_size=1) == 1
    statuses = dict(Memory.objects.values_list("pk", "indexing_status"))
    assert statuses == {held.pk: IndexingStatus.PENDING, waiting.pk: IndexingStatus.INDEXED}


def test_a_memory_another_worker_holds_is_skipped(owner):
    memory = services.memory_write(owner=owner, content="held elsewhere")
    assert [claimed.pk for claimed in services._claim_for_indexing(memory.pk, 8)] == [memory.pk]
    assert services.memories_index(memory_ids=[memory.pk]) == 0
    memory.refresh_from_db()
    assert memory.indexing_status == IndexingStatus.PENDING


def test_an_indexed_memory_is_not_indexed_again(owner, write_indexed):
    memory = write_indexed(owner, "done already")
    assert services.memories_index(memory_ids=[memory.pk]) == 0
    assert Chunk.objects.filter(memory=memory).count() == 1


def test_an_embedding_failure_is_recorded_and_the_memory_stays_findable_by_keyword(owner, settings, monkeypatch):
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
    assert services._store_chunks(claimed, chunks, pieces) == set()
    memory.refresh_from_db()
    assert memory.indexing_status == IndexingStatus.PENDING


def misconfigured_model(tmp_path) -> str:
    """The shipped model, told to read up to 1,024 word pieces although it has positions for 512:
    it embeds ordinary text, and fails (a genuine torch error) on a text of more word pieces."""
    source = Path(embedding.get_embedder().source)
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


class TestRequeueStale:
    @pytest.fixture(autouse=True)
    def requeue_after(self, settings):
        settings.GNOSEM_REQUEUE_AFTER_SECONDS = 300

    def memory(self, owner, *, status=IndexingStatus.PENDING, queued_ago: int, lease_in: int | None = None) -> Memory:
        memory = services.memory_write(owner=owner, content=f"{status} {queued_ago} {lease_in}")
        now = timezone.now()
        Memory.objects.filter(pk=memory.pk).update(
            indexing_status=status,
            indexing_queued_at=now - timedelta(seconds=queued_ago),
            indexing_lease_until=None if lease_in is None else now + timedelta(seconds=lease_in),
        )
        return memory

    def test_it_requeues_only_pending_memories_waiting_too_long_without_a_live_lease(self, owner, stranger):
        lost = self.memory(owner, queued_ago=400)
        dead_worker = self.memory(stranger, queued_ago=900, lease_in=-60)
        self.memory(owner, queued_ago=100)  # still young
        self.memory(owner, queued_ago=900, lease_in=60)  # a live worker holds it
        self.memory(owner, status=IndexingStatus.INDEXED, queued_ago=900)
        self.memory(owner, status=IndexingStatus.FAILED, queued_ago=900)
        before = timezone.now()
        assert sorted(indexing_lifecycle.requeue_stale(MEMORIES)) == sorted([lost.pk, dead_worker.pk])
        for memory in (lost, dead_worker):
            memory.refresh_from_db()
            assert memory.indexing_queued_at >= before - timedelta(seconds=1)

    def test_a_requeued_memory_waits_the_full_delay_again(self, owner):
        self.memory(owner, queued_ago=400)
        assert len(indexing_lifecycle.requeue_stale(MEMORIES)) == 1
        assert indexing_lifecycle.requeue_stale(MEMORIES) == []

    def test_the_delay_is_a_setting(self, owner, settings):
        memory = self.memory(owner, queued_ago=100)
        assert indexing_lifecycle.requeue_stale(MEMORIES) == []
        settings.GNOSEM_REQUEUE_AFTER_SECONDS = 60
        assert indexing_lifecycle.requeue_stale(MEMORIES) == [memory.pk]


class TestFairIndexing:
    """The worker serves owners in turn: one owner's import does not delay another's
    new memory, and a batch that fails does not spend other owners' attempts."""

    def import_many(self, owner, count: int) -> list[int]:
        document = {
            "format": FORMAT,
            "version": VERSION,
            "memories": [
                {"content": f"Imported note {i}.", "created_at": f"2024-01-01T{i // 60:02d}:{i % 60:02d}:00Z"}
                for i in range(count)
            ],
        }
        import_memories(owner=owner, document=document)
        return list(Memory.objects.filter(space__personal_of=owner).order_by("pk").values_list("pk", flat=True))

    def test_another_owners_new_memory_is_in_the_first_batch_after_a_large_import(self, owner, stranger):
        imported = self.import_many(owner, 300)
        new = services.memory_write(owner=stranger, content="Remember: the dentist moved to Thursday.")
        # The importer's first queued task runs first, with a small batch: its first claim takes the
        # other owner's memory in turn, and a second claim the last of its own eight.
        assert services.memories_index(memory_ids=imported[:8], batch_size=8) == 16
        assert Memory.objects.get(pk=new.pk).indexing_status == IndexingStatus.INDEXED
        indexed = Memory.objects.filter(space__personal_of=owner, indexing_status=IndexingStatus.INDEXED)
        assert indexed.count() == 15
        assert set(imported[:8]) <= set(indexed.values_list("pk", flat=True))
        hits = search_hybrid(owner=stranger, query="when is the dental appointment?")
        assert hits[0].memory == new and "vector" in hits[0].signals

    def test_waiting_owners_take_turns_oldest_first(self, owner, stranger, django_user_model):
        third = django_user_model.objects.create_user(username="third", email="third@example.com")
        waiting = {
            user.pk: [services.memory_write(owner=user, content=f"{user} {i}").pk for i in range(5)]
            for user in (owner, stranger, third)
        }
        claimed = [memory.pk for memory in services._claim_for_indexing(None, 6)]
        assert sorted(claimed) == sorted(ids for user_ids in waiting.values() for ids in user_ids[:2])

    def test_the_claim_stays_first_for_the_memory_a_task_asks_for(self, owner, stranger):
        services.memory_write(owner=stranger, content="queued first")
        asked = services.memory_write(owner=owner, content="asked for")
        assert services._claim_for_indexing(asked.pk, 1)[0].pk == asked.pk


def test_retrying_failed_memories_works_in_batches_and_reports_progress(owner, monkeypatch, failed_memory):
    monkeypatch.setattr(queue, "CLAIM_MEMORIES", 4)  # batches of four memories
    memories = [failed_memory(owner, f"note {i}") for i in range(6)]
    steps: list[int] = []
    assert indexing_lifecycle.retry_failed(MEMORIES, owner=owner, progress=steps.append) == 6
    assert steps == [4, 2]
    assert set(Memory.objects.filter(pk__in=[m.pk for m in memories]).values_list("indexing_status", flat=True)) == {
        IndexingStatus.PENDING
    }


def test_the_indexing_lease_is_read_from_settings_when_a_worker_claims(owner, settings):
    settings.GNOSEM_INDEXING_LEASE_SECONDS = 1_234
    memory = services.memory_write(owner=owner, content="claimed under a long lease")
    services._claim_for_indexing(memory.pk, 1)
    memory.refresh_from_db()
    assert timedelta(seconds=1_200) < memory.indexing_lease_until - timezone.now() <= timedelta(seconds=1_234)
