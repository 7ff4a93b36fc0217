"""manage.py createtoken USER: print a new API token (the token alone on stdout)."""

from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from accounts.models import TokenScope
from accounts.tokens import token_create
from accounts.users import describe_account, existing_users_for_new_account, find_user
from gnosem.errors import NotFound, ValidationError
from gnosem.types import Owner


class Command(BaseCommand):
    help = "Create an API token for a user and print it. It is shown only this once."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "username", help="username, e-mail or #ID of the user (with --create-user: the new username)"
        )
        parser.add_argument("--scope", choices=TokenScope.values, default=TokenScope.WRITE)
        parser.add_argument("--name", default="cli", help="A name to recognise the token by (default: cli).")
        parser.add_argument(
            "--create-user",
            action="store_true",
            help="Create a new user (without a password); refused when the username or e-mail is taken.",
        )
        parser.add_argument("--email", default="", help="E-mail for a user created with --create-user.")
        parser.add_argument(
            "--space",
            action="append",
            default=[],
            dest="spaces",
            help="Reach only this space (name or id; repeat for several). Default: every space of the user.",
        )
        parser.add_argument(
            "--default-space", help="Write here when a call names no space (default: the personal space)."
        )

    def handle(
        self,
        *args: Any,
        username: str,
        scope: str,
        name: str,
        create_user: bool,
        email: str,
        spaces: list[str],
        default_space: str | None,
        **options: Any,
    ) -> None:
        try:
            with transaction.atomic():  # a refused token name leaves no new user behind
                if create_user:
                    user = self._create_user(username, email)
                else:
                    found = find_user(username)
                    if found is None:
                        raise CommandError(f"No user {username!r}. Pass --create-user to create it.")
                    user = found
                issued = token_create(owner=user, name=name, scope=scope, spaces=spaces, default_space=default_space)
        except (ValidationError, NotFound) as exc:
            raise CommandError(str(exc)) from exc
        if create_user:
            self.stderr.write(f"Created user {username!r}: {describe_account(user)}.")
        self.stderr.write(
            f"Token {issued.token.prefix}… ({scope}) for {describe_account(user)}; store it now, it is not shown again."
        )
        self.stdout.write(issued.secret)

    def _create_user(self, username: str, email: str) -> Owner:
        """A new user, never an existing one: someone may have signed up with this very name."""
        clashes = existing_users_for_new_account(username, email)
        if clashes:
            raise CommandError(
                f"Not creating a user: {'; '.join(clashes)}. To give that account a token, run the command "
                "again without --create-user (naming it by #ID if unsure); to create a separate user, "
                "choose a username and e-mail nobody has."
            )
        User = get_user_model()
        try:
            User.username_validator(username)
        except DjangoValidationError:
            raise CommandError(f"{username!r} cannot be a username: use letters, digits and @ . + - _ only.") from None
        user = User.objects.create_user(username=username, email=email)
        user.set_unusable_password()
        user.save()
        return user
