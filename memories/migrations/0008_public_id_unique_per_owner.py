"""Public ids become unique per owner instead of across all owners: an import
keeps every id its owner does not already use, so its outcome cannot tell whether another user
holds that id. A plain index on public_id stays for look-ups by id."""

import uuid

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0007_serving_model"),
    ]

    operations = [
        migrations.AlterField(
            model_name="memory",
            name="public_id",
            field=models.UUIDField(db_index=True, default=uuid.uuid4, editable=False),
        ),
        migrations.AddConstraint(
            model_name="memory",
            constraint=models.UniqueConstraint(fields=("owner", "public_id"), name="memory_public_id_unique_per_owner"),
        ),
    ]
