"""Finding a user from what an operator types on the command line."""

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError


def user_for_command(name_or_email: str):
    """The user with this username, else the one with this e-mail; CommandError if none or ambiguous."""
    User = get_user_model()
    user = User.objects.filter(username=name_or_email).first()
    if user is not None:
        return user
    matches = list(User.objects.filter(email__iexact=name_or_email)[:2])
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise CommandError(f"Several users have the e-mail {name_or_email!r}; give the username instead.")
    raise CommandError(f"No user with the username or e-mail {name_or_email!r}.")
