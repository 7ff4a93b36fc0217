"""Memories and their embedded chunks.

A memory's texts are stored sealed under its space's key (memories.encryption.fields); what
search needs of them (the blind full-text vector and its length, the keyed digest, the lengths)
is derived as the memory is saved (memories.encryption.derived), and the token estimates are generated
by PostgreSQL from the lengths, so no writer can let them drift. The database enforces what it
can: a length under the size limit, known statuses, one chunk per (memory, model, position).
"""

import uuid
from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.functions import RandomUUID
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVectorField
from django.db import connection, models
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import F, Func, Q
from django.db.models.functions import Now
from django.db.models.lookups import LessThanOrEqual
from pgvector.django import HalfVectorField

from accounts.models import MAX_SPACE_NAME_CHARS
from memories.encryption.fields import SealedListField, SealedModel, SealedTextField, UnreadableText
from memories.encryption.keys import current_key
from memories.vocabulary import KINDS

MAX_CONTENT_CHARS = 50_000
MAX_TAGS = 20
MAX_TAG_CHARS = 64
MAX_WRITTEN_BY_CHARS = 100
TAG_PATTERN = r"^[a-z0-9][a-z0-9._:/-]*$"
COMPRESSION_MIN_CHARS = 400
# Other clients recorded as having written a memory's text again.
MAX_ALSO_WRITTEN_BY = 20
# Earlier versions kept per memory (memory_history); the oldest go first beyond this.
MAX_REVISIONS_PER_MEMORY = 100


class IndexingStatus(models.TextChoices):
    PENDING = "pending"
    INDEXED = "indexed"
    FAILED = "failed"


class CompressionStatus(models.TextChoices):
    PENDING = "pending"
    COMPRESSED = "compressed"
    SKIPPED_SHORT = "skipped_short"
    NOT_SHORTER = "not_shorter"
    MALFORMED = "malformed"
    LLM_ERROR = "llm_error"
    DISABLED = "disabled"


class TokenEstimate(Func):
    """ceil(char_length / 4) of a plain text column: the token estimate the design uses everywhere,
    as earlier migrations generate it (sealed texts carry their lengths, `TokensOfLength`)."""

    template = "((char_length(%(expressions)s) + 3) / 4)"
    output_field = models.IntegerField()


class TokensOfLength(Func):
    """The same estimate from a stored length: ceil(characters / 4)."""

    template = "((%(expressions)s + 3) / 4)"
    output_field = models.IntegerField()


class TextLengthField(models.PositiveIntegerField):
    """The length in characters of another field's text (null with it), set whenever the row is
    written: a sealed text's length, which the database cannot read. A text that did not open
    keeps the length stored with it."""

    def __init__(self, *args: Any, of: str = "content", **kwargs: Any) -> None:
        self.of = of
        super().__init__(*args, **kwargs)

    def deconstruct(self) -> tuple[str, str, Sequence[Any], dict[str, Any]]:
        name, path, args, kwargs = super().deconstruct()
        kwargs["of"] = self.of
        return name, path, args, kwargs

    def pre_save(self, model_instance: models.Model, add: bool) -> int | None:
        text = getattr(model_instance, self.of)
        if isinstance(text, UnreadableText):
            return getattr(model_instance, self.attname)
        length = None if text is None else len(text)
        setattr(model_instance, self.attname, length)
        return length


class ContentTsvector(Func):
    """The full-text vector of a plain text column: `gnosem_search_vector` (migration 0005), as
    earlier migrations generate it (sealed texts carry a blind one, memories.encryption.blind_index)."""

    function = "gnosem_search_vector"
    output_field = SearchVectorField()


class BitStringField(models.Field):
    """A PostgreSQL bit string of any length (`bit varying`)."""

    def db_type(self, connection: BaseDatabaseWrapper) -> str:
        return "bit varying"


class VectorSignature(Func):
    """A vector's thermometer code (`gnosem_vector_signature`, migration 0011): three bits a
    dimension, set where it exceeds -a, 0 and a (a = 0.674 / sqrt(dimensions), the quartiles of a
    unit vector's coordinates). Hamming distance between two codes is the L1 distance of the
    quantised vectors, a cheap first pass for cosine search; queries go through the same function."""

    function = "gnosem_vector_signature"
    output_field = BitStringField()


class ContentDigest(Func):
    """md5 of a text with its case folded and its white space runs made single spaces
    (`gnosem_content_digest`, migration 0012): the plain digest earlier migrations generate.
    Memories now carry a keyed digest (memories.encryption.derived.text_digest)."""

    function = "gnosem_content_digest"
    output_field = models.CharField(max_length=32)


class TsvectorTokenCount(Func):
    """Number of token occurrences in a tsvector: the document length in BM25 (the function is
    defined in migration 0001; earlier migrations generate lengths with it)."""

    function = "gnosem_tsvector_token_count"
    output_field = models.IntegerField()


class Memory(SealedModel):
    # Unique per space, not across spaces: an import keeps every id its space does not already
    # use, so nothing in its outcome depends on (or reveals) other spaces' memories.
    public_id = models.UUIDField(default=uuid.uuid4, db_index=True, editable=False)
    # The space it lives in, and the user who wrote it there (kept, as null, once their account is gone).
    space = models.ForeignKey("accounts.Space", on_delete=models.CASCADE, related_name="+")
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    content = SealedTextField(row=("public_id",))
    # NULL, not "": "no compressed form" must differ from an (impossible) empty one.
    content_optimized = SealedTextField(null=True, blank=True, row=("public_id",))
    content_chars = TextLengthField(of="content")
    optimized_chars = TextLengthField(null=True, blank=True, of="content_optimized")
    tags = SealedListField(blank=True, row=("public_id",))
    # The client that wrote it ("": none named).
    written_by = SealedTextField(blank=True, default="", row=("public_id",))
    created_at = models.DateTimeField(db_index=True)
    updated_at = models.DateTimeField()
    # The other clients that wrote this same text again (memory_write returned this memory to them).
    also_written_by = SealedListField(blank=True, row=("public_id",))
    # Standing context: session_start lists pinned memories first.
    pinned = models.BooleanField(default=False)
    # A correction's successor: a superseded memory leaves search, counts and session_start by
    # default. The successor's deletion hands it on to the successor's own successor (or none).
    superseded_by = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="supersedes"
    )
    # The older memory this one says the same as, in other words (memories.hygiene.near_duplicates): search
    # shows the two once. Merging hides this one behind it (superseded_by = duplicate_of).
    duplicate_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="near_duplicates"
    )
    # Provenance of a memory shared (copied or moved) here from another space (memories.sharing):
    # that space's name at the time ("" for a memory written here) and the user who shared it
    # (null once their account is gone).
    shared_from = models.CharField(max_length=MAX_SPACE_NAME_CHARS, blank=True, default="")
    shared_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    indexing_status = models.CharField(max_length=16, choices=IndexingStatus.choices, default=IndexingStatus.PENDING)
    indexing_error = models.TextField(blank=True, default="")
    indexing_attempts = models.PositiveIntegerField(default=0)
    # When the memory last entered the queue; the sweep re-queues what waits too long.
    indexing_queued_at = models.DateTimeField(null=True, blank=True)
    # Set while a worker embeds the memory; an expired lease means that worker died.
    indexing_lease_until = models.DateTimeField(null=True, blank=True)
    compression_status = models.CharField(
        max_length=16, choices=CompressionStatus.choices, default=CompressionStatus.PENDING
    )
    compression_error = models.TextField(blank=True, default="")
    # While compression is pending: when its task is due (now, or a retry's time); the sweep
    # re-queues memories overdue by more than the re-queue delay (a lost task, a dead worker).
    compression_due_at = models.DateTimeField(null=True, blank=True)

    tokens_raw = models.GeneratedField(
        expression=TokensOfLength("content_chars"), output_field=models.IntegerField(), db_persist=True
    )
    tokens_optimized = models.GeneratedField(
        expression=TokensOfLength("optimized_chars"), output_field=models.IntegerField(null=True), db_persist=True
    )
    # Derived from the text and tags as they are saved (memories.encryption.derived), under the space
    # key of version `key_version`: the blind full-text vector and its token count (BM25's length),
    # the keyed digest of the text (case and spacing aside), whether it ends with a question mark,
    # each tag's keyed digest (what tag filters match), and the keyed digests of its client and of
    # the other clients that wrote it (what the client filter, session_start and sequences compare).
    key_version = models.PositiveIntegerField()
    search_vector = SearchVectorField()
    search_length = models.IntegerField()
    content_digest = models.CharField(max_length=32)
    is_question = models.BooleanField()
    tag_digests = ArrayField(models.CharField(max_length=32), default=list, blank=True)
    written_by_digest = models.CharField(max_length=32)
    also_written_by_digests = ArrayField(models.CharField(max_length=32), default=list, blank=True)

    # Not stored: set by memory_write on the memory it returns when the text was already there.
    written_again = False
    # Not stored: the space and text the derived columns were made from (memories.encryption.derived).
    derived_from: tuple[int, str] | None = None

    class Meta:
        indexes = [
            models.Index(fields=["space", "-created_at", "-id"], name="memory_space_newest"),
            # A memory's predecessor and successor by the same client (memories.indexing.sequences):
            # one probe each, whatever the planner believes of a space a burst of writes just filled.
            models.Index(fields=["space", "written_by_digest", "-created_at", "-id"], name="memory_client_sequence"),
            models.Index(fields=["indexing_status", "indexing_queued_at"], name="memory_indexing_queue"),
            # The indexing claim serves spaces in turn (services._CLAIM_SQL): which wait, and each one's queue.
            models.Index(
                fields=["space", "indexing_queued_at", "id"],
                condition=Q(indexing_status="pending"),
                name="memory_pending_by_space",
            ),
            models.Index(
                fields=["compression_due_at"], condition=Q(compression_status="pending"), name="memory_compression_due"
            ),
            # btree_gin: the space and the words in one index, so a word search reads only the space's rows.
            GinIndex(fields=["space", "search_vector"], name="memory_space_search_vector"),
            GinIndex(fields=["tag_digests"], name="memory_tags"),
            # memory_write finds the same text already written.
            models.Index(fields=["space", "content_digest"], name="memory_space_content_digest"),
            # session_start reads the pinned memories of each space.
            models.Index(fields=["space"], condition=Q(pinned=True), name="memory_space_pinned"),
            # Counting a space's current memories reads this index alone (session_start, memory_count).
            models.Index(fields=["space"], condition=Q(superseded_by__isnull=True), name="memory_space_current"),
        ]
        constraints = [
            models.UniqueConstraint(fields=["space", "public_id"], name="memory_public_id_unique_per_space"),
            models.CheckConstraint(
                condition=Q(content_chars__gt=0, content_chars__lte=MAX_CONTENT_CHARS), name="memory_content_size"
            ),
            models.CheckConstraint(
                condition=Q(indexing_status__in=IndexingStatus.values), name="memory_indexing_status"
            ),
            models.CheckConstraint(
                condition=Q(compression_status__in=CompressionStatus.values), name="memory_compression_status"
            ),
            models.CheckConstraint(
                condition=LessThanOrEqual(Func(F("tag_digests"), function="cardinality"), MAX_TAGS),
                name="memory_tags_count",
            ),
            models.CheckConstraint(condition=~Q(superseded_by=F("id")), name="memory_not_superseded_by_itself"),
            models.CheckConstraint(condition=~Q(duplicate_of=F("id")), name="memory_not_duplicate_of_itself"),
        ]

    def __str__(self) -> str:
        return f"{self.public_id} (space {self.space_id})"

    @classmethod
    def from_db(cls, db: str | None, field_names: Any, values: Any, **kwargs: Any) -> Any:
        memory = super().from_db(db, field_names, values, **kwargs)
        if "content" in memory.__dict__ and "space_id" in memory.__dict__:
            memory.derived_from = (memory.space_id, memory.content)
        return memory

    @classmethod
    def rekeyed(cls, rows: Sequence[SealedModel]) -> Sequence[SealedModel]:
        from memories.encryption.derived import derive_stored_forms

        derive_stored_forms(rows)  # type: ignore[arg-type]  # rows of this model
        return rows

    def save(self, *args: Any, **kwargs: Any) -> None:
        """Save, deriving the search columns again when the text or the space changed, and the
        tags' and clients' digests when those are saved."""
        from memories.encryption.derived import (
            DERIVED_FIELDS,
            DIGESTED_FIELDS,
            derive_digests,
            derive_stored_forms,
            derived_changed,
        )

        update_fields = None if kwargs.get("update_fields") is None else set(kwargs["update_fields"])
        if update_fields is not None:  # a text's length is written with it
            update_fields |= {"content_chars"} if "content" in update_fields else set()
            update_fields |= {"optimized_chars"} if "content_optimized" in update_fields else set()
        if derived_changed(self) and (update_fields is None or {"content", "space", "space_id"} & update_fields):
            derive_stored_forms([self])
            if update_fields is not None:
                update_fields |= set(DERIVED_FIELDS)
        elif update_fields is None or set(DIGESTED_FIELDS) & update_fields:
            derive_digests([self])
            if update_fields is not None:
                update_fields |= set(DIGESTED_FIELDS.values())
        if update_fields is not None:
            kwargs["update_fields"] = update_fields
        super().save(*args, **kwargs)


class MemoryRevision(SealedModel):
    """A memory as it was before an update changed its text, tags or client (memory_history): what
    an assistant overwrites is never lost. The newest MAX_REVISIONS_PER_MEMORY are kept. Sealed
    under the key of the memory's space, which it repeats."""

    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="revisions")
    space = models.ForeignKey("accounts.Space", on_delete=models.CASCADE, related_name="+", db_index=False)
    content = SealedTextField(row=("memory_id", "valid_from"))
    content_chars = TextLengthField(of="content")
    tags = SealedListField(blank=True, row=("memory_id", "valid_from"))
    written_by = SealedTextField(blank=True, default="", row=("memory_id", "valid_from"))
    # When this version took effect (the memory's creation or the update before) and when it was replaced.
    valid_from = models.DateTimeField()
    replaced_at = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["memory", "-replaced_at", "-id"], name="revision_memory_newest")]

    def __str__(self) -> str:
        return f"revision of memory {self.memory_id} replaced at {self.replaced_at}"


class KeptApart(models.Model):
    """Two memories a writer of their space judged different although they read alike: never linked as near-duplicates
    again. The lower id comes first."""

    first = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="+")
    second = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="+")

    class Meta:
        db_table = "memories_kept_apart"
        constraints = [
            models.UniqueConstraint(fields=["first", "second"], name="kept_apart_once"),
            models.CheckConstraint(condition=Q(first__lt=F("second")), name="kept_apart_in_order"),
        ]

    def __str__(self) -> str:
        return f"memories {self.first_id} and {self.second_id} kept apart"


# The extractor's kinds ("person", ...), as choices: EntityKind.values, EntityKind.choices.
EntityKind = models.TextChoices("EntityKind", [(kind.upper(), kind) for kind in KINDS])  # type: ignore[call-overload]  # the functional API with pairs, which django-stubs do not type


class Entity(SealedModel):
    """Something a space's memories mention (a person, project, place, technology, identifier,
    ...), once per normalised key (memories.entities.extraction.entity_key): the graph's nodes
    (memories.graph.linking). Its key and name are sealed under its space's key; the row is found
    by the key's keyed digest (memories.encryption.derived.entity_digest) under `key_version`."""

    # Its id on pages and in explore_graph: random rather than the row's, whose sequence all spaces
    # share. Drawn by the database, since memories.graph.linking creates entities in SQL.
    public_id = models.UUIDField(db_default=RandomUUID(), editable=False)
    space = models.ForeignKey("accounts.Space", on_delete=models.CASCADE, related_name="+")
    key_digest = models.CharField(max_length=64)
    key_version = models.PositiveIntegerField()
    # The normalised key (at most MAX_ENTITY_KEY_CHARS), and the name as first written (at most
    # MAX_ENTITY_NAME_CHARS): both bound to the digest, which the space holds once.
    key = SealedTextField(row=("key_digest",))
    name = SealedTextField(row=("key_digest",))
    kind = models.CharField(max_length=16, choices=EntityKind.choices)
    # When a memory last linked it (refreshed at most hourly); unmentioned entities are pruned after a day.
    linked_at = models.DateTimeField()

    class Meta:
        verbose_name_plural = "entities"
        constraints = [
            models.UniqueConstraint(fields=["space", "key_digest"], name="entity_unique_key_per_space"),
            models.UniqueConstraint(fields=["space", "public_id"], name="entity_public_id_unique_per_space"),
            models.CheckConstraint(condition=Q(kind__in=EntityKind.values), name="entity_kind"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.kind})"

    @classmethod
    def rekeyed(cls, rows: Sequence[SealedModel]) -> Sequence[SealedModel]:
        """Digest each key again under its space's current key. An entity whose key does not open
        goes (the graph is derived: relinking makes it again); one whose new digest another row of
        its space holds (made under the new key meanwhile) gives that row its mentions, and goes."""
        from memories.encryption.derived import entity_digest

        kept: list[SealedModel] = []
        for row in rows:
            assert isinstance(row, Entity)
            if isinstance(row.key, UnreadableText):
                row.delete()
                continue
            key = current_key(row.space_id)
            row.key_digest, row.key_version = entity_digest(key, row.key), key.version
            twin = Entity.objects.filter(space_id=row.space_id, key_digest=row.key_digest).exclude(pk=row.pk).first()
            if twin is None:
                kept.append(row)
                continue
            with connection.cursor() as cursor:
                for table, owner in (("memories_entity_mention", "memory_id"), ("memories_note_mention", "note_id")):
                    cursor.execute(
                        f"UPDATE {table} SET entity_id = %(twin)s WHERE entity_id = %(row)s "
                        f"AND {owner} NOT IN (SELECT {owner} FROM {table} WHERE entity_id = %(twin)s)",
                        {"twin": twin.pk, "row": row.pk},
                    )
            row.delete()
        return kept


class EntityMention(models.Model):
    """A memory mentions an entity. Two entities are linked by the memories mentioning both; a
    mention's `weight` (memories.graph.linking.SOURCE_WEIGHTS) says how it came about (`source`: a fact
    key such as "fact:PERSON", "tag", or "text").

    Whether its memory is current and when it was written are copies the database keeps (migration
    0033's triggers, on every insert here and every update of a memory), so that the graph reads an
    entity's mentions from one index without visiting the memories."""

    pk = models.CompositePrimaryKey("entity_id", "memory_id")
    entity = models.ForeignKey(Entity, on_delete=models.CASCADE, related_name="mentions")
    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="entity_mentions")
    source = models.CharField(max_length=32)
    weight = models.FloatField()
    memory_current = models.BooleanField(db_default=True, editable=False)
    memory_created_at = models.DateTimeField(db_default=Now(), editable=False)

    class Meta:
        db_table = "memories_entity_mention"
        indexes = [
            # A memory's entities (the primary key serves an entity's memories).
            models.Index(fields=["memory", "entity"], name="mention_memory_entity"),
            # An entity's mentions by current memories, newest first, everything the graph reads of
            # them included.
            models.Index(
                fields=["entity", "-memory_created_at"],
                include=["memory", "weight", "source"],
                condition=Q(memory_current=True),
                name="mention_current_by_entity",
            ),
        ]
        constraints = [models.CheckConstraint(condition=Q(weight__gt=0), name="mention_weight_positive")]

    def __str__(self) -> str:
        return f"memory {self.memory_id} mentions entity {self.entity_id} ({self.source})"


class EntityLink(models.Model):
    """A share of the link from one entity to another (both of one space): the memories and notes
    mentioning both, and their weight (each one's smaller mention weight). A link is the sum of its
    rows, and a row from an entity to itself counts the entity's own current memories and notes.

    The database adds the rows (migration 0034's triggers): every statement that changes mentions
    adds, for each pair of entities it links or unlinks, a row counting that change (negative for
    what it takes away), so writers only ever insert and never wait for one another. The minute
    sweep merges each changed link's rows into one (memories.graph.linking.links_merge)."""

    source = models.ForeignKey(
        Entity, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, related_name="+"
    )
    target = models.ForeignKey(
        Entity, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, related_name="+"
    )
    weight = models.FloatField()
    memories = models.IntegerField()
    notes = models.IntegerField()
    # Whether the sweep wrote it (the sum of the link's earlier rows), or a change did.
    merged = models.BooleanField(db_default=False)

    class Meta:
        db_table = "memories_entity_link"
        indexes = [
            # The links of an entity, or between two, summed from this index alone.
            models.Index(
                fields=["source", "target"], include=["weight", "memories", "notes"], name="entity_link_source_target"
            ),
            # What the sweep merges.
            models.Index(fields=["id"], condition=Q(merged=False), name="entity_link_unmerged"),
        ]

    def __str__(self) -> str:
        return f"entity {self.source_id} to {self.target_id}: {self.memories} memories, {self.notes} notes"


# A note's text: at most this many characters in any case (GNOSEM_NOTE_MAX_BYTES, at most 10 MB of
# UTF-8, is the limit writes are held to).
MAX_NOTE_CHARS = 10_000_000
MAX_NOTE_TITLE_CHARS = 200
MAX_NOTE_HEADING_CHARS = 200


class NoteFormat(models.TextChoices):
    MARKDOWN = "markdown"
    TEXT = "text"
    # Text taken from a PDF: shown as plain text.
    PDF = "pdf"


class Note(SealedModel):
    """A long document (a design doc, a runbook, meeting notes, a PDF's text) with a title and tags,
    searched passage by passage (memories.notes.services). Embedded asynchronously like a memory.
    Its title and text are sealed under its space's key (memories.encryption.fields); the database
    holds their lengths, and generates the token estimate from the text's."""

    public_id = models.UUIDField(default=uuid.uuid4, db_index=True, editable=False)
    # The space it lives in, and the user who wrote it there (kept, as null, once their account is gone).
    space = models.ForeignKey("accounts.Space", on_delete=models.CASCADE, related_name="+")
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    title = SealedTextField(row=("public_id",))
    content = SealedTextField(row=("public_id",))
    title_chars = TextLengthField(of="title")
    content_chars = TextLengthField(of="content")
    format = models.CharField(max_length=16, choices=NoteFormat.choices, default=NoteFormat.MARKDOWN)
    tags = SealedListField(blank=True, row=("public_id",))
    # The tags' keyed digests under the space key of version `key_version` (what tag filters match).
    key_version = models.PositiveIntegerField()
    tag_digests = ArrayField(models.CharField(max_length=32), default=list, blank=True)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    indexing_status = models.CharField(max_length=16, choices=IndexingStatus.choices, default=IndexingStatus.PENDING)
    indexing_error = models.TextField(blank=True, default="")
    indexing_attempts = models.PositiveIntegerField(default=0)
    # When the note last entered the queue; the sweep re-queues what waits too long.
    indexing_queued_at = models.DateTimeField(null=True, blank=True)
    tokens = models.GeneratedField(
        expression=TokensOfLength("content_chars"), output_field=models.IntegerField(), db_persist=True
    )

    # A note holds up to 10 MB: a key rotation re-seals at most ten at a time.
    rotation_batch = 10

    class Meta:
        indexes = [
            models.Index(fields=["space", "-updated_at", "-id"], name="note_space_newest"),
            models.Index(fields=["indexing_status", "indexing_queued_at"], name="note_indexing_queue"),
        ]
        constraints = [
            models.UniqueConstraint(fields=["space", "public_id"], name="note_public_id_unique_per_space"),
            models.CheckConstraint(
                condition=Q(title_chars__gt=0, title_chars__lte=MAX_NOTE_TITLE_CHARS), name="note_title_size"
            ),
            models.CheckConstraint(
                condition=Q(content_chars__gt=0, content_chars__lte=MAX_NOTE_CHARS), name="note_content_size"
            ),
            models.CheckConstraint(condition=Q(format__in=NoteFormat.values), name="note_format"),
            models.CheckConstraint(condition=Q(indexing_status__in=IndexingStatus.values), name="note_indexing_status"),
            models.CheckConstraint(
                condition=LessThanOrEqual(Func(F("tag_digests"), function="cardinality"), MAX_TAGS),
                name="note_tags_count",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.title} ({self.public_id})"

    @classmethod
    def rekeyed(cls, rows: Sequence[SealedModel]) -> Sequence[SealedModel]:
        from memories.encryption.derived import derive_note_tag_digests

        derive_note_tag_digests(rows)  # type: ignore[arg-type]  # rows of this model
        return rows

    def save(self, *args: Any, **kwargs: Any) -> None:
        """Save, digesting the tags again (under the space's current key) when they are saved."""
        from memories.encryption.derived import derive_note_tag_digests

        update_fields = None if kwargs.get("update_fields") is None else set(kwargs["update_fields"])
        if update_fields is None or "tags" in update_fields:
            derive_note_tag_digests([self])
            if update_fields is not None:
                kwargs["update_fields"] = update_fields | {"tag_digests", "key_version"}
        super().save(*args, **kwargs)


class NoteChunk(SealedModel):
    """One passage of a note (memories.notes.chunking) embedded with one model: its span in the
    note, the headings it sits under and the text searched (title, headings, passage), both sealed
    under the space's key, and that text's blind full-text vector (memories.encryption.blind_index),
    derived as passages are stored (memories.encryption.derived.derive_passage_vectors)."""

    note = models.ForeignKey(Note, on_delete=models.CASCADE, related_name="chunks")
    # The note's space, repeated so that search filters passages before reading any note.
    space = models.ForeignKey("accounts.Space", on_delete=models.CASCADE, related_name="+", db_index=False)
    position = models.PositiveIntegerField()
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()
    heading = SealedTextField(row=("note_id", "model", "position"))
    text = SealedTextField(row=("note_id", "model", "position"))
    model = models.CharField(max_length=200)
    dimension = models.PositiveSmallIntegerField()
    embedding = HalfVectorField()
    # The text's blind full-text vector, under the space key of version `key_version`.
    key_version = models.PositiveIntegerField()
    search_vector = SearchVectorField()

    class Meta:
        db_table = "memories_note_chunk"
        indexes = [
            models.Index(fields=["space", "model"], name="note_chunk_space_model"),
            GinIndex(fields=["space", "search_vector"], name="note_chunk_space_search"),
        ]
        constraints = [
            models.UniqueConstraint(fields=["note", "model", "position"], name="note_chunk_unique_position"),
            models.CheckConstraint(condition=Q(end__gt=F("start")), name="note_chunk_nonempty_span"),
        ]

    def __str__(self) -> str:
        return f"passage {self.position} of note {self.note_id} ({self.model})"

    @classmethod
    def rekeyed(cls, rows: Sequence[SealedModel]) -> Sequence[SealedModel]:
        from memories.encryption.derived import derive_passage_vectors

        derive_passage_vectors(rows)  # type: ignore[arg-type]  # rows of this model
        return rows


class NoteMention(models.Model):
    """A note mentions an entity (memories.graph.linking): the graph links entities through notes too."""

    pk = models.CompositePrimaryKey("entity_id", "note_id")
    entity = models.ForeignKey(Entity, on_delete=models.CASCADE, related_name="note_mentions")
    note = models.ForeignKey(Note, on_delete=models.CASCADE, related_name="entity_mentions")
    source = models.CharField(max_length=32)
    weight = models.FloatField()

    class Meta:
        db_table = "memories_note_mention"
        indexes = [models.Index(fields=["note", "entity"], name="note_mention_note_entity")]
        constraints = [models.CheckConstraint(condition=Q(weight__gt=0), name="note_mention_weight_positive")]

    def __str__(self) -> str:
        return f"note {self.note_id} mentions entity {self.entity_id} ({self.source})"


class Chunk(models.Model):
    """One embedded piece of a memory's raw content, for one embedding model.

    Vectors carry no fixed dimension in the column so that a second model's vectors can sit
    beside the first while everything is re-embedded; `dimension` records it per row. They are
    stored in half precision: half the bytes with the same nearest neighbours (docs/benchmarks.md,
    "Half-precision vectors"). Search ranks a space's chunks by `signature` first, read from an
    index, and compares the query with the vectors of the best few only (memories.search.signals).
    """

    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="chunks")
    # The memory's space, repeated so that search filters chunks before reading any memory.
    space = models.ForeignKey("accounts.Space", on_delete=models.CASCADE, related_name="+", db_index=False)
    position = models.PositiveSmallIntegerField()
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()
    model = models.CharField(max_length=200)
    dimension = models.PositiveSmallIntegerField()
    embedding = HalfVectorField()
    signature = models.GeneratedField(
        expression=VectorSignature("embedding"), output_field=BitStringField(), db_persist=True
    )

    class Meta:
        # The vector signal's first pass reads a space's signatures from the first index alone; the
        # near-duplicate check, which compares first chunks only, those of the second.
        indexes = [
            models.Index(
                fields=["space", "model"], include=["id", "memory_id", "signature"], name="chunk_space_model_signature"
            ),
            models.Index(
                fields=["space", "model"],
                include=["id", "memory_id", "signature"],
                condition=Q(position=0),
                name="chunk_first_signature",
            ),
        ]
        constraints = [
            models.UniqueConstraint(fields=["memory", "model", "position"], name="chunk_unique_position"),
            models.CheckConstraint(condition=Q(end__gt=F("start")), name="chunk_nonempty_span"),
        ]

    def __str__(self) -> str:
        return f"chunk {self.position} of memory {self.memory_id} ({self.model})"


class VectorIndex(models.Model):
    """An HNSW index over one space's chunks of one model, named `name` (memories.indexing.vector_indexes):
    the vector signal reads it, instead of shortlisting every chunk by signature, once `ready`."""

    space = models.ForeignKey("accounts.Space", on_delete=models.CASCADE, related_name="+")
    model = models.CharField(max_length=200)
    dimensions = models.PositiveSmallIntegerField()
    name = models.CharField(max_length=63, unique=True)
    # Built and valid; until then search scans as for any space.
    ready = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["space", "model"], name="vector_index_one_per_space_model")]

    def __str__(self) -> str:
        return f"{self.name} ({'ready' if self.ready else 'building'})"


class ServingModel(models.Model):
    """The embedding model whose vectors search reads: one row for the whole installation, so every
    web process embeds queries with the same model whatever its own GNOSEM_EMBEDDING_MODEL says.

    It is the configured model from the first indexing on; after GNOSEM_EMBEDDING_MODEL changes it
    stays the old one until `manage.py reembedmemories` has given every memory the new model's
    vectors (`memories.indexing.vectors`).
    """

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    name = models.CharField(max_length=200)
    since = models.DateTimeField()

    class Meta:
        constraints = [models.CheckConstraint(condition=Q(id=1), name="serving_model_single_row")]

    def __str__(self) -> str:
        return self.name


class SpaceTermStatistic(models.Model):
    """How many of a space's memories contain a lexeme: BM25's document frequency.

    Written only by the database: statement-level triggers on memories_memory (migration 0022)
    update it in the same transaction as every insert, delete, content change or move.
    """

    pk = models.CompositePrimaryKey("space_id", "lexeme")
    space = models.ForeignKey("accounts.Space", on_delete=models.CASCADE, related_name="+", db_index=False)
    lexeme = models.TextField()
    df = models.IntegerField()

    class Meta:
        db_table = "memories_space_terms"

    def __str__(self) -> str:
        return f"{self.lexeme}: {self.df} (space {self.space_id})"


class TermPosting(models.Model):
    """One lexeme of one memory, for the keyword signal: its term frequency, the memory's BM25
    length and whether the memory is current (not superseded). The keyword signal sums BM25 over
    the query's postings, read from the primary key alone (it includes the other columns), instead
    of visiting every matching memory.

    Written only by the database: statement-level triggers on memories_memory (migration 0022)
    keep it in step with every insert, delete, text change, move and supersession.
    """

    pk = models.CompositePrimaryKey("space_id", "lexeme", "memory_id")
    space_id = models.BigIntegerField()
    lexeme = models.TextField()
    memory_id = models.BigIntegerField()
    tf = models.IntegerField()
    length = models.IntegerField()
    current = models.BooleanField()

    class Meta:
        db_table = "memories_term_posting"

    def __str__(self) -> str:
        return f"{self.lexeme} in memory {self.memory_id} ({self.tf}x)"


class SpaceCorpusStatistic(models.Model):
    """A space's memory count and total BM25 length (for the average), kept by the same triggers."""

    space = models.OneToOneField("accounts.Space", on_delete=models.CASCADE, primary_key=True, related_name="+")
    documents = models.IntegerField()
    total_length = models.BigIntegerField()

    class Meta:
        db_table = "memories_space_corpus"

    def __str__(self) -> str:
        return f"space {self.space_id}: {self.documents} memories"


class StorageLimits(models.Model):
    """The limits of a quota (memories.limits.quotas). An empty limit means unlimited."""

    max_memories = models.PositiveIntegerField(
        null=True, blank=True, help_text="Memories and notes together. Empty: unlimited."
    )
    max_chars = models.PositiveBigIntegerField(
        null=True,
        blank=True,
        help_text="Total characters stored: memories, their earlier versions and compressed forms, and notes. "
        "Empty: unlimited.",
    )
    max_tokens = models.PositiveBigIntegerField(
        null=True,
        blank=True,
        help_text="Total estimated tokens of the same texts, ceil(characters / 4) each. Empty: unlimited.",
    )

    class Meta:
        abstract = True


class Quota(StorageLimits):
    """How much one user may store, in whichever spaces. No row means unlimited: accounts the
    operator creates have none; sign-ups get GNOSEM_SIGNUP_MAX_* (editable in the admin)."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, primary_key=True, related_name="+")

    def __str__(self) -> str:
        return f"quota of user {self.user_id}"


class SpaceQuota(StorageLimits):
    """How much one team space may hold, whoever wrote it. No row means unlimited: new team spaces
    get GNOSEM_TEAM_SPACE_MAX_* (editable in the admin); a personal space has none, its user's
    quota bounds it."""

    space = models.OneToOneField("accounts.Space", on_delete=models.CASCADE, primary_key=True, related_name="+")

    def __str__(self) -> str:
        return f"quota of space {self.space_id}"


class RateCounter(models.Model):
    """One rate-limited subject (a token, a user's imports): its theoretical arrival time in epoch
    seconds, the generic cell rate algorithm's single number (memories.limits.rates). The table is
    UNLOGGED (migration 0009): counts are disposable, and skipping the write-ahead log keeps the
    per-request update cheap."""

    key = models.CharField(max_length=100, primary_key=True)
    tat = models.FloatField()

    class Meta:
        db_table = "memories_rate_counter"

    def __str__(self) -> str:
        return self.key


class SpaceKey(models.Model):
    """One version of a space's data key (memories.encryption.keys), wrapped by the master key
    whose id `master_id` names: sealed with AES-GCM under a subkey of it, bound to the space and
    the version. The master key itself is never stored."""

    # The unique constraint's index serves lookups by space: no index of the foreign key's own.
    space = models.ForeignKey("accounts.Space", on_delete=models.CASCADE, related_name="+", db_index=False)
    version = models.PositiveIntegerField()
    wrapped = models.BinaryField()
    master_id = models.CharField(max_length=16)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["space", "version"], name="space_key_version_unique")]

    def __str__(self) -> str:
        return f"key {self.version} of space {self.space_id}"


class MasterKeyCheck(models.Model):
    """The master key this database's data is encrypted with, as an HMAC of a fixed label under it:
    one row for the whole installation, so a process given another key is refused
    (memories.encryption.master)."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    master_id = models.CharField(max_length=16)
    check_value = models.BinaryField()

    class Meta:
        constraints = [models.CheckConstraint(condition=Q(id=1), name="master_key_check_single_row")]

    def __str__(self) -> str:
        return f"master key {self.master_id}"


class ImportStatus(models.TextChoices):
    # Read, checked and previewed: waits for its user to start it (or is forgotten after a day).
    PREVIEWED = "previewed"
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


class ImportJob(SealedModel):
    """An import of one file into one space, run in the background a batch at a time
    (memories.transfer.jobs): the file read, checked and previewed when it is uploaded, imported
    once its user starts it, carried on after a kill from the last batch written. The file, as the
    checked export document, is sealed under the space's key, and dropped once the import ends."""

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    space = models.ForeignKey("accounts.Space", on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    # The door it came through (accounts.activity.activity_via) and the API token, for the
    # activity log when it ends.
    via = models.CharField(max_length=16)
    token = models.ForeignKey("accounts.ApiToken", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    file_name = SealedTextField(row=("public_id",))
    format = models.CharField(max_length=32)
    # The checked export document as JSON (memories.transfer.document); "" once the import ended.
    document = SealedTextField(row=("public_id",))
    # Another tool's memories are duplicates of the same text whenever written.
    same_text = models.BooleanField()
    # Entries of the document (memories, then notes), and how many of them are imported or skipped.
    total = models.PositiveIntegerField()
    done = models.PositiveIntegerField(default=0)
    preview = models.JSONField()
    report = models.JSONField(default=dict)
    skipped = SealedListField(blank=True, row=("public_id",))
    status = models.CharField(max_length=16, choices=ImportStatus.choices, default=ImportStatus.PREVIEWED)
    error = SealedTextField(blank=True, default="", row=("public_id",))
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    # Set while a process imports it; an expired lease means that process died.
    lease_until = models.DateTimeField(null=True, blank=True)

    # A document may hold 64 MB: a key rotation re-seals one job at a time.
    rotation_batch = 1

    class Meta:
        indexes = [models.Index(fields=["status", "lease_until"], name="import_job_waiting")]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=ImportStatus.values), name="import_job_status"),
            models.CheckConstraint(condition=Q(done__lte=F("total")), name="import_job_done_of_total"),
        ]

    def __str__(self) -> str:
        return f"import {self.public_id} ({self.status})"
