"""The dashboard: list, search, filters, usage chart, detail and delete, for the owner only."""

from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from memories import services
from memories.models import Memory
from tests.memories.stored import store

START = datetime(2025, 3, 1, 9, tzinfo=UTC)


def page_of(response) -> str:
    assert response.status_code == 200
    return response.content.decode()


def test_anonymous_visitors_get_the_landing_page(client):
    page = page_of(client.get("/"))
    assert "Sign up" in page and "http://testserver/mcp" in page


def test_the_dashboard_lists_memories_newest_first_with_usage(owner_client, owner):
    for i in range(3):
        services.memory_write(
            owner=owner, content=f"note number {i}", written_by="cursor", created_at=START + timedelta(hours=i)
        )
    page = page_of(owner_client.get("/"))
    assert page.index("note number 2") < page.index("note number 1") < page.index("note number 0")
    assert '<div class="figure">3</div><div class="label">memories</div>' in page


def test_the_dashboard_pages_with_a_cursor(owner_client, owner):
    for i in range(30):
        services.memory_write(owner=owner, content=f"memory-{i:02d}", created_at=START + timedelta(minutes=i))
    first = page_of(owner_client.get("/"))
    assert "memory-29" in first and "memory-05" in first and "memory-04" not in first
    cursor = first.split("cursor=")[1].split('"')[0]
    second = page_of(owner_client.get(f"/?cursor={cursor}"))
    assert "memory-04" in second and "memory-00" in second and "memory-05" not in second
    assert "Older" not in second


def test_the_search_box_uses_hybrid_search(owner_client, owner):
    services.memory_write(owner=owner, content="The deploy failed with ERR_QUOTA_4471 on Friday.")
    services.memory_write(owner=owner, content="Lunch was pasta.")
    page = page_of(owner_client.get("/", {"q": "ERR_QUOTA_4471"}))
    assert "Search results" in page and "ERR_QUOTA_4471 on Friday" in page and "Lunch was pasta" not in page
    assert "score" in page


def test_filters_by_tag_client_and_date(owner_client, owner):
    services.memory_write(owner=owner, content="tagged one", tags=["work"], written_by="cursor", created_at=START)
    services.memory_write(owner=owner, content="other tag", tags=["home"], written_by="cursor", created_at=START)
    services.memory_write(owner=owner, content="other client", tags=["work"], written_by="vscode", created_at=START)
    services.memory_write(
        owner=owner, content="next day", tags=["work"], written_by="cursor", created_at=START + timedelta(days=1)
    )
    page = page_of(owner_client.get("/", {"tag": "work", "client": "cursor", "from": "2025-03-01", "to": "2025-03-01"}))
    assert "tagged one" in page
    assert "other tag" not in page and "other client" not in page and "next day" not in page


def test_a_malformed_filter_says_what_is_wrong(owner_client):
    page = page_of(owner_client.get("/", {"from": "yesterday"}))
    assert "created_after" in page and "not an ISO 8601 date" in page


def test_the_usage_chart_counts_recent_writes_per_client(owner_client, owner):
    services.memory_write(owner=owner, content="a", written_by="cursor")
    services.memory_write(owner=owner, content="b", written_by="cursor")
    services.memory_write(owner=owner, content="c", written_by="claude-code")
    services.memory_write(
        owner=owner, content="old", written_by="vscode", created_at=timezone.now() - timedelta(days=40)
    )
    page = page_of(owner_client.get("/"))
    assert "<svg" in page and "cursor (2)" in page and "claude-code (1)" in page and "vscode (" not in page
    assert f"{timezone.now().date().isoformat()}: 2 by cursor" in page


def test_memory_text_is_escaped_everywhere(owner_client, owner):
    memory = services.memory_write(
        owner=owner, content='Deploy notes: <script>alert("x")</script>', tags=["xss"], written_by="<b>me</b>"
    )
    for url in ["/", "/?q=deploy+notes", reverse("memory_detail", args=[memory.public_id])]:
        page = page_of(owner_client.get(url))
        assert "<script>alert" not in page and "&lt;script&gt;alert" in page
        assert "<b>me</b>" not in page


def test_the_detail_page_shows_raw_and_compressed_text(owner_client, owner):
    memory = services.memory_write(owner=owner, content="x" * 500, tags=["long"])
    store(memory.pk, content_optimized="FACT=many x", compression_status="compressed")
    page = page_of(owner_client.get(reverse("memory_detail", args=[memory.public_id])))
    assert "x" * 500 in page and "FACT=many x" in page and str(memory.public_id) in page


def test_delete_asks_for_confirmation_then_deletes(owner_client, owner):
    memory = services.memory_write(owner=owner, content="to be deleted")
    url = reverse("memory_delete", args=[memory.public_id])
    assert "Delete this memory?" in page_of(owner_client.get(url))
    assert Memory.objects.filter(pk=memory.pk).exists()
    response = owner_client.post(url)
    assert response.status_code == 302 and response.url == "/"
    assert not Memory.objects.filter(pk=memory.pk).exists()


@pytest.mark.parametrize("page", ["memory_detail", "memory_delete"])
def test_another_users_memory_is_a_404(stranger_client, owner, page):
    memory = services.memory_write(owner=owner, content="private")
    url = reverse(page, args=[memory.public_id])
    assert stranger_client.get(url).status_code == 404
    if page == "memory_delete":
        assert stranger_client.post(url).status_code == 404
    assert Memory.objects.filter(pk=memory.pk).exists()


def test_the_strangers_dashboard_never_shows_the_owners_memories(stranger_client, owner):
    services.memory_write(owner=owner, content="owner secret ERR_PRIVATE_1", written_by="owner-client")
    for params in [{}, {"q": "ERR_PRIVATE_1"}]:
        page = page_of(stranger_client.get("/", params))
        assert "owner secret" not in page and "owner-client" not in page


@pytest.mark.parametrize("page", ["memory_detail", "memory_delete"])
def test_anonymous_visitors_are_sent_to_sign_in(client, owner, page):
    memory = services.memory_write(owner=owner, content="private")
    response = client.get(reverse(page, args=[memory.public_id]))
    assert response.status_code == 302 and response.url.startswith(reverse("account_login"))


def test_deleting_needs_the_csrf_token(owner, owner_client):
    from django.test import Client

    memory = services.memory_write(owner=owner, content="kept")
    client = Client(enforce_csrf_checks=True)
    client.force_login(owner)
    assert client.post(reverse("memory_delete", args=[memory.public_id])).status_code == 403
    assert Memory.objects.filter(pk=memory.pk).exists()


def test_the_stylesheet_is_served_without_debug(client):
    response = client.get("/static/gnosem.css")
    assert response.status_code == 200
    assert b"--accent" in b"".join(response.streaming_content)


def test_the_dashboard_says_how_to_turn_compression_on_only_while_it_is_off(owner_client, settings):
    assert "Compression is off" in page_of(owner_client.get("/"))
    settings.GNOSEM_LLM_BASE_URL = "http://127.0.0.1:11434/v1"
    settings.GNOSEM_LLM_MODEL = "llama3.1:8b"
    assert "Compression is off" not in page_of(owner_client.get("/"))
