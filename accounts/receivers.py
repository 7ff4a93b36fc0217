"""Signal receivers of the accounts app: thin callers of services."""

from typing import Any

from accounts.spaces import personal_space_create
from gnosem.types import Owner


def user_saved(sender: type, instance: Owner, created: bool, raw: bool = False, **kwargs: Any) -> None:
    """A new account gets its personal space in the same transaction (not for fixtures loaded raw)."""
    if created and not raw:
        personal_space_create(instance)
