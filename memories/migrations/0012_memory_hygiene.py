"""Pinned and superseded memories, the provenance of texts written again, and earlier versions.

`content_digest` is md5 of the text with its case folded and its white space runs made single
spaces (`gnosem_content_digest`): memory_write finds the same text already written through it.
"""

import django.contrib.postgres.fields
import django.db.models.deletion
import memories.models
from django.db import migrations, models

DIGEST_FUNCTION_SQL = r"""
CREATE OR REPLACE FUNCTION gnosem_content_digest(content text) RETURNS varchar(32)
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$ SELECT md5(lower(btrim(regexp_replace(content, '\s+', ' ', 'g')))) $$
"""


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0011_chunk_signature"),
    ]

    operations = [
        migrations.RunSQL(DIGEST_FUNCTION_SQL, reverse_sql="DROP FUNCTION gnosem_content_digest(text)"),
        migrations.AddField(
            model_name="memory",
            name="also_written_by",
            field=django.contrib.postgres.fields.ArrayField(
                base_field=models.CharField(max_length=100), blank=True, default=list, size=None
            ),
        ),
        migrations.AddField(
            model_name="memory",
            name="pinned",
            field=models.BooleanField(default=False),
        ),
        migrations.AddField(
            model_name="memory",
            name="superseded_by",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="supersedes",
                to="memories.memory",
            ),
        ),
        migrations.AddField(
            model_name="memory",
            name="content_digest",
            field=models.GeneratedField(
                db_persist=True,
                expression=memories.models.ContentDigest("content"),
                output_field=models.CharField(max_length=32),
            ),
        ),
        migrations.AddIndex(
            model_name="memory",
            index=models.Index(fields=["owner", "content_digest"], name="memory_owner_content_digest"),
        ),
        migrations.AddIndex(
            model_name="memory",
            index=models.Index(condition=models.Q(("pinned", True)), fields=["owner"], name="memory_owner_pinned"),
        ),
        migrations.AddConstraint(
            model_name="memory",
            constraint=models.CheckConstraint(
                condition=models.Q(("superseded_by", models.F("id")), _negated=True),
                name="memory_not_superseded_by_itself",
            ),
        ),
        migrations.CreateModel(
            name="MemoryRevision",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("content", models.TextField()),
                (
                    "tags",
                    django.contrib.postgres.fields.ArrayField(
                        base_field=models.CharField(max_length=64), blank=True, default=list, size=None
                    ),
                ),
                ("written_by", models.CharField(blank=True, default="", max_length=100)),
                ("valid_from", models.DateTimeField()),
                ("replaced_at", models.DateTimeField()),
                (
                    "memory",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="revisions", to="memories.memory"
                    ),
                ),
            ],
            options={
                "indexes": [models.Index(fields=["memory", "-replaced_at", "-id"], name="revision_memory_newest")],
            },
        ),
    ]
