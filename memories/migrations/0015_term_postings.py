"""Term postings for the keyword signal, kept current by triggers.

The keyword signal visited every memory holding one of the query's terms and took its terms apart
(tens of thousands of memories for a common word in a large store). One row per (owner, lexeme,
memory) holding the term frequency, the memory's length and whether it is current, all in the
primary key's index, lets it sum BM25 from that index alone. Statement-level triggers on
memories_memory keep the rows in the same transaction as every insert, delete, text change and
supersession (as the term statistics of migration 0002 are kept); existing memories are posted here.
"""

from django.db import migrations, models

# The primary key carries the other columns, so the keyword signal reads postings from it alone.
COVERING_KEY = """
ALTER TABLE memories_term_posting DROP CONSTRAINT memories_term_posting_pkey;
ALTER TABLE memories_term_posting ADD CONSTRAINT memories_term_posting_pkey
    PRIMARY KEY (owner_id, lexeme, memory_id) INCLUDE (tf, length, current);
"""

CREATE = """
CREATE FUNCTION gnosem_post_terms(memory_ids bigint[]) RETURNS void LANGUAGE sql AS $$
    INSERT INTO memories_term_posting (owner_id, lexeme, memory_id, tf, length, current)
    SELECT m.owner_id, u.lexeme, m.id, coalesce(array_length(u.positions, 1), 1), m.search_length,
           m.superseded_by_id IS NULL
    FROM memories_memory m CROSS JOIN LATERAL unnest(m.search_vector) AS u
    WHERE m.id = ANY(memory_ids)
    ORDER BY 1, 2, 3;
$$;

CREATE FUNCTION gnosem_unpost_terms(owner_ids bigint[], memory_ids bigint[], vectors tsvector[]) RETURNS void
LANGUAGE sql AS $$
    DELETE FROM memories_term_posting AS p
    USING unnest(owner_ids, memory_ids, vectors) AS d (owner_id, memory_id, vector),
          unnest(tsvector_to_array(d.vector)) AS l (lexeme)
    WHERE p.owner_id = d.owner_id AND p.lexeme = l.lexeme AND p.memory_id = d.memory_id;
$$;

CREATE FUNCTION gnosem_postings_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM gnosem_post_terms(array_agg(id)) FROM new_rows;
    RETURN NULL;
END $$;

CREATE FUNCTION gnosem_postings_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM gnosem_unpost_terms(array_agg(owner_id), array_agg(id), array_agg(search_vector)) FROM old_rows;
    RETURN NULL;
END $$;

-- Most updates leave the text alone (indexing, tags, compression): only rows whose text or owner
-- changed are posted again, and only rows whose supersession changed have `current` set.
CREATE FUNCTION gnosem_postings_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM gnosem_unpost_terms(array_agg(o.owner_id), array_agg(o.id), array_agg(o.search_vector))
    FROM old_rows AS o
    WHERE NOT EXISTS (SELECT FROM new_rows AS n
                      WHERE n.id = o.id AND n.owner_id = o.owner_id AND n.search_vector = o.search_vector);
    PERFORM gnosem_post_terms(array_agg(n.id))
    FROM new_rows AS n
    WHERE NOT EXISTS (SELECT FROM old_rows AS o
                      WHERE o.id = n.id AND o.owner_id = n.owner_id AND o.search_vector = n.search_vector);
    UPDATE memories_term_posting AS p SET current = n.superseded_by_id IS NULL
    FROM new_rows AS n
    JOIN old_rows AS o ON o.id = n.id AND o.owner_id = n.owner_id AND o.search_vector = n.search_vector
    CROSS JOIN LATERAL unnest(tsvector_to_array(n.search_vector)) AS l (lexeme)
    WHERE (o.superseded_by_id IS NULL) <> (n.superseded_by_id IS NULL)
      AND p.owner_id = n.owner_id AND p.lexeme = l.lexeme AND p.memory_id = n.id;
    RETURN NULL;
END $$;

CREATE TRIGGER memories_postings_inserted AFTER INSERT ON memories_memory
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gnosem_postings_inserted();
CREATE TRIGGER memories_postings_deleted AFTER DELETE ON memories_memory
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION gnosem_postings_deleted();
CREATE TRIGGER memories_postings_updated AFTER UPDATE ON memories_memory
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gnosem_postings_updated();

SELECT gnosem_post_terms(array_agg(id)) FROM memories_memory;
"""

DROP = """
DROP TRIGGER memories_postings_inserted ON memories_memory;
DROP TRIGGER memories_postings_deleted ON memories_memory;
DROP TRIGGER memories_postings_updated ON memories_memory;
DROP FUNCTION gnosem_postings_inserted(), gnosem_postings_deleted(), gnosem_postings_updated();
DROP FUNCTION gnosem_post_terms(bigint[]), gnosem_unpost_terms(bigint[], bigint[], tsvector[]);
"""


class Migration(migrations.Migration):
    dependencies = [("memories", "0014_vector_indexes")]

    operations = [
        migrations.CreateModel(
            name="TermPosting",
            fields=[
                (
                    "pk",
                    models.CompositePrimaryKey(
                        "owner_id", "lexeme", "memory_id", blank=True, editable=False, primary_key=True, serialize=False
                    ),
                ),
                ("owner_id", models.BigIntegerField()),
                ("lexeme", models.TextField()),
                ("memory_id", models.BigIntegerField()),
                ("tf", models.IntegerField()),
                ("length", models.IntegerField()),
                ("current", models.BooleanField()),
            ],
            options={"db_table": "memories_term_posting"},
        ),
        migrations.RunSQL(COVERING_KEY, migrations.RunSQL.noop),
        migrations.RunSQL(CREATE, DROP),
    ]
