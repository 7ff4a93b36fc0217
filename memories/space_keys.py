"""Replacing a space's encryption key (memories.encryption.rotation): started by one of its owners
from the space's page or by the operator (`manage.py rotatekeys --space`), carried out by the
worker, and continued by it every ten minutes should a worker die part-way."""

import uuid
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Count
from django.http import HttpRequest

from accounts.activity import activity_record
from accounts.models import ActivityAction, ApiToken, Space
from accounts.spaces import space_of_owner
from gnosem.types import Owner
from memories.encryption.rotation import Rotation, rotation_continue, rotation_start, sealing_progress
from memories.indexing.queue import enqueue_key_rotation
from memories.models import SpaceKey


@dataclass(frozen=True)
class SpaceKeyState:
    """A space's newest key, how many of its rows it seals, and whether a rotation is under way
    (older keys remain)."""

    space: Space
    progress: Rotation
    rotating: bool


def space_key_state(*, user: Owner, space_id: uuid.UUID) -> SpaceKeyState:
    """Which key seals the space now, and how far its rotation is (only its owners may ask)."""
    space = space_of_owner(user=user, space_id=space_id, what="see its encryption key")
    versions = list(SpaceKey.objects.filter(space=space).order_by("-version").values_list("version", flat=True))
    newest = versions[0] if versions else 0
    return SpaceKeyState(space=space, progress=sealing_progress(space.pk, newest), rotating=len(versions) > 1)


@transaction.atomic
def space_key_rotate(
    *, user: Owner, space_id: uuid.UUID, request: HttpRequest | None = None, actor_token: ApiToken | None = None
) -> Rotation:
    """Give the space a new key and queue the re-sealing of everything under it (only its owners
    may); a rotation under way is returned as it stands."""
    space = space_of_owner(user=user, space_id=space_id, what="replace its encryption key")
    rotation = rotation_start(space.pk)
    enqueue_key_rotation(space.pk)
    activity_record(
        owner=user,
        action=ActivityAction.SPACE_KEY_ROTATED,
        detail={"space": space.name, "space_id": str(space.public_id), "key_version": str(rotation.version)},
        request=request,
        token=actor_token,
    )
    return rotation


def rotations_continue() -> int:
    """Carry on every space's rotation under way; how many are still under way after."""
    rotating = (
        SpaceKey.objects.values("space_id")
        .annotate(keys=Count("id"))
        .filter(keys__gt=1)
        .order_by("space_id")
        .values_list("space_id", flat=True)
    )
    return sum(rotation_continue(space_id) is not None for space_id in list(rotating))
