"""manage.py rotatekeys --master: rewrap every space's data keys under a new master key.

Run it once every process has been restarted with the new key as GNOSEM_MASTER_KEY and the old one
as GNOSEM_PREVIOUS_MASTER_KEY. Each batch is its own transaction and each data key names the master
key that wraps it, so a rotation stopped part-way leaves every key readable, and running the
command again finishes it.

manage.py rotatekeys --space ID: give one space a new data key and re-seal everything it holds
under it (memories.encryption.rotation), showing the progress; stopped part-way, running it again
(or the worker, within ten minutes) carries on.
"""

import uuid
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.models import Space
from memories.encryption.keys import data_keys_wrapped_by, rewrap_data_keys
from memories.encryption.master import master_id, master_key, previous_master_key, record_master_key, verify_master_key
from memories.encryption.rotation import RETIRE_AFTER, rotation_continue, rotation_start


class Command(BaseCommand):
    help = (
        "Rotate encryption keys: --master rewraps every data key under GNOSEM_MASTER_KEY; --space ID gives a space "
        "a new data key and re-seals what it holds."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        rotated = parser.add_mutually_exclusive_group(required=True)
        rotated.add_argument(
            "--master",
            action="store_true",
            help="Rewrap the data keys GNOSEM_PREVIOUS_MASTER_KEY wraps under GNOSEM_MASTER_KEY.",
        )
        rotated.add_argument(
            "--space",
            metavar="ID",
            help="Replace the data key of the space with this id (its page's address shows it) and re-seal "
            "everything it holds under the new one.",
        )
        parser.add_argument(
            "--batch-size", type=int, default=500, help="Data keys rewrapped per transaction (default: %(default)s)."
        )

    def handle(self, *args: Any, batch_size: int, space: str | None, **options: Any) -> None:
        if batch_size < 1:
            raise CommandError("--batch-size must be at least 1.")
        if space is not None:
            self._rotate_space(space, batch_size)
            return
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

    def _rotate_space(self, public_id: str, batch_size: int) -> None:
        try:
            found = Space.objects.filter(public_id=uuid.UUID(public_id)).first()
        except ValueError:
            found = None
        if found is None:
            raise CommandError(f"No space with id {public_id!r}: the id is the UUID in the address of its page.")
        rotation = rotation_start(found.pk)
        self.stdout.write(f"Space “{found.name}” now seals under key {rotation.version}; re-sealing what it holds.")
        left = rotation_continue(
            found.pk,
            batch=batch_size,
            progress=lambda now: self.stdout.write(f"{now.done}/{now.total} rows re-sealed"),
        )
        if left is None:
            self.stdout.write(
                f"Everything in “{found.name}” is sealed under key {rotation.version}; older keys are gone."
            )
        else:
            self.stdout.write(
                f"Everything in “{found.name}” is sealed under key {rotation.version}. The older keys are dropped "
                f"{int(RETIRE_AFTER.total_seconds() // 60)} minutes after the new one was made (writes begun before "
                "it may still use them): by the worker, or by running this again then."
            )
