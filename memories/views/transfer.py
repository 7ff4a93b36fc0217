"""The export download, the import page and each import's page."""

import uuid

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from accounts.reach import Reach, ReachedSpace, reach_of
from gnosem.errors import NotFound, PermissionDenied, QuotaExceeded, ValidationError
from gnosem.types import SignedInRequest
from memories.limits.rates import import_rate_limit_hit
from memories.transfer.document import import_limit_description
from memories.transfer.export import EXPORT_FORMATS, export_author, export_count, export_response
from memories.transfer.formats import FORMATS
from memories.transfer.jobs import import_job_create, import_job_get, import_job_start, import_jobs_of
from memories.views.shared import rate_limited


@login_required
@require_GET
def export_download(request: SignedInRequest) -> StreamingHttpResponse:
    """One space as one file of the format `?format=` names (default: a Gnosem export), streamed:
    the space `?space=` names (its id or name), else the personal space (of a team space, what the
    user wrote there unless they own or administer it). A space the user is not in is a 404."""
    try:
        return export_response(
            request.user, request.GET.get("space"), format=request.GET.get("format"), request=request
        )
    except (NotFound, ValidationError):
        raise Http404("No such space or format.") from None


def _export_choice(exported: Reach) -> tuple[ReachedSpace, int, bool]:
    """One space's download on the page: the space, how many memories its export holds, and
    whether it is the whole space (else what the user wrote there)."""
    return exported.spaces[0], export_count(exported), export_author(exported) is None


@login_required
@require_http_methods(["GET", "POST"])
def transfer_page(request: SignedInRequest) -> HttpResponse:
    """Export (a download per space and format) and import (an upload form, into a space the user
    may write, and the user's recent imports); POST reads, checks and previews the uploaded file
    of the format chosen (or recognised) and shows the import's page, where it is started (uploads
    over the size limit never get here: memories.middleware refuses them unread)."""
    reach = reach_of(request.user)
    context: dict[str, object] = {
        "exports": [_export_choice(reach.within(space.id)) for space in reach.spaces],
        "export_formats": EXPORT_FORMATS,
        "import_formats": FORMATS,
        "writable": [space for space in reach.spaces if space.can_write],
        "limit": import_limit_description(),
        "imports": import_jobs_of(reach),
    }
    if request.method == "GET":
        return render(request, "memories/transfer.html", context)
    upload = request.FILES.get("file")
    if upload is None:
        context["error"] = "Choose a file to import."
        return render(request, "memories/transfer.html", context, status=400)
    file_format, space = request.POST.get("format") or None, request.POST.get("space") or None
    context["chosen"] = {"format": file_format or "", "space": space or ""}
    decision = import_rate_limit_hit(request.user)
    if not decision.allowed:
        context["error"] = decision.message("your account", "imports")
        return rate_limited(render(request, "memories/transfer.html", context), decision)
    try:
        job = import_job_create(
            owner=reach,
            data=upload.read(),
            format=file_format,
            space=space,
            file_name=upload.name or "",
            request=request,
        )
    except (ValidationError, NotFound, PermissionDenied) as error:
        context["error"] = f"{upload.name}: {error.message if isinstance(error, ValidationError) else error}"
        return render(request, "memories/transfer.html", context, status=400)
    except QuotaExceeded as error:
        context["error"] = f"{upload.name}: {error}"
        return render(request, "memories/transfer.html", context, status=403)
    return redirect("import_job", public_id=job.public_id)


@login_required
@require_http_methods(["GET", "POST"])
def import_job_page(request: SignedInRequest, public_id: uuid.UUID) -> HttpResponse:
    """One import: its preview and a button that starts it, then its progress (the page reloads
    itself while it runs), then its report. POST starts it. Another user's import is a 404."""
    try:
        job = import_job_get(owner=request.user, public_id=public_id)
    except NotFound:
        raise Http404("No such import.") from None
    if request.method == "POST":
        try:
            import_job_start(owner=request.user, public_id=public_id)
        except (NotFound, PermissionDenied) as error:
            messages.error(request, str(error))
        return redirect("import_job", public_id=job.public_id)
    return render(request, "memories/import_job.html", {"job": job, "space_name": job.space.name})
