"""A connection keeps the SHA-256 of the authorization code it was bought with, so that the code
presented again finds the connection to end (RFC 6749 section 4.1.2)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0003_oauth_client_connections"),
    ]

    operations = [
        migrations.AddField(
            model_name="apitoken",
            name="oauth_code_digest",
            field=models.CharField(blank=True, db_index=True, default="", max_length=64),
        ),
    ]
