"""/healthz: whether the server is up, and for staff or monitoring, what is degraded and why."""

from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

from memories import health


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
