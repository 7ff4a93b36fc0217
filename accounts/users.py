"""Finding a user from what an operator types on the command line: a username, an e-mail address
(people who sign up on the web know their e-mail, not the username made from it) or `#ID`.

A command must never act on an account the operator did not name unambiguously: a name that is
one user's username and another's e-mail is refused, and every command says which account it
acted on (`describe_account`).
"""

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError

from gnosem.types import Owner


def describe_account(user: Owner) -> str:
    """How commands name an account: `account #12 carol <carol@evil.example>`."""
    return f"account #{user.pk} {user.get_username()} <{user.email or 'no e-mail'}>"


def _by_id(name_or_email: str) -> Owner | None:
    """The user named `#ID` (usernames cannot contain `#`), or None for any other argument."""
    if not name_or_email.startswith("#"):
        return None
    try:
        pk = int(name_or_email[1:])
    except ValueError:
        raise CommandError(f"{name_or_email!r} is not an account id; write it like #12.") from None
    user = get_user_model().objects.filter(pk=pk).first()
    if user is None:
        raise CommandError(f"No account {name_or_email}.")
    return user


def find_user(name_or_email: str) -> Owner | None:
    """The one user this argument names, else None.

    CommandError when it names several: the username of one user and the e-mail of another, or an
    e-mail several users share. The message lists them and says to give `#ID` instead.
    """
    if name_or_email.startswith("#"):
        return _by_id(name_or_email)
    User = get_user_model()
    by_username = User.objects.filter(username=name_or_email).first()
    by_email = list(User.objects.filter(email__iexact=name_or_email).order_by("pk")[:3])
    candidates = {user.pk: user for user in ([by_username] if by_username else []) + by_email}
    if len(candidates) > 1:
        listed = "; ".join(describe_account(user) for user in candidates.values())
        what = (
            f"{name_or_email!r} is the username of one account and the e-mail of another"
            if by_username
            else f"Several users have the e-mail {name_or_email!r}"
        )
        raise CommandError(f"{what} ({listed}); name the one you mean by its id, like #{next(iter(candidates))}.")
    return next(iter(candidates.values()), None)


def user_for_command(name_or_email: str) -> Owner:
    """Like find_user, with CommandError when there is no such user."""
    user = find_user(name_or_email)
    if user is None:
        raise CommandError(f"No user with the username or e-mail {name_or_email!r}.")
    return user


def existing_users_for_new_account(username: str, email: str = "") -> list[str]:
    """Why a new account named `username` (with `email`) would clash: one line per existing user
    whose username or e-mail is one of them; empty when the names are free."""
    User = get_user_model()
    clashes = []
    for name in filter(None, dict.fromkeys([username, email])):
        for user in User.objects.filter(username=name):
            clashes.append(f"the username {name!r} belongs to {describe_account(user)}")
        for user in User.objects.filter(email__iexact=name):
            clashes.append(f"the e-mail {name!r} belongs to {describe_account(user)}")
    return clashes
