"""manage.py createtoken USER: print a new API token (the token alone on stdout)."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from accounts.models import TokenScope
from accounts.tokens import token_create
from accounts.users import find_user
from memories.exceptions import ValidationError


class Command(BaseCommand):
    help = "Create an API token for a user and print it. It is shown only this once."

    def add_arguments(self, parser):
        parser.add_argument("username", help="username or e-mail of the user")
        parser.add_argument("--scope", choices=TokenScope.values, default=TokenScope.WRITE)
        parser.add_argument("--name", default="cli", help="A name to recognise the token by (default: cli).")
        parser.add_argument(
            "--create-user", action="store_true", help="Create the user (without a password) if missing."
        )
        parser.add_argument("--email", default="", help="E-mail for a user created with --create-user.")

    def handle(self, *args, username: str, scope: str, name: str, create_user: bool, email: str, **options):
        user = find_user(username)
        if user is None:
            if not create_user:
                raise CommandError(f"No user {username!r}. Pass --create-user to create it.")
            user = get_user_model().objects.create_user(username=username, email=email)
            user.set_unusable_password()
            user.save()
            self.stderr.write(f"Created user {username!r}.")
        try:
            issued = token_create(owner=user, name=name, scope=scope)
        except ValidationError as exc:
            raise CommandError(str(exc)) from exc
        self.stderr.write(
            f"Token {issued.token.prefix}… ({scope}) for {username!r}; store it now, it is not shown again."
        )
        self.stdout.write(issued.secret)
