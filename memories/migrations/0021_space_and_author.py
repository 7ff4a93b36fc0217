"""Every memory, note and entity moves into its owner's personal space; memories and notes keep
their owner as their author. Nothing else changes: reads still go through the owner."""

import importlib

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

BACKFILL = [
    f"""
    UPDATE memories_{table} AS row SET space_id = space.id{author}
    FROM accounts_space AS space
    WHERE space.personal_of_id = row.owner_id AND row.space_id IS NULL
    """
    for table, author in (("memory", ", author_id = row.owner_id"), ("note", ", author_id = row.owner_id"), ("entity", ""))
]


# Accounts made while this app's migrations were behind (none in a normal upgrade, where the
# accounts migration has just given every account its space) get theirs first, the same way.
personal_spaces = importlib.import_module("accounts.migrations.0006_spaces").personal_spaces_for_every_user


def space_field(null: bool) -> models.ForeignKey:
    return models.ForeignKey(
        null=null, on_delete=django.db.models.deletion.CASCADE, related_name="+", to="accounts.space"
    )


def author_field() -> models.ForeignKey:
    return models.ForeignKey(
        blank=True,
        null=True,
        on_delete=django.db.models.deletion.SET_NULL,
        related_name="+",
        to=settings.AUTH_USER_MODEL,
    )


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0006_spaces"),
        ("memories", "0020_break_link_loops"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(model_name="memory", name="space", field=space_field(null=True)),
        migrations.AddField(model_name="memory", name="author", field=author_field()),
        migrations.AddField(model_name="note", name="space", field=space_field(null=True)),
        migrations.AddField(model_name="note", name="author", field=author_field()),
        migrations.AddField(model_name="entity", name="space", field=space_field(null=True)),
        migrations.RunPython(personal_spaces, migrations.RunPython.noop),
        *(migrations.RunSQL(statement, migrations.RunSQL.noop) for statement in BACKFILL),
        # The updates above leave deferred foreign key checks pending, which ALTER TABLE refuses to run beside.
        migrations.RunSQL("SET CONSTRAINTS ALL IMMEDIATE", migrations.RunSQL.noop),
        migrations.AlterField(model_name="memory", name="space", field=space_field(null=False)),
        migrations.AlterField(model_name="note", name="space", field=space_field(null=False)),
        migrations.AlterField(model_name="entity", name="space", field=space_field(null=False)),
    ]
