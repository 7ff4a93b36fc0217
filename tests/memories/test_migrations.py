"""The memories app's migrations that fill a new column of existing rows."""

import pytest
from django.conf import settings
from django.utils import timezone

from tests.migrating import migrate, migrated_to


@pytest.mark.django_db(transaction=True)
def test_existing_entities_get_distinct_random_public_ids():
    with migrated_to([("memories", "0017_notes")]) as apps:
        users, entities = apps.get_model(settings.AUTH_USER_MODEL), apps.get_model("memories", "Entity")
        now = timezone.now()
        for name in ("owner", "stranger"):
            user = users.objects.create(username=name, email=f"{name}@example.com")
            entities.objects.bulk_create(
                entities(owner=user, key=f"project {i}", name=f"Project {i}", kind="project", linked_at=now)
                for i in range(20)
            )

        apps = migrate([("memories", "0018_entity_public_id")])

        public_ids = list(apps.get_model("memories", "Entity").objects.values_list("public_id", flat=True))
        assert len(public_ids) == len(set(public_ids)) == 40
        assert {public_id.version for public_id in public_ids} == {4}
