"""What a memory was read in context of is forgotten with it.

A short memory written minutes after another by the same client is also embedded as
"predecessor + itself" (memories.indexing.sequences). Deleting or changing the predecessor must not
leave its meaning in the successor's vectors.
"""

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from accounts.spaces import personal_space_of
from memories import services
from memories.indexing import vectors
from memories.indexing.embedding import get_embedder
from memories.indexing.sequences import embedding_pieces
from memories.models import Chunk, IndexingStatus, Memory
from memories.search.pipeline import search_hybrid
from memories.search.signals import vector_ranking
from memories.selectors import MemoryFilters
from memories.transfer.document import FORMAT, VERSION
from memories.transfer.importing import import_memories
from tests.memories.stored import with_text

START = datetime(2025, 5, 6, 14, tzinfo=UTC)
SECRET = "The secret acquisition target is Nordwind Robotics."
REPLY = "Yes, and the board approved it."
QUESTION = "which company are we acquiring?"
# Other sessions (hours apart): each matches the question better than the reply alone does.
DISTRACTORS = [
    "Our company offsite is planned for September in Lisbon.",
    "We are hiring two backend engineers this quarter.",
    "The new laptops for the design team arrive on Monday.",
]


def write(owner, content: str, *, seconds: float, written_by: str = "claude") -> Memory:
    return services.memory_write(
        owner=owner, content=content, written_by=written_by, created_at=START + timedelta(seconds=seconds)
    )


def index_all() -> None:
    while services.memories_index(memory_ids=[]):
        pass


def similarity(text: str) -> float:
    vectors = get_embedder().embed([QUESTION, text])
    return float(vectors[0] @ vectors[1])


def vector_score(owner, memory: Memory) -> float | None:
    """The memory's similarity to the question as the vector signal scores it (its best chunk)."""
    ranked = vector_ranking(
        space_ids=[personal_space_of(owner).pk],
        query_vector=get_embedder().embed([QUESTION])[0],
        model=get_embedder().name,
        filters=MemoryFilters(),
        limit=10,
    )
    return next((item.score for item in ranked if item.memory_id == memory.pk), None)


def top_three(owner) -> list[int]:
    return [hit.memory.pk for hit in search_hybrid(owner=owner, query=QUESTION, top_k=3)]


@pytest.fixture
def conversation(owner) -> tuple[Memory, Memory]:
    """The secret, the reply written seconds after it (read in its context), and other sessions."""
    secret = write(owner, SECRET, seconds=0)
    reply = write(owner, REPLY, seconds=20)
    for hours, content in enumerate(DISTRACTORS, start=2):
        write(owner, content, seconds=hours * 3600)
    index_all()
    # The premise: the reply's in-context reading answers the question better than anything.
    assert Chunk.objects.filter(memory=reply).count() == 2
    assert vector_score(owner, reply) > similarity(REPLY) + 0.15
    assert reply.pk in top_three(owner)
    return secret, reply


def assert_reply_reads_alone(owner, reply: Memory) -> None:
    """The reply scores what its own words earn, and falls out of the top results."""
    assert vector_score(owner, reply) == pytest.approx(similarity(REPLY), abs=3e-3)
    assert reply.pk not in top_three(owner)


def test_deleting_a_memory_forgets_the_reading_of_the_one_written_after_it_at_once(owner, conversation):
    secret, reply = conversation
    services.memory_delete(owner=owner, public_id=secret.public_id)

    # Right away, before any worker runs: the in-context reading is gone, the reply's own stays.
    chunks = Chunk.objects.filter(memory=reply)
    assert [(chunk.position, chunk.start) for chunk in chunks] == [(0, 0)]
    assert np.allclose(np.array(chunks[0].embedding), get_embedder().embed([REPLY])[0], atol=1e-3)
    reply.refresh_from_db()
    assert reply.indexing_status == IndexingStatus.PENDING
    assert_reply_reads_alone(owner, reply)

    index_all()  # re-embedded: no predecessor any more, so no in-context reading
    reply.refresh_from_db()
    assert reply.indexing_status == IndexingStatus.INDEXED
    assert Chunk.objects.filter(memory=reply).count() == 1
    assert_reply_reads_alone(owner, reply)


def test_a_successor_is_read_after_the_memory_before_the_deleted_one(owner):
    question = write(owner, "Did Ana like the pottery class?", seconds=0)
    secret = write(owner, SECRET, seconds=30)
    reply = write(owner, REPLY, seconds=60)
    index_all()
    services.memory_delete(owner=owner, public_id=secret.public_id)
    index_all()
    in_context = Chunk.objects.get(memory=reply, position=1)
    expected = get_embedder().embed([f"{question.content}\n{REPLY}"])[0]
    assert np.allclose(np.array(in_context.embedding), expected, atol=1e-3)


def test_editing_a_memory_forgets_the_reading_of_the_one_written_after_it(owner, conversation):
    secret, reply = conversation
    services.memory_update(
        owner=owner, public_id=secret.public_id, content="The printer on the third floor is out of toner."
    )
    # The old reading stops matching at once (the edited memory's own old vectors serve until
    # re-embedded, as any edit's do).
    assert not Chunk.objects.filter(memory=reply, position=1).exists()
    reply.refresh_from_db()
    assert reply.indexing_status == IndexingStatus.PENDING
    assert vector_score(owner, reply) == pytest.approx(similarity(REPLY), abs=3e-3)

    index_all()
    # Read again in the context of the new text, which does not answer the question.
    in_context = Chunk.objects.get(memory=reply, position=1)
    expected = get_embedder().embed([f"The printer on the third floor is out of toner.\n{REPLY}"])[0]
    assert np.allclose(np.array(in_context.embedding), expected, atol=1e-3)
    assert_reply_reads_alone(owner, reply)


def test_moving_a_memory_to_another_client_forgets_the_reading_of_its_old_successor(owner, conversation):
    secret, reply = conversation
    services.memory_update(owner=owner, public_id=secret.public_id, written_by="cursor")
    assert not Chunk.objects.filter(memory=reply, position=1).exists()
    index_all()
    assert Chunk.objects.filter(memory=reply).count() == 1  # no predecessor from its own client now
    assert_reply_reads_alone(owner, reply)


def test_moving_a_memory_to_another_client_gives_that_clients_next_memory_its_context(owner):
    secret = write(owner, SECRET, seconds=0, written_by="cursor")
    reply = write(owner, REPLY, seconds=20)
    index_all()
    assert Chunk.objects.filter(memory=reply).count() == 1
    services.memory_update(owner=owner, public_id=secret.public_id, written_by="claude")
    index_all()
    in_context = Chunk.objects.get(memory=reply, position=1)
    assert np.allclose(np.array(in_context.embedding), get_embedder().embed([f"{SECRET}\n{REPLY}"])[0], atol=1e-3)


def test_changing_only_tags_leaves_the_successor_alone(owner, conversation, django_capture_on_commit_callbacks):
    secret, reply = conversation
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        services.memory_update(owner=owner, public_id=secret.public_id, tags=["deal"])
    assert callbacks == []
    reply.refresh_from_db()
    assert reply.indexing_status == IndexingStatus.INDEXED
    assert Chunk.objects.filter(memory=reply).count() == 2


def test_deleting_a_memory_in_another_session_leaves_the_reply_alone(owner, conversation):
    _, reply = conversation
    other = with_text(DISTRACTORS[0], space__personal_of=owner)
    services.memory_delete(owner=owner, public_id=other.public_id)
    reply.refresh_from_db()
    assert reply.indexing_status == IndexingStatus.INDEXED
    assert Chunk.objects.filter(memory=reply).count() == 2


def test_a_worker_that_embedded_the_old_reading_stores_nothing_for_the_successor(owner):
    secret = write(owner, SECRET, seconds=0)
    index_all()
    reply = write(owner, REPLY, seconds=20)
    claimed = services._claim_for_indexing(reply.pk, 8)  # a worker reads the reply in the secret's context...
    pieces = embedding_pieces(claimed)
    chunks = vectors.embed_memories(claimed, vectors.indexing_embedders(), pieces)
    services.memory_delete(owner=owner, public_id=secret.public_id)  # ...which is deleted meanwhile
    assert services._store_chunks(claimed, chunks, pieces) == set()
    assert not Chunk.objects.filter(memory=reply).exists()
    # The task the deletion queued need not wait for that worker's lease: it embeds the reply alone.
    assert services.memories_index(memory_ids=[reply.pk]) == 1
    assert Chunk.objects.filter(memory=reply).count() == 1


def test_a_memory_written_into_a_sequence_becomes_its_successors_context(owner):
    question = write(owner, "Did Ana like the pottery class?", seconds=0)
    reply = write(owner, REPLY, seconds=60)
    index_all()
    write(owner, SECRET, seconds=30)  # written later, dated between the two
    reply.refresh_from_db()
    assert reply.indexing_status == IndexingStatus.PENDING
    index_all()
    in_context = Chunk.objects.get(memory=reply, position=1)
    assert np.allclose(np.array(in_context.embedding), get_embedder().embed([f"{SECRET}\n{REPLY}"])[0], atol=1e-3)
    assert Chunk.objects.filter(memory=question).count() == 1


def test_an_import_that_lands_before_an_embedded_memory_requeues_it(owner):
    reply = write(owner, REPLY, seconds=60)
    index_all()
    report = import_memories(
        owner=owner,
        document={
            "format": FORMAT,
            "version": VERSION,
            "memories": [{"content": SECRET, "written_by": "claude", "created_at": START.isoformat()}],
        },
    )
    assert report.imported == 1
    reply.refresh_from_db()
    assert reply.indexing_status == IndexingStatus.PENDING
    index_all()
    in_context = Chunk.objects.get(memory=reply, position=1)
    assert np.allclose(np.array(in_context.embedding), get_embedder().embed([f"{SECRET}\n{REPLY}"])[0], atol=1e-3)
