"""Finding a user from what an operator types on the command line: a username or an e-mail
address (people who sign up on the web know their e-mail, not the username made from it)."""

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError


def find_user(name_or_email: str):
    """The user with this username, else the one with this e-mail, else None; CommandError when
    several users share the e-mail."""
    User = get_user_model()
    user = User.objects.filter(username=name_or_email).first()
    if user is not None:
        return user
    matches = list(User.objects.filter(email__iexact=name_or_email)[:2])
    if len(matches) > 1:
        raise CommandError(f"Several users have the e-mail {name_or_email!r}; give the username instead.")
    return matches[0] if matches else None


def user_for_command(name_or_email: str):
    """Like find_user, with CommandError when there is no such user."""
    user = find_user(name_or_email)
    if user is None:
        raise CommandError(f"No user with the username or e-mail {name_or_email!r}.")
    return user
