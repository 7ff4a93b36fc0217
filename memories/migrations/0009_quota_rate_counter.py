"""Fair shares: per-user quotas (no row = unlimited) and the rate limiter's counters, in an
UNLOGGED table: losing them in a crash only hands out a fresh allowance."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0008_public_id_unique_per_owner"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="Quota",
            fields=[
                (
                    "user",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="+",
                        serialize=False,
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                ("max_memories", models.PositiveIntegerField(blank=True, help_text="Empty: unlimited.", null=True)),
                (
                    "max_chars",
                    models.PositiveBigIntegerField(
                        blank=True, help_text="Total characters of raw content. Empty: unlimited.", null=True
                    ),
                ),
                (
                    "max_tokens",
                    models.PositiveBigIntegerField(
                        blank=True,
                        help_text="Total estimated tokens, ceil(characters / 4) per memory. Empty: unlimited.",
                        null=True,
                    ),
                ),
            ],
        ),
        migrations.CreateModel(
            name="RateCounter",
            fields=[
                ("key", models.CharField(max_length=100, primary_key=True, serialize=False)),
                ("tat", models.FloatField()),
            ],
            options={"db_table": "memories_rate_counter"},
        ),
        migrations.RunSQL(
            "ALTER TABLE memories_rate_counter SET UNLOGGED", "ALTER TABLE memories_rate_counter SET LOGGED"
        ),
    ]
