"""Uploaded note files read as a title and text (memories.note_files), and notes' Markdown rendered
as safe HTML (memories.markdown). No database: plain functions over bytes and strings. The PDFs are
built here with pypdf, one Helvetica text line per `Tj`."""

import io
from collections.abc import Iterator

import pytest
from pypdf import PdfWriter
from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

from gnosem.errors import ValidationError
from memories import note_files
from memories.markdown import render_markdown
from memories.note_files import NoteText, note_from_upload

LIMIT = 1_000_000


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


@pytest.mark.parametrize("error", [RuntimeError("boom"), RecursionError(), KeyError("/Kids"), MemoryError()])
def test_no_error_but_a_validation_error_escapes_from_pypdf(monkeypatch, error: Exception) -> None:
    def failing_reader(*args, **kwargs):
        raise error

    monkeypatch.setattr(note_files, "PdfReader", failing_reader)

    assert f"could not be read as a PDF ({type(error).__name__}" in refusal("odd.pdf", pdf(["Hello notes"]))


def test_a_pdf_over_ten_times_the_limit_is_refused_before_it_is_parsed(monkeypatch) -> None:
    monkeypatch.setattr(note_files, "PdfReader", lambda *args, **kwargs: pytest.fail("parsed"))

    message = refusal("huge.pdf", b"%PDF-1.7\n" + b"0" * 10_000, max_bytes=1_000)

    assert "over the 10 KB limit for a PDF" in message


def test_a_pdf_with_more_text_than_the_limit_is_refused() -> None:
    data = pdf(["x" * 60, "y" * 60], ["z" * 60])

    assert "has more text than the 150 bytes limit" in refusal("wordy.pdf", data, max_bytes=150)


def test_a_pdf_with_too_many_pages_is_refused(monkeypatch) -> None:
    monkeypatch.setattr(note_files, "MAX_PDF_PAGES", 2)

    assert "has 3 pages, more than 2" in refusal("long.pdf", pdf(["one"], ["two"], ["three"]))


class SlowClock:
    """Stands in for the time module: each reading is twenty seconds after the last."""

    def __init__(self) -> None:
        self._ticks: Iterator[float] = iter(range(0, 10_000, 20))

    def monotonic(self) -> float:
        return float(next(self._ticks))


def test_a_pdf_that_takes_too_long_to_read_is_refused_between_pages(monkeypatch) -> None:
    monkeypatch.setattr(note_files, "time", SlowClock())

    assert "takes too long to read" in refusal("slow.pdf", pdf(["one"], ["two"]))


def test_a_pdf_read_within_the_time_allowed_is_accepted(monkeypatch) -> None:
    monkeypatch.setattr(note_files, "time", SlowClock())

    assert note_from_upload("quick.pdf", pdf(["one"]), max_bytes=LIMIT).content == "one"


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
