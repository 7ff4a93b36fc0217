"""The entity pages: the list, and one entity with its drawn neighbourhood and what mentions it."""

import uuid

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from gnosem.errors import NotFound
from gnosem.types import SignedInRequest
from memories.graph import explore as graph_explore
from memories.graph.drawing import neighbourhood_drawing
from memories.models import EntityKind
from memories.views.space_switcher import space_switcher
from memories.vocabulary import MAX_ENTITY_NAME_CHARS

# An entity's page: the neighbours drawn and the memories listed.
ENTITY_PAGE_NEIGHBOURS = 16
ENTITY_PAGE_MEMORIES = 100
ENTITY_PAGE_NOTES = 100


@login_required
@require_GET
def entity_list_page(request: SignedInRequest) -> HttpResponse:
    """The entities the memories and notes of the user's spaces (or of the one chosen) mention, most
    mentioned first, filtered by name and kind."""
    switcher = space_switcher(request)
    name = request.GET.get("q", "").strip()[:MAX_ENTITY_NAME_CHARS]
    kind = request.GET.get("kind", "")
    kind = kind if kind in EntityKind.values else ""
    context = {
        "switcher": switcher,
        "entities": graph_explore.entity_list(owner=switcher.reach, name=name, kind=kind),
        "q": name,
        "kind": kind,
        "kinds": EntityKind.values,
    }
    return render(request, "memories/entities.html", context)


@login_required
@require_GET
def entity_detail(request: SignedInRequest, public_id: uuid.UUID) -> HttpResponse:
    """An entity: a drawing of its neighbourhood and the memories and notes mentioning it."""
    try:
        entity = graph_explore.entity_get(owner=request.user, public_id=public_id)
    except NotFound:
        raise Http404("No such entity.") from None
    view = graph_explore.graph_explore_from(owner=request.user, entry=[entity], limit=ENTITY_PAGE_NEIGHBOURS)
    [node] = [node for node in view.nodes if node.entity.pk == entity.pk]
    context = {
        "entity": entity,
        "node": node,
        "drawing": neighbourhood_drawing(view, entity),
        "links": [
            (edge.target if edge.source.pk == entity.pk else edge.source, edge)
            for edge in view.edges
            if entity.pk in (edge.source.pk, edge.target.pk)
        ],
        "memories": graph_explore.entity_memories(owner=request.user, entities=[entity], limit=ENTITY_PAGE_MEMORIES),
        "notes": graph_explore.entity_notes(owner=request.user, entities=[entity], limit=ENTITY_PAGE_NOTES),
    }
    return render(request, "memories/entity_detail.html", context)
