"""manage.py rotatekeys --master: rewrap every space's data keys under a new master key.

Run it once every process has been restarted with the new key as GNOSEM_MASTER_KEY and the old one
as GNOSEM_PREVIOUS_MASTER_KEY. Each batch is its own transaction and each data key names the master
key that wraps it, so a rotation stopped part-way leaves every key readable, and running the
command again finishes it.
"""

from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError, CommandParser

from memories.encryption.keys import data_keys_wrapped_by, rewrap_data_keys
from memories.encryption.master import master_id, master_key, previous_master_key, record_master_key, verify_master_key


class Command(BaseCommand):
    help = "Rotate encryption keys: --master rewraps every data key under GNOSEM_MASTER_KEY."

    def add_arguments(self, parser: CommandParser) -> None:
        rotated = parser.add_mutually_exclusive_group(required=True)
        rotated.add_argument(
            "--master",
            action="store_true",
            help="Rewrap the data keys GNOSEM_PREVIOUS_MASTER_KEY wraps under GNOSEM_MASTER_KEY.",
        )
        parser.add_argument(
            "--batch-size", type=int, default=500, help="Data keys rewrapped per transaction (default: %(default)s)."
        )

    def handle(self, *args: Any, batch_size: int, **options: Any) -> None:
        if batch_size < 1:
            raise CommandError("--batch-size must be at least 1.")
        try:
            current, previous = master_key(), previous_master_key()
            verify_master_key()
        except ImproperlyConfigured as error:
            raise CommandError(str(error)) from None
        if previous is None:
            raise CommandError(
                "GNOSEM_PREVIOUS_MASTER_KEY is not set: set it (or GNOSEM_PREVIOUS_MASTER_KEY_FILE) to the master "
                "key being replaced, and GNOSEM_MASTER_KEY to the new one."
            )
        if master_id(previous) == master_id(current):
            raise CommandError("GNOSEM_PREVIOUS_MASTER_KEY is the same key as GNOSEM_MASTER_KEY.")
        total, done = data_keys_wrapped_by(previous), 0
        while rewrapped := rewrap_data_keys(previous=previous, current=current, limit=batch_size):
            done += rewrapped
            self.stdout.write(f"{done}/{max(total, done)} data keys rewrapped")
        record_master_key(current)
        if left := data_keys_wrapped_by(previous):
            raise CommandError(
                f"{left} data keys were wrapped by the previous master key while this ran: a process still runs "
                "with it as GNOSEM_MASTER_KEY. Restart every process with the new key, then run this again."
            )
        self.stdout.write(
            f"Every data key is wrapped by master key {master_id(current)}, which the database now expects. "
            "GNOSEM_PREVIOUS_MASTER_KEY may be removed."
        )
