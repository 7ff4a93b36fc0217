"""Entities are stored sealed under their space's key, as memories and notes are (0026, 0027).

An entity's normalised key and its name become sealed columns; the row is found by the key's
keyed digest (memories.encryption.derived.entity_digest) under the key version it records, which
is unique per space in the key's place. Existing rows are sealed here in batches, in the
migration's transaction: a migration stopped half-way leaves everything as it was. Going back
opens every value again.
"""

from django.db import migrations, models

import memories.encryption.fields

BATCH = 1000

BEFORE_SEALING = """
ALTER TABLE memories_entity
    DROP CONSTRAINT entity_unique_key_per_space, DROP CONSTRAINT entity_key_not_empty,
    ADD COLUMN key_digest varchar(64), ADD COLUMN key_version integer,
    ADD COLUMN sealed_key bytea, ADD COLUMN sealed_name bytea;
"""
BEFORE_SEALING_BACK = """
SET CONSTRAINTS ALL IMMEDIATE;
ALTER TABLE memories_entity ALTER COLUMN key SET NOT NULL, ALTER COLUMN name SET NOT NULL;
ALTER TABLE memories_entity
    DROP COLUMN key_digest, DROP COLUMN key_version, DROP COLUMN sealed_key, DROP COLUMN sealed_name,
    ADD CONSTRAINT entity_unique_key_per_space UNIQUE (space_id, key),
    ADD CONSTRAINT entity_key_not_empty CHECK (length(key) > 0);
"""
AFTER_SEALING = """
SET CONSTRAINTS ALL IMMEDIATE;
ALTER TABLE memories_entity DROP COLUMN key, DROP COLUMN name;
ALTER TABLE memories_entity RENAME COLUMN sealed_key TO key;
ALTER TABLE memories_entity RENAME COLUMN sealed_name TO name;
ALTER TABLE memories_entity
    ALTER COLUMN key SET NOT NULL, ALTER COLUMN name SET NOT NULL,
    ALTER COLUMN key_digest SET NOT NULL, ALTER COLUMN key_version SET NOT NULL,
    ADD CONSTRAINT memories_entity_key_version_check CHECK (key_version >= 0),
    ADD CONSTRAINT entity_unique_key_per_space UNIQUE (space_id, key_digest);
"""
AFTER_SEALING_BACK = """
SET CONSTRAINTS ALL IMMEDIATE;
ALTER TABLE memories_entity
    DROP CONSTRAINT entity_unique_key_per_space, DROP CONSTRAINT memories_entity_key_version_check;
ALTER TABLE memories_entity RENAME COLUMN key TO sealed_key;
ALTER TABLE memories_entity RENAME COLUMN name TO sealed_name;
ALTER TABLE memories_entity
    ALTER COLUMN sealed_key DROP NOT NULL, ALTER COLUMN sealed_name DROP NOT NULL,
    ADD COLUMN key varchar(100), ADD COLUMN name varchar(200);
"""

_SEAL_SQL = """
UPDATE memories_entity e
SET key_digest = d.digest, key_version = d.version, sealed_key = d.key, sealed_name = d.name
FROM unnest(%s::bigint[], %s::text[], %s::int[], %s::bytea[], %s::bytea[]) AS d (id, digest, version, key, name)
WHERE e.id = d.id
"""
_OPEN_SQL = """
UPDATE memories_entity e SET key = d.key, name = d.name
FROM unnest(%s::bigint[], %s::text[], %s::text[]) AS d (id, key, name)
WHERE e.id = d.id
"""


def _batches(cursor, select: str):
    """The rows of `select` (ordered by id, the id first), a batch at a time."""
    last = 0
    while True:
        cursor.execute(select, [last, BATCH])
        rows = cursor.fetchall()
        if not rows:
            return
        yield rows
        last = rows[-1][0]


def seal_existing(apps, schema_editor) -> None:
    """Seal every entity's key and name and digest its key, under its space's current key."""
    from memories.encryption.derived import entity_digest
    from memories.encryption.keys import current_key

    keys = {}
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM memories_entity")
        total, done = cursor.fetchone()[0], 0
        select = "SELECT id, space_id, key, name FROM memories_entity WHERE id > %s ORDER BY id LIMIT %s"
        for rows in _batches(cursor, select):
            columns: list[list] = [[] for _ in range(5)]
            for entity_id, space_id, key_text, name in rows:
                key = keys.get(space_id) or keys.setdefault(space_id, current_key(space_id))
                digest = entity_digest(key, key_text)
                values = (
                    entity_id,
                    digest,
                    key.version,
                    key.seal(key_text, f"memories_entity.key:{digest}"),
                    key.seal(name, f"memories_entity.name:{digest}"),
                )
                for column, value in zip(columns, values, strict=True):
                    column.append(value)
            cursor.execute(_SEAL_SQL, columns)
            done += len(rows)
            print(f"\n  sealed {done:,}/{total:,} entities", end="", flush=True)


def open_existing(apps, schema_editor) -> None:
    """Open every entity's key and name again. One that does not open is dropped: the graph is
    derived, and `manage.py rebuildgraph` makes it again."""
    from memories.encryption.cipher import Unreadable, sealed_version
    from memories.encryption.keys import key_for

    def opened(space_id: int, blob, context: str) -> str:
        return key_for(space_id, sealed_version(bytes(blob))).open(bytes(blob), context)

    dropped = []
    with schema_editor.connection.cursor() as cursor:
        select = (
            "SELECT id, space_id, key_digest, sealed_key, sealed_name FROM memories_entity "
            "WHERE id > %s ORDER BY id LIMIT %s"
        )
        for rows in _batches(cursor, select):
            columns: list[list] = [[], [], []]
            for entity_id, space_id, digest, key, name in rows:
                try:
                    values = (
                        entity_id,
                        opened(space_id, key, f"memories_entity.key:{digest}"),
                        opened(space_id, name, f"memories_entity.name:{digest}"),
                    )
                except Unreadable:
                    dropped.append(entity_id)
                    continue
                for column, value in zip(columns, values, strict=True):
                    column.append(value)
            cursor.execute(_OPEN_SQL, columns)
        cursor.execute("DELETE FROM memories_entity WHERE id = ANY(%s)", [dropped])


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0027_sealed_notes"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(BEFORE_SEALING, BEFORE_SEALING_BACK),
                migrations.RunPython(seal_existing, open_existing),
                migrations.RunSQL(AFTER_SEALING, AFTER_SEALING_BACK),
            ],
            state_operations=[
                migrations.RemoveConstraint(model_name="entity", name="entity_unique_key_per_space"),
                migrations.RemoveConstraint(model_name="entity", name="entity_key_not_empty"),
                migrations.AddField(
                    model_name="entity",
                    name="key_digest",
                    field=models.CharField(default="", max_length=64),
                    preserve_default=False,
                ),
                migrations.AddField(
                    model_name="entity",
                    name="key_version",
                    field=models.PositiveIntegerField(default=1),
                    preserve_default=False,
                ),
                migrations.AlterField(
                    model_name="entity",
                    name="key",
                    field=memories.encryption.fields.SealedTextField(row=("key_digest",)),
                ),
                migrations.AlterField(
                    model_name="entity",
                    name="name",
                    field=memories.encryption.fields.SealedTextField(row=("key_digest",)),
                ),
                migrations.AddConstraint(
                    model_name="entity",
                    constraint=models.UniqueConstraint(
                        fields=("space", "key_digest"), name="entity_unique_key_per_space"
                    ),
                ),
            ],
        ),
    ]
