"""manage.py revoketoken TOKEN_OR_PREFIX: revoke a token so it stops working at once."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.tokens import token_list, token_revoke_by_prefix
from accounts.users import describe_account, user_for_command
from gnosem.errors import NotFound


class Command(BaseCommand):
    help = "Revoke an API token, given the token itself or its 16-character prefix (as listed by --list)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("token", nargs="?", help="The token or its prefix.")
        parser.add_argument("--list", metavar="USER", help="List a user's tokens (username, e-mail or #ID) instead.")

    def handle(self, *args: Any, token: str | None, list: str | None, **options: Any) -> None:
        if list:
            owner = user_for_command(list)
            self.stderr.write(f"Tokens of {describe_account(owner)}:")
            tokens = token_list(owner=owner)
            if not tokens:
                self.stdout.write(f"{describe_account(owner)} has no tokens.")
            for row in tokens:
                state = f"revoked {row.revoked_at:%Y-%m-%d}" if row.revoked_at else "active"
                self.stdout.write(f"{row.prefix}  {row.scope:5}  {state:18}  {row.name}")
            return
        if not token:
            raise CommandError("Give the token (or its prefix) to revoke, or --list USER.")
        try:
            revoked = token_revoke_by_prefix(prefix=token)
        except NotFound as exc:
            raise CommandError(f"{exc} See the tokens with --list USER.") from None
        self.stdout.write(f"Revoked {revoked.prefix}….")
        self.stderr.write(f"The token “{revoked.name}” of {describe_account(revoked.owner)} no longer works.")
