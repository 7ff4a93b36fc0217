"""The update trigger counts only rows whose terms or owner changed.

Most updates of a memory leave its text alone (indexing leases and status, tags, compression):
counting their terms out and back in cost an unnest and a GROUP BY over every lexeme of every
updated row for a zero result, on each claim and each stored batch of the indexing worker.
"""

from django.db import migrations

COUNT_CHANGED_ROWS_ONLY = """
CREATE OR REPLACE FUNCTION gnosem_terms_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM gnosem_count_terms(array_agg(owner_id), array_agg(search_vector), array_agg(search_length), array_agg(sign))
    FROM (SELECT o.owner_id, o.search_vector, o.search_length, -1 AS sign FROM old_rows AS o
          WHERE NOT EXISTS (SELECT FROM new_rows AS n
                            WHERE n.id = o.id AND n.owner_id = o.owner_id AND n.search_vector = o.search_vector)
          UNION ALL
          SELECT n.owner_id, n.search_vector, n.search_length, 1 FROM new_rows AS n
          WHERE NOT EXISTS (SELECT FROM old_rows AS o
                            WHERE o.id = n.id AND o.owner_id = n.owner_id AND o.search_vector = n.search_vector)
         ) AS changed;
    RETURN NULL;
END $$;
"""

COUNT_EVERY_ROW = """
CREATE OR REPLACE FUNCTION gnosem_terms_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM gnosem_count_terms(array_agg(owner_id), array_agg(search_vector), array_agg(search_length), array_agg(sign))
    FROM (SELECT owner_id, search_vector, search_length, -1 AS sign FROM old_rows
          UNION ALL
          SELECT owner_id, search_vector, search_length, 1 FROM new_rows) AS changed;
    RETURN NULL;
END $$;
"""


class Migration(migrations.Migration):
    dependencies = [("memories", "0002_owner_term_statistics")]

    operations = [migrations.RunSQL(COUNT_CHANGED_ROWS_ONLY, COUNT_EVERY_ROW)]
