"""The dashboard and a memory's pages: search and filters, the usage panel, editing, pinning,
superseding, sharing into another space, near-duplicate review, deleting, and retrying failed
indexing. Views are thin: services and selectors do the work."""

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from typing import cast

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts.reach import reach_of
from gnosem.errors import NotFound, PermissionDenied, QuotaExceeded, ValidationError
from gnosem.types import SignedInRequest
from memories import selectors, services
from memories.compression import llm
from memories.hygiene import near_duplicates
from memories.indexing import lifecycle as indexing_lifecycle
from memories.limits.quotas import STORED_KINDS, quota_usage
from memories.models import Memory
from memories.search.negation import read_query
from memories.search.pipeline import search_hybrid
from memories.sharing import memory_share
from memories.validation import clean_datetime, clean_exclude, clean_filters
from memories.views.shared import SEARCH_RESULTS, typed_tags
from memories.views.space_switcher import space_switcher
from memories.views.usage_chart import writes_chart

PAGE_SIZE = 25
CHART_DAYS = 30
DUPLICATES_PAGE_SIZE = 100


@require_GET
def home(request: HttpRequest) -> HttpResponse:
    """The dashboard for a signed-in user; otherwise what this server is and how to start."""
    if request.user.is_authenticated:
        return dashboard(cast(SignedInRequest, request))  # signed in: checked just above
    return render(request, "memories/home.html", {"mcp_url": request.build_absolute_uri(reverse("mcp"))})


@dataclass(frozen=True)
class DashboardQuery:
    """The dashboard's search box and filters, as typed into the form (shown back unchanged)."""

    q: str
    without: str
    tag: str
    client: str
    date_from: str
    date_to: str

    @classmethod
    def from_request(cls, request: HttpRequest) -> "DashboardQuery":
        get = request.GET
        return cls(
            q=get.get("q", "").strip(),
            without=get.get("without", "").strip(),
            tag=get.get("tag", "").strip(),
            client=get.get("client", "").strip(),
            date_from=get.get("from", "").strip(),
            date_to=get.get("to", "").strip(),
        )

    def filters(self, *, include_superseded: bool = False) -> selectors.MemoryFilters:
        return clean_filters(
            {
                "tags": typed_tags(self.tag) or None,
                "written_by": self.client or None,
                "created_after": self.date_from or None,
                "created_before": _day_after(self.date_to) if self.date_to else None,
                "include_superseded": include_superseded,
            }
        )

    def exclude(self) -> list[str]:
        """The things typed into "Leave out", comma-separated."""
        return [thing.strip() for thing in self.without.split(",") if thing.strip()]

    @property
    def filtered(self) -> bool:
        return bool(self.without or self.tag or self.client or self.date_from or self.date_to)


def _day_after(text: str) -> str:
    """`to` names a whole day, so the range ends at the next midnight; anything but a plain date
    is passed on for clean_datetime to accept or explain."""
    try:
        day = date.fromisoformat(text)
    except ValueError:
        return text
    clean_datetime("to", text)  # a day out of range is refused as typed (9999-12-31 has no day after)
    return (day + timedelta(days=1)).isoformat()


def dashboard(request: SignedInRequest) -> HttpResponse:
    """The memories of every space the user reaches, or of the one the switcher chose, with their
    usage; storage and quota are the account's."""
    query = DashboardQuery.from_request(request)
    switcher = space_switcher(request)
    reach = switcher.reach
    quota = quota_usage(request.user)
    context = {
        "query": query,
        "switcher": switcher,
        "usage": selectors.memory_usage(reach),
        "notes_failed": indexing_lifecycle.failed_count(indexing_lifecycle.NOTES, owner=reach),
        "quota": quota,
        "quota_rows": [
            ("memories and notes", quota.memories),
            ("characters", quota.characters),
            ("estimated tokens", quota.tokens),
        ],
        "stored_rows": [(STORED_KINDS[kind], stored) for kind, stored in quota.stored.items()],
        "chart": writes_chart(
            selectors.memory_writes_per_day(reach, days=CHART_DAYS), days=CHART_DAYS, today=timezone.now().date()
        ),
        "clients": selectors.memory_clients(reach),
        "near_duplicates": selectors.near_duplicates_count(reach),
        "compression_enabled": llm.llm_configured(),
        "memories": [],
        "hits": None,
        "reading": None,
        "next_cursor": None,
        "error": None,
    }
    try:
        if query.q:
            exclude = query.exclude()
            context["hits"] = search_hybrid(
                owner=reach, query=query.q, top_k=SEARCH_RESULTS, filters=query.filters(), exclude=exclude
            )
            context["reading"] = read_query(query.q, clean_exclude(exclude))
        else:
            # The list shows every memory, superseded ones marked, so that the owner can review them.
            page = selectors.memory_list(
                owner=reach,
                filters=query.filters(include_superseded=True),
                limit=PAGE_SIZE,
                cursor=request.GET.get("cursor") or None,
            )
            context["memories"] = page.memories
            context["next_cursor"] = page.next_cursor
    except ValidationError as error:
        context["error"] = str(error)
    return render(request, "memories/dashboard.html", context)


def _owned_memory(request: SignedInRequest, public_id: uuid.UUID) -> Memory:
    """The signed-in user's memory; anyone else's is a 404, exactly like a missing one."""
    try:
        return selectors.memory_get(owner=request.user, public_id=public_id)
    except NotFound:
        raise Http404("No such memory.") from None


@login_required
@require_GET
def memory_detail(request: SignedInRequest, public_id: uuid.UUID) -> HttpResponse:
    """The memory with its earlier versions and what it supersedes."""
    memory = _owned_memory(request, public_id)
    reach = reach_of(request.user)
    context = {
        "memory": memory,
        "revisions": selectors.memory_revisions(memory),
        "supersedes": selectors.memories_superseded_by(memory),
        # Where it may be shared: the other spaces the user writes to; moving needs writing here too.
        "share_targets": [space for space in reach.spaces if space.can_write and space.id != memory.space_id],
        "may_move": reach.space(memory.space_id).can_write,
    }
    return render(request, "memories/memory_detail.html", context)


@login_required
@require_POST
def memory_share_view(request: SignedInRequest, public_id: uuid.UUID) -> HttpResponse:
    """Share the memory into another of the user's spaces: a copy, or with move=true the memory itself."""
    memory = _owned_memory(request, public_id)
    move = request.POST.get("move") == "true"
    try:
        shared = memory_share(
            owner=request.user,
            public_id=memory.public_id,
            space=request.POST.get("space") or None,
            move=move,
            request=request,
        )
    except (ValidationError, PermissionDenied, NotFound, QuotaExceeded) as error:
        messages.error(request, str(error))
        return redirect("memory_detail", public_id=memory.public_id)
    if shared.written_again:
        done = f"“{shared.space.name}” holds this text already: that memory is shown"
        messages.info(request, done + (", and the one moved is gone." if move else "."))
    else:
        messages.success(request, f"{'Moved' if move else 'Shared a copy'} to “{shared.space.name}”.")
    return redirect("memory_detail", public_id=shared.public_id)


def _text_form(
    request: SignedInRequest, memory: Memory, template: str, save: Callable[[str, list[str]], Memory]
) -> HttpResponse:
    """A form of text and tags, prefilled with the memory's: GET shows it; POST calls `save(content,
    tags)` and shows the memory it returns, or the form again with what was wrong."""
    form = {"content": memory.content, "tags": " ".join(memory.tags)}
    if request.method == "POST":
        form = {"content": request.POST.get("content", ""), "tags": request.POST.get("tags", "")}
        try:
            saved = save(form["content"], typed_tags(form["tags"]))
        except (ValidationError, QuotaExceeded) as error:
            return render(request, template, {"memory": memory, "form": form, "error": error}, status=400)
        return redirect("memory_detail", public_id=saved.public_id)
    return render(request, template, {"memory": memory, "form": form})


@login_required
@require_http_methods(["GET", "POST"])
def memory_edit(request: SignedInRequest, public_id: uuid.UUID) -> HttpResponse:
    """Change the text and tags in place; the previous version is kept."""
    memory = _owned_memory(request, public_id)

    def save(content: str, tags: list[str]) -> Memory:
        updated = services.memory_update(owner=request.user, public_id=memory.public_id, content=content, tags=tags)
        messages.success(request, "Saved. The previous version is kept under Earlier versions.")
        return updated

    return _text_form(request, memory, "memories/memory_edit.html", save)


@login_required
@require_POST
def memory_pin(request: SignedInRequest, public_id: uuid.UUID) -> HttpResponse:
    """Pin (or with pinned=false unpin) the memory: session_start lists pinned memories first."""
    memory = _owned_memory(request, public_id)
    pinned = request.POST.get("pinned") != "false"
    services.memory_update(owner=request.user, public_id=memory.public_id, pinned=pinned)
    messages.success(request, "Pinned: every session starts with it." if pinned else "Unpinned.")
    return redirect("memory_detail", public_id=memory.public_id)


@login_required
@require_http_methods(["GET", "POST"])
def memory_supersede(request: SignedInRequest, public_id: uuid.UUID) -> HttpResponse:
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


def _back(request: SignedInRequest, memory: Memory) -> HttpResponse:
    """Back to the review of near-duplicates when the form came from there, else to the memory."""
    if request.POST.get("back") == "duplicates":
        return redirect("near_duplicates")
    return redirect("memory_detail", public_id=memory.public_id)


def _review_near_duplicate(
    request: SignedInRequest, public_id: uuid.UUID, service: Callable[..., Memory], done: str
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
def memory_merge_view(request: SignedInRequest, public_id: uuid.UUID) -> HttpResponse:
    """Merge a near-duplicate into the memory it restates (undone by Make current again)."""
    done = "Merged: it is hidden behind the memory it restates. Make current again undoes it."
    return _review_near_duplicate(request, public_id, near_duplicates.memory_merge, done)


@login_required
@require_POST
def memory_keep_apart_view(request: SignedInRequest, public_id: uuid.UUID) -> HttpResponse:
    """Keep a near-duplicate apart from the memory it was linked to, for good."""
    done = "Kept apart: the two are not linked again."
    return _review_near_duplicate(request, public_id, near_duplicates.memory_keep_apart, done)


@login_required
@require_GET
def near_duplicates_page(request: SignedInRequest) -> HttpResponse:
    """The near-duplicates waiting for review, each beside the memory it restates."""
    memories = selectors.near_duplicates_to_review(request.user, limit=DUPLICATES_PAGE_SIZE)
    context = {"memories": memories, "total": selectors.near_duplicates_count(request.user)}
    return render(request, "memories/near_duplicates.html", context)


@login_required
@require_POST
def memory_reinstate_view(request: SignedInRequest, public_id: uuid.UUID) -> HttpResponse:
    """Make a superseded memory current again."""
    memory = _owned_memory(request, public_id)
    services.memory_reinstate(owner=request.user, public_id=memory.public_id)
    messages.success(request, "The memory is current again: search, counts and session start include it.")
    return redirect("memory_detail", public_id=memory.public_id)


@login_required
@require_http_methods(["GET", "POST"])
def memory_delete_view(request: SignedInRequest, public_id: uuid.UUID) -> HttpResponse:
    """GET asks for confirmation; POST deletes."""
    memory = _owned_memory(request, public_id)
    if request.method == "POST":
        services.memory_delete(owner=request.user, public_id=memory.public_id)
        messages.success(request, "The memory was deleted.")
        return redirect("home")
    return render(request, "memories/memory_confirm_delete.html", {"memory": memory})


@login_required
@require_POST
def retry_failed_view(request: SignedInRequest) -> HttpResponse:
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
