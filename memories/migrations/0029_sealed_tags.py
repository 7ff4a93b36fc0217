"""Tags are stored sealed under their space's key: a memory's, an earlier version's and a note's,
each list sealed as one JSON array (memories.encryption.fields.SealedListField). Tag filters match
a memory's or a note's tags by their keyed digests (memories.encryption.derived.tag_digest): a
memory's under the key version of its other derived columns, a note's under the version it now
records. Existing rows are sealed here in batches, in the migration's transaction: a migration
stopped half-way leaves everything as it was. Going back opens every list again.
"""

import json

import django.contrib.postgres.fields
import django.contrib.postgres.indexes
import django.db.models.lookups
from django.db import migrations, models

import memories.encryption.fields

BATCH = 1000
MAX_TAGS = 20

BEFORE_SEALING = """
DROP INDEX memory_tags;
ALTER TABLE memories_memory DROP CONSTRAINT memory_tags_count,
    ADD COLUMN tag_digests varchar(32)[], ADD COLUMN sealed_tags bytea;
ALTER TABLE memories_memoryrevision ADD COLUMN sealed_tags bytea;
ALTER TABLE memories_note DROP CONSTRAINT note_tags_count,
    ADD COLUMN tag_digests varchar(32)[], ADD COLUMN key_version integer, ADD COLUMN sealed_tags bytea;
"""
BEFORE_SEALING_BACK = f"""
SET CONSTRAINTS ALL IMMEDIATE;
ALTER TABLE memories_memory ALTER COLUMN tags SET NOT NULL;
ALTER TABLE memories_memory DROP COLUMN tag_digests, DROP COLUMN sealed_tags,
    ADD CONSTRAINT memory_tags_count CHECK (cardinality(tags) <= {MAX_TAGS});
CREATE INDEX memory_tags ON memories_memory USING gin (tags);
ALTER TABLE memories_memoryrevision ALTER COLUMN tags SET NOT NULL;
ALTER TABLE memories_memoryrevision DROP COLUMN sealed_tags;
ALTER TABLE memories_note ALTER COLUMN tags SET NOT NULL;
ALTER TABLE memories_note DROP COLUMN tag_digests, DROP COLUMN key_version, DROP COLUMN sealed_tags,
    ADD CONSTRAINT note_tags_count CHECK (cardinality(tags) <= {MAX_TAGS});
"""
AFTER_SEALING = f"""
SET CONSTRAINTS ALL IMMEDIATE;
ALTER TABLE memories_memory DROP COLUMN tags;
ALTER TABLE memories_memory RENAME COLUMN sealed_tags TO tags;
ALTER TABLE memories_memory ALTER COLUMN tags SET NOT NULL, ALTER COLUMN tag_digests SET NOT NULL,
    ADD CONSTRAINT memory_tags_count CHECK (cardinality(tag_digests) <= {MAX_TAGS});
CREATE INDEX memory_tags ON memories_memory USING gin (tag_digests);
ALTER TABLE memories_memoryrevision DROP COLUMN tags;
ALTER TABLE memories_memoryrevision RENAME COLUMN sealed_tags TO tags;
ALTER TABLE memories_memoryrevision ALTER COLUMN tags SET NOT NULL;
ALTER TABLE memories_note DROP COLUMN tags;
ALTER TABLE memories_note RENAME COLUMN sealed_tags TO tags;
ALTER TABLE memories_note ALTER COLUMN tags SET NOT NULL, ALTER COLUMN tag_digests SET NOT NULL,
    ALTER COLUMN key_version SET NOT NULL,
    ADD CONSTRAINT memories_note_key_version_check CHECK (key_version >= 0),
    ADD CONSTRAINT note_tags_count CHECK (cardinality(tag_digests) <= {MAX_TAGS});
"""
AFTER_SEALING_BACK = """
SET CONSTRAINTS ALL IMMEDIATE;
DROP INDEX memory_tags;
ALTER TABLE memories_memory DROP CONSTRAINT memory_tags_count;
ALTER TABLE memories_memory RENAME COLUMN tags TO sealed_tags;
ALTER TABLE memories_memory ALTER COLUMN sealed_tags DROP NOT NULL, ADD COLUMN tags varchar(64)[];
ALTER TABLE memories_memoryrevision RENAME COLUMN tags TO sealed_tags;
ALTER TABLE memories_memoryrevision ALTER COLUMN sealed_tags DROP NOT NULL, ADD COLUMN tags varchar(64)[];
ALTER TABLE memories_note DROP CONSTRAINT note_tags_count, DROP CONSTRAINT memories_note_key_version_check;
ALTER TABLE memories_note RENAME COLUMN tags TO sealed_tags;
ALTER TABLE memories_note ALTER COLUMN sealed_tags DROP NOT NULL, ADD COLUMN tags varchar(64)[];
"""

# (table, what each row's associated data names, whether it keeps digests and under which version:
# "row" the one the row records, "current" the space's newest, which it then records).
TABLES = {
    "memories_memory": (("public_id",), "row"),
    "memories_memoryrevision": (("memory_id", "valid_from"), None),
    "memories_note": (("public_id",), "current"),
}


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


def _context(table: str, identity: tuple) -> str:
    from memories.encryption.fields import _context_part

    return f"{table}.tags:" + "|".join(_context_part(value) for value in identity)


def seal_existing(apps, schema_editor) -> None:
    """Seal every list of tags, and digest those of memories and notes."""
    from memories.encryption.derived import tag_digest
    from memories.encryption.keys import current_key, key_for

    with schema_editor.connection.cursor() as cursor:
        for table, (identity, digests) in TABLES.items():
            cursor.execute(f"SELECT count(*) FROM {table}")
            total, done = cursor.fetchone()[0], 0
            version = ", key_version" if digests == "row" else ""
            columns = ", ".join(identity)
            select = f"SELECT id, space_id, tags, {columns}{version} FROM {table} WHERE id > %s ORDER BY id LIMIT %s"
            for rows in _batches(cursor, select):
                ids, sealed, digested, versions = [], [], [], []
                for row in rows:
                    row_id, space_id, tags = row[:3]
                    key = current_key(space_id)
                    ids.append(row_id)
                    context = _context(table, row[3 : 3 + len(identity)])
                    sealed.append(key.seal(json.dumps(tags, ensure_ascii=False), context))
                    if digests:
                        digest_key = key_for(space_id, row[-1]) if digests == "row" else key
                        digested.append([tag_digest(digest_key, tag) for tag in tags])
                        versions.append(digest_key.version)
                cursor.execute(
                    f"UPDATE {table} t SET sealed_tags = d.tags FROM unnest(%s::bigint[], %s::bytea[]) AS d (id, tags) "
                    "WHERE t.id = d.id",
                    [ids, sealed],
                )
                if digests:
                    cursor.execute(
                        f"UPDATE {table} t SET tag_digests = ARRAY(SELECT jsonb_array_elements_text(d.digests)), "
                        "key_version = d.version "
                        "FROM unnest(%s::bigint[], %s::jsonb[], %s::int[]) AS d (id, digests, version) "
                        "WHERE t.id = d.id",
                        [ids, [json.dumps(row) for row in digested], versions],
                    )
                done += len(rows)
                print(f"\n  sealed the tags of {done:,}/{total:,} rows of {table}", end="", flush=True)


def open_existing(apps, schema_editor) -> None:
    """Open every list of tags again; one that does not open becomes no tags."""
    from memories.encryption.cipher import Unreadable, sealed_version
    from memories.encryption.keys import key_for

    with schema_editor.connection.cursor() as cursor:
        for table, (identity, _) in TABLES.items():
            columns = ", ".join(identity)
            select = f"SELECT id, space_id, sealed_tags, {columns} FROM {table} WHERE id > %s ORDER BY id LIMIT %s"
            for rows in _batches(cursor, select):
                ids, opened = [], []
                for row in rows:
                    row_id, space_id, blob = row[0], row[1], bytes(row[2])
                    try:
                        text = key_for(space_id, sealed_version(blob)).open(blob, _context(table, row[3:]))
                        tags = json.loads(text)
                    except (Unreadable, ValueError):
                        tags = []
                    ids.append(row_id)
                    opened.append(json.dumps(tags))
                cursor.execute(
                    f"UPDATE {table} t SET tags = ARRAY(SELECT jsonb_array_elements_text(d.tags)) "
                    "FROM unnest(%s::bigint[], %s::jsonb[]) AS d (id, tags) WHERE t.id = d.id",
                    [ids, opened],
                )


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0028_sealed_entities"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(BEFORE_SEALING, BEFORE_SEALING_BACK),
                migrations.RunPython(seal_existing, open_existing),
                migrations.RunSQL(AFTER_SEALING, AFTER_SEALING_BACK),
            ],
            state_operations=[
                migrations.RemoveIndex(model_name="memory", name="memory_tags"),
                migrations.RemoveConstraint(model_name="memory", name="memory_tags_count"),
                migrations.RemoveConstraint(model_name="note", name="note_tags_count"),
                migrations.AlterField(
                    model_name="memory",
                    name="tags",
                    field=memories.encryption.fields.SealedListField(blank=True, default=list, row=("public_id",)),
                ),
                migrations.AddField(
                    model_name="memory",
                    name="tag_digests",
                    field=django.contrib.postgres.fields.ArrayField(
                        base_field=models.CharField(max_length=32), blank=True, default=list, size=None
                    ),
                ),
                migrations.AlterField(
                    model_name="memoryrevision",
                    name="tags",
                    field=memories.encryption.fields.SealedListField(
                        blank=True, default=list, row=("memory_id", "valid_from")
                    ),
                ),
                migrations.AlterField(
                    model_name="note",
                    name="tags",
                    field=memories.encryption.fields.SealedListField(blank=True, default=list, row=("public_id",)),
                ),
                migrations.AddField(
                    model_name="note",
                    name="tag_digests",
                    field=django.contrib.postgres.fields.ArrayField(
                        base_field=models.CharField(max_length=32), blank=True, default=list, size=None
                    ),
                ),
                migrations.AddField(
                    model_name="note",
                    name="key_version",
                    field=models.PositiveIntegerField(default=1),
                    preserve_default=False,
                ),
                migrations.AddIndex(
                    model_name="memory",
                    index=django.contrib.postgres.indexes.GinIndex(fields=["tag_digests"], name="memory_tags"),
                ),
                migrations.AddConstraint(
                    model_name="memory",
                    constraint=models.CheckConstraint(
                        condition=django.db.models.lookups.LessThanOrEqual(
                            models.Func(models.F("tag_digests"), function="cardinality"), MAX_TAGS
                        ),
                        name="memory_tags_count",
                    ),
                ),
                migrations.AddConstraint(
                    model_name="note",
                    constraint=models.CheckConstraint(
                        condition=django.db.models.lookups.LessThanOrEqual(
                            models.Func(models.F("tag_digests"), function="cardinality"), MAX_TAGS
                        ),
                        name="note_tags_count",
                    ),
                ),
            ],
        ),
    ]
