"""The activity log: what was done with an account, from where and with which token, on the
Activity page (the owner's own events only), pruned after GNOSEM_ACTIVITY_RETENTION_DAYS."""

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from accounts.activity import activity_for_owner, activity_prune, activity_record
from accounts.models import ActivityAction, ActivityEvent, ApiToken
from accounts.tasks import prune_activity_task
from accounts.tokens import token_authenticate
from memories import services
from memories.transfer.export import export_chunks, exported_space
from tests.memories.transfer.pages import imported_on_the_page

PASSWORD = "correct horse battery staple 42"


def events(owner) -> list[ActivityEvent]:
    return list(activity_for_owner(owner))


def only_event(owner, action: str) -> ActivityEvent:
    matching = [event for event in events(owner) if event.action == action]
    assert len(matching) == 1, [event.action for event in events(owner)]
    return matching[0]


def test_creating_and_revoking_a_token_on_the_tokens_page_is_logged(owner_client, owner):
    owner_client.post(reverse("tokens"), {"name": "laptop", "scope": "read"}, REMOTE_ADDR="192.0.2.44")
    token = ApiToken.objects.get(owner=owner, name="laptop")
    created = only_event(owner, ActivityAction.TOKEN_CREATED)
    assert created.detail == {"via": "web", "name": "laptop", "prefix": token.prefix, "scope": "read"}
    assert created.ip == "192.0.2.44" and created.token is None
    owner_client.post(reverse("token_revoke", args=[token.public_id]))
    owner_client.post(reverse("token_revoke", args=[token.public_id]))  # already revoked: not logged again
    assert only_event(owner, ActivityAction.TOKEN_REVOKED).detail["prefix"] == token.prefix


def test_a_token_made_by_the_command_is_logged_as_such(owner):
    call_command("createtoken", "owner", stdout=StringIO(), stderr=StringIO())
    event = only_event(owner, ActivityAction.TOKEN_CREATED)
    assert event.detail["via"] == "command line" and event.ip is None


def test_sign_ins_and_failed_sign_ins_are_logged(client, owner):
    owner.set_password(PASSWORD)
    owner.save()
    client.post(reverse("account_login"), {"login": "owner@example.com", "password": "wrong"}, REMOTE_ADDR="192.0.2.9")
    client.post(reverse("account_login"), {"login": "owner@example.com", "password": PASSWORD}, REMOTE_ADDR="192.0.2.9")
    assert [event.action for event in events(owner)] == ["signed_in", "sign_in_failed"]
    assert all(event.ip == "192.0.2.9" for event in events(owner))
    # A failure on an address nobody has is logged nowhere.
    client.post(reverse("account_login"), {"login": "nobody@example.com", "password": "x"})
    assert ActivityEvent.objects.count() == 2


def test_exports_and_imports_on_the_pages_are_logged_with_counts(owner_client, owner, stranger):
    services.memory_write(owner=stranger, content="moving over")
    document = "".join(export_chunks(exported_space(stranger))).encode()
    imported_on_the_page(owner_client, document, "mine.json")
    imported = only_event(owner, ActivityAction.IMPORTED)
    assert imported.detail["via"] == "web" and imported.detail["file"] == "mine.json"
    assert imported.detail["imported"] == 1 and imported.detail["duplicates"] == 0
    b"".join(owner_client.get(reverse("export")).streaming_content)
    assert only_event(owner, ActivityAction.EXPORTED).detail["via"] == "web"


def test_exports_and_imports_through_the_api_name_the_token(client, owner, owner_token):
    services.memory_write(owner=owner, content="already here")
    auth = {"Authorization": f"Bearer {owner_token}"}
    document = b"".join(client.get("/api/v1/export", headers=auth).streaming_content)
    response = client.post("/api/v1/import", document, content_type="application/json", headers=auth)
    assert response.status_code == 200
    token = token_authenticate(owner_token)
    exported = only_event(owner, ActivityAction.EXPORTED)
    imported = only_event(owner, ActivityAction.IMPORTED)
    assert exported.token == token and imported.token == token
    assert imported.detail["via"] == "api token" and imported.detail["duplicates"] == 1


def test_the_export_and_import_commands_are_logged(owner, tmp_path):
    services.memory_write(owner=owner, content="one memory")
    path = tmp_path / "export.json"
    call_command("exportmemories", "owner", "--output", str(path), stdout=StringIO(), stderr=StringIO())
    call_command("importmemories", "owner", str(path), stdout=StringIO(), stderr=StringIO())
    assert only_event(owner, ActivityAction.EXPORTED).detail == {"via": "command line", "memories": 1}
    imported = only_event(owner, ActivityAction.IMPORTED)
    assert imported.detail["file"] == "export.json" and imported.detail["duplicates"] == 1


def test_the_activity_page_shows_the_owners_events_newest_first(owner_client, owner):
    activity_record(owner=owner, action=ActivityAction.EXPORTED, detail={"memories": 3})
    activity_record(owner=owner, action=ActivityAction.IMPORTED, detail={"imported": 5, "duplicates": 2})
    page = owner_client.get(reverse("activity")).content.decode()
    assert page.index("5 imported, 2 duplicates skipped") < page.index("3 memories")
    assert f'href="{reverse("activity")}"' in page  # in the navigation


def test_a_stranger_does_not_see_the_owners_events(owner, stranger_client, stranger):
    activity_record(owner=owner, action=ActivityAction.IMPORTED, detail={"file": "owners-secret-file.json"})
    page = stranger_client.get(reverse("activity")).content.decode()
    assert "owners-secret-file.json" not in page
    assert "Nothing yet." not in page  # the stranger's own sign-in (force_login) is there
    assert all(event.owner == stranger for event in activity_for_owner(stranger))


def test_anonymous_visitors_are_sent_to_sign_in(client, db):
    response = client.get(reverse("activity"))
    assert response.status_code == 302 and reverse("account_login") in response.url


def test_the_activity_page_is_paginated(owner_client, owner):
    ActivityEvent.objects.bulk_create(
        ActivityEvent(owner=owner, action=ActivityAction.EXPORTED, detail={"memories": number}) for number in range(60)
    )
    total = ActivityEvent.objects.filter(owner=owner).count()  # the 60 and force_login's sign-in
    first = owner_client.get(reverse("activity")).content.decode()
    second = owner_client.get(reverse("activity") + "?page=2").content.decode()
    assert first.count("<tr>") - 1 == 50 and second.count("<tr>") - 1 == total - 50
    assert "Older »" in first and "« Newer" in second


def test_old_events_are_pruned_after_the_retention_period(owner, settings):
    settings.GNOSEM_ACTIVITY_RETENTION_DAYS = 30
    old = activity_record(owner=owner, action=ActivityAction.EXPORTED)
    kept = activity_record(owner=owner, action=ActivityAction.EXPORTED)
    ActivityEvent.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=31))
    ActivityEvent.objects.filter(pk=kept.pk).update(created_at=timezone.now() - timedelta(days=29))
    assert prune_activity_task.call_local() == 1
    assert list(ActivityEvent.objects.values_list("pk", flat=True)) == [kept.pk]
    assert activity_prune() == 0


def test_a_deleted_token_leaves_its_events(owner, owner_token):
    token = token_authenticate(owner_token)
    event = activity_record(owner=owner, action=ActivityAction.EXPORTED, token=token)
    token.delete()
    event.refresh_from_db()
    assert event.token is None and event.detail["via"] == "api token"


@pytest.mark.parametrize(("forwarded", "logged_ip"), [("not an address", None), (None, "127.0.0.1")])
def test_a_client_address_is_logged_only_when_it_is_one(owner, settings, forwarded, logged_ip):
    settings.ALLAUTH_TRUSTED_PROXY_COUNT = 1
    client = Client(headers={"X-Forwarded-For": forwarded} if forwarded else {})
    client.force_login(owner)
    response = client.post(reverse("tokens"), {"name": "laptop", "scope": "read"})
    assert response.status_code == 200
    assert only_event(owner, ActivityAction.TOKEN_CREATED).ip == logged_ip


@pytest.mark.parametrize("page", ["abc", "-1", "999999999999999999999", "%00"])
def test_a_nonsense_page_number_shows_a_page_not_an_error(owner_client, page):
    assert owner_client.get(reverse("activity") + f"?page={page}").status_code == 200
