"""manage.py revoketoken TOKEN_OR_PREFIX: revoke a token so it stops working at once."""

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from accounts.models import ApiToken
from accounts.tokens import LOOKUP_PREFIX_CHARS


class Command(BaseCommand):
    help = "Revoke an API token, given the token itself or its 16-character prefix (as listed by --list)."

    def add_arguments(self, parser):
        parser.add_argument("token", nargs="?", help="The token or its prefix.")
        parser.add_argument("--list", metavar="USERNAME", help="List a user's tokens instead.")

    def handle(self, *args, token: str | None, list: str | None, **options):
        if list:
            for row in ApiToken.objects.filter(owner__username=list).order_by("created_at"):
                state = f"revoked {row.revoked_at:%Y-%m-%d}" if row.revoked_at else "active"
                self.stdout.write(f"{row.prefix}  {row.scope:5}  {state:18}  {row.name}")
            return
        if not token:
            raise CommandError("Give the token (or its prefix) to revoke, or --list USERNAME.")
        updated = ApiToken.objects.filter(prefix=token[:LOOKUP_PREFIX_CHARS], revoked_at__isnull=True).update(
            revoked_at=timezone.now()
        )
        if not updated:
            raise CommandError("No active token with that prefix.")
        self.stdout.write(f"Revoked {token[:LOOKUP_PREFIX_CHARS]}….")
