"""Spaces: every user's personal space, made with the account, and where each user's writes go.

A personal space is made for every account however it is made (sign-up, an invitation, the
admin, `createsuperuser`): a receiver of the user model's `post_save` calls
`personal_space_create`, so no path can leave a user without one. Deleting the account deletes it,
and with it everything it holds.
"""

from django.db import transaction

from accounts.models import PERSONAL_SPACE_NAME, Membership, Role, Space, SpaceKind
from gnosem.types import Owner


def personal_space_create(user: Owner) -> Space:
    """The user's personal space, made (with the user as its owner) if it does not exist yet."""
    with transaction.atomic():
        space, created = Space.objects.get_or_create(
            personal_of=user, defaults={"name": PERSONAL_SPACE_NAME, "kind": SpaceKind.PERSONAL}
        )
        if created:
            Membership.objects.create(space=space, user=user, role=Role.OWNER)
    return space


def personal_space_of(user: Owner) -> Space:
    """The user's personal space (every user has one)."""
    return Space.objects.get(personal_of=user)
