"""manage.py revoketoken TOKEN_OR_PREFIX: revoke a token so it stops working at once."""

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from accounts.models import ApiToken
from accounts.tokens import LOOKUP_PREFIX_CHARS
from accounts.users import user_for_command


class Command(BaseCommand):
    help = "Revoke an API token, given the token itself or its 16-character prefix (as listed by --list)."

    def add_arguments(self, parser):
        parser.add_argument("token", nargs="?", help="The token or its prefix.")
        parser.add_argument("--list", metavar="USER", help="List a user's tokens (username or e-mail) instead.")

    def handle(self, *args, token: str | None, list: str | None, **options):
        if list:
            tokens = ApiToken.objects.filter(owner=user_for_command(list)).order_by("created_at")
            if not tokens:
                self.stdout.write(f"{list} has no tokens.")
            for row in tokens:
                state = f"revoked {row.revoked_at:%Y-%m-%d}" if row.revoked_at else "active"
                self.stdout.write(f"{row.prefix}  {row.scope:5}  {state:18}  {row.name}")
            return
        if not token:
            raise CommandError("Give the token (or its prefix) to revoke, or --list USER.")
        updated = ApiToken.objects.filter(prefix=token[:LOOKUP_PREFIX_CHARS], revoked_at__isnull=True).update(
            revoked_at=timezone.now()
        )
        if not updated:
            raise CommandError("No active token with that prefix.")
        self.stdout.write(f"Revoked {token[:LOOKUP_PREFIX_CHARS]}….")
