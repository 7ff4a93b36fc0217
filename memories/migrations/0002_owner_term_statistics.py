"""Per-owner BM25 statistics, kept current by triggers.

BM25 needs, per owner, how many memories contain each term (document frequency) and the average
memory length. Counting those at query time costs a scan per query term; two tables
(OwnerTermStatistic, OwnerCorpusStatistic) hold them instead, updated by statement-level triggers on memories_memory in the same transaction as
the write, so they can never drift from the memories they describe. Rows are upserted in
(owner, lexeme) order so concurrent writers lock them in the same order.
"""

import django.contrib.postgres.indexes
import django.db.models.deletion
from django.conf import settings
from django.contrib.postgres.operations import BtreeGinExtension
from django.db import migrations, models

CREATE = """
CREATE FUNCTION gnosem_count_terms(owner_ids integer[], vectors tsvector[], lengths integer[], signs integer[])
RETURNS void LANGUAGE sql AS $$
    -- Additions may create rows; removals only ever decrement existing ones, so deleting a user
    -- (whose statistics rows Django may remove before the memories) never resurrects a row.
    WITH deltas AS (
        SELECT d.owner_id, l.lexeme, sum(d.sign)::integer AS delta
        FROM unnest(owner_ids, vectors, signs) AS d (owner_id, vector, sign),
             unnest(tsvector_to_array(d.vector)) AS l (lexeme)
        GROUP BY 1, 2
    )
    INSERT INTO memories_owner_terms AS t (owner_id, lexeme, df)
    SELECT owner_id, lexeme, delta FROM deltas WHERE delta > 0 ORDER BY 1, 2
    ON CONFLICT (owner_id, lexeme) DO UPDATE SET df = t.df + EXCLUDED.df;

    UPDATE memories_owner_terms AS t SET df = t.df + d.delta
    FROM (
        SELECT d.owner_id, l.lexeme, sum(d.sign)::integer AS delta
        FROM unnest(owner_ids, vectors, signs) AS d (owner_id, vector, sign),
             unnest(tsvector_to_array(d.vector)) AS l (lexeme)
        GROUP BY 1, 2 HAVING sum(d.sign) < 0
    ) AS d
    WHERE t.owner_id = d.owner_id AND t.lexeme = d.lexeme;

    INSERT INTO memories_owner_corpus AS c (owner_id, documents, total_length)
    SELECT d.owner_id, sum(d.sign)::integer, sum(d.sign * d.length)::bigint
    FROM unnest(owner_ids, lengths, signs) AS d (owner_id, length, sign)
    GROUP BY 1 HAVING sum(d.sign) > 0 ORDER BY 1
    ON CONFLICT (owner_id) DO UPDATE
        SET documents = c.documents + EXCLUDED.documents, total_length = c.total_length + EXCLUDED.total_length;

    UPDATE memories_owner_corpus AS c
    SET documents = c.documents + d.documents, total_length = c.total_length + d.total_length
    FROM (
        SELECT d.owner_id, sum(d.sign)::integer AS documents, sum(d.sign * d.length)::bigint AS total_length
        FROM unnest(owner_ids, lengths, signs) AS d (owner_id, length, sign)
        GROUP BY 1 HAVING sum(d.sign) <= 0
    ) AS d
    WHERE c.owner_id = d.owner_id;
$$;

CREATE FUNCTION gnosem_terms_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM gnosem_count_terms(array_agg(owner_id), array_agg(search_vector), array_agg(search_length), array_agg(1))
    FROM new_rows;
    RETURN NULL;
END $$;
CREATE FUNCTION gnosem_terms_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM gnosem_count_terms(array_agg(owner_id), array_agg(search_vector), array_agg(search_length), array_agg(-1))
    FROM old_rows;
    RETURN NULL;
END $$;
CREATE FUNCTION gnosem_terms_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM gnosem_count_terms(array_agg(owner_id), array_agg(search_vector), array_agg(search_length), array_agg(sign))
    FROM (SELECT owner_id, search_vector, search_length, -1 AS sign FROM old_rows
          UNION ALL
          SELECT owner_id, search_vector, search_length, 1 FROM new_rows) AS changed;
    RETURN NULL;
END $$;

CREATE TRIGGER memories_terms_inserted AFTER INSERT ON memories_memory
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gnosem_terms_inserted();
CREATE TRIGGER memories_terms_deleted AFTER DELETE ON memories_memory
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION gnosem_terms_deleted();
CREATE TRIGGER memories_terms_updated AFTER UPDATE ON memories_memory
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gnosem_terms_updated();

SELECT gnosem_count_terms(array_agg(owner_id), array_agg(search_vector), array_agg(search_length), array_agg(1))
FROM memories_memory;
"""

DROP = """
DROP TRIGGER memories_terms_inserted ON memories_memory;
DROP TRIGGER memories_terms_deleted ON memories_memory;
DROP TRIGGER memories_terms_updated ON memories_memory;
DROP FUNCTION gnosem_terms_inserted(), gnosem_terms_deleted(), gnosem_terms_updated();
DROP FUNCTION gnosem_count_terms(integer[], tsvector[], integer[], integer[]);
"""


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("memories", "0001_initial"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="OwnerCorpusStatistic",
            fields=[
                (
                    "owner",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="+",
                        serialize=False,
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                ("documents", models.IntegerField()),
                ("total_length", models.BigIntegerField()),
            ],
            options={"db_table": "memories_owner_corpus"},
        ),
        migrations.CreateModel(
            name="OwnerTermStatistic",
            fields=[
                (
                    "pk",
                    models.CompositePrimaryKey(
                        "owner_id", "lexeme", blank=True, editable=False, primary_key=True, serialize=False
                    ),
                ),
                (
                    "owner",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="+", to=settings.AUTH_USER_MODEL
                    ),
                ),
                ("lexeme", models.TextField()),
                ("df", models.IntegerField()),
            ],
            options={"db_table": "memories_owner_terms"},
        ),
        migrations.RunSQL(CREATE, DROP),
        BtreeGinExtension(),
        migrations.RemoveIndex(model_name="memory", name="memory_search_vector"),
        migrations.AddIndex(
            model_name="memory",
            index=django.contrib.postgres.indexes.GinIndex(
                fields=["owner", "search_vector"], name="memory_owner_search_vector"
            ),
        ),
    ]
