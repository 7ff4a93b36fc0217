"""Web pages of the memories app (the dashboard) and /healthz; the MCP endpoint lives in
memories.mcp and the REST API in memories.api. Views are thin: services and selectors do the work."""

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts.activity import activity_record
from accounts.models import ActivityAction
from gnosem.errors import NotFound, QuotaExceeded, ValidationError
from memories import (
    graph_explore,
    health,
    indexing_lifecycle,
    llm,
    near_duplicates,
    notes,
    selectors,
    services,
    transfer,
)
from memories.graph_drawing import neighbourhood_drawing
from memories.markdown import render_markdown
from memories.models import MAX_ENTITY_NAME_CHARS, EntityKind, Memory, Note, NoteFormat
from memories.note_files import note_from_upload, note_upload_limits
from memories.quotas import STORED_KINDS, quota_usage
from memories.ratelimit import RateDecision, import_rate_limit_hit, note_upload_rate_limit_hit
from memories.search.notes import note_search
from memories.search.pipeline import search_hybrid
from memories.usage_chart import writes_chart
from memories.validation import MAX_TOP_K, clean_datetime, clean_filters, clean_tags

PAGE_SIZE = 25
SEARCH_RESULTS = MAX_TOP_K  # as many as a search may return
CHART_DAYS = 30
DUPLICATES_PAGE_SIZE = 100
# An entity's page: the neighbours drawn and the memories listed.
ENTITY_PAGE_NEIGHBOURS = 16
ENTITY_PAGE_MEMORIES = 100
NOTES_PAGE_SIZE = 50


@require_GET
def home(request: HttpRequest) -> HttpResponse:
    """The dashboard for a signed-in user; otherwise what this server is and how to start."""
    if request.user.is_authenticated:
        return dashboard(request)
    return render(request, "memories/home.html", {"mcp_url": request.build_absolute_uri(reverse("mcp"))})


@dataclass(frozen=True)
class DashboardQuery:
    """The dashboard's search box and filters, as typed into the form (shown back unchanged)."""

    q: str
    tag: str
    client: str
    date_from: str
    date_to: str

    @classmethod
    def from_request(cls, request: HttpRequest) -> "DashboardQuery":
        get = request.GET
        return cls(
            q=get.get("q", "").strip(),
            tag=get.get("tag", "").strip(),
            client=get.get("client", "").strip(),
            date_from=get.get("from", "").strip(),
            date_to=get.get("to", "").strip(),
        )

    def filters(self, *, include_superseded: bool = False) -> selectors.MemoryFilters:
        return clean_filters(
            {
                "tags": _typed_tags(self.tag) or None,
                "written_by": self.client or None,
                "created_after": self.date_from or None,
                "created_before": _day_after(self.date_to) if self.date_to else None,
                "include_superseded": include_superseded,
            }
        )

    @property
    def filtered(self) -> bool:
        return bool(self.tag or self.client or self.date_from or self.date_to)


def _typed_tags(text: str) -> list[str]:
    """Tags as typed into a form: separated by spaces or commas."""
    return text.replace(",", " ").split()


def _day_after(text: str) -> str:
    """`to` names a whole day, so the range ends at the next midnight; anything but a plain date
    is passed on for clean_datetime to accept or explain."""
    try:
        day = date.fromisoformat(text)
    except ValueError:
        return text
    clean_datetime("to", text)  # a day out of range is refused as typed (9999-12-31 has no day after)
    return (day + timedelta(days=1)).isoformat()


def dashboard(request: HttpRequest) -> HttpResponse:
    query = DashboardQuery.from_request(request)
    owner = request.user
    quota = quota_usage(owner)
    context = {
        "query": query,
        "usage": selectors.memory_usage(owner),
        "notes_failed": indexing_lifecycle.failed_count(indexing_lifecycle.NOTES, owner=owner),
        "quota": quota,
        "quota_rows": [
            ("memories and notes", quota.memories),
            ("characters", quota.characters),
            ("estimated tokens", quota.tokens),
        ],
        "stored_rows": [(STORED_KINDS[kind], stored) for kind, stored in quota.stored.items()],
        "chart": writes_chart(
            selectors.memory_writes_per_day(owner, days=CHART_DAYS), days=CHART_DAYS, today=timezone.now().date()
        ),
        "clients": selectors.memory_clients(owner),
        "near_duplicates": selectors.near_duplicates_count(owner),
        "compression_enabled": llm.llm_configured(),
        "memories": [],
        "hits": None,
        "next_cursor": None,
        "error": None,
    }
    try:
        if query.q:
            context["hits"] = search_hybrid(owner=owner, query=query.q, top_k=SEARCH_RESULTS, filters=query.filters())
        else:
            # The list shows every memory, superseded ones marked, so that the owner can review them.
            page = selectors.memory_list(
                owner=owner,
                filters=query.filters(include_superseded=True),
                limit=PAGE_SIZE,
                cursor=request.GET.get("cursor") or None,
            )
            context["memories"] = page.memories
            context["next_cursor"] = page.next_cursor
    except ValidationError as error:
        context["error"] = str(error)
    return render(request, "memories/dashboard.html", context)


def _owned_memory(request: HttpRequest, public_id: uuid.UUID) -> Memory:
    """The signed-in user's memory; anyone else's is a 404, exactly like a missing one."""
    try:
        return selectors.memory_get(owner=request.user, public_id=public_id)
    except NotFound:
        raise Http404("No such memory.") from None


@login_required
@require_GET
def memory_detail(request: HttpRequest, public_id: uuid.UUID) -> HttpResponse:
    """The memory with its earlier versions and what it supersedes."""
    memory = _owned_memory(request, public_id)
    context = {
        "memory": memory,
        "revisions": selectors.memory_revisions(memory),
        "supersedes": selectors.memories_superseded_by(memory),
    }
    return render(request, "memories/memory_detail.html", context)


def _text_form(
    request: HttpRequest, memory: Memory, template: str, save: Callable[[str, list[str]], Memory]
) -> HttpResponse:
    """A form of text and tags, prefilled with the memory's: GET shows it; POST calls `save(content,
    tags)` and shows the memory it returns, or the form again with what was wrong."""
    form = {"content": memory.content, "tags": " ".join(memory.tags)}
    if request.method == "POST":
        form = {"content": request.POST.get("content", ""), "tags": request.POST.get("tags", "")}
        try:
            saved = save(form["content"], _typed_tags(form["tags"]))
        except (ValidationError, QuotaExceeded) as error:
            return render(request, template, {"memory": memory, "form": form, "error": error}, status=400)
        return redirect("memory_detail", public_id=saved.public_id)
    return render(request, template, {"memory": memory, "form": form})


@login_required
@require_http_methods(["GET", "POST"])
def memory_edit(request: HttpRequest, public_id: uuid.UUID) -> HttpResponse:
    """Change the text and tags in place; the previous version is kept."""
    memory = _owned_memory(request, public_id)

    def save(content: str, tags: list[str]) -> Memory:
        updated = services.memory_update(owner=request.user, public_id=memory.public_id, content=content, tags=tags)
        messages.success(request, "Saved. The previous version is kept under Earlier versions.")
        return updated

    return _text_form(request, memory, "memories/memory_edit.html", save)


@login_required
@require_POST
def memory_pin(request: HttpRequest, public_id: uuid.UUID) -> HttpResponse:
    """Pin (or with pinned=false unpin) the memory: session_start lists pinned memories first."""
    memory = _owned_memory(request, public_id)
    pinned = request.POST.get("pinned") != "false"
    services.memory_update(owner=request.user, public_id=memory.public_id, pinned=pinned)
    messages.success(request, "Pinned: every session starts with it." if pinned else "Unpinned.")
    return redirect("memory_detail", public_id=memory.public_id)


@login_required
@require_http_methods(["GET", "POST"])
def memory_supersede(request: HttpRequest, public_id: uuid.UUID) -> HttpResponse:
    """Write the corrected text as a new memory that supersedes this one (which stays, pointing to it)."""
    memory = _owned_memory(request, public_id)

    def save(content: str, tags: list[str]) -> Memory:
        successor = services.memory_write(
            owner=request.user,
            content=content,
            tags=tags,
            written_by=memory.written_by,
            supersedes=[str(memory.public_id)],
        )
        messages.success(request, "Saved as a new memory; the old one is marked superseded by it.")
        return successor

    return _text_form(request, memory, "memories/memory_supersede.html", save)


def _back(request: HttpRequest, memory: Memory) -> HttpResponse:
    """Back to the review of near-duplicates when the form came from there, else to the memory."""
    if request.POST.get("back") == "duplicates":
        return redirect("near_duplicates")
    return redirect("memory_detail", public_id=memory.public_id)


def _review_near_duplicate(
    request: HttpRequest, public_id: uuid.UUID, service: Callable[..., Memory], done: str
) -> HttpResponse:
    """Apply a review service (merge, keep apart) to the user's memory; say `done`, or why not."""
    memory = _owned_memory(request, public_id)
    try:
        service(owner=request.user, public_id=memory.public_id)
        messages.success(request, done)
    except ValidationError as error:
        messages.error(request, str(error))
    return _back(request, memory)


@login_required
@require_POST
def memory_merge(request: HttpRequest, public_id: uuid.UUID) -> HttpResponse:
    """Merge a near-duplicate into the memory it restates (undone by Make current again)."""
    done = "Merged: it is hidden behind the memory it restates. Make current again undoes it."
    return _review_near_duplicate(request, public_id, near_duplicates.memory_merge, done)


@login_required
@require_POST
def memory_keep_apart(request: HttpRequest, public_id: uuid.UUID) -> HttpResponse:
    """Keep a near-duplicate apart from the memory it was linked to, for good."""
    done = "Kept apart: the two are not linked again."
    return _review_near_duplicate(request, public_id, near_duplicates.memory_keep_apart, done)


@login_required
@require_GET
def near_duplicates_page(request: HttpRequest) -> HttpResponse:
    """The near-duplicates waiting for review, each beside the memory it restates."""
    memories = selectors.near_duplicates_to_review(request.user, limit=DUPLICATES_PAGE_SIZE)
    context = {"memories": memories, "total": selectors.near_duplicates_count(request.user)}
    return render(request, "memories/near_duplicates.html", context)


@login_required
@require_GET
def entity_list_page(request: HttpRequest) -> HttpResponse:
    """The entities the user's memories mention, most mentioned first, filtered by name and kind."""
    name = request.GET.get("q", "").strip()[:MAX_ENTITY_NAME_CHARS]
    kind = request.GET.get("kind", "")
    kind = kind if kind in EntityKind.values else ""
    context = {
        "entities": graph_explore.entity_list(owner=request.user, name=name, kind=kind),
        "q": name,
        "kind": kind,
        "kinds": EntityKind.values,
    }
    return render(request, "memories/entities.html", context)


@login_required
@require_GET
def entity_detail(request: HttpRequest, public_id: uuid.UUID) -> HttpResponse:
    """An entity: a drawing of its neighbourhood and the memories mentioning it."""
    try:
        entity = graph_explore.entity_get(owner=request.user, public_id=public_id)
    except NotFound:
        raise Http404("No such entity.") from None
    view = graph_explore.graph_explore_from(owner=request.user, entry=[entity], limit=ENTITY_PAGE_NEIGHBOURS)
    [node] = [node for node in view.nodes if node.entity.pk == entity.pk]
    context = {
        "entity": entity,
        "node": node,
        "drawing": neighbourhood_drawing(view, entity),
        "links": [
            (edge.target if edge.source.pk == entity.pk else edge.source, edge)
            for edge in view.edges
            if entity.pk in (edge.source.pk, edge.target.pk)
        ],
        "memories": graph_explore.entity_memories(owner=request.user, entities=[entity], limit=ENTITY_PAGE_MEMORIES),
    }
    return render(request, "memories/entity_detail.html", context)


@login_required
@require_POST
def memory_reinstate(request: HttpRequest, public_id: uuid.UUID) -> HttpResponse:
    """Make a superseded memory current again."""
    memory = _owned_memory(request, public_id)
    services.memory_reinstate(owner=request.user, public_id=memory.public_id)
    messages.success(request, "The memory is current again: search, counts and session start include it.")
    return redirect("memory_detail", public_id=memory.public_id)


@login_required
@require_http_methods(["GET", "POST"])
def memory_delete(request: HttpRequest, public_id: uuid.UUID) -> HttpResponse:
    """GET asks for confirmation; POST deletes."""
    memory = _owned_memory(request, public_id)
    if request.method == "POST":
        services.memory_delete(owner=request.user, public_id=memory.public_id)
        messages.success(request, "The memory was deleted.")
        return redirect("home")
    return render(request, "memories/memory_confirm_delete.html", {"memory": memory})


@login_required
@require_POST
def retry_failed(request: HttpRequest) -> HttpResponse:
    """The dashboard's "Retry failed" button: the user's memories and notes that failed to be
    embedded are queued again (`manage.py reindexmemories --failed` does the same from the command line)."""
    retried = indexing_lifecycle.failed_retry(owner=request.user)
    if retried.memories or retried.notes:
        messages.success(
            request,
            f"{retried.described()} queued to be embedded again; they become findable by meaning once embedded.",
        )
    else:
        messages.info(request, "No memory or note failed to be embedded: nothing to retry.")
    return redirect("home")


@login_required
@require_GET
def export_download(request: HttpRequest) -> StreamingHttpResponse:
    """All the user's memories as one JSON file, streamed."""
    response = transfer.export_response(request.user)
    activity_record(owner=request.user, action=ActivityAction.EXPORTED, request=request)
    return response


def _rate_limited(page: HttpResponse, decision: RateDecision) -> HttpResponse:
    """`page`, which says why, as the answer to a request over a rate limit: 429, with the seconds to
    wait in Retry-After."""
    page.status_code = 429
    page["Retry-After"] = str(decision.retry_after)
    return page


@login_required
@require_http_methods(["GET", "POST"])
def transfer_page(request: HttpRequest) -> HttpResponse:
    """Export (a link) and import (an upload form); POST imports the uploaded file (uploads over
    the size limit never get here: memories.middleware refuses them unread)."""
    context = {"count": transfer.export_count(request.user), "limit": transfer.import_limit_description()}
    if request.method == "GET":
        return render(request, "memories/transfer.html", context)
    upload = request.FILES.get("file")
    if upload is None:
        context["error"] = "Choose an export file (.json) to import."
        return render(request, "memories/transfer.html", context, status=400)
    decision = import_rate_limit_hit(request.user)
    if not decision.allowed:
        context["error"] = decision.message("your account", "imports")
        return _rate_limited(render(request, "memories/transfer.html", context), decision)
    try:
        report = transfer.import_memories(owner=request.user, document=transfer.parse_document(upload.read()))
    except ValidationError as error:
        context["error"] = f"{upload.name}: {error.message}"
        return render(request, "memories/transfer.html", context, status=400)
    except QuotaExceeded as error:
        context["error"] = f"{upload.name}: {error}"
        return render(request, "memories/transfer.html", context, status=403)
    detail = {"file": upload.name, **report.as_dict()}
    activity_record(owner=request.user, action=ActivityAction.IMPORTED, detail=detail, request=request)
    messages.success(request, f"{upload.name}: {report}")
    return redirect("transfer")


def _owned_note(request: HttpRequest, public_id: uuid.UUID) -> Note:
    """The signed-in user's note; anyone else's is a 404, exactly like a missing one."""
    try:
        return notes.note_get(owner=request.user, public_id=public_id)
    except NotFound:
        raise Http404("No such note.") from None


def _notes_page(
    request: HttpRequest,
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
    context = {
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
            context["hits"] = note_search(owner=request.user, query=q, top_k=SEARCH_RESULTS, tags=_typed_tags(tag))
        else:
            page = notes.note_list(
                owner=request.user,
                tags=_typed_tags(tag),
                limit=NOTES_PAGE_SIZE,
                cursor=request.GET.get("cursor") or None,
            )
            context["notes"], context["next_cursor"] = page.notes, page.next_cursor
    except ValidationError as error:
        context["error"] = str(error)
    return render(request, "memories/note_list.html", context, status=status)


def _note_saved(request: HttpRequest, note: Note) -> HttpResponse:
    messages.success(
        request, f"Saved “{note.title}”. It becomes searchable once it is embedded (Search index: indexed, below)."
    )
    return redirect("note_detail", public_id=note.public_id)


@login_required
@require_http_methods(["GET", "POST"])
def notes_page(request: HttpRequest) -> HttpResponse:
    """The user's notes, most recently changed first (or the search box's results); POST writes
    the note typed into the form."""
    if request.method == "GET":
        return _notes_page(request)
    form = {field: request.POST.get(field, "") for field in ("title", "tags", "content", "format")}
    try:
        note = notes.note_write(
            owner=request.user,
            title=form["title"],
            content=form["content"],
            tags=_typed_tags(form["tags"]),
            format=form["format"] or None,
        )
    except ValidationError as error:
        return _notes_page(request, form=form, write_error=error, status=400)
    except QuotaExceeded as error:
        return _notes_page(request, form=form, write_error=error, status=403)
    return _note_saved(request, note)


@login_required
@require_POST
def note_upload(request: HttpRequest) -> HttpResponse:
    """Upload a .md, .txt or .pdf file as a note, its title taken from the file (a body declared
    over the limit was refused unread by memories.middleware)."""
    upload = request.FILES.get("file")
    tags = request.POST.get("tags", "")
    if upload is None:
        return _notes_page(request, upload_tags=tags, upload_error="Choose a .md, .txt or .pdf file.", status=400)
    decision = note_upload_rate_limit_hit(request.user)
    if not decision.allowed:
        message = decision.message("your account", "note uploads")
        return _rate_limited(_notes_page(request, upload_tags=tags, upload_error=message), decision)
    try:
        cleaned_tags = clean_tags(_typed_tags(tags))  # before a PDF takes its time to read
        text = note_from_upload(upload.name, upload.read(), max_bytes=settings.GNOSEM_NOTE_MAX_BYTES)
        note = notes.note_write(
            owner=request.user, title=text.title, content=text.content, tags=cleaned_tags, format=text.format
        )
    except ValidationError as error:
        # A file's errors name the file already; others (its tags, its title) say which file.
        message = error.message if error.field == "file" else f"{upload.name}: {error}"
        return _notes_page(request, upload_tags=tags, upload_error=message, status=400)
    except QuotaExceeded as error:
        return _notes_page(request, upload_tags=tags, upload_error=f"{upload.name}: {error}", status=403)
    return _note_saved(request, note)


@login_required
@require_GET
def note_detail(request: HttpRequest, public_id: uuid.UUID) -> HttpResponse:
    """The note: its fields and its text, Markdown rendered (safely), other text as it is."""
    note = _owned_note(request, public_id)
    html = render_markdown(note.content) if note.format == NoteFormat.MARKDOWN else None
    return render(request, "memories/note_detail.html", {"note": note, "html": html})


@login_required
@require_http_methods(["GET", "POST"])
def note_edit(request: HttpRequest, public_id: uuid.UUID) -> HttpResponse:
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
                tags=_typed_tags(form["tags"]),
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
def note_delete(request: HttpRequest, public_id: uuid.UUID) -> HttpResponse:
    """GET asks for confirmation; POST deletes the note with its passages."""
    note = _owned_note(request, public_id)
    if request.method == "POST":
        notes.note_delete(owner=request.user, public_id=note.public_id)
        messages.success(request, f"The note “{note.title}” was deleted.")
        return redirect("notes")
    return render(request, "memories/note_confirm_delete.html", {"note": note})


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """Anyone: {"status": "ok" | "degraded"} with 200, {"status": "unavailable"} with 503 when the
    database cannot be reached. Staff (or everyone with GNOSEM_HEALTHZ_DETAILS) also get what is
    degraded and the database, queue, worker and embedding state."""
    report = health.health_report()
    status_code = 503 if report["status"] == "unavailable" else 200
    if not health.details_visible_to(request, report):
        report = {"status": report["status"]}
    return JsonResponse(report, status=status_code)
