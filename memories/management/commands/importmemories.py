"""manage.py importmemories USER FILE [--format F] [--preview] | USER --resume IMPORT_ID: import a
Gnosem export or another memory tool's file into a user's memories, a batch per transaction."""

import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from accounts.users import describe_account, user_for_command
from gnosem.errors import NotFound, QuotaExceeded, ValidationError
from gnosem.types import Owner
from memories.models import ImportJob, ImportStatus
from memories.transfer.formats import FORMATS, read_import_file
from memories.transfer.importing import ImportReport, import_file_preview
from memories.transfer.jobs import import_job_create, import_job_get, import_job_run, import_job_start


class Command(BaseCommand):
    help = (
        "Import a Gnosem export or another memory tool's file into a user's memories (username or e-mail). "
        "The file is checked whole first; on any problem nothing is imported. Duplicates are skipped: from a "
        "Gnosem export, the same text written at the same time; from another tool, the same text. The import "
        "runs a batch per transaction: a run stopped part-way is carried on by --resume, or by the worker."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("user", help="username or e-mail")
        parser.add_argument("file", type=Path, nargs="?")
        parser.add_argument(
            "--format", choices=list(FORMATS), help="the tool that wrote the file (default: recognised from it)"
        )
        parser.add_argument("--preview", action="store_true", help="only say what the import would do")
        parser.add_argument("--resume", metavar="IMPORT_ID", help="carry on an import stopped part-way")
        parser.add_argument(
            "--max-bytes",
            type=int,
            default=settings.GNOSEM_IMPORT_MAX_BYTES,
            help="refuse larger files (default: GNOSEM_IMPORT_MAX_BYTES)",
        )

    def handle(
        self,
        *args: Any,
        user: str,
        file: Path | None,
        max_bytes: int,
        format: str | None,
        preview: bool,
        resume: str | None,
        **options: Any,
    ) -> None:
        owner = user_for_command(user)
        if resume:
            try:
                job = import_job_get(owner=owner, public_id=resume)
            except NotFound as exc:
                raise CommandError(f"{describe_account(owner)} has no import {resume}.") from exc
        elif file is None:
            raise CommandError("Give the FILE to import, or --resume IMPORT_ID.")
        else:
            started = self._previewed(owner, file, max_bytes, format, preview)
            if started is None:
                return
            job = started
        self.stderr.write(f"Importing {job.file_name} into {describe_account(owner)} (import {job.public_id}).")
        with tqdm(total=job.total, initial=job.done, unit="entry", file=sys.stderr, disable=None) as bar:
            ended = import_job_run(job.pk, progress=lambda running: bar.update(running.done - bar.n))
        if ended is None:
            raise CommandError(f"Import {job.public_id} is being run by another process; try again later.")
        if ended.status == ImportStatus.FAILED:
            raise CommandError(f"{ended.file_name}: {ended.error}")
        self.stderr.write(f"Imported into {describe_account(owner)}.")
        self.stdout.write(f"{ended.file_name}: {replace(ImportReport(**ended.report), skipped=tuple(ended.skipped))}")
        for reason in ended.skipped:
            self.stdout.write(f"  left out: {reason}")

    def _previewed(
        self, owner: Owner, file: Path, max_bytes: int, format: str | None, preview: bool
    ) -> ImportJob | None:
        """The file read and checked: printed and left there with `preview`, else an import started."""
        try:
            size = file.stat().st_size
        except OSError as exc:
            raise CommandError(f"Cannot read {file}: {exc.strerror}.") from exc
        if size > max_bytes:
            raise CommandError(
                f"{file} is {size:,} bytes, over the limit of {max_bytes:,}; pass --max-bytes to allow it."
            )
        try:
            if preview:
                found = import_file_preview(owner=owner, file=read_import_file(file.read_bytes(), format))
                self.stdout.write(f"{file}: {found}")
                for reason in found.skipped:
                    self.stdout.write(f"  left out: {reason}")
                return None
            job = import_job_create(owner=owner, data=file.read_bytes(), format=format, file_name=file.name)
        except (ValidationError, QuotaExceeded) as exc:
            raise CommandError(f"{file}: {exc.message if isinstance(exc, ValidationError) else exc}") from exc
        return import_job_start(owner=owner, public_id=job.public_id, in_background=False)
