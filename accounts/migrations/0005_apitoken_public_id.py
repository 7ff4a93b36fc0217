"""Tokens and connections get a random public id, unique per owner, for the Tokens page's revoke
forms (their row id counts every user's tokens). The column's default is drawn by PostgreSQL for
each row, so existing tokens get distinct ids as the column is added."""

import django.contrib.postgres.functions
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0004_apitoken_oauth_code_digest"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="apitoken",
            name="public_id",
            field=models.UUIDField(db_default=django.contrib.postgres.functions.RandomUUID(), editable=False),
        ),
        migrations.AddConstraint(
            model_name="apitoken",
            constraint=models.UniqueConstraint(fields=("owner", "public_id"), name="apitoken_public_id_unique_per_owner"),
        ),
    ]
