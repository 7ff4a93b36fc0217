"""Spaces own memories, notes and entities; the owner columns go.

Everything derived for search is kept per space instead of per owner: the BM25 statistics and term
postings (their triggers now follow `space_id`, so moving a memory to another space moves its
terms), the chunks' and passages' denormalised space, the entities' keys, and the HNSW indexes
(dropped here; the next `vector_indexes_maintain` builds one per large space). Every existing row
is already in its owner's personal space (migration 0021), so nothing read changes for anyone.
"""

import importlib
from types import ModuleType

import django.contrib.postgres.indexes
import django.db.models.deletion
from django.db import migrations, models


def _migration(name: str) -> ModuleType:
    return importlib.import_module(f"memories.migrations.{name}")


# Going back: the per-owner triggers as migrations 0002, 0003 and 0015 left them, counting every
# memory again.
OWNER_TRIGGERS = "\n".join(
    (
        _migration("0002_owner_term_statistics").CREATE,
        _migration("0003_term_statistics_count_changed_rows_only").COUNT_CHANGED_ROWS_ONLY,
        _migration("0015_term_postings").COVERING_KEY,
        _migration("0015_term_postings").CREATE,
    )
)


def drop_triggers(ids: str) -> str:
    """Drop the triggers and functions of the statistics and postings (their ids of type `ids`)."""
    return f"""
DROP TRIGGER memories_terms_inserted ON memories_memory;
DROP TRIGGER memories_terms_deleted ON memories_memory;
DROP TRIGGER memories_terms_updated ON memories_memory;
DROP FUNCTION gnosem_terms_inserted(), gnosem_terms_deleted(), gnosem_terms_updated();
DROP FUNCTION gnosem_count_terms({ids}[], tsvector[], integer[], integer[]);
DROP TRIGGER memories_postings_inserted ON memories_memory;
DROP TRIGGER memories_postings_deleted ON memories_memory;
DROP TRIGGER memories_postings_updated ON memories_memory;
DROP FUNCTION gnosem_postings_inserted(), gnosem_postings_deleted(), gnosem_postings_updated();
DROP FUNCTION gnosem_post_terms(bigint[]), gnosem_unpost_terms(bigint[], bigint[], tsvector[]);
"""


# The per-owner HNSW indexes (memories.indexing.vector_indexes): maintenance builds per-space ones.
DROP_OWNER_VECTOR_INDEXES = """
DELETE FROM memories_vectorindex;
DO $$
DECLARE found record;
BEGIN
    FOR found IN SELECT indexname FROM pg_indexes
                 WHERE tablename = 'memories_chunk' AND indexname LIKE 'chunk_hnsw_%' LOOP
        EXECUTE format('DROP INDEX %I', found.indexname);
    END LOOP;
END $$;
"""

FILL_CHUNK_SPACES = [
    "UPDATE memories_chunk c SET space_id = m.space_id FROM memories_memory m WHERE m.id = c.memory_id",
    "UPDATE memories_note_chunk c SET space_id = n.space_id FROM memories_note n WHERE n.id = c.note_id",
    # The updates leave deferred foreign key checks pending, which ALTER TABLE refuses to run beside.
    "SET CONSTRAINTS ALL IMMEDIATE",
]

COVERING_KEY = """
ALTER TABLE memories_term_posting DROP CONSTRAINT memories_term_posting_pkey;
ALTER TABLE memories_term_posting ADD CONSTRAINT memories_term_posting_pkey
    PRIMARY KEY (space_id, lexeme, memory_id) INCLUDE (tf, length, current);
"""

# Statement-level triggers keep the statistics and the postings in the same transaction as every
# write. Rows are upserted in (space, lexeme) order so concurrent writers lock them in one order.
CREATE_SPACE_TRIGGERS = """
CREATE FUNCTION gnosem_count_terms(space_ids bigint[], vectors tsvector[], lengths integer[], signs integer[])
RETURNS void LANGUAGE sql AS $$
    -- Additions may create rows; removals only ever decrement existing ones, so deleting a space
    -- (whose statistics rows Django may remove before the memories) never resurrects a row.
    WITH deltas AS (
        SELECT d.space_id, l.lexeme, sum(d.sign)::integer AS delta
        FROM unnest(space_ids, vectors, signs) AS d (space_id, vector, sign),
             unnest(tsvector_to_array(d.vector)) AS l (lexeme)
        GROUP BY 1, 2
    )
    INSERT INTO memories_space_terms AS t (space_id, lexeme, df)
    SELECT space_id, lexeme, delta FROM deltas WHERE delta > 0 ORDER BY 1, 2
    ON CONFLICT (space_id, lexeme) DO UPDATE SET df = t.df + EXCLUDED.df;

    UPDATE memories_space_terms AS t SET df = t.df + d.delta
    FROM (
        SELECT d.space_id, l.lexeme, sum(d.sign)::integer AS delta
        FROM unnest(space_ids, vectors, signs) AS d (space_id, vector, sign),
             unnest(tsvector_to_array(d.vector)) AS l (lexeme)
        GROUP BY 1, 2 HAVING sum(d.sign) < 0
    ) AS d
    WHERE t.space_id = d.space_id AND t.lexeme = d.lexeme;

    INSERT INTO memories_space_corpus AS c (space_id, documents, total_length)
    SELECT d.space_id, sum(d.sign)::integer, sum(d.sign * d.length)::bigint
    FROM unnest(space_ids, lengths, signs) AS d (space_id, length, sign)
    GROUP BY 1 HAVING sum(d.sign) > 0 ORDER BY 1
    ON CONFLICT (space_id) DO UPDATE
        SET documents = c.documents + EXCLUDED.documents, total_length = c.total_length + EXCLUDED.total_length;

    UPDATE memories_space_corpus AS c
    SET documents = c.documents + d.documents, total_length = c.total_length + d.total_length
    FROM (
        SELECT d.space_id, sum(d.sign)::integer AS documents, sum(d.sign * d.length)::bigint AS total_length
        FROM unnest(space_ids, lengths, signs) AS d (space_id, length, sign)
        GROUP BY 1 HAVING sum(d.sign) <= 0
    ) AS d
    WHERE c.space_id = d.space_id;
$$;

CREATE FUNCTION gnosem_terms_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM gnosem_count_terms(array_agg(space_id), array_agg(search_vector), array_agg(search_length), array_agg(1))
    FROM new_rows;
    RETURN NULL;
END $$;
CREATE FUNCTION gnosem_terms_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM gnosem_count_terms(array_agg(space_id), array_agg(search_vector), array_agg(search_length), array_agg(-1))
    FROM old_rows;
    RETURN NULL;
END $$;
-- Only rows whose words or space changed are counted out and in again.
CREATE FUNCTION gnosem_terms_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM gnosem_count_terms(array_agg(space_id), array_agg(search_vector), array_agg(search_length), array_agg(sign))
    FROM (SELECT o.space_id, o.search_vector, o.search_length, -1 AS sign FROM old_rows AS o
          WHERE NOT EXISTS (SELECT FROM new_rows AS n
                            WHERE n.id = o.id AND n.space_id = o.space_id AND n.search_vector = o.search_vector)
          UNION ALL
          SELECT n.space_id, n.search_vector, n.search_length, 1 FROM new_rows AS n
          WHERE NOT EXISTS (SELECT FROM old_rows AS o
                            WHERE o.id = n.id AND o.space_id = n.space_id AND o.search_vector = n.search_vector)
         ) AS changed;
    RETURN NULL;
END $$;

CREATE TRIGGER memories_terms_inserted AFTER INSERT ON memories_memory
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gnosem_terms_inserted();
CREATE TRIGGER memories_terms_deleted AFTER DELETE ON memories_memory
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION gnosem_terms_deleted();
CREATE TRIGGER memories_terms_updated AFTER UPDATE ON memories_memory
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gnosem_terms_updated();

CREATE FUNCTION gnosem_post_terms(memory_ids bigint[]) RETURNS void LANGUAGE sql AS $$
    INSERT INTO memories_term_posting (space_id, lexeme, memory_id, tf, length, current)
    SELECT m.space_id, u.lexeme, m.id, coalesce(array_length(u.positions, 1), 1), m.search_length,
           m.superseded_by_id IS NULL
    FROM memories_memory m CROSS JOIN LATERAL unnest(m.search_vector) AS u
    WHERE m.id = ANY(memory_ids)
    ORDER BY 1, 2, 3;
$$;

CREATE FUNCTION gnosem_unpost_terms(space_ids bigint[], memory_ids bigint[], vectors tsvector[]) RETURNS void
LANGUAGE sql AS $$
    DELETE FROM memories_term_posting AS p
    USING unnest(space_ids, memory_ids, vectors) AS d (space_id, memory_id, vector),
          unnest(tsvector_to_array(d.vector)) AS l (lexeme)
    WHERE p.space_id = d.space_id AND p.lexeme = l.lexeme AND p.memory_id = d.memory_id;
$$;

CREATE FUNCTION gnosem_postings_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM gnosem_post_terms(array_agg(id)) FROM new_rows;
    RETURN NULL;
END $$;

CREATE FUNCTION gnosem_postings_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM gnosem_unpost_terms(array_agg(space_id), array_agg(id), array_agg(search_vector)) FROM old_rows;
    RETURN NULL;
END $$;

-- Most updates leave the text alone (indexing, tags, compression): only rows whose text or space
-- changed are posted again, and only rows whose supersession changed have `current` set.
CREATE FUNCTION gnosem_postings_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM gnosem_unpost_terms(array_agg(o.space_id), array_agg(o.id), array_agg(o.search_vector))
    FROM old_rows AS o
    WHERE NOT EXISTS (SELECT FROM new_rows AS n
                      WHERE n.id = o.id AND n.space_id = o.space_id AND n.search_vector = o.search_vector);
    PERFORM gnosem_post_terms(array_agg(n.id))
    FROM new_rows AS n
    WHERE NOT EXISTS (SELECT FROM old_rows AS o
                      WHERE o.id = n.id AND o.space_id = n.space_id AND o.search_vector = n.search_vector);
    UPDATE memories_term_posting AS p SET current = n.superseded_by_id IS NULL
    FROM new_rows AS n
    JOIN old_rows AS o ON o.id = n.id AND o.space_id = n.space_id AND o.search_vector = n.search_vector
    CROSS JOIN LATERAL unnest(tsvector_to_array(n.search_vector)) AS l (lexeme)
    WHERE (o.superseded_by_id IS NULL) <> (n.superseded_by_id IS NULL)
      AND p.space_id = n.space_id AND p.lexeme = l.lexeme AND p.memory_id = n.id;
    RETURN NULL;
END $$;

CREATE TRIGGER memories_postings_inserted AFTER INSERT ON memories_memory
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gnosem_postings_inserted();
CREATE TRIGGER memories_postings_deleted AFTER DELETE ON memories_memory
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION gnosem_postings_deleted();
CREATE TRIGGER memories_postings_updated AFTER UPDATE ON memories_memory
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gnosem_postings_updated();

SELECT gnosem_count_terms(array_agg(space_id), array_agg(search_vector), array_agg(search_length), array_agg(1))
FROM memories_memory;
SELECT gnosem_post_terms(array_agg(id)) FROM memories_memory;
"""


def space_field(null: bool = False, db_index: bool = True) -> models.ForeignKey:
    return models.ForeignKey(
        null=null,
        db_index=db_index,
        on_delete=django.db.models.deletion.CASCADE,
        related_name="+",
        to="accounts.space",
    )


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0006_spaces"),
        ("memories", "0021_space_and_author"),
    ]

    operations = [
        migrations.RunSQL(drop_triggers("integer"), OWNER_TRIGGERS),
        migrations.RunSQL(DROP_OWNER_VECTOR_INDEXES, migrations.RunSQL.noop),
        migrations.DeleteModel(name="OwnerTermStatistic"),
        migrations.DeleteModel(name="OwnerCorpusStatistic"),
        migrations.DeleteModel(name="TermPosting"),
        # Chunks and passages carry their memory's or note's space.
        migrations.AddField(model_name="chunk", name="space", field=space_field(null=True, db_index=False)),
        migrations.AddField(model_name="notechunk", name="space", field=space_field(null=True, db_index=False)),
        *(migrations.RunSQL(statement, migrations.RunSQL.noop) for statement in FILL_CHUNK_SPACES),
        migrations.AlterField(model_name="chunk", name="space", field=space_field(db_index=False)),
        migrations.AlterField(model_name="notechunk", name="space", field=space_field(db_index=False)),
        migrations.RemoveIndex(model_name="chunk", name="chunk_owner_model_signature"),
        migrations.AddIndex(
            model_name="chunk",
            index=models.Index(
                fields=["space", "model"], include=["id", "memory_id", "signature"], name="chunk_space_model_signature"
            ),
        ),
        migrations.RemoveField(model_name="chunk", name="owner"),
        migrations.RemoveIndex(model_name="notechunk", name="note_chunk_owner_model"),
        migrations.RemoveIndex(model_name="notechunk", name="note_chunk_owner_search"),
        migrations.AddIndex(
            model_name="notechunk", index=models.Index(fields=["space", "model"], name="note_chunk_space_model")
        ),
        migrations.AddIndex(
            model_name="notechunk",
            index=django.contrib.postgres.indexes.GinIndex(
                fields=["space", "search_vector"], name="note_chunk_space_search"
            ),
        ),
        migrations.RemoveField(model_name="notechunk", name="owner"),
        # Memories.
        migrations.RemoveIndex(model_name="memory", name="memory_owner_newest"),
        migrations.RemoveIndex(model_name="memory", name="memory_pending_by_owner"),
        migrations.RemoveIndex(model_name="memory", name="memory_owner_search_vector"),
        migrations.RemoveIndex(model_name="memory", name="memory_owner_content_digest"),
        migrations.RemoveIndex(model_name="memory", name="memory_owner_pinned"),
        migrations.RemoveConstraint(model_name="memory", name="memory_public_id_unique_per_owner"),
        migrations.AddIndex(
            model_name="memory",
            index=models.Index(fields=["space", "-created_at", "-id"], name="memory_space_newest"),
        ),
        migrations.AddIndex(
            model_name="memory",
            index=models.Index(
                condition=models.Q(indexing_status="pending"),
                fields=["space", "indexing_queued_at", "id"],
                name="memory_pending_by_space",
            ),
        ),
        migrations.AddIndex(
            model_name="memory",
            index=django.contrib.postgres.indexes.GinIndex(
                fields=["space", "search_vector"], name="memory_space_search_vector"
            ),
        ),
        migrations.AddIndex(
            model_name="memory",
            index=models.Index(fields=["space", "content_digest"], name="memory_space_content_digest"),
        ),
        migrations.AddIndex(
            model_name="memory",
            index=models.Index(condition=models.Q(pinned=True), fields=["space"], name="memory_space_pinned"),
        ),
        migrations.AddConstraint(
            model_name="memory",
            constraint=models.UniqueConstraint(fields=("space", "public_id"), name="memory_public_id_unique_per_space"),
        ),
        migrations.RemoveField(model_name="memory", name="owner"),
        # Notes.
        migrations.RemoveIndex(model_name="note", name="note_owner_newest"),
        migrations.RemoveConstraint(model_name="note", name="note_public_id_unique_per_owner"),
        migrations.AddIndex(
            model_name="note", index=models.Index(fields=["space", "-updated_at", "-id"], name="note_space_newest")
        ),
        migrations.AddConstraint(
            model_name="note",
            constraint=models.UniqueConstraint(fields=("space", "public_id"), name="note_public_id_unique_per_space"),
        ),
        migrations.RemoveField(model_name="note", name="owner"),
        # Entities.
        migrations.RemoveConstraint(model_name="entity", name="entity_unique_key_per_owner"),
        migrations.RemoveConstraint(model_name="entity", name="entity_public_id_unique_per_owner"),
        migrations.AddConstraint(
            model_name="entity",
            constraint=models.UniqueConstraint(fields=("space", "key"), name="entity_unique_key_per_space"),
        ),
        migrations.AddConstraint(
            model_name="entity",
            constraint=models.UniqueConstraint(fields=("space", "public_id"), name="entity_public_id_unique_per_space"),
        ),
        migrations.RemoveField(model_name="entity", name="owner"),
        # Vector indexes, emptied above.
        migrations.RemoveConstraint(model_name="vectorindex", name="vector_index_one_per_owner_model"),
        migrations.RemoveField(model_name="vectorindex", name="owner"),
        migrations.AddField(model_name="vectorindex", name="space", field=space_field(), preserve_default=False),
        migrations.AddConstraint(
            model_name="vectorindex",
            constraint=models.UniqueConstraint(fields=("space", "model"), name="vector_index_one_per_space_model"),
        ),
        # Per-space search statistics and postings, kept by triggers, filled from every memory.
        migrations.CreateModel(
            name="SpaceTermStatistic",
            fields=[
                (
                    "pk",
                    models.CompositePrimaryKey(
                        "space_id", "lexeme", blank=True, editable=False, primary_key=True, serialize=False
                    ),
                ),
                ("space", space_field(db_index=False)),
                ("lexeme", models.TextField()),
                ("df", models.IntegerField()),
            ],
            options={"db_table": "memories_space_terms"},
        ),
        migrations.CreateModel(
            name="SpaceCorpusStatistic",
            fields=[
                (
                    "space",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="+",
                        serialize=False,
                        to="accounts.space",
                    ),
                ),
                ("documents", models.IntegerField()),
                ("total_length", models.BigIntegerField()),
            ],
            options={"db_table": "memories_space_corpus"},
        ),
        migrations.CreateModel(
            name="TermPosting",
            fields=[
                (
                    "pk",
                    models.CompositePrimaryKey(
                        "space_id", "lexeme", "memory_id", blank=True, editable=False, primary_key=True, serialize=False
                    ),
                ),
                ("space_id", models.BigIntegerField()),
                ("lexeme", models.TextField()),
                ("memory_id", models.BigIntegerField()),
                ("tf", models.IntegerField()),
                ("length", models.IntegerField()),
                ("current", models.BooleanField()),
            ],
            options={"db_table": "memories_term_posting"},
        ),
        migrations.RunSQL(COVERING_KEY, migrations.RunSQL.noop),
        migrations.RunSQL(CREATE_SPACE_TRIGGERS, drop_triggers("bigint")),
    ]
