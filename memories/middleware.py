"""Refuse oversized browser uploads before anything reads them.

Django's CSRF check reads a form POST's fields, and for a multipart upload that means receiving
the whole file first. This middleware sits before it and answers 413 from the declared length
alone (Django never reads past Content-Length): a note's file against the notes' limit, any other
upload (an import) against the import limit. JSON bodies (the REST API, MCP) are not parsed by
the CSRF check; their views check the length themselves.
"""

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse

from memories.notes.files import note_upload_limits, note_upload_too_large
from memories.transfer.document import exceeds_import_limit, import_limit_description


class UploadSizeLimitMiddleware:
    """413 for a multipart body over its limit: a note's file, or GNOSEM_IMPORT_MAX_BYTES."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.content_type != "multipart/form-data":
            return self.get_response(request)
        length = request.META.get("CONTENT_LENGTH")
        if request.path == reverse("note_upload"):
            if note_upload_too_large(length, max_bytes=settings.GNOSEM_NOTE_MAX_BYTES):
                limits = note_upload_limits(settings.GNOSEM_NOTE_MAX_BYTES)
                return render(request, "memories/note_upload_too_large.html", limits, status=413)
        elif exceeds_import_limit(length):
            return render(
                request,
                "memories/upload_too_large.html",
                # A fixed page, not request.path: `//evil.example/...` is a path too, and a link off-site.
                {"limit": import_limit_description(), "back": reverse("transfer")},
                status=413,
            )
        return self.get_response(request)
