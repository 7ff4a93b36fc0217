"""Client names are stored sealed under their space's key: a memory's client (`written_by`), the
other clients that wrote its text again (`also_written_by`, one sealed JSON array) and an earlier
version's client. The client filter, session_start's "new since" and sequences compare a memory's
clients by their keyed digests (memories.encryption.derived.client_digest), under the key version
of its other derived columns. Existing rows are sealed here in batches, in the migration's
transaction: a migration stopped half-way leaves everything as it was. Going back opens every
name again.
"""

import json

import django.contrib.postgres.fields
from django.db import migrations, models

import memories.encryption.fields

BATCH = 1000

BEFORE_SEALING = """
ALTER TABLE memories_memory ADD COLUMN sealed_written_by bytea, ADD COLUMN sealed_also_written_by bytea,
    ADD COLUMN written_by_digest varchar(32), ADD COLUMN also_written_by_digests varchar(32)[];
ALTER TABLE memories_memoryrevision ADD COLUMN sealed_written_by bytea;
"""
BEFORE_SEALING_BACK = """
SET CONSTRAINTS ALL IMMEDIATE;
ALTER TABLE memories_memory ALTER COLUMN written_by SET NOT NULL, ALTER COLUMN also_written_by SET NOT NULL;
ALTER TABLE memories_memory DROP COLUMN sealed_written_by, DROP COLUMN sealed_also_written_by,
    DROP COLUMN written_by_digest, DROP COLUMN also_written_by_digests;
ALTER TABLE memories_memoryrevision ALTER COLUMN written_by SET NOT NULL;
ALTER TABLE memories_memoryrevision DROP COLUMN sealed_written_by;
"""
AFTER_SEALING = """
SET CONSTRAINTS ALL IMMEDIATE;
ALTER TABLE memories_memory DROP COLUMN written_by, DROP COLUMN also_written_by;
ALTER TABLE memories_memory RENAME COLUMN sealed_written_by TO written_by;
ALTER TABLE memories_memory RENAME COLUMN sealed_also_written_by TO also_written_by;
ALTER TABLE memories_memory ALTER COLUMN written_by SET NOT NULL, ALTER COLUMN also_written_by SET NOT NULL,
    ALTER COLUMN written_by_digest SET NOT NULL, ALTER COLUMN also_written_by_digests SET NOT NULL;
ALTER TABLE memories_memoryrevision DROP COLUMN written_by;
ALTER TABLE memories_memoryrevision RENAME COLUMN sealed_written_by TO written_by;
ALTER TABLE memories_memoryrevision ALTER COLUMN written_by SET NOT NULL;
"""
AFTER_SEALING_BACK = """
SET CONSTRAINTS ALL IMMEDIATE;
ALTER TABLE memories_memory RENAME COLUMN written_by TO sealed_written_by;
ALTER TABLE memories_memory RENAME COLUMN also_written_by TO sealed_also_written_by;
ALTER TABLE memories_memory ALTER COLUMN sealed_written_by DROP NOT NULL,
    ALTER COLUMN sealed_also_written_by DROP NOT NULL,
    ALTER COLUMN written_by_digest DROP NOT NULL, ALTER COLUMN also_written_by_digests DROP NOT NULL,
    ADD COLUMN written_by varchar(100), ADD COLUMN also_written_by varchar(100)[];
ALTER TABLE memories_memoryrevision RENAME COLUMN written_by TO sealed_written_by;
ALTER TABLE memories_memoryrevision ALTER COLUMN sealed_written_by DROP NOT NULL,
    ADD COLUMN written_by varchar(100);
"""

# (table, what each row's associated data names, whether it has the other writers and digests)
TABLES = {
    "memories_memory": (("public_id",), True),
    "memories_memoryrevision": (("memory_id", "valid_from"), False),
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


def _context(table: str, column: str, identity: tuple) -> str:
    from memories.encryption.fields import _context_part

    return f"{table}.{column}:" + "|".join(_context_part(value) for value in identity)


def seal_existing(apps, schema_editor) -> None:
    """Seal every client name, and digest those of memories under their rows' key versions."""
    from memories.encryption.derived import client_digest
    from memories.encryption.keys import current_key, key_for

    with schema_editor.connection.cursor() as cursor:
        for table, (identity, memory) in TABLES.items():
            cursor.execute(f"SELECT count(*) FROM {table}")
            total, done = cursor.fetchone()[0], 0
            extra = ", also_written_by, key_version" if memory else ""
            columns = ", ".join(identity)
            select = (
                f"SELECT id, space_id, written_by, {columns}{extra} FROM {table} WHERE id > %s ORDER BY id LIMIT %s"
            )
            for rows in _batches(cursor, select):
                ids, clients, others, digests, other_digests = [], [], [], [], []
                for row in rows:
                    row_id, space_id, client = row[:3]
                    row_identity = row[3 : 3 + len(identity)]
                    key = current_key(space_id)
                    ids.append(row_id)
                    clients.append(key.seal(client, _context(table, "written_by", row_identity)))
                    if memory:
                        also, version = row[-2], row[-1]
                        others.append(
                            key.seal(
                                json.dumps(also, ensure_ascii=False), _context(table, "also_written_by", row_identity)
                            )
                        )
                        digest_key = key_for(space_id, version)
                        digests.append(client_digest(digest_key, client))
                        other_digests.append(json.dumps([client_digest(digest_key, name) for name in also]))
                cursor.execute(
                    f"UPDATE {table} t SET sealed_written_by = d.client "
                    "FROM unnest(%s::bigint[], %s::bytea[]) AS d (id, client) WHERE t.id = d.id",
                    [ids, clients],
                )
                if memory:
                    cursor.execute(
                        f"UPDATE {table} t SET sealed_also_written_by = d.others, written_by_digest = d.digest, "
                        "also_written_by_digests = ARRAY(SELECT jsonb_array_elements_text(d.other_digests)) "
                        "FROM unnest(%s::bigint[], %s::bytea[], %s::varchar[], %s::jsonb[]) "
                        "AS d (id, others, digest, other_digests) WHERE t.id = d.id",
                        [ids, others, digests, other_digests],
                    )
                done += len(rows)
                print(f"\n  sealed the client names of {done:,}/{total:,} rows of {table}", end="", flush=True)


def _opened(space_id: int, blob: bytes, context: str) -> str | None:
    """The sealed text, or None when it does not open."""
    from memories.encryption.cipher import Unreadable, sealed_version
    from memories.encryption.keys import key_for

    try:
        return key_for(space_id, sealed_version(blob)).open(blob, context)
    except (Unreadable, ValueError):
        return None


def open_existing(apps, schema_editor) -> None:
    """Open every client name again; one that does not open becomes none."""
    with schema_editor.connection.cursor() as cursor:
        for table, (identity, memory) in TABLES.items():
            extra = ", sealed_also_written_by" if memory else ""
            columns = ", ".join(identity)
            select = (
                f"SELECT id, space_id, sealed_written_by, {columns}{extra} FROM {table} "
                "WHERE id > %s ORDER BY id LIMIT %s"
            )
            for rows in _batches(cursor, select):
                ids, clients, others = [], [], []
                for row in rows:
                    row_id, space_id, blob = row[0], row[1], bytes(row[2])
                    row_identity = row[3 : 3 + len(identity)]
                    ids.append(row_id)
                    clients.append(_opened(space_id, blob, _context(table, "written_by", row_identity)) or "")
                    if memory:
                        also = _opened(space_id, bytes(row[-1]), _context(table, "also_written_by", row_identity))
                        others.append(also or "[]")
                cursor.execute(
                    f"UPDATE {table} t SET written_by = d.client "
                    "FROM unnest(%s::bigint[], %s::varchar[]) AS d (id, client) WHERE t.id = d.id",
                    [ids, clients],
                )
                if memory:
                    cursor.execute(
                        f"UPDATE {table} t SET also_written_by = ARRAY(SELECT jsonb_array_elements_text(d.others)) "
                        "FROM unnest(%s::bigint[], %s::jsonb[]) AS d (id, others) WHERE t.id = d.id",
                        [ids, others],
                    )


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0029_sealed_tags"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(BEFORE_SEALING, BEFORE_SEALING_BACK),
                migrations.RunPython(seal_existing, open_existing),
                migrations.RunSQL(AFTER_SEALING, AFTER_SEALING_BACK),
            ],
            state_operations=[
                migrations.AlterField(
                    model_name="memory",
                    name="written_by",
                    field=memories.encryption.fields.SealedTextField(blank=True, default="", row=("public_id",)),
                ),
                migrations.AlterField(
                    model_name="memory",
                    name="also_written_by",
                    field=memories.encryption.fields.SealedListField(blank=True, default=list, row=("public_id",)),
                ),
                migrations.AddField(
                    model_name="memory",
                    name="written_by_digest",
                    field=models.CharField(default="", max_length=32),
                    preserve_default=False,
                ),
                migrations.AddField(
                    model_name="memory",
                    name="also_written_by_digests",
                    field=django.contrib.postgres.fields.ArrayField(
                        base_field=models.CharField(max_length=32), blank=True, default=list, size=None
                    ),
                ),
                migrations.AlterField(
                    model_name="memoryrevision",
                    name="written_by",
                    field=memories.encryption.fields.SealedTextField(
                        blank=True, default="", row=("memory_id", "valid_from")
                    ),
                ),
            ],
        ),
    ]
