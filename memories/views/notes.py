"""The notes pages: the list with search, upload, a note read as Markdown, editing, deleting."""

import uuid
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from gnosem.errors import NotFound, PermissionDenied, QuotaExceeded, ValidationError
from gnosem.types import SignedInRequest
from memories.limits.rates import note_upload_rate_limit_hit
from memories.models import Note, NoteFormat
from memories.notes import services as notes
from memories.notes.files import note_from_upload, note_upload_limits
from memories.notes.markdown import render_markdown
from memories.search.notes import note_search
from memories.validation import clean_tags
from memories.views.shared import SEARCH_RESULTS, rate_limited, typed_tags
from memories.views.space_switcher import space_switcher

NOTES_PAGE_SIZE = 50


def _owned_note(request: SignedInRequest, public_id: uuid.UUID) -> Note:
    """The signed-in user's note; anyone else's is a 404, exactly like a missing one."""
    try:
        return notes.note_get(owner=request.user, public_id=public_id)
    except NotFound:
        raise Http404("No such note.") from None


def _notes_page(
    request: SignedInRequest,
    *,
    form: dict[str, str] | None = None,
    write_error: Exception | None = None,
    upload_tags: str = "",
    upload_error: str | None = None,
    status: int = 200,
) -> HttpResponse:
    """The notes page: the list (or the search box's results) with the forms to write and upload a
    note, the forms holding what was typed and what was wrong with it when a POST failed."""
    q, tag = request.GET.get("q", "").strip(), request.GET.get("tag", "").strip()
    switcher = space_switcher(request)
    context: dict[str, Any] = {
        "switcher": switcher,
        "q": q,
        "tag": tag,
        "notes": [],
        "hits": None,
        "next_cursor": None,
        "error": None,
        "form": form or {"title": "", "tags": "", "content": "", "format": NoteFormat.MARKDOWN},
        "formats": NoteFormat.choices,
        "write_error": write_error,
        "upload_tags": upload_tags,
        "upload_error": upload_error,
        **note_upload_limits(settings.GNOSEM_NOTE_MAX_BYTES),
    }
    try:
        if q:
            context["hits"] = note_search(owner=switcher.reach, query=q, top_k=SEARCH_RESULTS, tags=typed_tags(tag))
        else:
            page = notes.note_list(
                owner=switcher.reach,
                tags=typed_tags(tag),
                limit=NOTES_PAGE_SIZE,
                cursor=request.GET.get("cursor") or None,
            )
            context["notes"], context["next_cursor"] = page.notes, page.next_cursor
    except ValidationError as error:
        context["error"] = str(error)
    return render(request, "memories/note_list.html", context, status=status)


def _note_saved(request: SignedInRequest, note: Note) -> HttpResponse:
    messages.success(
        request, f"Saved “{note.title}”. It becomes searchable once it is embedded (Search index: indexed, below)."
    )
    return redirect("note_detail", public_id=note.public_id)


@login_required
@require_http_methods(["GET", "POST"])
def notes_page(request: SignedInRequest) -> HttpResponse:
    """The user's notes, most recently changed first (or the search box's results); POST writes
    the note typed into the form, into the space it names (default: the personal space)."""
    if request.method == "GET":
        return _notes_page(request)
    form = {field: request.POST.get(field, "") for field in ("title", "tags", "content", "format")}
    try:
        note = notes.note_write(
            owner=request.user,
            title=form["title"],
            content=form["content"],
            tags=typed_tags(form["tags"]),
            format=form["format"] or None,
            space=request.POST.get("space") or None,
        )
    except (ValidationError, NotFound, PermissionDenied) as error:
        return _notes_page(request, form=form, write_error=error, status=400)
    except QuotaExceeded as error:
        return _notes_page(request, form=form, write_error=error, status=403)
    return _note_saved(request, note)


@login_required
@require_POST
def note_upload(request: SignedInRequest) -> HttpResponse:
    """Upload a .md, .txt or .pdf file as a note, its title taken from the file (a body declared
    over the limit was refused unread by memories.middleware)."""
    upload = request.FILES.get("file")
    tags = request.POST.get("tags", "")
    if upload is None:
        return _notes_page(request, upload_tags=tags, upload_error="Choose a .md, .txt or .pdf file.", status=400)
    decision = note_upload_rate_limit_hit(request.user)
    if not decision.allowed:
        message = decision.message("your account", "note uploads")
        return rate_limited(_notes_page(request, upload_tags=tags, upload_error=message), decision)
    try:
        cleaned_tags = clean_tags(typed_tags(tags))  # before a PDF takes its time to read
        text = note_from_upload(upload.name or "", upload.read(), max_bytes=settings.GNOSEM_NOTE_MAX_BYTES)
        note = notes.note_write(
            owner=request.user,
            title=text.title,
            content=text.content,
            tags=cleaned_tags,
            format=text.format,
            space=request.POST.get("space") or None,
        )
    except ValidationError as error:
        # A file's errors name the file already; others (its tags, its title) say which file.
        message = error.message if error.field == "file" else f"{upload.name}: {error}"
        return _notes_page(request, upload_tags=tags, upload_error=message, status=400)
    except (NotFound, PermissionDenied) as error:
        return _notes_page(request, upload_tags=tags, upload_error=f"{upload.name}: {error}", status=400)
    except QuotaExceeded as error:
        return _notes_page(request, upload_tags=tags, upload_error=f"{upload.name}: {error}", status=403)
    return _note_saved(request, note)


@login_required
@require_GET
def note_detail(request: SignedInRequest, public_id: uuid.UUID) -> HttpResponse:
    """The note: its fields and its text, Markdown rendered (safely), other text as it is."""
    note = _owned_note(request, public_id)
    html = render_markdown(note.content) if note.format == NoteFormat.MARKDOWN else None
    return render(request, "memories/note_detail.html", {"note": note, "html": html})


@login_required
@require_http_methods(["GET", "POST"])
def note_edit(request: SignedInRequest, public_id: uuid.UUID) -> HttpResponse:
    """Change the title, tags and text; a changed title or text is embedded again."""
    note = _owned_note(request, public_id)
    form = {"title": note.title, "tags": " ".join(note.tags), "content": note.content}
    if request.method == "POST":
        form = {field: request.POST.get(field, "") for field in form}
        try:
            note = notes.note_update(
                owner=request.user,
                public_id=note.public_id,
                title=form["title"],
                content=form["content"],
                tags=typed_tags(form["tags"]),
            )
        except (ValidationError, QuotaExceeded) as error:
            status = 403 if isinstance(error, QuotaExceeded) else 400
            return render(
                request, "memories/note_edit.html", {"note": note, "form": form, "error": error}, status=status
            )
        messages.success(
            request, "Saved. A changed title or text is embedded again; until then search finds the previous one."
        )
        return redirect("note_detail", public_id=note.public_id)
    return render(request, "memories/note_edit.html", {"note": note, "form": form})


@login_required
@require_http_methods(["GET", "POST"])
def note_delete_view(request: SignedInRequest, public_id: uuid.UUID) -> HttpResponse:
    """GET asks for confirmation; POST deletes the note with its passages."""
    note = _owned_note(request, public_id)
    if request.method == "POST":
        notes.note_delete(owner=request.user, public_id=note.public_id)
        messages.success(request, f"The note “{note.title}” was deleted.")
        return redirect("notes")
    return render(request, "memories/note_confirm_delete.html", {"note": note})
