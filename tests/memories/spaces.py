"""Members of a team space for tests: a new user joined with a role."""

from django.contrib.auth import get_user_model

from accounts.models import Membership, Space
from gnosem.types import Owner


def member(team: Space, name: str, role: str) -> Owner:
    """A new user named `name` (address name@example.com), a member of `team` with `role`."""
    user = get_user_model().objects.create_user(name, f"{name}@example.com")
    Membership.objects.create(space=team, user=user, role=role)
    return user
