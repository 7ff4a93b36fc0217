"""The migration that seals entities: every key and name stored before is sealed, each entity
found by its key's digest as the graph looks it up, and everything opened again on the way back."""

import pytest
from django.conf import settings
from django.db import connection
from django.utils import timezone

from memories.encryption.derived import entity_digest
from memories.encryption.keys import current_key
from memories.models import Entity
from tests.migrating import migrate, migrated_to

BEFORE = [("memories", "0027_sealed_notes")]
AFTER = [("memories", "0028_sealed_entities")]
ENTITIES = {
    "ottoline brackenbury": "Ottoline Brackenbury",
    "err_7q31": "ERR_7Q31",
    "zanzibar-quokka": "Zanzibar-Quokka",
}


def stored_entities() -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT key::text, name::text FROM memories_entity ORDER BY id")
        return cursor.fetchall()


def populate(apps) -> int:
    """A user's space with three entities, as stored before sealing; returns the user's id."""
    users, spaces = apps.get_model(settings.AUTH_USER_MODEL), apps.get_model("accounts", "Space")
    memberships, entities = apps.get_model("accounts", "Membership"), apps.get_model("memories", "Entity")
    user = users.objects.create(username="sealed", email="sealed@example.com")
    space = spaces.objects.create(name="Personal", kind="personal", personal_of=user)
    memberships.objects.create(space=space, user=user, role="owner")
    for key, name in ENTITIES.items():
        entities.objects.create(space=space, key=key, name=name, kind="name", linked_at=timezone.now())
    return user.pk


@pytest.mark.django_db(transaction=True)
def test_stored_entities_are_sealed_found_by_name_and_opened_again_going_back():
    with migrated_to(BEFORE) as apps:
        user_id = populate(apps)
        assert sorted(stored_entities()) == sorted(ENTITIES.items())

        migrate(AFTER)
        dump = " ".join(f"{key} {name}" for key, name in stored_entities()).lower()
        assert [word for word in ("ottoline", "brackenbury", "7q31", "zanzibar", "quokka") if word in dump] == []
        assert {entity.key: entity.name for entity in Entity.objects.all()} == ENTITIES
        space_key = current_key(Entity.objects.first().space_id)
        assert Entity.objects.get(key_digest=entity_digest(space_key, "err_7q31")).name == "ERR_7Q31"

        migrate(BEFORE)
        assert sorted(stored_entities()) == sorted(ENTITIES.items())
    assert {entity.key: entity.name for entity in Entity.objects.filter(space__personal_of_id=user_id)} == ENTITIES
