"""The notes pages: list, search, write, upload, read, edit and delete, for the owner only."""

import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
from django.conf import settings as django_settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.http.multipartparser import MultiPartParser
from django.test import Client
from django.urls import reverse

from gnosem.env import Rate
from memories.models import IndexingStatus, Note
from memories.notes import files as note_files
from memories.notes import services as notes
from tests.memories.notes.test_note_files import TOO_LONG, pdf, pdf_showing_a_form
from tests.memories.stored import notes_titled

RUNBOOK = """# Database failover runbook

## When to fail over

Fail over when the primary has been unreachable for five minutes.

## Afterwards

Open an incident ticket (INC-2291 is the template) and schedule the post-mortem within two days.
"""
OFFSITE = "Team offsite\n\nWe meet in Porto from 12 to 14 May; bring a laptop for the planning day.\n"


def page_of(response, status: int = 200) -> str:
    assert response.status_code == status, response.content.decode()[:2000]
    return response.content.decode()


def upload(client: Client, name: str, data: bytes, tags: str = ""):
    return client.post(reverse("note_upload"), {"file": SimpleUploadedFile(name, data), "tags": tags})


@pytest.fixture
def note(owner) -> Note:
    return notes.note_write(owner=owner, title="Failover runbook", content=RUNBOOK, tags=["ops"])


@pytest.fixture
def indexed(django_capture_on_commit_callbacks):
    """Run what a request or write queues on commit (the note's embedding), as a worker would."""

    def indexed(write):
        with django_capture_on_commit_callbacks(execute=True):
            return write()

    return indexed


# Signing in.


@pytest.mark.parametrize(
    ("method", "name", "with_id"),
    [
        ("get", "notes", False),
        ("post", "notes", False),
        ("post", "note_upload", False),
        ("get", "note_detail", True),
        ("get", "note_edit", True),
        ("post", "note_edit", True),
        ("get", "note_delete", True),
        ("post", "note_delete", True),
    ],
)
def test_anonymous_visitors_are_sent_to_sign_in(client, note, method, name, with_id):
    url = reverse(name, args=[note.public_id]) if with_id else reverse(name)

    response = getattr(client, method)(url)

    assert response.status_code == 302 and response.url.startswith(reverse("account_login"))
    assert Note.objects.get() == note


def test_the_navigation_leads_to_notes_after_entities(owner_client):
    page = page_of(owner_client.get(reverse("notes")))

    assert page.index(f'href="{reverse("entities")}"') < page.index(f'href="{reverse("notes")}">Notes</a>')


# The list.


def test_the_list_shows_notes_most_recently_changed_first_with_their_fields(owner_client, owner):
    older = notes.note_write(owner=owner, title="Older note", content="one two three", tags=["ops", "db"])
    notes.note_write(owner=owner, title="Newer note", content="four", format="text")
    notes.note_update(owner=owner, public_id=older.public_id, content="one two three, changed last")

    page = page_of(owner_client.get(reverse("notes")))

    assert page.index("Older note") < page.index("Newer note")
    assert f'href="{reverse("note_detail", args=[older.public_id])}">Older note</a>' in page
    assert '<a class="tag" href="?tag=ops">ops</a><a class="tag" href="?tag=db">db</a>' in page
    assert "<td>markdown</td>" in page and "<td>text</td>" in page
    assert '<span class="badge status-pending">pending</span>' in page
    older.refresh_from_db()
    assert f"<td>{older.tokens}</td>" in page  # the size of the text as changed


def test_the_list_pages_fifty_at_a_time_with_a_cursor(owner_client, owner):
    for i in range(51):
        notes.note_write(owner=owner, title=f"Doc-{i:03d}", content="text")

    first = page_of(owner_client.get(reverse("notes")))
    assert "Doc-050" in first and "Doc-001" in first and "Doc-000" not in first
    cursor = first.split("cursor=")[1].split('"')[0]
    second = page_of(owner_client.get(reverse("notes"), {"cursor": cursor}))
    assert "Doc-000" in second and "Doc-001" not in second and "Older »" not in second


def test_the_list_filters_by_tag(owner_client, owner):
    notes.note_write(owner=owner, title="Ops note", content="text", tags=["ops"])
    notes.note_write(owner=owner, title="Home note", content="text", tags=["home"])

    page = page_of(owner_client.get(reverse("notes"), {"tag": "ops"}))

    assert "Ops note" in page and "Home note" not in page
    assert "No note has this tag." in page_of(owner_client.get(reverse("notes"), {"tag": "nothing-here"}))


@pytest.mark.parametrize(
    ("query", "shown"),
    [({"tag": "bad tag!"}, "is not a valid tag"), ({"cursor": "not-a-cursor"}, "cursor: is not a cursor")],
)
def test_a_bad_filter_or_cursor_is_explained(owner_client, note, query, shown):
    page = page_of(owner_client.get(reverse("notes"), query))

    assert shown in page and "Failover runbook" not in page


# Writing a note.


def test_writing_a_note_saves_it_and_opens_its_page(owner_client, owner):
    form = {
        "title": "Deploy checklist",
        "tags": "ops, release",
        "content": "# Steps\n\n1. Tag it.",
        "format": "markdown",
    }

    response = owner_client.post(reverse("notes"), form)

    saved = Note.objects.get(space__personal_of=owner)
    assert (saved.title, saved.tags, saved.content, saved.format) == (
        "Deploy checklist",
        ["ops", "release"],
        "# Steps\n\n1. Tag it.",
        "markdown",
    )
    assert response.status_code == 302 and response.url == reverse("note_detail", args=[saved.public_id])
    page = page_of(owner_client.get(response.url))
    assert "Saved “Deploy checklist”. It becomes searchable once it is embedded" in page
    assert "<h1>Steps</h1>" in page


@pytest.mark.parametrize(
    ("field", "value", "shown"),
    [
        ("title", "   ", "title: must be a non-empty line of text"),
        ("tags", "ops bad!tag", "tags: &#x27;bad!tag&#x27; is not a valid tag"),
        ("content", "  \n", "content: must be non-empty text"),
        ("format", "docx", "format: one of markdown, text, pdf."),
    ],
)
def test_a_bad_note_is_refused_with_the_form_kept(owner_client, owner, field, value, shown):
    form = {"title": "Kept title", "tags": "kept-tag", "content": "Kept text", "format": "markdown", field: value}

    page = page_of(owner_client.post(reverse("notes"), form), status=400)

    assert shown in page
    kept = {"title": 'value="Kept title"', "tags": 'value="kept-tag"', "content": "\nKept text</textarea>"}
    assert all(html in page for name, html in kept.items() if name != field)
    assert not Note.objects.filter(space__personal_of=owner).exists()


def test_a_note_over_the_limit_is_refused(owner_client, owner, settings):
    settings.GNOSEM_NOTE_MAX_BYTES = 1000

    page = page_of(owner_client.post(reverse("notes"), {"title": "Big", "content": "x" * 1001}), status=400)

    assert "content: is 1,001 bytes; a note holds at most 1,000 bytes" in page
    assert not Note.objects.filter(space__personal_of=owner).exists()


# Uploading a file.


@pytest.mark.parametrize(
    ("name", "data", "title", "content", "note_format"),
    [
        (
            "plan.md",
            b"Intro\n\n# Launch plan\n\nShip it.\n",
            "Launch plan",
            "Intro\n\n# Launch plan\n\nShip it.\n",
            "markdown",
        ),
        (
            "log.txt",
            b"\xef\xbb\xbfStand-up log\r\nAll green.\r\n",
            "Stand-up log",
            "Stand-up log\nAll green.\n",
            "text",
        ),
        ("report.pdf", pdf(["Quarterly report", "Revenue grew."], ["Page two"]), "Quarterly report", None, "pdf"),
    ],
    ids=["markdown", "text", "pdf"],
)
def test_uploading_a_file_saves_it_as_a_note(owner_client, owner, name, data, title, content, note_format):
    response = upload(owner_client, name, data, tags="imported, docs")

    saved = Note.objects.get(space__personal_of=owner)
    assert (saved.title, saved.format, saved.tags) == (title, note_format, ["imported", "docs"])
    if content is not None:
        assert saved.content == content
    else:
        assert saved.content == "Quarterly report\nRevenue grew.\n\nPage two"
    assert response.status_code == 302 and response.url == reverse("note_detail", args=[saved.public_id])
    assert "It becomes searchable once it is embedded" in page_of(owner_client.get(response.url))


@pytest.mark.parametrize(
    ("name", "data", "tags", "shown"),
    [
        (
            "locked.pdf",
            pdf(["Secret"], password="pw"),
            "",
            "locked.pdf is encrypted; remove the password and upload again",
        ),
        ("scan.pdf", pdf([], []), "", "scan.pdf has no text layer (a scanned document?); run OCR on it first"),
        ("broken.pdf", pdf(["Hello"])[:300], "", "broken.pdf could not be read as a PDF ("),
        (
            "latin.txt",
            b"caf\xe9 au lait\n",
            "",
            "latin.txt is not UTF-8 text (line 1); save it as UTF-8 and upload again",
        ),
        ("notes.docx", b"PK\x03\x04", "", "notes.docx: only .md, .txt and .pdf files can be uploaded as notes"),
        ("empty.md", b"", "", "empty.md is empty; upload a file with some text in it"),
        ("plan.md", b"# Plan\n", "ok bad!tag", "plan.md: tags: &#x27;bad!tag&#x27; is not a valid tag"),
    ],
    ids=["encrypted-pdf", "scanned-pdf", "damaged-pdf", "not-utf8", "unknown-extension", "empty", "bad-tags"],
)
def test_a_bad_upload_is_refused_with_what_to_do_and_saves_nothing(owner_client, owner, name, data, tags, shown):
    page = page_of(upload(owner_client, name, data, tags=tags), status=400)

    assert shown in page and 'role="alert"' in page
    assert f'value="{tags}"' in page  # the tags typed are kept
    assert not Note.objects.filter(space__personal_of=owner).exists()


def test_a_pdf_made_to_be_read_for_hours_is_refused_within_the_time_limit(owner_client, owner, monkeypatch):
    monkeypatch.setattr(note_files, "MAX_PDF_EXTRACTION_SECONDS", 2.0)
    started = time.monotonic()

    page = page_of(upload(owner_client, "forms.pdf", pdf_showing_a_form()), status=400)

    assert time.monotonic() - started < 20  # read whole, it takes minutes
    assert f"forms.pdf {TOO_LONG}" in page
    assert not Note.objects.filter(space__personal_of=owner).exists()


def test_the_server_keeps_answering_while_hostile_pdfs_are_uploaded_at_once(live_server, owner, monkeypatch):
    monkeypatch.setattr(note_files, "MAX_PDF_EXTRACTION_SECONDS", 5.0)
    browser = Client()
    browser.force_login(owner)
    cookies = {django_settings.SESSION_COOKIE_NAME: browser.cookies[django_settings.SESSION_COOKIE_NAME].value}
    csrf = requests.get(f"{live_server.url}{reverse('notes')}", cookies=cookies, timeout=30).cookies["csrftoken"]
    cookies["csrftoken"] = csrf
    data = pdf_showing_a_form()

    def upload_over_http() -> tuple[int, str, float]:
        started = time.monotonic()
        response = requests.post(
            f"{live_server.url}{reverse('note_upload')}",
            data={"csrfmiddlewaretoken": csrf, "tags": ""},
            files={"file": ("forms.pdf", data)},
            cookies=cookies,
            timeout=120,
        )
        return response.status_code, response.text, time.monotonic() - started

    health: list[tuple[int, float]] = []
    with ThreadPoolExecutor(max_workers=4) as pool:
        uploads = [pool.submit(upload_over_http) for _ in range(4)]
        while not all(upload.done() for upload in uploads):
            started = time.monotonic()
            status = requests.get(f"{live_server.url}/healthz", timeout=30).status_code
            health.append((status, time.monotonic() - started))
            time.sleep(0.2)
    answers = [upload.result() for upload in uploads]

    busy = "forms.pdf could not be read now: the server is reading other PDFs; upload it again in a minute"
    assert [status for status, _, _ in answers] == [400] * 4
    assert sorted(TOO_LONG in text for _, text, _ in answers) == [False, False, True, True]
    assert sum(busy in text for _, text, _ in answers) == 2  # two are read at once per process
    assert max(seconds for _, _, seconds in answers) < 5 + 15
    assert len(health) >= 5 and {status for status, _ in health} == {200}
    assert max(seconds for _, seconds in health) < 3
    assert not Note.objects.filter(space__personal_of=owner).exists()


def test_a_text_file_over_the_note_limit_is_refused_with_the_limit(owner_client, owner, settings):
    settings.GNOSEM_NOTE_MAX_BYTES = 1000

    page = page_of(upload(owner_client, "long.md", b"x" * 1500), status=400)

    assert "long.md is 1.5 KB, over the 1 KB limit for a note; split it and upload the parts" in page
    assert not Note.objects.filter(space__personal_of=owner).exists()


def test_an_upload_without_a_file_is_refused(owner_client, owner):
    page = page_of(owner_client.post(reverse("note_upload"), {"tags": "ops"}), status=400)

    assert "Choose a .md, .txt or .pdf file." in page
    assert not Note.objects.filter(space__personal_of=owner).exists()


def test_an_oversized_upload_is_refused_before_it_is_read(owner, settings, monkeypatch):
    settings.GNOSEM_NOTE_MAX_BYTES = 1000  # uploads up to 10,000 bytes plus 64 KiB of form

    def read(*args, **kwargs):
        raise AssertionError("the upload was read")

    monkeypatch.setattr(MultiPartParser, "parse", read)
    # With CSRF enforced and no token: the answer is 413, not 403, so the size was judged before
    # the CSRF check read the form (and with it the file).
    client = Client(enforce_csrf_checks=True)
    client.force_login(owner)

    page = page_of(upload(client, "big.pdf", b"%PDF-" + b"x" * 100_000), status=413)

    assert "The upload is larger than a note's file may be; nothing was saved." in page
    assert "A PDF may be at most 10,000 bytes, a Markdown or text file at most 1,000 bytes." in " ".join(page.split())
    assert f'<a href="{reverse("notes")}">Back</a>' in page
    assert not Note.objects.filter(space__personal_of=owner).exists()


def test_an_upload_within_the_limit_still_needs_the_csrf_token(owner):
    client = Client(enforce_csrf_checks=True)
    client.force_login(owner)

    assert upload(client, "plan.md", b"# Plan\n").status_code == 403
    assert not Note.objects.filter(space__personal_of=owner).exists()


def test_an_uploaded_note_is_found_by_the_search_box_once_embedded(owner_client, owner, indexed):
    response = indexed(lambda: upload(owner_client, "runbook.md", RUNBOOK.encode(), tags="ops"))
    indexed(lambda: notes.note_write(owner=owner, title="Offsite", content=OFFSITE))

    detail = page_of(owner_client.get(response.url))
    assert '<span class="status-indexed">indexed</span>' in detail
    page = page_of(owner_client.get(reverse("notes"), {"q": "INC-2291"}))
    assert "Search results" in page
    [saved] = notes_titled("Database failover runbook")
    assert f'href="{reverse("note_detail", args=[saved.public_id])}">Database failover runbook</a>' in page
    assert "Database failover runbook &gt; Afterwards" in page  # the headings the passage sits under
    assert "INC-2291 is the template" in page and "score 1.00" in page


def test_search_results_show_a_passage_cut_to_300_characters(owner, owner_client, indexed):
    long_paragraph = "Zanzibar-7741 " + "word " * 200
    indexed(lambda: notes.note_write(owner=owner, title="Long", content=long_paragraph))

    page = page_of(owner_client.get(reverse("notes"), {"q": "Zanzibar-7741"}))

    [passage] = [part.split("</div>")[0] for part in page.split('<div class="passage">')[1:]]
    assert passage.startswith("Zanzibar-7741 word") and passage.endswith("…") and len(passage) <= 300


def test_the_search_box_is_filtered_by_tag(owner, owner_client, indexed):
    indexed(lambda: notes.note_write(owner=owner, title="Tagged", content="Quokka-5512 in ops", tags=["ops"]))
    indexed(lambda: notes.note_write(owner=owner, title="Untagged", content="Quokka-5512 at home"))

    page = page_of(owner_client.get(reverse("notes"), {"q": "Quokka-5512", "tag": "ops"}))

    assert "Tagged" in page and "Untagged" not in page


# A note's page.


def test_a_markdown_note_is_rendered_without_raw_html_or_unsafe_links(owner_client, owner):
    content = (
        "# Heading\n\n<script>alert(1)</script>\n\n[bad](javascript:alert(1)) and [good](https://example.com)\n\n"
        "<img src=x onerror=alert(2)>\n"
    )
    note = notes.note_write(owner=owner, title="<b>Title</b>", content=content)

    page = page_of(owner_client.get(reverse("note_detail", args=[note.public_id])))

    text = page.split('<div class="note-text" id="note-text">')[1].split("</div>")[0]
    assert "<h1>Heading</h1>" in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text and "<script" not in text
    assert "&lt;img src=x onerror=alert(2)&gt;" in text and "<img" not in text
    assert "javascript:" not in text.replace("[bad](javascript:alert(1))", "")
    assert 'href="javascript:' not in page
    assert '<a href="https://example.com" rel="nofollow noopener">good</a>' in text
    assert "<h1>&lt;b&gt;Title&lt;/b&gt;</h1>" in page


@pytest.mark.parametrize("note_format", ["text", "pdf"])
def test_text_and_pdf_notes_are_shown_as_written(owner_client, owner, note_format):
    note = notes.note_write(owner=owner, title="Plain", content="# not a heading\n<b>bold</b>", format=note_format)

    page = page_of(owner_client.get(reverse("note_detail", args=[note.public_id])))

    assert '<pre id="note-text"># not a heading\n&lt;b&gt;bold&lt;/b&gt;</pre>' in page
    assert "<h1>not a heading</h1>" not in page


def test_a_notes_page_shows_its_fields_and_actions(owner_client, note):
    page = page_of(owner_client.get(reverse("note_detail", args=[note.public_id])))

    assert f"<code>{note.public_id}</code>" in page
    assert "<dd>Markdown</dd>" in page and f"<dd>{note.tokens} estimated tokens</dd>" in page
    assert f'<a class="tag" href="{reverse("notes")}?tag=ops">ops</a>' in page
    assert '<span class="status-pending">pending</span> — search finds it once it is embedded' in page
    assert f'href="{reverse("note_edit", args=[note.public_id])}">Edit</a>' in page
    assert f'href="{reverse("note_delete", args=[note.public_id])}">Delete…</a>' in page


def test_an_unknown_note_is_404(owner_client, db):
    assert owner_client.get(reverse("note_detail", args=[uuid.uuid4()])).status_code == 404


# Editing and deleting.


def test_editing_changes_the_title_tags_and_text(owner_client, owner, note):
    url = reverse("note_edit", args=[note.public_id])
    form = page_of(owner_client.get(url))
    assert 'value="Failover runbook"' in form and 'value="ops"' in form and "INC-2291 is the template" in form

    response = owner_client.post(url, {"title": "Runbook v2", "tags": "ops, db", "content": "# New\n\nNew steps."})

    assert response.status_code == 302 and response.url == reverse("note_detail", args=[note.public_id])
    note.refresh_from_db()
    assert (note.title, note.tags, note.content) == ("Runbook v2", ["ops", "db"], "# New\n\nNew steps.")
    assert note.indexing_status == IndexingStatus.PENDING
    assert "Saved. A changed title or text is embedded again" in page_of(owner_client.get(response.url))


def test_a_bad_edit_is_refused_with_the_form_kept(owner_client, note):
    url = reverse("note_edit", args=[note.public_id])

    page = page_of(owner_client.post(url, {"title": "", "tags": "ops", "content": "Changed text"}), status=400)

    assert "title: must be a non-empty line of text" in page and "Changed text" in page
    note.refresh_from_db()
    assert (note.title, note.content) == ("Failover runbook", RUNBOOK)


def test_deleting_asks_first_then_deletes(owner_client, owner, note):
    url = reverse("note_delete", args=[note.public_id])
    confirm = page_of(owner_client.get(url))
    assert "Delete this note?" in confirm and "Failover runbook" in confirm
    assert Note.objects.filter(pk=note.pk).exists()

    response = owner_client.post(url)

    assert response.status_code == 302 and response.url == reverse("notes")
    assert not Note.objects.filter(space__personal_of=owner).exists()
    assert "The note “Failover runbook” was deleted." in page_of(owner_client.get(response.url))


# Strangers.


@pytest.mark.parametrize(
    ("method", "name"),
    [
        ("get", "note_detail"),
        ("get", "note_edit"),
        ("post", "note_edit"),
        ("get", "note_delete"),
        ("post", "note_delete"),
    ],
)
def test_a_stranger_gets_404_for_the_owners_note(stranger_client, note, method, name):
    url = reverse(name, args=[note.public_id])

    response = getattr(stranger_client, method)(url, {"title": "Mine now", "content": "overwritten", "tags": ""})

    assert response.status_code == 404
    note.refresh_from_db()
    assert (note.title, note.content) == ("Failover runbook", RUNBOOK)


def test_a_stranger_never_sees_the_owners_note_in_the_list_or_search(stranger_client, stranger, owner, indexed):
    indexed(lambda: notes.note_write(owner=owner, title="Owner's runbook", content=RUNBOOK, tags=["ops"]))
    indexed(lambda: notes.note_write(owner=stranger, title="Stranger's note", content=OFFSITE, tags=["ops"]))

    listed = page_of(stranger_client.get(reverse("notes")))
    tagged = page_of(stranger_client.get(reverse("notes"), {"tag": "ops"}))
    found = page_of(stranger_client.get(reverse("notes"), {"q": "INC-2291 failover runbook"}))

    for page in (listed, tagged, found):
        assert "Owner&#x27;s runbook" not in page and "INC-2291 is the template" not in page
    assert "Stranger&#x27;s note" in listed and "Stranger&#x27;s note" in tagged


def test_uploads_past_the_rate_limit_are_refused_with_the_wait(owner, owner_client, settings):
    settings.GNOSEM_NOTE_UPLOAD_RATE_LIMIT = Rate(count=1, seconds=3600)
    page_of(upload(owner_client, "plan.md", b"# Plan\n\nShip it.\n"), status=302)

    refused = upload(owner_client, "more.md", b"# More\n\nAgain.\n")

    assert "Rate limit reached: your account may make 1 note uploads per hour" in page_of(refused, status=429)
    assert int(refused["Retry-After"]) > 0
    assert Note.objects.filter(space__personal_of=owner).count() == 1


def test_a_50_mb_upload_is_refused_unread_at_the_default_limit(owner, owner_client, monkeypatch):
    def read(*args, **kwargs):
        raise AssertionError("the upload was read")

    monkeypatch.setattr(MultiPartParser, "parse", read)

    page = page_of(upload(owner_client, "scan.pdf", b"%PDF-" + b"\0" * 50_000_000), status=413)

    assert "nothing was saved" in page
    assert not Note.objects.filter(space__personal_of=owner).exists()
