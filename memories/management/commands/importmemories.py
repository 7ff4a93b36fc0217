"""manage.py importmemories USER FILE [--format F] [--preview]: import a Gnosem export or another
memory tool's file into a user's memories, all or nothing."""

import sys
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from accounts.activity import activity_record
from accounts.models import ActivityAction
from accounts.users import describe_account, user_for_command
from gnosem.errors import ValidationError
from memories.transfer.formats import FORMATS, read_import_file
from memories.transfer.importing import import_file, import_file_preview


class Command(BaseCommand):
    help = (
        "Import a Gnosem export or another memory tool's file into a user's memories (username or e-mail). "
        "The file is checked whole first; on any problem nothing is imported. Duplicates are skipped: from a "
        "Gnosem export, the same text written at the same time; from another tool, the same text."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("user", help="username or e-mail")
        parser.add_argument("file", type=Path)
        parser.add_argument(
            "--format", choices=list(FORMATS), help="the tool that wrote the file (default: recognised from it)"
        )
        parser.add_argument("--preview", action="store_true", help="only say what the import would do")
        parser.add_argument(
            "--max-bytes",
            type=int,
            default=settings.GNOSEM_IMPORT_MAX_BYTES,
            help="refuse larger files (default: GNOSEM_IMPORT_MAX_BYTES)",
        )

    def handle(
        self, *args: Any, user: str, file: Path, max_bytes: int, format: str | None, preview: bool, **options: Any
    ) -> None:
        owner = user_for_command(user)
        try:
            size = file.stat().st_size
        except OSError as exc:
            raise CommandError(f"Cannot read {file}: {exc.strerror}.") from exc
        if size > max_bytes:
            raise CommandError(
                f"{file} is {size:,} bytes, over the limit of {max_bytes:,}; pass --max-bytes to allow it."
            )
        try:
            read = read_import_file(file.read_bytes(), format)
            if preview:
                found = import_file_preview(owner=owner, file=read)
                self.stdout.write(f"{file}: {found}")
                for reason in found.skipped:
                    self.stdout.write(f"  left out: {reason}")
                return
            entries = read.document.get("memories")
            total = len(entries) if isinstance(entries, list) else 0
            with tqdm(total=total, unit="memory", file=sys.stderr, disable=None) as bar:
                report = import_file(owner=owner, file=read, progress=bar.update)
        except ValidationError as exc:
            raise CommandError(f"{file}: {exc.message}") from exc
        activity_record(owner=owner, action=ActivityAction.IMPORTED, detail={"file": file.name, **report.as_dict()})
        self.stderr.write(f"Imported into {describe_account(owner)}.")
        self.stdout.write(f"{file}: {report}")
        for reason in report.skipped:
            self.stdout.write(f"  left out: {reason}")
