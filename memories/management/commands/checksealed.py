"""manage.py checksealed: open every sealed value (memories, their earlier versions, notes,
passages) and name those that do not open; /healthz shows the count until the next check."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from memories.encryption.audit import sealed_audit
from memories.health import sealed_audit_record


class Command(BaseCommand):
    help = "Check that every sealed value opens under its space's key; name those that do not."

    def handle(self, *args: Any, **options: Any) -> None:
        audit = sealed_audit(progress=lambda checked: self.stdout.write(f"{checked:,} rows opened"))
        sealed_audit_record(audit)
        for row in audit.unreadable:
            self.stdout.write(f"does not open: {row}")
        if audit.unreadable:
            raise CommandError(
                f"{len(audit.unreadable)} of {audit.checked:,} rows hold a value that does not open (tampered, "
                "corrupted, or copied from another row or space); everything else is readable. Restore those rows "
                "from a backup taken with the same master key, or delete them."
            )
        self.stdout.write(f"All {audit.checked:,} rows open.")
