"""Notes and their passages are stored sealed under their space's key, as memories are (0026).

A note's title and text become sealed columns (memories.encryption.fields) with their lengths
beside them, from which the token estimate is now generated; the checks on the text read the
lengths. A passage's heading and text are sealed too, and its full-text vector, which PostgreSQL
generated from the text, is written by the application instead: the blind vector over keyed
digests of its lexemes (memories.encryption.blind_index), under the key version it records.
Existing rows are sealed here in batches, in the migration's transaction: a migration stopped
half-way leaves everything as it was. Going back opens every value again.
"""

from collections.abc import Iterator

import django.contrib.postgres.search
from django.db import migrations, models

import memories.encryption.fields
import memories.models

BATCH = 1000
# Notes sealed per statement hold at most about this many bytes of text (a note may hold megabytes).
NOTE_BATCH_BYTES = 32 * 2**20

BEFORE_SEALING = """
ALTER TABLE memories_note
    DROP COLUMN tokens,
    DROP CONSTRAINT note_title_not_blank, DROP CONSTRAINT note_content_not_blank, DROP CONSTRAINT note_content_size,
    ADD COLUMN title_chars integer, ADD COLUMN content_chars integer,
    ADD COLUMN sealed_title bytea, ADD COLUMN sealed_content bytea;
ALTER TABLE memories_note_chunk ALTER COLUMN search_vector DROP EXPRESSION;
ALTER TABLE memories_note_chunk
    ADD COLUMN key_version integer, ADD COLUMN sealed_heading bytea, ADD COLUMN sealed_text bytea;
"""

# Going back, once every text is plain again: the generated columns and constraints as they were.
BEFORE_SEALING_BACK = """
SET CONSTRAINTS ALL IMMEDIATE;
ALTER TABLE memories_note ALTER COLUMN title SET NOT NULL, ALTER COLUMN content SET NOT NULL;
ALTER TABLE memories_note
    DROP COLUMN sealed_title, DROP COLUMN sealed_content, DROP COLUMN title_chars, DROP COLUMN content_chars,
    ADD COLUMN tokens integer GENERATED ALWAYS AS ((char_length(content) + 3) / 4) STORED,
    ADD CONSTRAINT note_title_not_blank CHECK (length(btrim(title)) > 0),
    ADD CONSTRAINT note_content_not_blank CHECK (length(btrim(content)) > 0),
    ADD CONSTRAINT note_content_size CHECK (length(content) <= 10000000);
ALTER TABLE memories_note_chunk ALTER COLUMN heading SET NOT NULL, ALTER COLUMN text SET NOT NULL;
ALTER TABLE memories_note_chunk
    DROP COLUMN sealed_heading, DROP COLUMN sealed_text, DROP COLUMN key_version, DROP COLUMN search_vector;
ALTER TABLE memories_note_chunk
    ADD COLUMN search_vector tsvector GENERATED ALWAYS AS (gnosem_search_vector(text)) STORED;
CREATE INDEX note_chunk_space_search ON memories_note_chunk USING gin (space_id, search_vector);
"""

AFTER_SEALING = """
SET CONSTRAINTS ALL IMMEDIATE;
ALTER TABLE memories_note DROP COLUMN title, DROP COLUMN content;
ALTER TABLE memories_note RENAME COLUMN sealed_title TO title;
ALTER TABLE memories_note RENAME COLUMN sealed_content TO content;
ALTER TABLE memories_note
    ALTER COLUMN title SET NOT NULL, ALTER COLUMN content SET NOT NULL,
    ALTER COLUMN title_chars SET NOT NULL, ALTER COLUMN content_chars SET NOT NULL,
    ADD COLUMN tokens integer GENERATED ALWAYS AS ((content_chars + 3) / 4) STORED,
    ADD CONSTRAINT note_title_size CHECK (title_chars > 0 AND title_chars <= 200),
    ADD CONSTRAINT note_content_size CHECK (content_chars > 0 AND content_chars <= 10000000),
    ADD CONSTRAINT memories_note_title_chars_check CHECK (title_chars >= 0),
    ADD CONSTRAINT memories_note_content_chars_check CHECK (content_chars >= 0);
ALTER TABLE memories_note_chunk DROP COLUMN heading, DROP COLUMN text;
ALTER TABLE memories_note_chunk RENAME COLUMN sealed_heading TO heading;
ALTER TABLE memories_note_chunk RENAME COLUMN sealed_text TO text;
ALTER TABLE memories_note_chunk
    ALTER COLUMN heading SET NOT NULL, ALTER COLUMN text SET NOT NULL,
    ALTER COLUMN key_version SET NOT NULL, ALTER COLUMN search_vector SET NOT NULL,
    ADD CONSTRAINT memories_note_chunk_key_version_check CHECK (key_version >= 0);
"""

AFTER_SEALING_BACK = """
SET CONSTRAINTS ALL IMMEDIATE;
ALTER TABLE memories_note
    DROP CONSTRAINT note_title_size, DROP CONSTRAINT note_content_size,
    DROP CONSTRAINT memories_note_title_chars_check, DROP CONSTRAINT memories_note_content_chars_check,
    DROP COLUMN tokens;
ALTER TABLE memories_note RENAME COLUMN title TO sealed_title;
ALTER TABLE memories_note RENAME COLUMN content TO sealed_content;
ALTER TABLE memories_note
    ALTER COLUMN sealed_title DROP NOT NULL, ALTER COLUMN sealed_content DROP NOT NULL,
    ADD COLUMN title varchar(200), ADD COLUMN content text;
ALTER TABLE memories_note_chunk DROP CONSTRAINT memories_note_chunk_key_version_check;
ALTER TABLE memories_note_chunk RENAME COLUMN heading TO sealed_heading;
ALTER TABLE memories_note_chunk RENAME COLUMN text TO sealed_text;
ALTER TABLE memories_note_chunk
    ALTER COLUMN sealed_heading DROP NOT NULL, ALTER COLUMN sealed_text DROP NOT NULL,
    ADD COLUMN heading varchar(200), ADD COLUMN text text;
"""

_SEAL_NOTES_SQL = """
UPDATE memories_note n
SET sealed_title = d.title, sealed_content = d.content, title_chars = d.title_chars, content_chars = d.content_chars
FROM unnest(%s::bigint[], %s::bytea[], %s::bytea[], %s::int[], %s::int[])
    AS d (id, title, content, title_chars, content_chars)
WHERE n.id = d.id
"""
_OPEN_NOTES_SQL = """
UPDATE memories_note n SET title = d.title, content = d.content
FROM unnest(%s::bigint[], %s::text[], %s::text[]) AS d (id, title, content)
WHERE n.id = d.id
"""
_SEAL_PASSAGES_SQL = """
UPDATE memories_note_chunk c
SET sealed_heading = d.heading, sealed_text = d.text, key_version = d.key_version,
    search_vector = d.search_vector::tsvector
FROM unnest(%s::bigint[], %s::bytea[], %s::bytea[], %s::int[], %s::text[])
    AS d (id, heading, text, key_version, search_vector)
WHERE c.id = d.id
"""
_OPEN_PASSAGES_SQL = """
UPDATE memories_note_chunk c SET heading = d.heading, text = d.text
FROM unnest(%s::bigint[], %s::text[], %s::text[]) AS d (id, heading, text)
WHERE c.id = d.id
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


def _note_batches(cursor, columns: str, text: str) -> Iterator[list[tuple]]:
    """The notes' `columns` (the id first), in id order, in batches holding at most
    NOTE_BATCH_BYTES of `text` (one note at least)."""
    cursor.execute(f"SELECT id, octet_length({text}) FROM memories_note ORDER BY id")
    batches: list[list[int]] = []
    size = NOTE_BATCH_BYTES
    for note_id, length in cursor.fetchall():
        if size + length > NOTE_BATCH_BYTES:
            batches.append([])
            size = 0
        batches[-1].append(note_id)
        size += length
    for ids in batches:
        cursor.execute(f"SELECT {columns} FROM memories_note WHERE id = ANY(%s) ORDER BY id", [ids])
        yield cursor.fetchall()


def seal_existing(apps, schema_editor) -> None:
    """Seal every note's title and text and every passage's heading and text, and write each
    passage's blind vector from its text."""
    from memories.encryption.blind_index import analyse, blind_vector
    from memories.encryption.keys import DataKey, current_key

    keys: dict[int, DataKey] = {}

    def key_of(space_id: int) -> DataKey:
        return keys.get(space_id) or keys.setdefault(space_id, current_key(space_id))

    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM memories_note")
        total, done = cursor.fetchone()[0], 0
        for rows in _note_batches(cursor, "id, space_id, public_id, title, content", "content"):
            columns: list[list] = [[] for _ in range(5)]
            for note_id, space_id, public_id, title, content in rows:
                key = key_of(space_id)
                values = (
                    note_id,
                    key.seal(title, f"memories_note.title:{public_id}"),
                    key.seal(content, f"memories_note.content:{public_id}"),
                    len(title),
                    len(content),
                )
                for column, value in zip(columns, values, strict=True):
                    column.append(value)
            cursor.execute(_SEAL_NOTES_SQL, columns)
            done += len(rows)
            print(f"\n  sealed {done:,}/{total:,} notes", end="", flush=True)
        cursor.execute("SELECT count(*) FROM memories_note_chunk")
        total, done = cursor.fetchone()[0], 0
        select = (
            'SELECT id, space_id, note_id, model, "position", heading, text FROM memories_note_chunk '
            "WHERE id > %s ORDER BY id LIMIT %s"
        )
        for rows in _batches(cursor, select):
            analyses = analyse([row[6] for row in rows])
            columns = [[] for _ in range(5)]
            for (chunk_id, space_id, note_id, model, position, heading, text), analysis in zip(
                rows, analyses, strict=True
            ):
                key = key_of(space_id)
                context = f"{note_id}|{model}|{position}"
                values = (
                    chunk_id,
                    key.seal(heading, f"memories_note_chunk.heading:{context}"),
                    key.seal(text, f"memories_note_chunk.text:{context}"),
                    key.version,
                    blind_vector(key, analysis),
                )
                for column, value in zip(columns, values, strict=True):
                    column.append(value)
            cursor.execute(_SEAL_PASSAGES_SQL, columns)
            done += len(rows)
            print(f"\n  sealed {done:,}/{total:,} passages of notes", end="", flush=True)


def open_existing(apps, schema_editor) -> None:
    """Going back: every note and passage plain again (the passages' vectors are generated again
    from their texts)."""
    from memories.encryption.cipher import sealed_version
    from memories.encryption.keys import key_for

    def opened(space_id: int, blob: bytes, context: str) -> str:
        return key_for(space_id, sealed_version(bytes(blob))).open(bytes(blob), context)

    with schema_editor.connection.cursor() as cursor:
        for rows in _note_batches(cursor, "id, space_id, public_id, sealed_title, sealed_content", "sealed_content"):
            cursor.execute(
                _OPEN_NOTES_SQL,
                [
                    [row[0] for row in rows],
                    [opened(row[1], row[3], f"memories_note.title:{row[2]}") for row in rows],
                    [opened(row[1], row[4], f"memories_note.content:{row[2]}") for row in rows],
                ],
            )
        select = (
            'SELECT id, space_id, note_id, model, "position", sealed_heading, sealed_text FROM memories_note_chunk '
            "WHERE id > %s ORDER BY id LIMIT %s"
        )
        for rows in _batches(cursor, select):
            contexts = [f"{note_id}|{model}|{position}" for _, _, note_id, model, position, _, _ in rows]
            cursor.execute(
                _OPEN_PASSAGES_SQL,
                [
                    [row[0] for row in rows],
                    [
                        opened(row[1], row[5], f"memories_note_chunk.heading:{context}")
                        for row, context in zip(rows, contexts, strict=True)
                    ],
                    [
                        opened(row[1], row[6], f"memories_note_chunk.text:{context}")
                        for row, context in zip(rows, contexts, strict=True)
                    ],
                ],
            )


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0026_sealed_memories"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(BEFORE_SEALING, BEFORE_SEALING_BACK),
                migrations.RunPython(seal_existing, open_existing),
                migrations.RunSQL(AFTER_SEALING, AFTER_SEALING_BACK),
            ],
            state_operations=[
                migrations.RemoveConstraint(model_name="note", name="note_title_not_blank"),
                migrations.RemoveConstraint(model_name="note", name="note_content_not_blank"),
                migrations.RemoveConstraint(model_name="note", name="note_content_size"),
                migrations.RemoveField(model_name="note", name="tokens"),
                migrations.AlterField(
                    model_name="note",
                    name="title",
                    field=memories.encryption.fields.SealedTextField(row=("public_id",)),
                ),
                migrations.AlterField(
                    model_name="note",
                    name="content",
                    field=memories.encryption.fields.SealedTextField(row=("public_id",)),
                ),
                migrations.AddField(
                    model_name="note",
                    name="title_chars",
                    field=memories.models.TextLengthField(of="title"),
                    preserve_default=False,
                ),
                migrations.AddField(
                    model_name="note",
                    name="content_chars",
                    field=memories.models.TextLengthField(of="content"),
                    preserve_default=False,
                ),
                migrations.AddField(
                    model_name="note",
                    name="tokens",
                    field=models.GeneratedField(
                        db_persist=True,
                        expression=memories.models.TokensOfLength("content_chars"),
                        output_field=models.IntegerField(),
                    ),
                ),
                migrations.AddConstraint(
                    model_name="note",
                    constraint=models.CheckConstraint(
                        condition=models.Q(("title_chars__gt", 0), ("title_chars__lte", 200)),
                        name="note_title_size",
                    ),
                ),
                migrations.AddConstraint(
                    model_name="note",
                    constraint=models.CheckConstraint(
                        condition=models.Q(("content_chars__gt", 0), ("content_chars__lte", 10000000)),
                        name="note_content_size",
                    ),
                ),
                migrations.AlterField(
                    model_name="notechunk",
                    name="heading",
                    field=memories.encryption.fields.SealedTextField(row=("note_id", "model", "position")),
                ),
                migrations.AlterField(
                    model_name="notechunk",
                    name="text",
                    field=memories.encryption.fields.SealedTextField(row=("note_id", "model", "position")),
                ),
                migrations.AddField(
                    model_name="notechunk",
                    name="key_version",
                    field=models.PositiveIntegerField(default=1),
                    preserve_default=False,
                ),
                migrations.AlterField(
                    model_name="notechunk",
                    name="search_vector",
                    field=django.contrib.postgres.search.SearchVectorField(),
                ),
            ],
        ),
    ]
