"""PDF upload fuzzing: hypothesis-built PDFs whose content streams mix text, graphics and marked
content operators with odd operands, form XObjects that show one another (themselves too) and are
shown thousands of times, streams of operators repeated up to 100,000 times, and files cut short,
uploaded on the notes page, with the crafted file of tests/memories/notes/test_note_files.py always among
them. Whatever the file, the answer is a note or a 400 that says what was
wrong, within the reading limit (lowered here so that hostile examples are quick), never a 5xx.

Bounded to keep `make test` quick (EXAMPLES uploads); the counts are printed in the run's output.
Each upload runs in a savepoint that is rolled back, so examples do not depend on one another.
"""

import html
import re
import time
import zlib
from collections import Counter
from collections.abc import Iterator

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import transaction
from django.urls import reverse
from hypothesis import example, given, note
from hypothesis import strategies as st

from memories.notes import files as note_files
from tests.fuzzing import fuzz_settings, report_line
from tests.memories.notes.test_note_files import FONTS, HELVETICA, deflated_stream, pdf_showing_a_form, raw_pdf

EXAMPLES = 60
READING_SECONDS = 2.0
# Past the reading limit: the process's start, the upload's other work, a loaded machine.
ANSWER_SECONDS = READING_SECONDS + 15
TALLY: Counter[str] = Counter()
ALERT = re.compile(r'role="alert"[^>]*>\s*(.*?)\s*<', re.DOTALL)

OPERATORS = [
    *("BT", "ET", "Tj", "TJ", "'", '"', "Td", "TD", "Tm", "T*", "Tf", "TL", "Tc", "Tw", "Tz", "Ts", "Tr"),
    *("q", "Q", "cm", "Do", "re", "m", "l", "S", "f", "W", "n", "gs", "sh", "d0", "d1"),
    *("BDC", "BMC", "EMC", "MP", "DP", "BX", "EX", "BI", "ID", "EI"),
]
OPERANDS = [
    *("0", "12", "-3.5", "1e309", "99999999999999999999", ".", "-", "1 0 0 1 72 720"),
    *("(Hello notes)", "()", "(\\)", "(unbalanced", "(caf\\351 \\(x\\))", "<48656c6c6f>", "<zz>", "<"),
    *("/F1", "/F9", "/X0", "/X1", "/X2", "/", "[ (a) -250 (b) ]", "[", "]", "<< /MCID 0 >>", "<<", ">>"),
]
token = st.sampled_from(OPERATORS) | st.sampled_from(OPERANDS)
# A run of tokens, repeated: a few times, or enough to make a long stream from a short file.
block = st.builds(
    lambda tokens, times: (" ".join(tokens) + " ") * times,
    st.lists(token, min_size=1, max_size=12),
    st.sampled_from([1, 1, 3, 100, 10_000, 100_000]),
)
# Well-formed text among the noise, so that some uploads become notes.
text_block = st.sampled_from(
    ["BT /F1 12 Tf 72 720 Td (Hello notes) Tj ET ", "BT /F1 9 Tf 14 TL [ (Quarterly) -250 (report) ] TJ T* (Q3) Tj ET "]
)
content = st.builds("".join, st.lists(text_block | block, min_size=1, max_size=4))


@st.composite
def pdfs(draw: st.DrawFn) -> bytes:
    """One page whose content and up to three forms' content are drawn; each form may show any of
    them, and the page shows them up to 15,000 times. Sometimes the file is cut short."""
    forms = draw(st.lists(content, max_size=3))
    invocations = draw(st.lists(st.integers(0, len(forms) - 1), max_size=3)) if forms else []
    shown = "".join(f"/X{index} Do " for index in invocations)
    page = draw(content) + shown * draw(st.sampled_from([1, 2, 50, 1_000, 5_000]))
    xobjects = b" ".join(b"/X%d %d 0 R" % (index, 5 + index) for index in range(len(forms)))
    resources = b"<< %b /XObject << %b >> >>" % (FONTS, xobjects)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources %b /Contents 4 0 R >>" % resources,
        deflated_stream(zlib.compress(page.encode("latin-1"), 9)),
    ]
    for form in forms:
        entries = b"/Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources " + (
            draw(st.sampled_from([resources, HELVETICA]))
        )
        objects.append(deflated_stream(zlib.compress(form.encode("latin-1"), 9), entries))
    data = raw_pdf(*objects)
    if draw(st.booleans()) and draw(st.booleans()):
        data = data[: draw(st.integers(len(data) // 2, len(data) - 1))]
    return data


@pytest.fixture(autouse=True)
def fuzzing_conditions(settings, monkeypatch) -> None:
    # What the fuzzing exercises is reading hostile files, not the upload rate limit it would reach.
    settings.GNOSEM_NOTE_UPLOAD_RATE_LIMIT = None
    monkeypatch.setattr(note_files, "MAX_PDF_EXTRACTION_SECONDS", READING_SECONDS)


@pytest.fixture(scope="module", autouse=True)
def report_counts(request) -> Iterator[None]:
    """Print what the fuzzing tried, for the record."""
    yield
    refusals = ", ".join(f"{count} {kind}" for kind, count in sorted(TALLY.items()) if kind.startswith("refused: "))
    report_line(
        request.config,
        f"PDF upload fuzzing: {TALLY['uploads']} uploads, {TALLY['notes']} notes, {TALLY['400']} refused "
        f"({refusals}), {TALLY['5xx']} answered 5xx, slowest answer {TALLY['slowest ms'] / 1000:.1f} s",
    )


def refusal_kind(message: str) -> str:
    for kind in (
        "takes too long",
        "needs too much memory",
        "its reader failed",
        "could not be read as a PDF",
        "no text layer",
    ):
        if kind in message:
            return kind
    return message


@fuzz_settings(EXAMPLES)
@given(data=pdfs())
@example(data=pdf_showing_a_form())  # the known one: minutes to read whole
def test_fuzzed_pdfs_are_a_note_or_a_clear_refusal_in_time(owner_client, data: bytes) -> None:
    note(f"{len(data)} bytes: {data[:3_000]!r}")
    started = time.monotonic()
    with transaction.atomic():
        response = owner_client.post(reverse("note_upload"), {"file": SimpleUploadedFile("fuzzed.pdf", data)})
        transaction.set_rollback(True)
    seconds = time.monotonic() - started

    TALLY["uploads"] += 1
    TALLY["slowest ms"] = max(TALLY["slowest ms"], round(seconds * 1000))
    TALLY["5xx"] += response.status_code >= 500
    assert response.status_code in (302, 400), response.content[:2_000]
    if response.status_code == 302:
        TALLY["notes"] += 1
    else:
        alert = ALERT.search(response.content.decode())
        assert alert and alert[1].startswith("fuzzed.pdf "), response.content[:2_000]
        TALLY["400"] += 1
        TALLY[f"refused: {refusal_kind(html.unescape(alert[1]))}"] += 1
    assert seconds < ANSWER_SECONDS
