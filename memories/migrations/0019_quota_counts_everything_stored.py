"""Quotas count everything stored (memories.limits.quotas): the limits' descriptions say so. Nothing
changes in the database."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0018_entity_public_id"),
    ]

    operations = [
        migrations.AlterField(
            model_name="quota",
            name="max_chars",
            field=models.PositiveBigIntegerField(
                blank=True,
                help_text="Total characters stored: memories, their earlier versions and compressed forms, and notes. "
                "Empty: unlimited.",
                null=True,
            ),
        ),
        migrations.AlterField(
            model_name="quota",
            name="max_memories",
            field=models.PositiveIntegerField(
                blank=True, help_text="Memories and notes together. Empty: unlimited.", null=True
            ),
        ),
        migrations.AlterField(
            model_name="quota",
            name="max_tokens",
            field=models.PositiveBigIntegerField(
                blank=True,
                help_text="Total estimated tokens of the same texts, ceil(characters / 4) each. Empty: unlimited.",
                null=True,
            ),
        ),
    ]
