"""Refuse oversized browser uploads before anything reads them.

Django's CSRF check reads a form POST's fields, and for a multipart upload that means receiving
the whole file first. This middleware sits before it and answers 413 from the declared length
alone (Django never reads past Content-Length). JSON bodies (the REST API, MCP) are not parsed by
the CSRF check; their views check the length themselves.
"""

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse

from memories.transfer import exceeds_import_limit, import_limit_description


class UploadSizeLimitMiddleware:
    """413 for a multipart body over GNOSEM_IMPORT_MAX_BYTES (an import is the only upload)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.content_type == "multipart/form-data" and exceeds_import_limit(request.META.get("CONTENT_LENGTH")):
            return render(
                request,
                "memories/upload_too_large.html",
                # A fixed page, not request.path: `//evil.example/...` is a path too, and a link off-site.
                {"limit": import_limit_description(), "back": reverse("transfer")},
                status=413,
            )
        return self.get_response(request)
