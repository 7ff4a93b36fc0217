"""manage.py exportmemories USER [--output FILE]: a user's memories as one JSON export."""

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from tqdm import tqdm

from accounts.activity import activity_record
from accounts.models import ActivityAction
from accounts.users import describe_account, user_for_command
from memories.transfer.export import export_chunks, export_count, exported_space


class Command(BaseCommand):
    help = (
        "Write the memories and notes of a user's personal space (username or e-mail) as a Gnosem export (JSON) "
        "to a file or stdout."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("user", help="username or e-mail")
        parser.add_argument("--output", "-o", help="file to write (default: stdout)")

    def handle(self, *args: Any, user: str, output: str | None, **options: Any) -> None:
        owner = user_for_command(user)
        exported = exported_space(owner)
        total = export_count(exported)
        with tqdm(total=total, unit="memory", file=sys.stderr, disable=None) as bar:
            chunks = export_chunks(exported, progress=bar.update)
            if output:
                with open(output, "w", encoding="utf-8") as handle:
                    handle.writelines(chunks)
            else:
                for chunk in chunks:
                    self.stdout.write(chunk, ending="")
        activity_record(owner=owner, action=ActivityAction.EXPORTED, detail={"memories": total})
        self.stderr.write(
            f"Exported {total} memories of {describe_account(owner)}" + (f" to {output}." if output else ".")
        )
