"""manage.py importmemories USER FILE: import a Gnosem export into a user's memories, all or nothing."""

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
from memories.transfer.document import parse_document
from memories.transfer.importing import import_memories


class Command(BaseCommand):
    help = (
        "Import a Gnosem export (JSON) into a user's memories (username or e-mail). The file is checked "
        "whole first; on any problem nothing is imported. Exact duplicates are skipped."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("user", help="username or e-mail")
        parser.add_argument("file", type=Path)
        parser.add_argument(
            "--max-bytes",
            type=int,
            default=settings.GNOSEM_IMPORT_MAX_BYTES,
            help="refuse larger files (default: GNOSEM_IMPORT_MAX_BYTES)",
        )

    def handle(self, *args: Any, user: str, file: Path, max_bytes: int, **options: Any) -> None:
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
            document = parse_document(file.read_bytes())
            entries = document.get("memories") if isinstance(document, dict) else None
            total = len(entries) if isinstance(entries, list) else 0
            with tqdm(total=total, unit="memory", file=sys.stderr, disable=None) as bar:
                report = import_memories(owner=owner, document=document, progress=bar.update)
        except ValidationError as exc:
            raise CommandError(f"{file}: {exc.message}") from exc
        activity_record(owner=owner, action=ActivityAction.IMPORTED, detail={"file": file.name, **report.as_dict()})
        self.stderr.write(f"Imported into {describe_account(owner)}.")
        self.stdout.write(f"{file}: {report}")
