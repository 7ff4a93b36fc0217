"""Which embedding models a memory's vectors are made with, and changing the model (docs/design.md §3).

Search reads the vectors of the serving model (`ServingModel`, one row shared by every process).
When GNOSEM_EMBEDDING_MODEL names another model:
- workers store the vectors of both models for every memory they index, so nothing written
  meanwhile is missing from either;
- `manage.py reembedmemories` gives every other indexed memory the new model's vectors, batch by
  batch (an interrupted run goes on where it stopped), then switches search to the new model and
  drops the old vectors.
Until that switch, search embeds queries with the old model and finds every memory by meaning.
"""

from django.db import connection, transaction
from django.db.models import Exists, OuterRef, QuerySet
from django.utils import timezone
from pgvector import HalfVector
from pgvector.psycopg.halfvec import register_halfvec_info
from psycopg.types import TypeInfo

from memories.indexing import embedding, lifecycle
from memories.indexing.chunking import Span
from memories.indexing.sequences import embedding_pieces
from memories.models import Chunk, IndexingStatus, Memory, Note, NoteChunk, ServingModel


class ServingModelChanged(RuntimeError):
    """Search switched models while a worker embedded: its vectors lack the new serving model's."""


def serving_model_name() -> str:
    """The model search embeds queries with: the recorded one, or the configured one while no
    memory has been indexed yet."""
    name = ServingModel.objects.filter(pk=1).values_list("name", flat=True).first()
    return name or embedding.configured_model_name()


def indexing_embedders() -> list[embedding.AnyEmbedder]:
    """The configured model, plus the serving one while they differ. The very first indexing
    records the configured model as the serving one."""
    configured = embedding.get_embedder()
    serving, _ = ServingModel.objects.get_or_create(pk=1, defaults={"name": configured.name, "since": timezone.now()})
    if serving.name == configured.name:
        return [configured]
    return [configured, embedding.get_embedder(serving.name)]


def embed_memories(
    memories: list[Memory],
    embedders: list[embedding.AnyEmbedder],
    pieces: dict[int, list[tuple[Span, str]]] | None = None,
) -> list[Chunk]:
    """Unsaved chunks of these memories for each model: their pieces (`embedding_pieces`, unless
    given) embedded."""
    pieces = embedding_pieces(memories) if pieces is None else pieces
    texts = [text for memory in memories for _, text in pieces[memory.pk]]
    chunks = []
    for embedder in embedders:
        vectors = iter(embedder.embed(texts))
        chunks += [
            Chunk(
                memory_id=memory.pk,
                space_id=memory.space_id,
                position=position,
                start=span.start,
                end=span.end,
                model=embedder.name,
                dimension=embedder.dimension,
                embedding=next(vectors),
            )
            for memory in memories
            for position, (span, _) in enumerate(pieces[memory.pk])
        ]
    return chunks


_COPY_CHUNKS_SQL = """
    COPY memories_chunk (memory_id, space_id, position, start, "end", model, dimension, embedding)
    FROM STDIN (FORMAT BINARY)
"""
_CHUNK_COLUMN_TYPES = ["bigint", "bigint", "smallint", "integer", "integer", "varchar", "smallint", "halfvec"]


def chunks_copy(chunks: list[Chunk]) -> None:
    """Insert these unsaved chunks with one binary COPY: each vector goes as its half-precision
    bytes, not as the text of its numbers that an INSERT's parameters would need."""
    if not chunks:
        return
    with connection.cursor() as cursor:
        psycopg_cursor = cursor.cursor
        register_halfvec_info(psycopg_cursor, TypeInfo.fetch(psycopg_cursor.connection, "halfvec"))
        with psycopg_cursor.copy(_COPY_CHUNKS_SQL) as copy:
            copy.set_types(_CHUNK_COLUMN_TYPES)
            for chunk in chunks:
                copy.write_row(
                    (
                        chunk.memory_id,
                        chunk.space_id,
                        chunk.position,
                        chunk.start,
                        chunk.end,
                        chunk.model,
                        chunk.dimension,
                        HalfVector(chunk.embedding),
                    )
                )


def check_serving_model_among(chunks: list[Chunk]) -> None:
    """Inside the transaction that stores `chunks`: hold the serving model for its duration (a
    switch waits for it) and raise ServingModelChanged when they lack that model's vectors."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM memories_servingmodel WHERE id = 1 FOR SHARE")
        row = cursor.fetchone()
    if chunks and row and row[0] not in {chunk.model for chunk in chunks}:
        raise ServingModelChanged(f"search switched to {row[0]} while these memories were embedded")


def memories_missing_vectors(model_name: str) -> QuerySet[Memory]:
    """Indexed memories without vectors of this model, in id order."""
    with_vectors = Chunk.objects.filter(memory=OuterRef("pk"), model=model_name)
    return Memory.objects.filter(indexing_status=IndexingStatus.INDEXED).exclude(Exists(with_vectors)).order_by("pk")


def reembed_batch(memories: list[Memory], embedder: embedding.AnyEmbedder) -> int:
    """Add `embedder`'s vectors to these memories, keeping their others. Memories edited or
    deleted meanwhile are skipped: the worker indexes their new content with every model.
    Returns how many got vectors."""
    chunks = embed_memories(memories, [embedder])
    embedded_content = {memory.pk: memory.content for memory in memories}
    with transaction.atomic():
        current = Memory.objects.select_for_update().filter(
            pk__in=embedded_content, indexing_status=IndexingStatus.INDEXED
        )
        unchanged = {memory.pk for memory in current if memory.content == embedded_content[memory.pk]}
        Chunk.objects.bulk_create([chunk for chunk in chunks if chunk.memory_id in unchanged], ignore_conflicts=True)
    return len(unchanged)


def switch_serving_model(name: str, *, keep_old: bool = False) -> int | None:
    """Make `name` the serving model once every indexed memory has its vectors and, unless
    `keep_old`, drop every other model's vectors. Returns how many vectors were dropped; None,
    changing nothing, while some memory still lacks `name`'s vectors."""
    with transaction.atomic():
        # Wait for workers storing chunks (check_serving_model_among): their memories count below.
        ServingModel.objects.select_for_update().filter(pk=1).first()
        if memories_missing_vectors(name).exists():
            return None
        ServingModel.objects.update_or_create(pk=1, defaults={"name": name, "since": timezone.now()})
        _requeue_notes_without(name)
        return 0 if keep_old else Chunk.objects.exclude(model=name).delete()[0]


def _requeue_notes_without(model_name: str) -> None:
    """Queue the indexed notes without `model_name`'s vectors to be embedded again (search reads
    that model's passages from now on)."""
    with_vectors = NoteChunk.objects.filter(note=OuterRef("pk"), model=model_name)
    stale = Note.objects.filter(indexing_status=IndexingStatus.INDEXED).exclude(Exists(with_vectors))
    lifecycle.queue_again(lifecycle.NOTES, list(stale.values_list("pk", flat=True)))
