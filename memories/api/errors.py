"""Every API error as `{"error": {"code", "message", "field"?}}`: the domain's errors and DRF's, mapped once."""

import logging

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler

from gnosem.errors import GnosemError, NotFound, PermissionDenied, QuotaExceeded, ValidationError
from memories.models import MAX_CONTENT_CHARS

logger = logging.getLogger(__name__)


def error_body(code: str, message: str, field: str | None = None) -> dict:
    error = {"code": code, "message": message}
    if field:
        error["field"] = field
    return {"error": error}


def api_exception_handler(exc: Exception, context: dict) -> Response:
    if isinstance(exc, ValidationError):
        return Response(error_body("invalid", str(exc), exc.field), status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, NotFound | Http404):
        return Response(error_body("not_found", str(exc) or "Not found."), status=status.HTTP_404_NOT_FOUND)
    if isinstance(exc, PermissionDenied):
        return Response(error_body("forbidden", str(exc)), status=status.HTTP_403_FORBIDDEN)
    if isinstance(exc, QuotaExceeded):
        # 403, not 429: waiting does not help, deleting or a larger quota does.
        return Response(error_body("quota_exceeded", str(exc)), status=status.HTTP_403_FORBIDDEN)
    if isinstance(exc, GnosemError):
        return Response(error_body("error", str(exc)), status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, RequestDataTooBig):
        return Response(error_body("too_large", _too_large_message()), status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
    response = exception_handler(exc, context)
    if response is not None and isinstance(exc, exceptions.APIException):
        response.data = error_body(_code(exc), _message(exc.detail))
        return response
    logger.exception("API request failed", exc_info=exc)
    return Response(error_body("internal", "Internal error."), status=status.HTTP_500_INTERNAL_SERVER_ERROR)


def _too_large_message() -> str:
    return (
        f"The body is over the {settings.DATA_UPLOAD_MAX_MEMORY_SIZE:,}-byte limit for API requests; nothing was "
        f"changed. A memory holds at most {MAX_CONTENT_CHARS:,} characters; to load many, use /api/v1/import."
    )


def _code(exc: exceptions.APIException) -> str:
    codes = exc.get_codes()
    return codes if isinstance(codes, str) else exc.default_code


def _message(detail: object) -> str:
    if isinstance(detail, dict):
        return "; ".join(f"{key}: {_message(value)}" for key, value in detail.items())
    if isinstance(detail, list):
        return " ".join(_message(item) for item in detail)
    return str(detail)
