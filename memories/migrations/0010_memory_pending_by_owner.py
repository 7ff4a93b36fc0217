"""Fair indexing: the worker's claim serves owners in turn, finding the owners with
pending memories and each one's oldest through this partial index (only pending rows: it stays
small however many memories are indexed)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0009_quota_rate_counter"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="memory",
            index=models.Index(
                condition=models.Q(("indexing_status", "pending")),
                fields=["owner", "indexing_queued_at", "id"],
                name="memory_pending_by_owner",
            ),
        ),
    ]
