"""Entities get a random public id, unique per owner, for the pages and explore_graph (their row id
counts every owner's entities). The column's default is drawn by PostgreSQL for each row, so
existing entities get distinct ids as the column is added, and every entity created later does too
(memories.graph.linking inserts them in SQL)."""

import django.contrib.postgres.functions
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0017_notes"),
    ]

    operations = [
        migrations.AddField(
            model_name="entity",
            name="public_id",
            field=models.UUIDField(db_default=django.contrib.postgres.functions.RandomUUID(), editable=False),
        ),
        migrations.AddConstraint(
            model_name="entity",
            constraint=models.UniqueConstraint(fields=("owner", "public_id"), name="entity_public_id_unique_per_owner"),
        ),
    ]
