"""An uploaded note file (`.md`, `.txt` or `.pdf`) turned into a note's title and text, or a
ValidationError on the `file` field that says what was wrong with it and what to do.

The caller passes the size limit (GNOSEM_NOTE_MAX_BYTES); this module reads no settings. A PDF may
be up to ten times that size, since images and fonts take room the text does not; its extracted
text must fit the limit like any other note's.

A PDF is read in a process of its own (memories.notes.pdf_extraction), never in the web process: a small
file can make pypdf work for hours or fill the memory, so that process has a wall-clock, CPU and
address-space limit, is killed at the first, and each web process runs only a few at once.
"""

import json
import logging
import math
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from gnosem.errors import ValidationError
from gnosem.labels import label_from

FIELD = "file"
MAX_TITLE_CHARS = 200
# A PDF's file may be this many times the note limit (images and fonts), its text may not.
PDF_FILE_FACTOR = 10
# Guards against pathological PDFs: reading stops with an error past any of these bounds. A dense
# 300-page PDF (1.5 MB of text) is read in 6 s on an idle core in under 60 MB; 2,000 such pages
# take 115 MB but 37 s (docs/security.md).
MAX_PDF_PAGES = 2_000
MAX_PDF_EXTRACTION_SECONDS = 30.0  # wall clock; the reading process is killed at it
MAX_PDF_MEMORY_BYTES = 512 * 1024 * 1024  # the reading process's address space
# Below the web processes, as the huey consumer runs by default (GNOSEM_WORKER_NICENESS), so PDFs
# being read take the cores only when requests leave them idle.
PDF_READER_NICENESS = 10
# PDFs one web process reads at once; another upload meanwhile is refused at once rather than
# holding a web thread in a queue, so a process always keeps threads for other requests.
MAX_PDF_READS_AT_ONCE = 2
# The reading process: this interpreter (the web process's virtualenv), the project on its path.
PDF_READER = [sys.executable, "-m", "memories.notes.pdf_extraction"]
_PROJECT_ROOT = Path(__file__).resolve().parents[2]
# A file name is quoted in messages; a long one is cut so the message stays readable.
MAX_NAME_IN_MESSAGE = 80

_FORMATS = {"md": "markdown", "markdown": "markdown", "txt": "text", "pdf": "pdf"}
_PDF_MAGIC = b"%PDF-"
_UTF8_BOM = b"\xef\xbb\xbf"
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
_pdf_readers = threading.BoundedSemaphore(MAX_PDF_READS_AT_ONCE)
# What memories.notes.pdf_extraction answers when it reads no text.
_PDF_REFUSALS = frozenset({"encrypted", "too_many_pages", "too_much_text", "out_of_memory", "unreadable"})
_ATX_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_WORD = re.compile(r"\w")

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class NoteText:
    """A note's title and text as read from an uploaded file."""

    title: str  # the first `# ` heading, else the first line with words in it, else the file's name
    content: str  # Markdown and plain text as written (line endings made `\n`); a PDF's text by page
    format: str  # "markdown", "text" or "pdf"


# Room in a note upload's body, past the largest file accepted, for the other fields and the
# multipart framing.
UPLOAD_FORM_BYTES = 64 * 1024


def note_upload_limits(max_bytes: int) -> dict[str, int]:
    """The sizes a note upload is held to: a note's text, and the largest file accepted (a PDF)."""
    return {"note_max_bytes": max_bytes, "pdf_max_bytes": max_bytes * PDF_FILE_FACTOR}


def note_upload_too_large(content_length: str | None, *, max_bytes: int) -> bool:
    """Whether an upload's declared body is over the largest file accepted plus the rest of the
    form; judged before anything is read."""
    try:
        return int(content_length or 0) > max_bytes * PDF_FILE_FACTOR + UPLOAD_FORM_BYTES
    except ValueError:
        return True


def note_from_upload(name: str, data: bytes, *, max_bytes: int) -> NoteText:
    """Read an uploaded file as a note: its format from the extension (checked against the content),
    its text, and a title. Raises ValidationError("file", ...) on anything that cannot become a note."""
    base = re.split(r"[\\/]", name)[-1].strip()  # browsers may send a path
    shown = _shown_name(base)
    stem, dot, extension = base.rpartition(".")
    note_format = _FORMATS.get(extension.lower()) if dot else None
    if note_format is None:
        raise ValidationError(FIELD, f"{shown}: only .md, .txt and .pdf files can be uploaded as notes")
    if not data:
        raise ValidationError(FIELD, f"{shown} is empty; upload a file with some text in it")

    if note_format == "pdf":
        content = _pdf_text(shown, data, max_bytes=max_bytes)
    else:
        content = _plain_text(shown, data, max_bytes=max_bytes)
    if not content.strip():
        raise ValidationError(FIELD, f"{shown} has no text in it; upload a file with some text in it")
    if len(content.encode("utf-8")) > max_bytes:
        raise ValidationError(
            FIELD, f"{shown} has more text than the {_size(max_bytes)} limit of a note; split it and upload the parts"
        )
    return NoteText(title=_title(content, note_format, fallback=stem or base), content=content, format=note_format)


def _shown_name(base: str) -> str:
    """The file's name as messages quote it, cut to a readable length."""
    if len(base) > MAX_NAME_IN_MESSAGE:
        keep = MAX_NAME_IN_MESSAGE // 2
        base = f"{base[:keep]}…{base[-keep:]}"
    return base or "the file"


def _size(count: int, *, up: bool = False) -> str:
    """A byte count in decimal units, as the limit is set (1 MB = 1,000,000 bytes), to a tenth;
    rounded up for a file's size, so one just over the limit never reads as the limit itself."""
    for unit, scale in (("MB", 1_000_000), ("KB", 1_000)):
        if count >= scale:
            tenths = math.ceil(count * 10 / scale) if up else round(count * 10 / scale)
            return f"{tenths / 10:.1f}".removesuffix(".0") + f" {unit}"
    return f"{count} bytes"


def _too_large(shown: str, size: int, limit: int, what: str) -> ValidationError:
    over = f"{shown} is {_size(size, up=True)}, over the {_size(limit)} limit for {what}"
    return ValidationError(FIELD, f"{over}; split it and upload the parts")


def _plain_text(shown: str, data: bytes, *, max_bytes: int) -> str:
    """A Markdown or text file's content: UTF-8 (a BOM is dropped), line endings made `\\n`."""
    if len(data) > max_bytes:
        raise _too_large(shown, len(data), max_bytes, "a note")
    if data.startswith(_PDF_MAGIC):
        raise ValidationError(FIELD, f"{shown} is a PDF, not text; rename it to .pdf and upload again")
    if data.startswith(_UTF16_BOMS):
        raise ValidationError(FIELD, f"{shown} is UTF-16 text, not UTF-8; save it as UTF-8 and upload again")
    if b"\x00" in data:
        raise ValidationError(
            FIELD, f"{shown} is not a text file (it contains NUL bytes); upload Markdown or plain text"
        )
    try:
        text = data.removeprefix(_UTF8_BOM).decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ValidationError(
            FIELD, f"{shown} is not UTF-8 text (line {line}); save it as UTF-8 and upload again"
        ) from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _pdf_text(shown: str, data: bytes, *, max_bytes: int) -> str:
    """A PDF's text layer, page by page (pages separated by a blank line), cleaned of control
    characters. Refuses encrypted, unreadable, oversized, scanned (text-less) documents, and those
    that take too long or too much memory to read."""
    if len(data) > max_bytes * PDF_FILE_FACTOR:
        raise _too_large(shown, len(data), max_bytes * PDF_FILE_FACTOR, "a PDF")
    if not data.startswith(_PDF_MAGIC):
        raise ValidationError(FIELD, f"{shown} is not a PDF (it does not start with %PDF-); upload a real PDF")
    if not _pdf_readers.acquire(blocking=False):
        logger.warning("PDF upload %r refused: %d PDFs are being read in this process", shown, MAX_PDF_READS_AT_ONCE)
        raise ValidationError(
            FIELD, f"{shown} could not be read now: the server is reading other PDFs; upload it again in a minute"
        )
    try:
        answer = _read_pdf_apart(shown, data, max_bytes=max_bytes)
    finally:
        _pdf_readers.release()

    refused = answer.get("refused")
    if refused == "encrypted":
        raise ValidationError(FIELD, f"{shown} is encrypted; remove the password and upload again")
    if refused == "too_many_pages":
        raise ValidationError(
            FIELD, f"{shown} has {answer['pages']:,} pages, more than {MAX_PDF_PAGES:,}; split it and upload the parts"
        )
    if refused == "too_much_text":
        raise ValidationError(
            FIELD, f"{shown} has more text than the {_size(max_bytes)} limit of a note; split it and upload the parts"
        )
    if refused == "out_of_memory":
        logger.warning(
            "PDF upload %r (%d bytes) refused: over %d bytes of memory", shown, len(data), MAX_PDF_MEMORY_BYTES
        )
        raise _too_costly(shown, "needs too much memory")
    if refused == "unreadable":
        logger.info("PDF upload %r could not be read: %s", shown, answer["reason"])
        raise _unreadable(shown, answer["reason"])
    if not answer["text"].strip():
        raise ValidationError(
            FIELD,
            f"{shown} has no text layer (a scanned document?); run OCR on it first or paste the text",
        )
    return answer["text"]


def _read_pdf_apart(shown: str, data: bytes, *, max_bytes: int) -> dict:
    """The answer of memories.notes.pdf_extraction for this PDF, read in a process of its own under this
    module's limits. A process that runs out of time (or CPU), dies, or answers nonsense is a
    ValidationError, logged for the operator."""
    # Its CPU time (it has one thread) runs out just after the wall clock: the limit that ends it
    # should this process die first.
    limits = [MAX_PDF_PAGES, max_bytes, MAX_PDF_MEMORY_BYTES, math.ceil(MAX_PDF_EXTRACTION_SECONDS) + 1]
    started = time.monotonic()
    try:
        # A fresh interpreter, not a fork of the web process: it inherits no threads, no database
        # connections, and of the environment (database URL, secrets) only where modules are.
        finished = subprocess.run(
            [*PDF_READER, *map(str, limits), str(PDF_READER_NICENESS)],
            input=data,
            capture_output=True,
            timeout=MAX_PDF_EXTRACTION_SECONDS,
            cwd=_PROJECT_ROOT,
            env={name: value for name, value in os.environ.items() if name == "PYTHONPATH"},
            check=False,
        )
    except subprocess.TimeoutExpired:  # run() has killed the process and waited for it
        logger.warning(
            "PDF upload %r (%d bytes) refused: not read within %.0f s", shown, len(data), MAX_PDF_EXTRACTION_SECONDS
        )
        raise _too_costly(shown, "takes too long") from None
    seconds = time.monotonic() - started
    stderr = finished.stderr[-2000:].decode("utf-8", "replace")
    if finished.returncode == -signal.SIGXCPU:
        logger.warning("PDF upload %r (%d bytes) refused: over its CPU time after %.1f s", shown, len(data), seconds)
        raise _too_costly(shown, "takes too long")
    if finished.returncode != 0:
        logger.error(
            "PDF upload %r (%d bytes): its reader exited with status %d (below 0: killed by that signal) after "
            "%.1f s; %s",
            shown,
            len(data),
            finished.returncode,
            seconds,
            stderr,
        )
        raise _unreadable(shown, "its reader failed")
    try:
        answer = json.loads(finished.stdout)
        if not isinstance(answer, dict) or not (
            isinstance(answer.get("text"), str) or answer.get("refused") in _PDF_REFUSALS
        ):
            raise ValueError(answer)
    except ValueError:
        logger.error("PDF upload %r: its reader answered %r; %s", shown, finished.stdout[:200], stderr)
        raise _unreadable(shown, "its reader answered nonsense") from None
    return answer


def _too_costly(shown: str, what: str) -> ValidationError:
    return ValidationError(
        FIELD,
        f"{shown} {what} to read; save it again from its program (or print it to a new PDF) and upload that, "
        "or paste the text",
    )


def _unreadable(shown: str, reason: str) -> ValidationError:
    return ValidationError(
        FIELD, f"{shown} could not be read as a PDF ({reason}); save it again as a PDF and upload that"
    )


def _title(content: str, note_format: str, *, fallback: str) -> str:
    """The first level-one heading of a Markdown note, else its first line with a letter or digit in
    it (heading markers dropped; a Markdown note's fenced code left out), else the file's name
    without its extension."""
    lines = list(_prose_lines(content)) if note_format == "markdown" else content.split("\n")
    if note_format == "markdown":
        for line in lines:
            heading = _ATX_HEADING.match(line)
            if heading and len(heading.group(1)) == 1 and _WORD.search(heading.group(2) or ""):
                return _short(heading.group(2))
    for line in lines:
        heading = _ATX_HEADING.match(line)
        candidate = (heading.group(2) or "") if heading else line
        if _WORD.search(candidate):
            return _short(candidate)
    return _short(fallback) or "Untitled note"


def _prose_lines(content: str) -> Iterator[str]:
    """A Markdown text's lines outside fenced code blocks (where `# ` is a comment, not a heading)."""
    fence = ""
    for line in content.split("\n"):
        marker = _FENCE.match(line)
        if fence:
            if marker and marker.group(1)[0] == fence[0] and len(marker.group(1)) >= len(fence):
                fence = ""
        elif marker:
            fence = marker.group(1)
        else:
            yield line


def _short(text: str) -> str:
    """Made fit to be a title by the label rule (white space one space, control characters too,
    invisible ones dropped), cut to MAX_TITLE_CHARS (an ellipsis marks the cut)."""
    text = label_from(text)
    if len(text) <= MAX_TITLE_CHARS:
        return text
    return text[: MAX_TITLE_CHARS - 1].rstrip() + "…"
