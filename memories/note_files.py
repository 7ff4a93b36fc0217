"""An uploaded note file (`.md`, `.txt` or `.pdf`) turned into a note's title and text, or a
ValidationError on the `file` field that says what was wrong with it and what to do.

The caller passes the size limit (GNOSEM_NOTE_MAX_BYTES); this module reads no settings. A PDF may
be up to ten times that size, since images and fonts take room the text does not; its extracted
text must fit the limit like any other note's.
"""

import io
import logging
import math
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass

from pypdf import PdfReader
from pypdf.errors import FileNotDecryptedError

from gnosem.errors import ValidationError

FIELD = "file"
MAX_TITLE_CHARS = 200
# A PDF's file may be this many times the note limit (images and fonts), its text may not.
PDF_FILE_FACTOR = 10
# Guards against pathological PDFs: extraction stops with an error past either bound. Time is
# checked between pages, so one page's extraction is bounded only by pypdf's own limits.
MAX_PDF_PAGES = 2_000
MAX_PDF_EXTRACTION_SECONDS = 30.0
# A file name is quoted in messages; a long one is cut so the message stays readable.
MAX_NAME_IN_MESSAGE = 80

_FORMATS = {"md": "markdown", "markdown": "markdown", "txt": "text", "pdf": "pdf"}
_PDF_MAGIC = b"%PDF-"
_UTF8_BOM = b"\xef\xbb\xbf"
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
# Control characters a PDF's text layer may carry that have no place in a note (tab and newline
# stay), and lone surrogates from broken font maps, which cannot be stored as UTF-8.
_PDF_JUNK = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
_TRAILING_SPACE = re.compile(r"[ \t]+$", re.MULTILINE)
_BLANK_RUN = re.compile(r"\n{4,}")  # more than two blank lines in a row
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
    characters. Refuses encrypted, unreadable, oversized and scanned (text-less) documents."""
    if len(data) > max_bytes * PDF_FILE_FACTOR:
        raise _too_large(shown, len(data), max_bytes * PDF_FILE_FACTOR, "a PDF")
    if not data.startswith(_PDF_MAGIC):
        raise ValidationError(FIELD, f"{shown} is not a PDF (it does not start with %PDF-); upload a real PDF")

    started = time.monotonic()
    pages: list[str] = []
    text_bytes = 0
    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted:
            raise _encrypted(shown)
        page_count = len(reader.pages)
        if page_count > MAX_PDF_PAGES:
            raise ValidationError(
                FIELD, f"{shown} has {page_count:,} pages, more than {MAX_PDF_PAGES:,}; split it and upload the parts"
            )
        for page in reader.pages:
            if time.monotonic() - started > MAX_PDF_EXTRACTION_SECONDS:
                raise ValidationError(
                    FIELD,
                    f"{shown} takes too long to read; save it again from its program (or print it to a new "
                    "PDF) and upload that, or paste the text",
                )
            text = _clean_pdf_text(page.extract_text() or "")
            if not text:
                continue
            pages.append(text)
            text_bytes += len(text.encode("utf-8")) + 2
            if text_bytes > max_bytes:
                raise ValidationError(
                    FIELD,
                    f"{shown} has more text than the {_size(max_bytes)} limit of a note; split it and upload the parts",
                )
    except ValidationError:
        raise
    except FileNotDecryptedError:
        raise _encrypted(shown) from None
    except Exception as exc:  # pypdf raises many kinds on a damaged file; any of them means "unreadable"
        logger.info("PDF upload %r could not be read: %r", shown, exc)
        raise ValidationError(
            FIELD, f"{shown} could not be read as a PDF ({_reason(exc)}); save it again as a PDF and upload that"
        ) from None

    content = _BLANK_RUN.sub("\n\n\n", "\n\n".join(pages))
    if not content.strip():
        raise ValidationError(
            FIELD,
            f"{shown} has no text layer (a scanned document?); run OCR on it first or paste the text",
        )
    return content


def _encrypted(shown: str) -> ValidationError:
    return ValidationError(FIELD, f"{shown} is encrypted; remove the password and upload again")


def _reason(exc: Exception) -> str:
    """A short, single-line account of why pypdf gave up, for the message."""
    detail = " ".join(str(exc).split())[:120]
    return f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__


def _clean_pdf_text(text: str) -> str:
    """One page's extracted text without control characters, trailing spaces or surrounding blank lines."""
    text = _PDF_JUNK.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
    return _TRAILING_SPACE.sub("", text).strip("\n")


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
    """White space made single spaces, cut to MAX_TITLE_CHARS (an ellipsis marks the cut)."""
    text = " ".join(text.split())
    if len(text) <= MAX_TITLE_CHARS:
        return text
    return text[: MAX_TITLE_CHARS - 1].rstrip() + "…"
