"""The export and import page across spaces: a download per space the user may export, an import
into a space they choose and may write; every export logged with its space."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from accounts.activity import activity_for_owner
from accounts.models import ActivityAction, Role
from memories import services
from tests.memories.limits.test_quotas import export_of
from tests.memories.stored import matching, with_text
from tests.memories.transfer.pages import imported_on_the_page

pytestmark = pytest.mark.django_db


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def upload(document: dict) -> SimpleUploadedFile:
    return SimpleUploadedFile("export.json", json.dumps(document).encode())


def test_a_download_per_space_whole_or_what_the_user_wrote_there(owner, team, team_member):
    services.memory_write(owner=owner, content="Our SLO is 99.9 % monthly.", space="Platform")
    editor = team_member("editor", Role.EDITOR)

    owners_page = signed_in(owner).get(reverse("transfer")).content.decode()
    editors_page = signed_in(editor).get(reverse("transfer")).content.decode()

    assert "Download Platform" in owners_page and "1 memory</span>" in owners_page
    assert "Download Platform" in editors_page and "0 memories you wrote there" in editors_page


def test_an_import_goes_into_the_chosen_space_and_a_space_the_user_may_only_read_is_refused(owner, team, team_member):
    viewer = team_member("viewer", Role.VIEWER)
    page = signed_in(owner)

    done = imported_on_the_page(page, json.dumps(export_of("imported one")).encode(), space=str(team.public_id))

    assert "Imported: 1 memory" in done
    assert with_text("imported one").space == team
    assert 'name="space"' not in signed_in(viewer).get(reverse("transfer")).content.decode()  # one writable space
    refused = signed_in(viewer).post(reverse("transfer"), {"file": upload(export_of("sneaked")), "space": "Platform"})
    assert refused.status_code == 400 and "but not write to it (viewer)" in refused.content.decode()
    assert matching(lambda content: content == "sneaked") == []


def test_a_stranger_naming_a_space_they_are_not_in_gets_not_found_and_nothing_imported(owner, team, stranger):
    refused = signed_in(stranger).post(reverse("transfer"), {"file": upload(export_of("sneaked")), "space": "Platform"})

    assert refused.status_code == 400 and "No space" in refused.content.decode()
    assert matching(lambda content: content == "sneaked") == []


def test_an_export_is_logged_with_its_space_on_the_page_and_the_api(owner, team, owner_token):
    signed_in(owner).get(reverse("export"), {"space": "Platform"})
    Client().get("/api/v1/export", headers={"Authorization": f"Bearer {owner_token}"})

    exported = [event.detail for event in activity_for_owner(owner) if event.action == ActivityAction.EXPORTED]
    assert [(detail["space"], detail["via"]) for detail in exported] == [("Personal", "api token"), ("Platform", "web")]
    assert exported[1]["space_id"] == str(team.public_id)
