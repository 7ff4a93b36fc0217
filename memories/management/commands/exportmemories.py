"""manage.py exportmemories USER [--format F] [--output FILE]: a user's memories as one Gnosem
export, or as another memory tool's file."""

import sys
from collections.abc import Iterable
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from accounts.activity import activity_record
from accounts.models import ActivityAction
from accounts.users import describe_account, user_for_command
from memories.transfer.export import EXPORT_FORMATS, export_chunks, export_count, exported_space
from memories.transfer.formats import GNOSEM, basic_memory


class Command(BaseCommand):
    help = (
        "Write the memories and notes of a user's personal space (username or e-mail) as a Gnosem export (JSON) "
        "to a file or stdout."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("user", help="username or e-mail")
        parser.add_argument("--output", "-o", help="file to write (default: stdout)")
        parser.add_argument(
            "--format", choices=list(EXPORT_FORMATS), default=GNOSEM, help="the file's format (default: gnosem)"
        )

    def handle(self, *args: Any, user: str, output: str | None, format: str, **options: Any) -> None:
        owner = user_for_command(user)
        exported = exported_space(owner)
        total = export_count(exported)
        with tqdm(total=total, unit="memory", file=sys.stderr, disable=None) as bar:
            if format == GNOSEM:
                chunks: Iterable[str | bytes] = export_chunks(exported, progress=bar.update)
            else:
                chunks = EXPORT_FORMATS[format].write(exported)
            if output:
                with open(output, "wb") as handle:
                    for chunk in chunks:
                        handle.write(chunk.encode() if isinstance(chunk, str) else chunk)
                bar.update(total - bar.n)
            elif format == basic_memory.NAME:
                raise CommandError("A basic-memory export is a zip: give --output FILE.zip.")
            else:
                for chunk in chunks:
                    self.stdout.write(chunk if isinstance(chunk, str) else chunk.decode(), ending="")
        activity_record(owner=owner, action=ActivityAction.EXPORTED, detail={"memories": total})
        self.stderr.write(
            f"Exported {total} memories of {describe_account(owner)}" + (f" to {output}." if output else ".")
        )
