"""The export download and the import page."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from accounts.activity import activity_record
from accounts.models import ActivityAction
from gnosem.errors import QuotaExceeded, ValidationError
from gnosem.types import SignedInRequest
from memories.limits.rates import import_rate_limit_hit
from memories.transfer.document import import_limit_description, parse_document
from memories.transfer.export import export_count, export_response, exported_space
from memories.transfer.importing import import_memories
from memories.views.shared import rate_limited


@login_required
@require_GET
def export_download(request: SignedInRequest) -> StreamingHttpResponse:
    """All the user's memories as one JSON file, streamed."""
    response = export_response(request.user)
    activity_record(owner=request.user, action=ActivityAction.EXPORTED, request=request)
    return response


@login_required
@require_http_methods(["GET", "POST"])
def transfer_page(request: SignedInRequest) -> HttpResponse:
    """Export (a link) and import (an upload form); POST imports the uploaded file (uploads over
    the size limit never get here: memories.middleware refuses them unread)."""
    context = {"count": export_count(exported_space(request.user)), "limit": import_limit_description()}
    if request.method == "GET":
        return render(request, "memories/transfer.html", context)
    upload = request.FILES.get("file")
    if upload is None:
        context["error"] = "Choose an export file (.json) to import."
        return render(request, "memories/transfer.html", context, status=400)
    decision = import_rate_limit_hit(request.user)
    if not decision.allowed:
        context["error"] = decision.message("your account", "imports")
        return rate_limited(render(request, "memories/transfer.html", context), decision)
    try:
        report = import_memories(owner=request.user, document=parse_document(upload.read()))
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
