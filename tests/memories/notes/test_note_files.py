"""Uploaded note files read as a title and text (memories.notes.files), and notes' Markdown rendered
as safe HTML (memories.notes.markdown). No database: plain functions over bytes and strings, and the
process a PDF is read in. The PDFs are built here: with pypdf, one Helvetica text line per `Tj`;
the hostile ones object by object."""

import functools
import io
import sys
import threading
import time
import zlib
from collections.abc import Callable

import psutil
import pytest
from pypdf import PdfWriter
from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

from gnosem.errors import ValidationError
from memories.notes import files as note_files
from memories.notes.files import NoteText, note_from_upload
from memories.notes.markdown import render_markdown

LIMIT = 1_000_000
TOO_LONG = (
    "takes too long to read; save it again from its program (or print it to a new PDF) and upload that, or paste "
    "the text"
)


def pdf(
    *pages: list[str], password: str | None = None, owner_password: str | None = None, algorithm: str = "RC4-128"
) -> bytes:
    """A PDF with one page per list of lines (an empty list is a blank page), encrypted when a
    password is given."""
    writer = PdfWriter()
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
        }
    )
    for lines in pages:
        page = writer.add_blank_page(612, 792)
        if not lines:
            continue
        page[NameObject("/Resources")] = DictionaryObject(
            {NameObject("/Font"): DictionaryObject({NameObject("/F1"): font})}
        )
        shown = " T* ".join(f"({_pdf_string(line)}) Tj" for line in lines)
        contents = DecodedStreamObject()
        contents.set_data(f"BT /F1 12 Tf 14 TL 72 720 Td {shown} ET".encode("latin-1"))
        page.replace_contents(contents)
    if password is not None:
        writer.encrypt(password, owner_password, algorithm=algorithm)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def _pdf_string(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def raw_pdf(*objects: bytes) -> bytes:
    """A PDF of these objects, numbered from 1 (the first is the catalog), with its cross-reference table."""
    out = bytearray(b"%PDF-1.7\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%b\nendobj\n" % (number, body)
    table = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, table)
    return bytes(out)


def deflated_stream(packed: bytes, entries: bytes = b"") -> bytes:
    return b"<< /Length %d /Filter /FlateDecode %b >>\nstream\n%b\nendstream" % (len(packed), entries, packed)


FONTS = b"/Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >>"
HELVETICA = b"<< %b >>" % FONTS  # resources: the font, no forms


def pdf_showing_a_form(times: int = 100, operators: int = 100_000) -> bytes:
    """One page that shows one form XObject `times` times, the form holding `operators` empty
    text-show operators: under 2 KB that pypdf reads for minutes, parsing the form at each showing."""
    return raw_pdf(
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << %b /XObject << /X 5 0 R >> >> >>" % FONTS,
        deflated_stream(zlib.compress(b"BT () Tj ET " + b"/X Do " * times, 9)),
        deflated_stream(
            zlib.compress(b"BT /F1 12 Tf " + b"() Tj " * operators + b"ET", 9),
            b"/Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources " + HELVETICA,
        ),
    )


@functools.cache
def _deflated_spaces(count: int) -> bytes:
    return zlib.compress(b" " * count, 9)


def pdf_of_inflating_pages(pages: int, inflated_bytes: int = 70_000_000) -> bytes:
    """Pages whose content streams are `inflated_bytes` of spaces each, deflated to about a
    thousandth: pypdf keeps every page's inflated stream while it reads the file, so memory grows
    by `inflated_bytes` a page."""
    kids = b" ".join(b"%d 0 R" % (3 + 2 * index) for index in range(pages))
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [%b] /Count %d >>" % (kids, pages)]
    for index in range(pages):
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources %b /Contents %d 0 R >>"
            % (HELVETICA, 4 + 2 * index)
        )
        objects.append(deflated_stream(_deflated_spaces(inflated_bytes)))
    return raw_pdf(*objects)


def refusal(name: str, data: bytes, max_bytes: int = LIMIT) -> str:
    """The message of the ValidationError the upload is refused with."""
    with pytest.raises(ValidationError) as caught:
        note_from_upload(name, data, max_bytes=max_bytes)
    assert caught.value.field == "file"
    return caught.value.message


# Markdown and plain text.


def test_a_markdown_file_keeps_its_text_and_takes_its_title_from_the_first_heading() -> None:
    text = "Intro line\n\n## Not this one\n\n# The *real* title #\n\nBody with <b>markup</b>.\n"

    note = note_from_upload("plan.md", text.encode(), max_bytes=LIMIT)

    assert note == NoteText(title="The *real* title", content=text, format="markdown")


def test_a_heading_inside_a_code_fence_is_not_the_title() -> None:
    text = "```bash\n# install it\npip install gnosem\n```\n\nSetup notes\n"

    assert note_from_upload("setup.md", text.encode(), max_bytes=LIMIT).title == "Setup notes"


def test_a_text_file_takes_its_title_from_its_first_line_with_words() -> None:
    text = "\n   \n----\n##   Meeting   notes\t\nsecond line\n"

    note = note_from_upload("minutes.txt", text.encode(), max_bytes=LIMIT)

    assert (note.title, note.format, note.content) == ("Meeting notes", "text", text)


def test_a_long_first_line_is_cut_to_200_characters() -> None:
    title = note_from_upload("long.txt", ("word " * 100).encode(), max_bytes=LIMIT).title

    assert len(title) == 200
    assert title.endswith("…")


@pytest.mark.parametrize("text", ["***\n---\n", "```\n# only code\n```\n"])
def test_without_a_line_of_words_the_title_is_the_file_name(text: str) -> None:
    assert note_from_upload("my.notes.md", text.encode(), max_bytes=LIMIT).title == "my.notes"


@pytest.mark.parametrize(
    ("name", "note_format"),
    [("a.MD", "markdown"), ("a.Markdown", "markdown"), ("a.TXT", "text"), ("C:\\Users\\me\\a.txt", "text")],
)
def test_the_format_is_read_from_the_extension_whatever_its_case(name: str, note_format: str) -> None:
    assert note_from_upload(name, b"hello", max_bytes=LIMIT).format == note_format


def test_a_long_file_name_is_cut_in_messages_but_not_in_the_title() -> None:
    name = "n" * 150 + ".md"

    assert refusal(name, b"\x00").startswith("n" * 40 + "…" + "n" * 37 + ".md is not a text file")
    assert note_from_upload(name, b"---", max_bytes=LIMIT).title == "n" * 150


def test_a_utf8_byte_order_mark_is_dropped() -> None:
    note = note_from_upload("bom.md", "\ufeff# Café\n".encode(), max_bytes=LIMIT)

    assert (note.content, note.title) == ("# Café\n", "Café")


def test_line_endings_become_newlines() -> None:
    note = note_from_upload("crlf.txt", b"one\r\ntwo\rthree\n", max_bytes=LIMIT)

    assert note.content == "one\ntwo\nthree\n"


def test_a_file_that_is_not_utf8_is_refused_with_the_line_it_fails_on() -> None:
    message = refusal("latin1.txt", "first\nsecond caf\u00e9\n".encode("latin-1"))

    assert message == "latin1.txt is not UTF-8 text (line 2); save it as UTF-8 and upload again"


def test_a_utf16_file_is_refused_as_not_utf8() -> None:
    assert "save it as UTF-8" in refusal("wide.txt", "hello".encode("utf-16"))


def test_a_file_with_nul_bytes_is_refused_as_not_text() -> None:
    assert "not a text file" in refusal("binary.md", b"# Title\n\x00\x01\x02")


@pytest.mark.parametrize("data", [b"", b"  \n\t\r\n", b"\xef\xbb\xbf", b"\xef\xbb\xbf \n"])
def test_an_empty_or_blank_file_is_refused(data: bytes) -> None:
    assert "upload a file with some text in it" in refusal("empty.md", data)


@pytest.mark.parametrize(
    ("limit", "shown", "size"),
    [(1_000_000, "1 MB", "1.1 MB"), (500_000, "500 KB", "500.1 KB"), (1_500_000, "1.5 MB", "1.6 MB")],
)
def test_a_file_over_the_limit_is_refused_with_the_limit_named(limit: int, shown: str, size: str) -> None:
    message = refusal("big.txt", b"a" * (limit + 1), max_bytes=limit)

    assert f"big.txt is {size}, over the {shown} limit for a note; split it" in message


def test_a_file_at_the_limit_is_accepted() -> None:
    assert len(note_from_upload("full.txt", b"a" * 1_000, max_bytes=1_000).content) == 1_000


@pytest.mark.parametrize("name", ["notes.docx", "notes", "md", "notes.md.zip", "notes.html", ""])
def test_other_kinds_of_file_are_refused(name: str) -> None:
    assert "only .md, .txt and .pdf files can be uploaded as notes" in refusal(name, b"hello")


@pytest.mark.parametrize("name", ["report.txt", "report.md"])
def test_a_text_file_that_is_really_a_pdf_is_refused(name: str) -> None:
    assert "is a PDF, not text" in refusal(name, pdf(["Hello notes"]))


# PDF.


def test_a_pdfs_text_is_read_page_by_page() -> None:
    note = note_from_upload("notes.pdf", pdf(["Hello notes", "second (line)"], [], ["Page three"]), max_bytes=LIMIT)

    assert note == NoteText(title="Hello notes", content="Hello notes\nsecond (line)\n\nPage three", format="pdf")


def test_control_characters_in_a_pdfs_text_are_dropped() -> None:
    note = note_from_upload("ctl.PDF", pdf(["a\x07b\x01c\x0cd", "tab\there"]), max_bytes=LIMIT)

    assert note.content == "abcd\ntab\there"


def test_a_pdf_file_must_start_like_one() -> None:
    assert "is not a PDF" in refusal("fake.pdf", b"# Markdown really")


@pytest.mark.parametrize(
    ("password", "owner_password", "algorithm"),
    [
        ("secret", None, "RC4-128"),
        ("secret", None, "AES-256"),
        ("", "owner-only", "AES-128"),  # opens without a password, yet is encrypted
    ],
)
def test_an_encrypted_pdf_is_refused(password: str, owner_password: str | None, algorithm: str) -> None:
    data = pdf(["Hello notes"], password=password, owner_password=owner_password, algorithm=algorithm)

    assert refusal("locked.pdf", data) == "locked.pdf is encrypted; remove the password and upload again"


def test_a_pdf_without_a_text_layer_is_refused_as_a_scan() -> None:
    message = refusal("scan.pdf", pdf([], []))

    assert message == "scan.pdf has no text layer (a scanned document?); run OCR on it first or paste the text"


@pytest.mark.parametrize(
    "data",
    [
        pdf(["Hello notes"])[:300],
        pdf(["Hello notes"])[:-40],
        b"%PDF-1.7\n" + bytes(range(256)) * 4,
        b"%PDF-",
        b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog /Pages 9 0 R >>\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n",
    ],
    ids=["truncated", "without-its-end", "garbage", "header-only", "dangling-pages"],
)
def test_a_damaged_pdf_is_refused_as_unreadable(data: bytes) -> None:
    assert "could not be read as a PDF (" in refusal("broken.pdf", data)


def test_a_pdf_over_ten_times_the_limit_is_refused_before_it_is_read(monkeypatch) -> None:
    monkeypatch.setattr(note_files, "PDF_READER", [sys.executable, "-c", "raise SystemExit('read')"])

    message = refusal("huge.pdf", b"%PDF-1.7\n" + b"0" * 10_000, max_bytes=1_000)

    assert "over the 10 KB limit for a PDF" in message


def test_a_pdf_with_more_text_than_the_limit_is_refused() -> None:
    data = pdf(["x" * 60, "y" * 60], ["z" * 60])

    assert "has more text than the 150 bytes limit" in refusal("wordy.pdf", data, max_bytes=150)


def test_a_pdf_with_too_many_pages_is_refused(monkeypatch) -> None:
    monkeypatch.setattr(note_files, "MAX_PDF_PAGES", 2)

    assert "has 3 pages, more than 2" in refusal("long.pdf", pdf(["one"], ["two"], ["three"]))


def test_a_pdf_of_three_hundred_pages_is_read_whole() -> None:
    pages = [
        [f"Page {number}", "The quarterly report shows revenue growth across regions. " * 10] for number in range(300)
    ]

    note = note_from_upload("report.pdf", pdf(*pages), max_bytes=LIMIT)

    assert note.content.count("The quarterly report") == 3_000
    assert note.content.endswith(
        "Page 299\n"
        + "The quarterly report shows revenue growth across regions. " * 9
        + "The quarterly report shows revenue growth across regions."
    )


# PDFs made to exhaust the reader.


def timed(read: Callable[[], str]) -> tuple[str, float]:
    started = time.monotonic()
    message = read()
    return message, time.monotonic() - started


def test_a_pdf_that_shows_a_form_over_and_over_is_refused_at_the_time_limit(monkeypatch) -> None:
    monkeypatch.setattr(note_files, "MAX_PDF_EXTRACTION_SECONDS", 2.0)

    message, seconds = timed(lambda: refusal("forms.pdf", pdf_showing_a_form()))

    assert message == f"forms.pdf {TOO_LONG}"
    assert seconds < 20  # reading it whole takes minutes


def test_the_crafted_pdf_is_refused_within_the_time_limit_as_shipped() -> None:
    message, seconds = timed(lambda: refusal("forms.pdf", pdf_showing_a_form()))

    assert message == f"forms.pdf {TOO_LONG}"
    assert seconds < note_files.MAX_PDF_EXTRACTION_SECONDS + 15


def test_a_pdf_that_inflates_past_the_memory_limit_is_refused() -> None:
    pages = note_files.MAX_PDF_MEMORY_BYTES // 70_000_000 + 2  # each page keeps 70 MB once read

    message = refusal("bomb.pdf", pdf_of_inflating_pages(pages))

    assert message == (
        "bomb.pdf needs too much memory to read; save it again from its program (or print it to a new PDF) and "
        "upload that, or paste the text"
    )


def reader_processes() -> list[psutil.Process]:
    return [child for child in psutil.Process().children() if "memories.notes.pdf_extraction" in child.cmdline()]


def read_in_background(name: str, data: bytes) -> tuple[threading.Thread, dict[str, str]]:
    """Start reading the upload on another thread; its refusal's message lands in the dict."""
    outcome: dict[str, str] = {}
    thread = threading.Thread(target=lambda: outcome.update(message=refusal(name, data)))
    thread.start()
    return thread, outcome


def wait_for_readers(count: int) -> list[psutil.Process]:
    deadline = time.monotonic() + 30
    while len(readers := reader_processes()) < count:
        assert time.monotonic() < deadline, f"{len(readers)} reading processes after 30 s"
        time.sleep(0.05)
    return readers


def test_a_pdf_is_read_in_a_limited_process_that_is_gone_after_its_time(monkeypatch) -> None:
    monkeypatch.setattr(note_files, "MAX_PDF_EXTRACTION_SECONDS", 3.0)
    thread, outcome = read_in_background("forms.pdf", pdf_showing_a_form())

    (reader,) = wait_for_readers(1)
    deadline = time.monotonic() + 2
    while reader.nice() < note_files.PDF_READER_NICENESS and time.monotonic() < deadline:
        time.sleep(0.01)  # it lowers its priority last, after its limits, before it reads the PDF
    limits = (reader.rlimit(psutil.RLIMIT_AS), reader.rlimit(psutil.RLIMIT_CPU), reader.nice())
    thread.join()

    niceness = max(note_files.PDF_READER_NICENESS, psutil.Process().nice())
    assert limits == ((note_files.MAX_PDF_MEMORY_BYTES,) * 2, (4, 5), niceness)
    assert outcome["message"] == f"forms.pdf {TOO_LONG}"
    assert not psutil.pid_exists(reader.pid)  # killed and reaped, not left as a zombie


def test_a_pdf_is_refused_while_the_process_reads_as_many_as_it_may(monkeypatch) -> None:
    monkeypatch.setattr(note_files, "MAX_PDF_EXTRACTION_SECONDS", 5.0)
    monkeypatch.setattr(note_files, "_pdf_readers", threading.BoundedSemaphore(2))
    reading = [read_in_background("forms.pdf", pdf_showing_a_form()) for _ in range(2)]
    wait_for_readers(2)

    message = refusal("report.pdf", pdf(["Quarterly report"]))
    for thread, _ in reading:
        thread.join()

    assert message == (
        "report.pdf could not be read now: the server is reading other PDFs; upload it again in a minute"
    )
    assert [outcome["message"] for _, outcome in reading] == [f"forms.pdf {TOO_LONG}"] * 2
    assert note_from_upload("report.pdf", pdf(["Quarterly report"]), max_bytes=LIMIT).content == "Quarterly report"


@pytest.mark.parametrize(
    ("program", "shown"),
    [
        ("print('not JSON')", "could not be read as a PDF (its reader answered nonsense)"),
        ("print('[1, 2]')", "could not be read as a PDF (its reader answered nonsense)"),
        ('print(\'{"refused": "bored"}\')', "could not be read as a PDF (its reader answered nonsense)"),
        ("raise MemoryError", "could not be read as a PDF (its reader failed)"),
        (
            "import os, resource; resource.setrlimit(resource.RLIMIT_CORE, (0, 0)); os.abort()",
            "could not be read as a PDF (its reader failed)",
        ),
        (
            "import os, resource, signal; resource.setrlimit(resource.RLIMIT_CORE, (0, 0)); "
            "os.kill(os.getpid(), signal.SIGXCPU)",
            TOO_LONG,
        ),
        ("import time; time.sleep(60)", TOO_LONG),
    ],
    ids=["garbage", "not-an-answer", "unknown-refusal", "exit-status", "signal", "cpu-limit", "hangs"],
)
def test_every_way_the_reading_process_fails_is_a_clear_refusal(monkeypatch, program: str, shown: str) -> None:
    monkeypatch.setattr(note_files, "PDF_READER", [sys.executable, "-c", program])
    monkeypatch.setattr(note_files, "MAX_PDF_EXTRACTION_SECONDS", 2.0)

    assert refusal("odd.pdf", pdf(["Hello notes"])).startswith(f"odd.pdf {shown}")


# Markdown rendered.


def test_headings_lists_code_and_tables_render() -> None:
    html = render_markdown("# Plan\n\n- one\n- two\n\n```py\nif a < b:\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n")

    assert "<h1>Plan</h1>" in html
    assert "<ul>\n<li>one</li>\n<li>two</li>\n</ul>" in html
    assert '<pre><code class="language-py">if a &lt; b:\n</code></pre>' in html
    assert "<table>" in html
    assert "<td>2</td>" in html


@pytest.mark.parametrize(
    "text",
    ["<script>alert(1)</script>", 'Hi <img src=x onerror="alert(1)">', "<div onclick='x()'>block</div>"],
)
def test_raw_html_is_escaped(text: str) -> None:
    html = render_markdown(text)

    assert "<script" not in html
    assert "<img" not in html
    assert "<div" not in html
    assert "&lt;" in html


@pytest.mark.parametrize(
    "text",
    [
        "[x](javascript:alert(1))",
        "[x](JavaScript:alert(1))",
        "[x](&#106;avascript:alert(1))",
        "[x]( javascript:alert(1))",
        "[x](vbscript:msgbox(1))",
        "[x](file:///etc/passwd)",
        "[x](data:text/html;base64,PHNjcmlwdD4=)",
        "[x][ref]\n\n[ref]: javascript:alert(1)",
        "<javascript:alert(1)>",
        "![x](javascript:alert(1))",
    ],
)
def test_links_to_unsafe_schemes_are_not_links(text: str) -> None:
    html = render_markdown(text)

    assert "href" not in html
    assert "<a" not in html


@pytest.mark.parametrize(
    ("text", "href"),
    [
        ("[docs](https://example.com/a?b=1&c=2)", "https://example.com/a?b=1&amp;c=2"),
        ("<https://example.com>", "https://example.com"),
    ],
)
def test_links_are_marked_nofollow_noopener(text: str, href: str) -> None:
    assert f'<a href="{href}" rel="nofollow noopener">' in render_markdown(text)


def test_an_image_becomes_a_link_to_it_and_nothing_is_fetched() -> None:
    html = render_markdown('![a *chart*](http://evil.example/x.png "Q3")\n\n![](http://evil.example/y.png)')

    assert "<img" not in html
    assert '<a href="http://evil.example/x.png" title="Q3" rel="nofollow noopener">a chart</a>' in html
    assert '<a href="http://evil.example/y.png" rel="nofollow noopener">http://evil.example/y.png</a>' in html


@pytest.mark.parametrize(
    "text",
    ["[![logo](http://evil.example/x.png)](https://example.com)", "![logo](data:image/png;base64,iVBORw0KGgo=)"],
)
def test_an_image_in_a_link_or_inline_as_data_is_its_alt_text(text: str) -> None:
    html = render_markdown(text)

    assert "<img" not in html
    assert "evil.example" not in html
    assert "data:" not in html
    assert "logo" in html
