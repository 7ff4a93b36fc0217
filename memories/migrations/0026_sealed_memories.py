"""Memories and their earlier versions are stored sealed under their space's key.

The plain text columns become sealed ones (memories.encryption.fields), and what PostgreSQL
generated from the text is written by the application instead (memories.encryption.derived): the full
text vector over keyed digests of its lexemes (memories.encryption.blind_index), its length, the
keyed text digest, the lengths and whether the text is a question; the token estimates are now
generated from the lengths. Rewriting each memory's vector reposts its terms through the
existing triggers, so the BM25 statistics and postings follow. Existing rows are sealed here in
batches, in the migration's transaction: a migration stopped half-way leaves everything as it
was. Going back opens every value again.
"""

from collections.abc import Iterator
from datetime import datetime

import django.contrib.postgres.search
import django.db.models.deletion
from django.db import migrations, models

import memories.encryption.fields
import memories.models

BATCH = 1000

BEFORE_SEALING = """
ALTER TABLE memories_memory ALTER COLUMN search_vector DROP EXPRESSION;
ALTER TABLE memories_memory ALTER COLUMN search_length DROP EXPRESSION;
ALTER TABLE memories_memory ALTER COLUMN content_digest DROP EXPRESSION;
ALTER TABLE memories_memory
    DROP COLUMN tokens_raw, DROP COLUMN tokens_optimized,
    DROP CONSTRAINT memory_content_not_blank, DROP CONSTRAINT memory_content_size,
    ADD COLUMN key_version integer, ADD COLUMN is_question boolean,
    ADD COLUMN content_chars integer, ADD COLUMN optimized_chars integer,
    ADD COLUMN sealed_content bytea, ADD COLUMN sealed_optimized bytea;
ALTER TABLE memories_memoryrevision
    ADD COLUMN space_id bigint REFERENCES accounts_space (id) DEFERRABLE INITIALLY DEFERRED,
    ADD COLUMN content_chars integer, ADD COLUMN sealed_content bytea;
UPDATE memories_memoryrevision r SET space_id = m.space_id FROM memories_memory m WHERE m.id = r.memory_id;
-- The update leaves deferred foreign key checks pending, which ALTER TABLE refuses to run beside.
SET CONSTRAINTS ALL IMMEDIATE;
"""

# Going back, once every text is plain again: the generated columns and constraints as they were.
BEFORE_SEALING_BACK = """
SET CONSTRAINTS ALL IMMEDIATE;
ALTER TABLE memories_memory ALTER COLUMN content SET NOT NULL;
ALTER TABLE memories_memory
    DROP COLUMN sealed_content, DROP COLUMN sealed_optimized, DROP COLUMN key_version, DROP COLUMN is_question,
    DROP COLUMN content_chars, DROP COLUMN optimized_chars,
    DROP COLUMN search_vector, DROP COLUMN search_length, DROP COLUMN content_digest;
ALTER TABLE memories_memory
    ADD COLUMN search_vector tsvector GENERATED ALWAYS AS (gnosem_search_vector(content)) STORED,
    ADD COLUMN search_length integer
        GENERATED ALWAYS AS (gnosem_tsvector_token_count(gnosem_search_vector(content))) STORED,
    ADD COLUMN content_digest varchar(32) GENERATED ALWAYS AS (gnosem_content_digest(content)) STORED,
    ADD COLUMN tokens_raw integer GENERATED ALWAYS AS ((char_length(content) + 3) / 4) STORED,
    ADD COLUMN tokens_optimized integer GENERATED ALWAYS AS ((char_length(content_optimized) + 3) / 4) STORED,
    ADD CONSTRAINT memory_content_not_blank CHECK (length(btrim(content)) > 0),
    ADD CONSTRAINT memory_content_size CHECK (length(content) <= 50000);
CREATE INDEX memory_space_search_vector ON memories_memory USING gin (space_id, search_vector);
CREATE INDEX memory_space_content_digest ON memories_memory (space_id, content_digest);
ALTER TABLE memories_memoryrevision ALTER COLUMN content SET NOT NULL;
ALTER TABLE memories_memoryrevision DROP COLUMN sealed_content, DROP COLUMN content_chars, DROP COLUMN space_id;
"""

AFTER_SEALING = """
SET CONSTRAINTS ALL IMMEDIATE;
ALTER TABLE memories_memory DROP COLUMN content, DROP COLUMN content_optimized;
ALTER TABLE memories_memory RENAME COLUMN sealed_content TO content;
ALTER TABLE memories_memory RENAME COLUMN sealed_optimized TO content_optimized;
ALTER TABLE memories_memory
    ALTER COLUMN content SET NOT NULL, ALTER COLUMN content_chars SET NOT NULL,
    ALTER COLUMN key_version SET NOT NULL, ALTER COLUMN is_question SET NOT NULL,
    ALTER COLUMN search_vector SET NOT NULL, ALTER COLUMN search_length SET NOT NULL,
    ALTER COLUMN content_digest SET NOT NULL,
    ADD COLUMN tokens_raw integer GENERATED ALWAYS AS ((content_chars + 3) / 4) STORED,
    ADD COLUMN tokens_optimized integer GENERATED ALWAYS AS ((optimized_chars + 3) / 4) STORED,
    ADD CONSTRAINT memory_content_size CHECK (content_chars > 0 AND content_chars <= 50000),
    ADD CONSTRAINT memories_memory_content_chars_check CHECK (content_chars >= 0),
    ADD CONSTRAINT memories_memory_optimized_chars_check CHECK (optimized_chars >= 0),
    ADD CONSTRAINT memories_memory_key_version_check CHECK (key_version >= 0);
ALTER TABLE memories_memoryrevision DROP COLUMN content;
ALTER TABLE memories_memoryrevision RENAME COLUMN sealed_content TO content;
ALTER TABLE memories_memoryrevision
    ALTER COLUMN content SET NOT NULL, ALTER COLUMN content_chars SET NOT NULL, ALTER COLUMN space_id SET NOT NULL,
    ADD CONSTRAINT memories_memoryrevision_content_chars_check CHECK (content_chars >= 0);
"""

AFTER_SEALING_BACK = """
SET CONSTRAINTS ALL IMMEDIATE;
ALTER TABLE memories_memory
    DROP CONSTRAINT memory_content_size, DROP CONSTRAINT memories_memory_content_chars_check,
    DROP CONSTRAINT memories_memory_optimized_chars_check, DROP CONSTRAINT memories_memory_key_version_check,
    DROP COLUMN tokens_raw, DROP COLUMN tokens_optimized;
ALTER TABLE memories_memory RENAME COLUMN content TO sealed_content;
ALTER TABLE memories_memory RENAME COLUMN content_optimized TO sealed_optimized;
ALTER TABLE memories_memory ALTER COLUMN sealed_content DROP NOT NULL, ADD COLUMN content text,
    ADD COLUMN content_optimized text;
ALTER TABLE memories_memoryrevision DROP CONSTRAINT memories_memoryrevision_content_chars_check;
ALTER TABLE memories_memoryrevision RENAME COLUMN content TO sealed_content;
ALTER TABLE memories_memoryrevision ADD COLUMN content text;
"""

_SEAL_MEMORIES_SQL = """
UPDATE memories_memory m
SET sealed_content = d.content, sealed_optimized = d.optimized, content_chars = d.content_chars,
    optimized_chars = d.optimized_chars, key_version = d.key_version, search_vector = d.search_vector::tsvector,
    search_length = d.search_length, content_digest = d.digest, is_question = d.is_question
FROM unnest(%s::bigint[], %s::bytea[], %s::bytea[], %s::int[], %s::int[], %s::int[], %s::text[], %s::int[],
            %s::text[], %s::bool[])
    AS d (id, content, optimized, content_chars, optimized_chars, key_version, search_vector, search_length,
          digest, is_question)
WHERE m.id = d.id
"""
_OPEN_MEMORIES_SQL = """
UPDATE memories_memory m
SET content = d.content, content_optimized = d.optimized, search_vector = gnosem_search_vector(d.content)
FROM unnest(%s::bigint[], %s::text[], %s::text[]) AS d (id, content, optimized)
WHERE m.id = d.id
"""
_SEAL_REVISIONS_SQL = """
UPDATE memories_memoryrevision r SET sealed_content = d.content, content_chars = d.content_chars
FROM unnest(%s::bigint[], %s::bytea[], %s::int[]) AS d (id, content, content_chars) WHERE r.id = d.id
"""
_OPEN_REVISIONS_SQL = """
UPDATE memories_memoryrevision r SET content = d.content
FROM unnest(%s::bigint[], %s::text[]) AS d (id, content) WHERE r.id = d.id
"""


def _batches(cursor, select: str) -> Iterator[list[tuple]]:
    """The rows of `select` (ordered by id, the id first), a batch at a time."""
    last = 0
    while True:
        cursor.execute(select, [last, BATCH])
        rows = cursor.fetchall()
        if not rows:
            return
        yield rows
        last = rows[-1][0]


def _micros(instant: datetime) -> str:
    return str(round(instant.timestamp() * 1_000_000))


def seal_existing(apps, schema_editor) -> None:
    """Seal every memory and earlier version, and derive the search columns from the text."""
    from memories.encryption.keys import DataKey, current_key
    from memories.encryption.blind_index import analyse, blind_vector
    from memories.encryption.derived import text_digest

    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM memories_memory")
        total, done = cursor.fetchone()[0], 0
        select = (
            "SELECT id, space_id, public_id, content, content_optimized FROM memories_memory "
            "WHERE id > %s ORDER BY id LIMIT %s"
        )
        keys: dict[int, DataKey] = {}
        for rows in _batches(cursor, select):
            analyses = analyse([row[3] for row in rows])
            columns: list[list] = [[] for _ in range(10)]
            for (memory_id, space_id, public_id, content, optimized), analysis in zip(rows, analyses, strict=True):
                key = keys.get(space_id) or keys.setdefault(space_id, current_key(space_id))
                context = f"{public_id}"
                values = (
                    memory_id,
                    key.seal(content, f"memories_memory.content:{context}"),
                    None if optimized is None else key.seal(optimized, f"memories_memory.content_optimized:{context}"),
                    len(content),
                    None if optimized is None else len(optimized),
                    key.version,
                    blind_vector(key, analysis),
                    analysis.length,
                    text_digest(key, content),
                    content.rstrip(" \t\r\n").endswith("?"),
                )
                for column, value in zip(columns, values, strict=True):
                    column.append(value)
            cursor.execute(_SEAL_MEMORIES_SQL, columns)
            done += len(rows)
            print(f"\n  sealed {done:,}/{total:,} memories", end="", flush=True)
        select = (
            "SELECT id, space_id, memory_id, valid_from, content FROM memories_memoryrevision "
            "WHERE id > %s ORDER BY id LIMIT %s"
        )
        for rows in _batches(cursor, select):
            sealed = [
                (keys.get(space_id) or keys.setdefault(space_id, current_key(space_id))).seal(content, f"memories_memoryrevision.content:{memory_id}|{_micros(valid_from)}")
                for _, space_id, memory_id, valid_from, content in rows
            ]
            cursor.execute(_SEAL_REVISIONS_SQL, [[row[0] for row in rows], sealed, [len(row[4]) for row in rows]])


def open_existing(apps, schema_editor) -> None:
    """Going back: every memory and earlier version plain again, its terms posted plain."""
    from memories.encryption.cipher import sealed_version
    from memories.encryption.keys import key_for

    def opened(space_id: int, blob: bytes | None, context: str) -> str | None:
        if blob is None:
            return None
        return key_for(space_id, sealed_version(bytes(blob))).open(bytes(blob), context)

    with schema_editor.connection.cursor() as cursor:
        select = (
            "SELECT id, space_id, public_id, sealed_content, sealed_optimized FROM memories_memory "
            "WHERE id > %s ORDER BY id LIMIT %s"
        )
        for rows in _batches(cursor, select):
            cursor.execute(
                _OPEN_MEMORIES_SQL,
                [
                    [row[0] for row in rows],
                    [opened(row[1], row[3], f"memories_memory.content:{row[2]}") for row in rows],
                    [opened(row[1], row[4], f"memories_memory.content_optimized:{row[2]}") for row in rows],
                ],
            )
        select = (
            "SELECT id, space_id, memory_id, valid_from, sealed_content FROM memories_memoryrevision "
            "WHERE id > %s ORDER BY id LIMIT %s"
        )
        for rows in _batches(cursor, select):
            cursor.execute(
                _OPEN_REVISIONS_SQL,
                [
                    [row[0] for row in rows],
                    [
                        opened(space_id, blob, f"memories_memoryrevision.content:{memory_id}|{_micros(valid_from)}")
                        for _, space_id, memory_id, valid_from, blob in rows
                    ],
                ],
            )


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0011_activity_by_space"),
        ("memories", "0025_encryption_keys"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(BEFORE_SEALING, BEFORE_SEALING_BACK),
                migrations.RunPython(seal_existing, open_existing),
                migrations.RunSQL(AFTER_SEALING, AFTER_SEALING_BACK),
            ],
            state_operations=[
                migrations.RemoveConstraint(model_name="memory", name="memory_content_not_blank"),
                migrations.RemoveConstraint(model_name="memory", name="memory_content_size"),
                migrations.RemoveField(model_name="memory", name="tokens_raw"),
                migrations.RemoveField(model_name="memory", name="tokens_optimized"),
                migrations.AlterField(
                    model_name="memory",
                    name="content",
                    field=memories.encryption.fields.SealedTextField(row=("public_id",)),
                ),
                migrations.AlterField(
                    model_name="memory",
                    name="content_optimized",
                    field=memories.encryption.fields.SealedTextField(blank=True, null=True, row=("public_id",)),
                ),
                migrations.AddField(
                    model_name="memory",
                    name="content_chars",
                    field=memories.models.TextLengthField(of="content"),
                    preserve_default=False,
                ),
                migrations.AddField(
                    model_name="memory",
                    name="optimized_chars",
                    field=memories.models.TextLengthField(blank=True, null=True, of="content_optimized"),
                ),
                migrations.AddField(
                    model_name="memory",
                    name="key_version",
                    field=models.PositiveIntegerField(default=1),
                    preserve_default=False,
                ),
                migrations.AddField(
                    model_name="memory",
                    name="is_question",
                    field=models.BooleanField(default=False),
                    preserve_default=False,
                ),
                migrations.AlterField(
                    model_name="memory",
                    name="search_vector",
                    field=django.contrib.postgres.search.SearchVectorField(),
                ),
                migrations.AlterField(model_name="memory", name="search_length", field=models.IntegerField()),
                migrations.AlterField(
                    model_name="memory", name="content_digest", field=models.CharField(max_length=32)
                ),
                migrations.AddField(
                    model_name="memory",
                    name="tokens_raw",
                    field=models.GeneratedField(
                        db_persist=True,
                        expression=memories.models.TokensOfLength("content_chars"),
                        output_field=models.IntegerField(),
                    ),
                ),
                migrations.AddField(
                    model_name="memory",
                    name="tokens_optimized",
                    field=models.GeneratedField(
                        db_persist=True,
                        expression=memories.models.TokensOfLength("optimized_chars"),
                        output_field=models.IntegerField(null=True),
                    ),
                ),
                migrations.AddConstraint(
                    model_name="memory",
                    constraint=models.CheckConstraint(
                        condition=models.Q(("content_chars__gt", 0), ("content_chars__lte", 50000)),
                        name="memory_content_size",
                    ),
                ),
                migrations.AddField(
                    model_name="memoryrevision",
                    name="space",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="accounts.space",
                    ),
                    preserve_default=False,
                ),
                migrations.AlterField(
                    model_name="memoryrevision",
                    name="content",
                    field=memories.encryption.fields.SealedTextField(row=("memory_id", "valid_from")),
                ),
                migrations.AddField(
                    model_name="memoryrevision",
                    name="content_chars",
                    field=memories.models.TextLengthField(of="content"),
                    preserve_default=False,
                ),
            ],
        ),
    ]
