from django.db import migrations, models


def mark_bound_tokens(apps, schema_editor):
    """Tokens bound to spaces so far said so by listing them; they now say it with all_spaces."""
    ApiToken = apps.get_model("accounts", "ApiToken")
    bound = ApiToken.spaces.through.objects.values("apitoken_id")
    ApiToken.objects.filter(pk__in=bound).update(all_spaces=False)


class Migration(migrations.Migration):

    dependencies = [
        ('accounts', '0008_token_spaces'),
    ]

    operations = [
        migrations.AddField(
            model_name='apitoken',
            name='all_spaces',
            field=models.BooleanField(default=True),
        ),
        migrations.RunPython(mark_bound_tokens, migrations.RunPython.noop),
    ]
