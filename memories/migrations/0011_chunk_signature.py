"""Chunks carry a thermometer code of their vector (`signature`), the vector signal's first pass.

Three bits a dimension, set where the coordinate exceeds -a, 0 and a, with a = 0.674 / sqrt(d):
a unit vector's coordinates spread about N(0, 1/d), so the three thresholds are its quartiles,
whatever the model. Search ranks the owner's chunks by Hamming distance between codes, read from
the covering index alone, then by cosine over the best few (docs/benchmarks.md, "Vector first pass").
"""

import memories.models
from django.db import migrations, models

SIGNATURE_FUNCTION_SQL = """
CREATE OR REPLACE FUNCTION gnosem_vector_signature(embedding halfvec) RETURNS bit varying
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT (binary_quantize(embedding + quartile) || binary_quantize(embedding) || binary_quantize(embedding - quartile))::bit varying
    FROM (SELECT array_fill(0.674 / sqrt(vector_dims(embedding)), ARRAY[vector_dims(embedding)])::halfvec AS quartile) step
$$
"""


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0010_memory_pending_by_owner"),
    ]

    operations = [
        migrations.RunSQL(SIGNATURE_FUNCTION_SQL, reverse_sql="DROP FUNCTION gnosem_vector_signature(halfvec)"),
        migrations.AddField(
            model_name="chunk",
            name="signature",
            field=models.GeneratedField(
                db_persist=True,
                expression=memories.models.VectorSignature("embedding"),
                output_field=memories.models.BitStringField(),
            ),
        ),
        migrations.RemoveIndex(
            model_name="chunk",
            name="chunk_owner_model",
        ),
        migrations.AddIndex(
            model_name="chunk",
            index=models.Index(
                fields=["owner", "model"], include=("id", "memory_id", "signature"), name="chunk_owner_model_signature"
            ),
        ),
    ]
