"""The export download is one response (memories.transfer.export.export_response), whether the web page or
the API asks for it: streamed JSON, an attachment named for the time, the same document."""

import json
import re

from django.test import Client
from django.urls import reverse

from accounts.models import ActivityAction, ActivityEvent
from memories import services

FILENAME = re.compile(r'attachment; filename="gnosem-export-\d{8}-\d{6}\.json"')


def test_the_page_and_the_api_answer_an_export_alike(owner, owner_client, owner_token):
    services.memory_write(owner=owner, content="The staging database is pg-staging-2.", tags=["db"])

    page = owner_client.get(reverse("export"))
    api = Client().get("/api/v1/export", headers={"Authorization": f"Bearer {owner_token}"})

    documents = []
    for response in (page, api):
        assert response.status_code == 200 and response.streaming
        assert response["Content-Type"] == "application/json"
        assert FILENAME.fullmatch(response["Content-Disposition"])
        document = json.loads(b"".join(response.streaming_content))
        del document["exported_at"]
        documents.append(document)
    assert documents[0] == documents[1] and len(documents[0]["memories"]) == 1
    events = ActivityEvent.objects.filter(owner=owner, action=ActivityAction.EXPORTED).order_by("created_at")
    assert [event.token is not None for event in events] == [False, True]
