"""Near-duplicates: the older memory one says the same as (`duplicate_of`), and pairs kept apart."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('memories', '0012_memory_hygiene'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='KeptApart',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
            ],
            options={
                'db_table': 'memories_kept_apart',
            },
        ),
        migrations.AddField(
            model_name='memory',
            name='duplicate_of',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='near_duplicates', to='memories.memory'),
        ),
        migrations.AddConstraint(
            model_name='memory',
            constraint=models.CheckConstraint(condition=models.Q(('duplicate_of', models.F('id')), _negated=True), name='memory_not_duplicate_of_itself'),
        ),
        migrations.AddField(
            model_name='keptapart',
            name='first',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='memories.memory'),
        ),
        migrations.AddField(
            model_name='keptapart',
            name='second',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='memories.memory'),
        ),
        migrations.AddConstraint(
            model_name='keptapart',
            constraint=models.UniqueConstraint(fields=('first', 'second'), name='kept_apart_once'),
        ),
        migrations.AddConstraint(
            model_name='keptapart',
            constraint=models.CheckConstraint(condition=models.Q(('first__lt', models.F('second'))), name='kept_apart_in_order'),
        ),
    ]
