"""Spaces over REST: `GET /api/v1/spaces`, `space` on reads, writes, export and import, and the
answers strangers get."""

import json

import pytest
from django.test import Client

from accounts.models import Role
from accounts.tokens import token_create
from memories import services
from memories.models import Memory, Note
from tests.memories.spaces import member

pytestmark = pytest.mark.django_db


class Api:
    def __init__(self, user, scope="write"):
        secret = token_create(owner=user, name="script", scope=scope).secret
        self.client = Client(headers={"Authorization": f"Bearer {secret}"})

    def get(self, path, params=None):
        return self.client.get(f"/api/v1/{path}", params or {})

    def post(self, path, body, params=""):
        return self.client.post(f"/api/v1/{path}{params}", json.dumps(body), content_type="application/json")


def test_spaces_lists_what_the_token_reaches(owner, team):
    services.memory_write(owner=owner, content="Team fact.", space="Platform")

    body = Api(owner).get("spaces").json()

    assert [(s["name"], s["role"], s["default"], s["memories"]) for s in body["spaces"]] == [
        ("Personal", "owner", True, 0),
        ("Platform", "owner", False, 1),
    ]


def test_writes_and_reads_name_their_space(owner, team):
    api = Api(owner)
    created = api.post("memories", {"content": "The build server is ci-7.", "space": "Platform"})
    assert created.status_code == 201
    assert Memory.objects.get(public_id=created.json()["id"]).space_id == team.pk
    assert api.post("notes", {"title": "Runbook", "content": "Restart ci-7.", "space": "Platform"}).status_code == 201
    assert Note.objects.get().space_id == team.pk
    api.post("memories", {"content": "My own reminder."})

    listed = api.get("memories", {"space": "Platform"}).json()["memories"]
    assert [memory["content"] for memory in listed] == ["The build server is ci-7."]
    assert api.get("memories/count", {"space": "Personal"}).json()["count"] == 1
    assert api.get("memories/count").json()["count"] == 2


def test_a_space_the_token_does_not_reach_is_404_like_one_that_does_not_exist(owner, team, stranger):
    outsider = Api(stranger)
    for name in ("Platform", str(team.public_id), "Nowhere"):
        for response in (
            outsider.get("memories", {"space": name}),
            outsider.get("memories/search", {"query": "build server", "space": name}),
            outsider.post("memories", {"content": "Hello.", "space": name}),
            outsider.get("export", {"space": name}),
        ):
            assert response.status_code == 404, response.content
            assert response.json()["error"]["code"] == "not_found"
    assert not Memory.objects.exists()


def test_a_viewer_is_refused_every_write_to_the_team(owner, team):
    viewer = Api(member(team, "viewer", Role.VIEWER))
    shared = services.memory_write(owner=owner, content="Releases go out on Tuesdays.", space="Platform")

    assert viewer.post("memories", {"content": "Fridays too.", "space": "Platform"}).status_code == 403
    assert viewer.client.delete(f"/api/v1/memories/{shared.public_id}").status_code == 403
    assert viewer.post("notes", {"title": "T", "content": "C", "space": "Platform"}).status_code == 403
    assert viewer.get(f"memories/{shared.public_id}").status_code == 200
    assert Memory.objects.count() == 1 and not Note.objects.exists()


def test_owners_export_a_team_space_whole_editors_what_they_wrote_and_import_needs_a_writer(owner, team):
    services.memory_write(owner=owner, content="Our SLO is 99.9 % monthly.", space="Platform")
    editor_user = member(team, "editor", Role.EDITOR)
    services.memory_write(owner=editor_user, content="Pages go to the on-call phone.", space="Platform")
    editor = Api(editor_user)

    def exported(api: Api) -> list[str]:
        response = api.get("export", {"space": "Platform"})
        return [entry["content"] for entry in json.loads(b"".join(response.streaming_content))["memories"]]

    assert exported(editor) == ["Pages go to the on-call phone."]
    assert exported(Api(owner)) == ["Our SLO is 99.9 % monthly.", "Pages go to the on-call phone."]
    exported_by_owner = Api(owner).get("export", {"space": "Platform"})
    document = json.loads(b"".join(exported_by_owner.streaming_content))

    viewer = Api(member(team, "viewer", Role.VIEWER))
    assert viewer.post("import", document, "?space=Platform").status_code == 403
    imported = editor.post("import", document)  # into the editor's personal space
    assert imported.status_code == 200 and imported.json()["imported"] == 2


def test_a_space_of_the_wrong_shape_in_a_body_is_a_clear_400(owner, team):
    for bad in (7, ["Platform"], "", "x" * 101):
        response = Api(owner).post("memories", {"content": "Hello.", "space": bad})
        assert response.status_code == 400, (bad, response.content)
        assert response.json()["error"]["field"] == "space"
    assert not Memory.objects.exists()
