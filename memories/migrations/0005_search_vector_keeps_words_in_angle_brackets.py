"""Words between angle brackets are searchable: `<Button>`, `List<String>`, `<script>...`.

PostgreSQL's text parser reads `<...>` as an XML tag and the english configuration drops tags
(and the text of `<script>` elements), so a memory about the `<Button>` component had no
`button` in its full-text vector. The vector is now computed by `gnosem_search_vector`, which
turns angle brackets into spaces first; queries go through the same function. The generated
columns are rebuilt with it, then the BM25 statistics are counted afresh.
"""

from django.db import migrations

SEARCH_VECTOR = """
CREATE OR REPLACE FUNCTION gnosem_search_vector(content text) RETURNS tsvector
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$ SELECT to_tsvector('english'::regconfig, translate(content, '<>', '  ')) $$;
"""

REBUILD = """
ALTER TABLE memories_memory DROP COLUMN search_length, DROP COLUMN search_vector;
ALTER TABLE memories_memory
    ADD COLUMN search_vector tsvector GENERATED ALWAYS AS ({vector}) STORED,
    ADD COLUMN search_length integer GENERATED ALWAYS AS (gnosem_tsvector_token_count({vector})) STORED;
CREATE INDEX memory_owner_search_vector ON memories_memory USING gin (owner_id, search_vector);
TRUNCATE memories_owner_terms, memories_owner_corpus;
SELECT gnosem_count_terms(array_agg(owner_id), array_agg(search_vector), array_agg(search_length), array_agg(1))
FROM memories_memory;
"""


class Migration(migrations.Migration):
    dependencies = [("memories", "0004_memory_compression_due_at")]

    operations = [
        migrations.RunSQL(SEARCH_VECTOR, migrations.RunSQL.noop),
        migrations.RunSQL(
            REBUILD.format(vector="gnosem_search_vector(content)"),
            REBUILD.format(vector="to_tsvector('english'::regconfig, content)"),
        ),
    ]
