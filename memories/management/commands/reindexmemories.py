"""manage.py reindexmemories --failed [--user USER]: give memories that failed to be embedded another try.

A memory is marked failed after GNOSEM_INDEXING_MAX_ATTEMPTS failed attempts (it stays findable by
keyword). Once the cause is fixed (a model that could not load, a database that was full), this
queues them again with their attempts reset; the workers embed them. The dashboard's "Retry
failed" button does the same for one user.
"""

import sys

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from accounts.users import describe_account, user_for_command
from memories import services


class Command(BaseCommand):
    help = (
        "Queue memories that failed to be embedded (after GNOSEM_INDEXING_MAX_ATTEMPTS attempts) to be embedded "
        "again, with their attempts reset: everyone's, or one user's with --user."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--failed",
            action="store_true",
            help="Retry the memories marked failed (required: it is what this command does).",
        )
        parser.add_argument("--user", help="only this user's memories (username, e-mail or #ID)")

    def handle(self, *args, failed: bool, user: str | None, **options):
        if not failed:
            raise CommandError(
                "Say what to re-index: --failed queues the memories that failed to be embedded again "
                "(add --user USER for one user's)."
            )
        owner = user_for_command(user) if user else None
        whose = describe_account(owner) if owner else "all accounts"
        if owner:
            self.stderr.write(f"Only the memories of {whose}.")
        total = services.memories_failed_count(owner=owner)
        with tqdm(total=total, unit="memory", desc="queueing", file=sys.stderr, disable=None) as bar:
            queued = services.memories_retry_failed(owner=owner, progress=bar.update)
        if queued:
            self.stdout.write(
                f"{queued} failed memor{'y' if queued == 1 else 'ies'} of {whose} queued to be embedded again; "
                "the workers embed them (`manage.py serve`, or `run_huey`)."
            )
        else:
            self.stdout.write(f"No failed memories in {whose}: nothing to retry.")
