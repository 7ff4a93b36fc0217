"""Plain HTTP views of the memories app (the MCP endpoint lives in memories.mcp)."""

from django.db import connection
from django.http import JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from memories.health import queue_state


@require_GET
def home(request):
    """What this server is and how to connect an assistant to it."""
    return render(request, "memories/home.html", {"mcp_url": request.build_absolute_uri(reverse("mcp"))})


@require_GET
def healthz(request):
    """200 with database and queue state; 503 when the database cannot be reached."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        database = "ok"
    except Exception as exc:  # connection refused, embedded server failing to start, ...
        return JsonResponse({"status": "unavailable", "database": f"error: {type(exc).__name__}"}, status=503)
    return JsonResponse({"status": "ok", "database": database, "queue": queue_state()})
