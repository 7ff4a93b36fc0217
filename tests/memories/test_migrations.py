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


@pytest.mark.django_db(transaction=True)
def test_every_memory_note_and_entity_moves_into_its_owners_personal_space():
    before = [("accounts", "0005_apitoken_public_id"), ("memories", "0020_break_link_loops")]
    with migrated_to(before) as apps:
        users = apps.get_model(settings.AUTH_USER_MODEL)
        memories, notes = apps.get_model("memories", "Memory"), apps.get_model("memories", "Note")
        entities = apps.get_model("memories", "Entity")
        now = timezone.now()
        owners = {}
        for name in ("owner", "stranger", "nobody"):
            user = users.objects.create(username=name, email=f"{name}@example.com")
            owners[name] = user.pk
            if name == "nobody":
                continue  # an account with nothing in it still gets its space
            memories.objects.bulk_create(
                memories(owner=user, content=f"{name} memory {i}", created_at=now, updated_at=now) for i in range(30)
            )
            notes.objects.create(owner=user, title=f"{name} note", content="text", created_at=now, updated_at=now)
            entities.objects.create(owner=user, key=f"{name} project", name="Project", kind="project", linked_at=now)

        apps = migrate([("accounts", "0006_spaces"), ("memories", "0021_space_and_author")])

        spaces = apps.get_model("accounts", "Space")
        memberships = apps.get_model("accounts", "Membership")
        for name, user_id in owners.items():
            space = spaces.objects.get(personal_of_id=user_id)
            assert (space.kind, space.name) == ("personal", "Personal")
            assert list(memberships.objects.filter(space=space).values_list("user_id", "role")) == [(user_id, "owner")]
            for model in ("Memory", "Note", "Entity"):
                rows = apps.get_model("memories", model).objects.filter(owner_id=user_id)
                assert rows.count() == {"Memory": 30, "Note": 1, "Entity": 1}[model] * (name != "nobody")
                assert not rows.exclude(space=space).exists()
            for model in ("Memory", "Note"):
                rows = apps.get_model("memories", model).objects.filter(owner_id=user_id)
                assert not rows.exclude(author_id=user_id).exists()
        assert spaces.objects.count() == memberships.objects.count() == 3
