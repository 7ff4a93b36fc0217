"""manage.py createinvite [--email X] [--days N]: print a single-use sign-up link (GNOSEM_SIGNUP=invite)."""

from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.core.validators import validate_email

from accounts.invites import DEFAULT_DAYS, MAX_DAYS, invite_create


class Command(BaseCommand):
    help = (
        "Create a sign-up link that works once, for GNOSEM_SIGNUP=invite, and print it (the link alone on "
        "stdout). It is shown only this once."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--email", default="", help="Only this address may sign up with the link.")
        parser.add_argument("--days", type=int, default=DEFAULT_DAYS, help="Days the link stays valid (default: 7).")
        parser.add_argument(
            "--base-url",
            default="http://127.0.0.1:8000",
            help="The server's address as visitors reach it (default: %(default)s).",
        )

    def handle(self, *args: Any, email: str, days: int, base_url: str, **options: Any) -> None:
        if not 1 <= days <= MAX_DAYS:
            raise CommandError(f"--days must be 1 to {MAX_DAYS}.")
        if not base_url.startswith(("http://", "https://")):
            raise CommandError(f"--base-url {base_url!r} must start with http:// or https://.")
        if email:
            try:
                validate_email(email)
            except ValidationError:
                raise CommandError(f"--email {email!r} is not an e-mail address.") from None
        issued = invite_create(created_by=None, email=email, days=days)
        who = f"for {email} only" if email else "for any address"
        until = f"{issued.invite.expires_at:%Y-%m-%d %H:%M} UTC"
        self.stderr.write(f"Invitation #{issued.invite.pk} {who}, valid until {until}; it works once.")
        if settings.GNOSEM_SIGNUP != "invite":
            self.stderr.write(
                f"Note: GNOSEM_SIGNUP is {settings.GNOSEM_SIGNUP!r}; the link takes effect once it is 'invite'."
            )
        self.stdout.write(issued.url(base_url))
