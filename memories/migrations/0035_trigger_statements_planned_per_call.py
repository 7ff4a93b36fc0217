# The statement triggers that read a statement's transition tables (old_rows, new_rows) run each of
# their statements through EXECUTE. PL/pgSQL keeps a statement's plan for the rest of the session,
# and a statement without parameters is planned once, for the row counts of the first call: a
# worker whose first update of memories touched one row then joined every later claim's rows with
# nested loops, in time growing with the square of their number
# (docs/benchmarks.md, "Indexing tasks per write"). EXECUTE plans each call for its own rows.
# Going back needs nothing: the functions do the same either way.

import importlib

from django.db import migrations

links = importlib.import_module("memories.migrations.0034_entity_links")


def _planned_per_call(statement: str) -> str:
    return f"EXECUTE $statement${statement.strip().rstrip(';')}$statement$;"


def _function_only(sql: str) -> str:
    """A CREATE FUNCTION of a migration, without the CREATE TRIGGER statements after it, replacing
    the function in place."""
    return sql.split("CREATE TRIGGER")[0].replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1)


_POSTINGS_UPDATED = f"""
CREATE OR REPLACE FUNCTION gnosem_postings_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    {_planned_per_call('''
    SELECT gnosem_unpost_terms(array_agg(o.space_id), array_agg(o.id), array_agg(o.search_vector))
    FROM old_rows AS o
    WHERE NOT EXISTS (SELECT FROM new_rows AS n
                      WHERE n.id = o.id AND n.space_id = o.space_id AND n.search_vector = o.search_vector)''')}
    {_planned_per_call('''
    SELECT gnosem_post_terms(array_agg(n.id))
    FROM new_rows AS n
    WHERE NOT EXISTS (SELECT FROM old_rows AS o
                      WHERE o.id = n.id AND o.space_id = n.space_id AND o.search_vector = n.search_vector)''')}
    {_planned_per_call('''
    UPDATE memories_term_posting AS p SET current = n.superseded_by_id IS NULL
    FROM new_rows AS n
    JOIN old_rows AS o ON o.id = n.id AND o.space_id = n.space_id AND o.search_vector = n.search_vector
    CROSS JOIN LATERAL unnest(tsvector_to_array(n.search_vector)) AS l (lexeme)
    WHERE (o.superseded_by_id IS NULL) <> (n.superseded_by_id IS NULL)
      AND p.space_id = n.space_id AND p.lexeme = l.lexeme AND p.memory_id = n.id''')}
    RETURN NULL;
END $$;
"""
_TERMS_UPDATED = f"""
CREATE OR REPLACE FUNCTION gnosem_terms_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    {_planned_per_call('''
    SELECT gnosem_count_terms(array_agg(space_id), array_agg(search_vector), array_agg(search_length), array_agg(sign))
    FROM (SELECT o.space_id, o.search_vector, o.search_length, -1 AS sign FROM old_rows AS o
          WHERE NOT EXISTS (SELECT FROM new_rows AS n
                            WHERE n.id = o.id AND n.space_id = o.space_id AND n.search_vector = o.search_vector)
          UNION ALL
          SELECT n.space_id, n.search_vector, n.search_length, 1 FROM new_rows AS n
          WHERE NOT EXISTS (SELECT FROM old_rows AS o
                            WHERE o.id = n.id AND o.space_id = n.space_id AND o.search_vector = n.search_vector)
         ) AS changed''')}
    RETURN NULL;
END $$;
"""
_MENTIONS_FOLLOW_MEMORIES = f"""
CREATE OR REPLACE FUNCTION gnosem_mentions_follow_memories() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    {_planned_per_call('''
    UPDATE memories_entity_mention AS e
    SET memory_current = n.superseded_by_id IS NULL, memory_created_at = n.created_at
    FROM new_rows AS n JOIN old_rows AS o ON o.id = n.id
    WHERE e.memory_id = n.id
      AND ((o.superseded_by_id IS NULL) <> (n.superseded_by_id IS NULL) OR o.created_at <> n.created_at)''')}
    RETURN NULL;
END $$;
"""
_LINKS_FOLLOW = _function_only(
    links._links_follow("memories", "memories_entity_mention", "memory_id", "m.memory_current", "count(*), 0", _planned_per_call)
) + _function_only(links._links_follow("notes", "memories_note_mention", "note_id", "true", "0, count(*)", _planned_per_call))


class Migration(migrations.Migration):

    dependencies = [
        ("memories", "0034_entity_links"),
    ]

    operations = [
        migrations.RunSQL(
            _POSTINGS_UPDATED + _TERMS_UPDATED + _MENTIONS_FOLLOW_MEMORIES + _LINKS_FOLLOW,
            migrations.RunSQL.noop,
        ),
    ]
