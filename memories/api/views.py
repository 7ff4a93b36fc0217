"""One DRF view per resource, each a thin caller of the services and selectors that MCP calls.

Query strings carry list and search options (`tags=a,b` or repeated `tags`); bodies are JSON.
"""

import uuid
from collections.abc import Callable
from types import SimpleNamespace
from typing import TypeVar

from django.http import HttpRequest, JsonResponse, StreamingHttpResponse
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    PolymorphicProxySerializer,
    extend_schema,
    inline_serializer,
)
from rest_framework import serializers, status
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.activity import activity_record
from accounts.models import ActivityAction
from accounts.oauth.urls_for import public_base_url
from accounts.reach import Reach, ReachedSpace, token_reach
from accounts.spaces import (
    INVITATION_DEFAULT_DAYS,
    member_remove,
    member_role_change,
    space_delete,
    space_hand_over,
    space_invitation_accept,
    space_invitation_create,
    space_invitation_revoke,
    space_invitations,
    space_leave,
    space_members,
    space_rename,
    team_space_create,
)
from gnosem.errors import NotFound, PermissionDenied, ValidationError
from memories import selectors, services
from memories.api import serializers as shapes
from memories.api.authentication import TokenRequest
from memories.api.errors import error_body
from memories.api.throttles import ImportRateThrottle, TokenRateThrottle
from memories.graph.explore import DEFAULT_ENTITY_LIMIT, MAX_DEPTH, MAX_ENTITY_LIMIT, graph_explore
from memories.hygiene import near_duplicates
from memories.limits import quotas
from memories.models import Memory
from memories.notes import services as notes
from memories.notes.services import NOTE_START_SCHEMA
from memories.presenters import (
    graph_to_dict,
    history_to_dict,
    invitation_to_dict,
    member_to_dict,
    members_to_dict,
    memory_page_to_dict,
    memory_to_dict,
    note_page_to_dict,
    note_read_to_dict,
    note_to_dict,
    search_results_to_dict,
    semantic_results_to_dict,
    space_key_to_dict,
    space_to_dict,
    spaces_to_dict,
    written_memory_to_dict,
)
from memories.reading.counting import GROUPINGS, memory_count
from memories.reading.session import session_start
from memories.search.about import ABOUT_MIN_SIMILARITY
from memories.search.negation import read_query
from memories.search.notes import semantic_search
from memories.search.pipeline import search_hybrid
from memories.sharing import memory_share
from memories.space_keys import space_key_rotate, space_key_state
from memories.transfer.document import exceeds_import_limit, import_limit_description
from memories.transfer.export import EXPORT_FORMATS, export_response
from memories.transfer.formats import FORMATS as IMPORT_FORMATS
from memories.transfer.formats import read_import_file
from memories.transfer.importing import import_file, import_file_preview
from memories.transfer.jobs import import_job_create, import_job_get, import_job_start, import_job_to_dict
from memories.validation import (
    DEFAULT_LIST_LIMIT,
    DEFAULT_SESSION_MAX_TOKENS,
    DEFAULT_TOP_K,
    FRACTION_SCHEMA,
    HALF_LIFE_DAYS_SCHEMA,
    LIMIT_SCHEMA,
    MAX_EXCLUDED,
    MAX_HALF_LIFE_DAYS,
    MAX_LIST_LIMIT,
    MAX_MAX_TOKENS,
    MAX_TOKENS_SCHEMA,
    MAX_TOP_K,
    MIN_MAX_TOKENS,
    QUERY_SCHEMA,
    TOP_K_SCHEMA,
    WRITTEN_BY_SCHEMA,
    clean_exclude,
    clean_filters,
    clean_limit,
    clean_max_tokens,
    written_by_or_default,
)

Number = TypeVar("Number", int, float)


def _rate_limited(limits: str) -> OpenApiResponse:
    """The 429 of an operation over `limits` (memories.api.throttles refuses it)."""
    return OpenApiResponse(shapes.ErrorOut, description=f"Over {limits}; `Retry-After` gives the seconds to wait.")


# What any operation may answer, whatever its parameters.
ANY_REQUEST_ERRORS = {
    401: OpenApiResponse(shapes.ErrorOut, description="Missing, unknown or revoked token."),
    406: OpenApiResponse(shapes.ErrorOut, description="The Accept header allows no JSON answer."),
    429: _rate_limited("the token's rate limit (GNOSEM_TOKEN_RATE_LIMIT)"),
}
ERRORS = {
    400: OpenApiResponse(shapes.ErrorOut, description="A parameter is malformed; the message says which and why."),
    **ANY_REQUEST_ERRORS,
}
# What an operation taking a memory's fields as a JSON body may answer besides.
BODY_ERRORS = {
    413: OpenApiResponse(
        shapes.ErrorOut,
        description="The body is over the server's limit for API requests (DATA_UPLOAD_MAX_MEMORY_SIZE).",
    ),
    415: OpenApiResponse(shapes.ErrorOut, description="The body is not sent as application/json."),
}
QUOTA_REFUSED = OpenApiResponse(
    shapes.ErrorOut,
    description="A read token (`forbidden`), or the write would exceed the account's quota (`quota_exceeded`).",
)
SPACE_NOT_FOUND = {
    404: OpenApiResponse(shapes.ErrorOut, description="A `space` the token does not reach, or none of that name or id.")
}
SPACE_PARAMETER = OpenApiParameter(
    "space",
    str,
    description="Only this space (its name or id, as `GET /api/v1/spaces` lists them); default: every space the "
    "token reaches.",
)
FILTER_PARAMETERS = [
    OpenApiParameter("tags", str, description="Comma-separated; a memory must carry all of them."),
    OpenApiParameter("written_by", WRITTEN_BY_SCHEMA, description="Only memories written by this client."),
    # Strings, not `format: date-time`: a date alone (2025-06-01) is accepted too.
    OpenApiParameter("created_after", str, description="ISO 8601 date or date-time, inclusive."),
    OpenApiParameter("created_before", str, description="ISO 8601 date or date-time, exclusive."),
]
EXCLUDE_PARAMETER = OpenApiParameter(
    "exclude",
    str,
    description=(
        f"Comma-separated or repeated, at most {MAX_EXCLUDED}: words, identifiers, tags or names to leave out "
        "(exclude=Postgres for databases other than Postgres). Memories about them are left out, those naming "
        "them only in passing stay; negation written in the query is read the same way (docs/search.md)."
    ),
)
INCLUDE_SUPERSEDED_PARAMETER = OpenApiParameter(
    "include_superseded", bool, default=False, description="Include memories a later memory superseded."
)
MAX_TOKENS_PARAMETER = OpenApiParameter(
    "max_tokens",
    MAX_TOKENS_SCHEMA,
    description=(
        f"{MIN_MAX_TOKENS}-{MAX_MAX_TOKENS:,}: a token budget (ceil(characters / 4) of each `content`); only the "
        "memories that fit are returned, in order, and `cut_for_budget` lists the ids of the others."
    ),
)
RAW_PARAMETER = OpenApiParameter(
    "raw", bool, description="Return the text as written in `content`, even when a compressed form exists."
)
SEARCH_OPTION_PARAMETERS = [
    OpenApiParameter(
        "min_score",
        FRACTION_SCHEMA,
        default=0,
        description="0-1 (default 0): leave out results scoring below this (the best candidate scores 1.0 at most).",
    ),
    OpenApiParameter(
        "half_life_days",
        HALF_LIFE_DAYS_SCHEMA,
        description=(
            f"0-{MAX_HALF_LIFE_DAYS:,} (default: the server's GNOSEM_HALF_LIFE_DAYS, 30 unless configured): "
            "newer memories rank a little higher, the boost halving every this many days; 0 turns it off."
        ),
    ),
    OpenApiParameter(
        "diversity",
        FRACTION_SCHEMA,
        description=(
            "0-1 (default: the server's GNOSEM_DIVERSITY, 0.7 unless configured): how strongly near-duplicates "
            "of better results are pushed down (MMR's lambda); 0 = pure relevance."
        ),
    ),
    OpenApiParameter(
        "explain",
        bool,
        default=False,
        description="Add `explanation` to each result: how its score came about, signal by signal, factor by factor.",
    ),
]


def _listed(request: Request, name: str) -> list[str] | None:
    """A list parameter, given comma-separated (`tags=a,b`) or repeated (`tags=a&tags=b`); None when empty."""
    values = [item for value in request.query_params.getlist(name) for item in value.split(",") if item.strip()]
    return values or None


def _filters(request: Request) -> selectors.MemoryFilters:
    params = request.query_params
    return clean_filters(
        {
            "tags": _listed(request, "tags"),
            "written_by": params.get("written_by") or None,
            "created_after": params.get("created_after") or None,
            "created_before": params.get("created_before") or None,
            "include_superseded": _flag(request, "include_superseded"),
        }
    )


def _parsed_number(request: Request, name: str, kind: type[Number], what: str) -> Number | None:
    """The query parameter as `kind`; its range is for the caller's validation to check."""
    value = request.query_params.get(name)
    if value in (None, ""):
        return None
    try:
        return kind(value)
    except ValueError:
        raise ValidationError(name, f"{value!r} is not {what}.") from None


def _whole_number(request: Request, name: str) -> int | None:
    return _parsed_number(request, name, int, "a whole number")


def _number(request: Request, name: str) -> float | None:
    return _parsed_number(request, name, float, "a number")


def _flag(request: Request, name: str) -> bool:
    value = request.query_params.get(name, "false").lower()
    if value not in {"true", "false", "1", "0"}:
        raise ValidationError(name, "must be true or false.")
    return value in {"true", "1"}


def _reach(request: TokenRequest) -> Reach:
    """The token's reach, narrowed to the `space` the query names (if any)."""
    return token_reach(request.auth).narrowed(request.query_params.get("space"))


def _write_body(request: Request, fields: dict) -> dict:
    """The JSON object sent, holding only `fields`."""
    data = request.data
    if not isinstance(data, dict):
        raise ValidationError("body", 'must be a JSON object, like {"content": "...", "tags": ["..."]}.')
    unknown = set(data) - set(fields)
    if unknown:
        raise ValidationError(sorted(unknown)[0], f"is not a field here; send only {', '.join(sorted(fields))}.")
    return data


def _reached_space(request: TokenRequest, space_id: uuid.UUID) -> ReachedSpace:
    """The space with this id among those the token reaches; NotFound, in the words the space
    services use for a space the user is no member of, for any other (a token bound to other
    spaces reaches it no more than a stranger does)."""
    for space in token_reach(request.auth).spaces:
        if space.public_id == space_id:
            return space
    raise NotFound(f"No space with id {space_id}.")


def _unbound(request: TokenRequest, what: str) -> None:
    """PermissionDenied for a token bound to chosen spaces: it keeps to them, and neither makes nor
    joins others."""
    if not request.auth.all_spaces:
        raise PermissionDenied(
            f"This token is bound to chosen spaces and may not {what}: use a token that is not bound to spaces, "
            "or the dashboard."
        )


def _space_answer(request: TokenRequest, space_id: uuid.UUID, *, status_code: int = status.HTTP_200_OK) -> Response:
    """One reached space as `GET /spaces` lists it."""
    reach = token_reach(request.auth)
    [summary] = [summary for summary in selectors.space_summaries(reach) if summary.space.public_id == space_id]
    return Response(space_to_dict(summary, may_write=reach.may_write), status=status_code)


# What every operation on one space may answer besides, whatever its body.
SPACE_ERRORS = {
    **ERRORS,
    403: OpenApiResponse(shapes.ErrorOut, description="A read token, or a role there that does not allow it."),
    404: OpenApiResponse(shapes.ErrorOut, description="No space with this id among those the token reaches."),
}


class SpaceListView(APIView):
    @extend_schema(
        operation_id="spaces_list",
        summary="The spaces this token reaches, with the user's role, what each holds and the default write space",
        responses={200: shapes.SpacesOut, **ANY_REQUEST_ERRORS},
    )
    def get(self, request: TokenRequest) -> Response:
        reach = token_reach(request.auth)
        return Response(spaces_to_dict(selectors.space_summaries(reach), may_write=reach.may_write))

    @extend_schema(
        operation_id="spaces_create",
        summary="Make a team space, owned by the token's user",
        description="Who may is the server's choice (GNOSEM_TEAM_SPACES). A token bound to chosen spaces may not.",
        request=shapes.SpaceCreateIn,
        responses={
            201: shapes.SpaceOut,
            **ERRORS,
            **BODY_ERRORS,
            403: OpenApiResponse(
                shapes.ErrorOut,
                description="A read token, a token bound to spaces, or a user the server keeps from making spaces.",
            ),
        },
    )
    def post(self, request: TokenRequest) -> Response:
        data = _write_body(request, shapes.SPACE_CREATE_PROPERTIES)
        _unbound(request, "make spaces")
        space = team_space_create(user=request.user, name=data.get("name"), actor_token=request.auth)
        return _space_answer(request, space.public_id, status_code=status.HTTP_201_CREATED)


class SpaceDetailView(APIView):
    @extend_schema(
        operation_id="spaces_rename",
        summary="Rename a team space (its owners and admins)",
        request=shapes.SpaceRenameIn,
        responses={200: shapes.SpaceOut, **SPACE_ERRORS, **BODY_ERRORS},
    )
    def patch(self, request: TokenRequest, space_id: uuid.UUID) -> Response:
        data = _write_body(request, shapes.SPACE_CREATE_PROPERTIES)
        space = _reached_space(request, space_id)
        space_rename(user=request.user, space_id=space.public_id, name=data.get("name"), actor_token=request.auth)
        return _space_answer(request, space.public_id)

    @extend_schema(
        operation_id="spaces_destroy",
        summary="Delete a team space and everything in it (its owners), confirmed by its name",
        description="The space's exact name as `confirm_name`, in the body or the query string.",
        parameters=[OpenApiParameter("confirm_name", str, description="The space's name exactly.")],
        request=shapes.SpaceDeleteIn,
        responses={204: None, **SPACE_ERRORS, **BODY_ERRORS},
    )
    def delete(self, request: TokenRequest, space_id: uuid.UUID) -> Response:
        confirm_name = request.query_params.get("confirm_name")
        if confirm_name is None:
            confirm_name = _write_body(request, shapes.SPACE_DELETE_PROPERTIES).get("confirm_name")
        space = _reached_space(request, space_id)
        space_delete(user=request.user, space_id=space.public_id, confirm_name=confirm_name, actor_token=request.auth)
        return Response(status=status.HTTP_204_NO_CONTENT)


class SpaceMembersView(APIView):
    @extend_schema(
        operation_id="spaces_members",
        summary="A space's members and their roles (any member may read them)",
        responses={200: shapes.MembersOut, **ANY_REQUEST_ERRORS, 404: SPACE_ERRORS[404]},
    )
    def get(self, request: TokenRequest, space_id: uuid.UUID) -> Response:
        space = _reached_space(request, space_id)
        return Response(members_to_dict(space.name, space_members(user=request.user, space_id=space.public_id)))


class SpaceMemberView(APIView):
    @extend_schema(
        operation_id="spaces_members_update",
        summary="Give a member another role (owners and admins; only owners make or change owners)",
        request=shapes.RoleChangeIn,
        responses={200: shapes.MemberOut, **SPACE_ERRORS, **BODY_ERRORS},
    )
    def patch(self, request: TokenRequest, space_id: uuid.UUID, username: str) -> Response:
        data = _write_body(request, shapes.ROLE_CHANGE_PROPERTIES)
        space = _reached_space(request, space_id)
        membership = member_role_change(
            user=request.user,
            space_id=space.public_id,
            member=username,
            role=data.get("role"),
            actor_token=request.auth,
        )
        return Response(member_to_dict(membership))

    @extend_schema(
        operation_id="spaces_members_destroy",
        summary="Take a member out of the space (owners and admins; only owners remove owners)",
        responses={204: None, **SPACE_ERRORS},
    )
    def delete(self, request: TokenRequest, space_id: uuid.UUID, username: str) -> Response:
        space = _reached_space(request, space_id)
        member_remove(user=request.user, space_id=space.public_id, member=username, actor_token=request.auth)
        return Response(status=status.HTTP_204_NO_CONTENT)


class SpaceLeaveView(APIView):
    @extend_schema(
        operation_id="spaces_leave",
        summary="Leave a team space (any member but its last owner)",
        request=None,
        responses={204: None, **SPACE_ERRORS},
    )
    def post(self, request: TokenRequest, space_id: uuid.UUID) -> Response:
        space = _reached_space(request, space_id)
        space_leave(user=request.user, space_id=space.public_id, actor_token=request.auth)
        return Response(status=status.HTTP_204_NO_CONTENT)


class SpaceHandOverView(APIView):
    @extend_schema(
        operation_id="spaces_hand_over",
        summary="Make another member an owner, the acting owner becoming an admin; answers the members",
        request=shapes.HandOverIn,
        responses={200: shapes.MembersOut, **SPACE_ERRORS, **BODY_ERRORS},
    )
    def post(self, request: TokenRequest, space_id: uuid.UUID) -> Response:
        data = _write_body(request, shapes.HAND_OVER_PROPERTIES)
        space = _reached_space(request, space_id)
        space_hand_over(user=request.user, space_id=space.public_id, to=data.get("to"), actor_token=request.auth)
        return Response(members_to_dict(space.name, space_members(user=request.user, space_id=space.public_id)))


class SpaceKeyView(APIView):
    @extend_schema(
        operation_id="spaces_key",
        summary="The space's encryption key: its version, and how far a rotation is (owners)",
        responses={200: shapes.SpaceKeyOut, **ANY_REQUEST_ERRORS, 403: SPACE_ERRORS[403], 404: SPACE_ERRORS[404]},
    )
    def get(self, request: TokenRequest, space_id: uuid.UUID) -> Response:
        space = _reached_space(request, space_id)
        return Response(space_key_to_dict(space_key_state(user=request.user, space_id=space.public_id)))

    @extend_schema(
        operation_id="spaces_key_rotate",
        summary="Give the space a new encryption key and seal everything again under it, in the background (owners)",
        description="Search and writes keep working meanwhile; GET shows the progress. A rotation under way is "
        "answered as it stands.",
        request=None,
        responses={202: shapes.SpaceKeyOut, **ANY_REQUEST_ERRORS, 403: SPACE_ERRORS[403], 404: SPACE_ERRORS[404]},
    )
    def post(self, request: TokenRequest, space_id: uuid.UUID) -> Response:
        space = _reached_space(request, space_id)
        space_key_rotate(user=request.user, space_id=space.public_id, actor_token=request.auth)
        state = space_key_state(user=request.user, space_id=space.public_id)
        return Response(space_key_to_dict(state), status=status.HTTP_202_ACCEPTED)


class SpaceInvitationsView(APIView):
    @extend_schema(
        operation_id="spaces_invitations",
        summary="The space's invitations still usable, newest first (owners and admins)",
        responses={200: shapes.InvitationsOut, **ANY_REQUEST_ERRORS, 403: SPACE_ERRORS[403], 404: SPACE_ERRORS[404]},
    )
    def get(self, request: TokenRequest, space_id: uuid.UUID) -> Response:
        space = _reached_space(request, space_id)
        invitations = space_invitations(user=request.user, space_id=space.public_id)
        return Response({"invitations": [invitation_to_dict(invitation) for invitation in invitations]})

    @extend_schema(
        operation_id="spaces_invitations_create",
        summary="A single-use link that lets one person join as `role` (owners and admins)",
        description="The answer holds the link's secret, shown this once: send `url` to the person invited.",
        request=shapes.InvitationCreateIn,
        responses={201: shapes.IssuedInvitationOut, **SPACE_ERRORS, **BODY_ERRORS},
    )
    def post(self, request: TokenRequest, space_id: uuid.UUID) -> Response:
        data = _write_body(request, shapes.INVITATION_CREATE_PROPERTIES)
        space = _reached_space(request, space_id)
        issued = space_invitation_create(
            user=request.user,
            space_id=space.public_id,
            role=data.get("role"),
            days=data.get("days", INVITATION_DEFAULT_DAYS),
            actor_token=request.auth,
        )
        answer = {
            **invitation_to_dict(issued.invitation),
            "secret": issued.secret,
            "url": issued.url(public_base_url(request)),
        }
        return Response(answer, status=status.HTTP_201_CREATED)


class SpaceInvitationView(APIView):
    @extend_schema(
        operation_id="spaces_invitations_destroy",
        summary="Withdraw an unused invitation, so that its link stops working (owners and admins)",
        responses={
            204: None,
            **SPACE_ERRORS,
            404: OpenApiResponse(
                shapes.ErrorOut, description="No such space among those reached, or no such invitation."
            ),
        },
    )
    def delete(self, request: TokenRequest, space_id: uuid.UUID, invitation_id: uuid.UUID) -> Response:
        space = _reached_space(request, space_id)
        space_invitation_revoke(
            user=request.user, space_id=space.public_id, invitation_id=invitation_id, actor_token=request.auth
        )
        return Response(status=status.HTTP_204_NO_CONTENT)


class InvitationAcceptView(APIView):
    @extend_schema(
        operation_id="invitations_accept",
        summary="Join the space an invitation's secret invites to; answers the space",
        description="A token bound to chosen spaces may not: it would reach no further.",
        request=shapes.InvitationAcceptIn,
        responses={
            200: shapes.SpaceOut,
            **ERRORS,
            **BODY_ERRORS,
            403: OpenApiResponse(shapes.ErrorOut, description="A read token, or a token bound to spaces."),
            404: OpenApiResponse(shapes.ErrorOut, description="No invitation has this secret."),
        },
    )
    def post(self, request: TokenRequest) -> Response:
        data = _write_body(request, shapes.INVITATION_ACCEPT_PROPERTIES)
        _unbound(request, "join spaces")
        membership = space_invitation_accept(user=request.user, secret=data.get("secret"), actor_token=request.auth)
        return _space_answer(request, membership.space.public_id)


class MemoryListView(APIView):
    @extend_schema(
        operation_id="memories_list",
        summary="List memories, newest first",
        parameters=[
            OpenApiParameter("limit", LIMIT_SCHEMA, description=f"1-{MAX_LIST_LIMIT} (default {DEFAULT_LIST_LIMIT})."),
            OpenApiParameter("cursor", str, description="`next_cursor` of the previous page."),
            *FILTER_PARAMETERS,
            SPACE_PARAMETER,
            INCLUDE_SUPERSEDED_PARAMETER,
            MAX_TOKENS_PARAMETER,
            RAW_PARAMETER,
        ],
        responses={200: shapes.MemoryPageOut, **ERRORS, **SPACE_NOT_FOUND},
    )
    def get(self, request: TokenRequest) -> Response:
        page = selectors.memory_list(
            owner=_reach(request),
            filters=_filters(request),
            limit=clean_limit(_whole_number(request, "limit")),
            cursor=request.query_params.get("cursor") or None,
        )
        max_tokens = clean_max_tokens(_whole_number(request, "max_tokens"))
        return Response(memory_page_to_dict(page, raw=_flag(request, "raw"), max_tokens=max_tokens))

    @extend_schema(
        operation_id="memories_create",
        summary="Write a memory",
        description=(
            "Stored at once (201); embedding happens in the background (keyword search finds it meanwhile). The "
            "same text (case and spacing aside) as a current memory is not stored twice: that memory is returned "
            "(200, `duplicate: true`) with the new tags and writer added."
        ),
        request=shapes.MemoryCreateIn,
        responses={
            201: shapes.WrittenMemoryOut,
            200: OpenApiResponse(shapes.WrittenMemoryOut, description="The text was already stored."),
            **ERRORS,
            **SPACE_NOT_FOUND,
            **BODY_ERRORS,
            403: QUOTA_REFUSED,
        },
    )
    def post(self, request: TokenRequest) -> Response:
        data = _write_body(request, shapes.CREATE_PROPERTIES)
        memory = services.memory_write(
            owner=token_reach(request.auth),
            content=data.get("content"),
            tags=data.get("tags"),
            written_by=written_by_or_default(data.get("written_by"), token_name=request.auth.name),
            supersedes=data.get("supersedes"),
            space=data.get("space"),
        )
        location = reverse("api-memory", args=[memory.public_id])
        return Response(
            written_memory_to_dict(memory),
            status=status.HTTP_200_OK if memory.written_again else status.HTTP_201_CREATED,
            headers={"Location": location},
        )


class MemoryDetailView(APIView):
    @extend_schema(
        operation_id="memories_retrieve",
        summary="One memory",
        parameters=[RAW_PARAMETER],
        responses={200: shapes.MemoryOut, **ERRORS, 404: shapes.ErrorOut},
    )
    def get(self, request: TokenRequest, public_id: uuid.UUID) -> Response:
        memory = selectors.memory_get(owner=token_reach(request.auth), public_id=public_id)
        return Response(memory_to_dict(memory, raw=_flag(request, "raw")))

    @extend_schema(
        operation_id="memories_update",
        summary="Change a memory's content, tags, client or pin; mark others as superseded by it",
        description=(
            "New content is embedded again; searches use the old vectors until then. The version a change of "
            "text, tags or client replaces is kept (`GET .../history`)."
        ),
        request=shapes.MemoryUpdateIn,
        responses={200: shapes.MemoryOut, **ERRORS, **BODY_ERRORS, 403: QUOTA_REFUSED, 404: shapes.ErrorOut},
    )
    def patch(self, request: TokenRequest, public_id: uuid.UUID) -> Response:
        data = _write_body(request, shapes.UPDATE_PROPERTIES)
        memory = services.memory_update(owner=token_reach(request.auth), public_id=public_id, **data)
        return Response(memory_to_dict(memory))

    @extend_schema(
        operation_id="memories_destroy",
        summary="Delete a memory",
        responses={204: None, **ANY_REQUEST_ERRORS, 403: shapes.ErrorOut, 404: shapes.ErrorOut},
    )
    def delete(self, request: TokenRequest, public_id: uuid.UUID) -> Response:
        services.memory_delete(owner=token_reach(request.auth), public_id=public_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class MemorySearchView(APIView):
    @extend_schema(
        operation_id="memories_search",
        summary="Find memories by meaning and by exact words",
        parameters=[
            OpenApiParameter("query", QUERY_SCHEMA, required=True, description="What to look for."),
            OpenApiParameter(
                "top_k", TOP_K_SCHEMA, description=f"How many results, 1-{MAX_TOP_K} (default {DEFAULT_TOP_K})."
            ),
            *FILTER_PARAMETERS,
            SPACE_PARAMETER,
            EXCLUDE_PARAMETER,
            *SEARCH_OPTION_PARAMETERS,
            INCLUDE_SUPERSEDED_PARAMETER,
            MAX_TOKENS_PARAMETER,
            RAW_PARAMETER,
        ],
        responses={200: shapes.SearchOut, **ERRORS, **SPACE_NOT_FOUND},
    )
    def get(self, request: TokenRequest) -> Response:
        raw, explain = _flag(request, "raw"), _flag(request, "explain")
        max_tokens = clean_max_tokens(_whole_number(request, "max_tokens"))
        query, exclude = request.query_params.get("query"), _listed(request, "exclude")
        hits = search_hybrid(
            owner=_reach(request),
            query=query,
            top_k=_whole_number(request, "top_k"),
            filters=_filters(request),
            min_score=_number(request, "min_score"),
            half_life_days=_number(request, "half_life_days"),
            diversity=_number(request, "diversity"),
            exclude=exclude,
        )
        reading = read_query(query, clean_exclude(exclude))
        return Response(search_results_to_dict(hits, raw=raw, explain=explain, max_tokens=max_tokens, reading=reading))


def _memory_action(
    operation_id: str, summary: str, description: str, service: Callable[..., Memory], *, refusable: bool
) -> type[APIView]:
    """A POST on one memory that calls `service(owner=..., public_id=...)` and answers with the
    memory; `refusable` when the service refuses some memories (400)."""
    errors = ERRORS if refusable else ANY_REQUEST_ERRORS

    class MemoryActionView(APIView):
        @extend_schema(
            operation_id=operation_id,
            summary=summary,
            description=description,
            request=None,
            responses={200: shapes.MemoryOut, **errors, 403: shapes.ErrorOut, 404: shapes.ErrorOut},
        )
        def post(self, request: TokenRequest, public_id: uuid.UUID) -> Response:
            return Response(memory_to_dict(service(owner=token_reach(request.auth), public_id=public_id)))

    MemoryActionView.__name__ = MemoryActionView.__qualname__ = f"{operation_id.title().replace('_', '')}View"
    return MemoryActionView


MemoryMergeView = _memory_action(
    "memories_merge",
    "Merge a near-duplicate into the memory it restates",
    "It leaves search, lists, counts and the session context, stays stored, and `reinstate` brings it back. "
    "400 when the memory is not linked as a near-duplicate, or already supersedes the memory it restates "
    "(directly or through others: each would hide the other).",
    near_duplicates.memory_merge,
    refusable=True,
)
MemoryKeepApartView = _memory_action(
    "memories_keep_apart",
    "Keep a near-duplicate apart from the memory it was linked to",
    "The link goes (a merge is undone) and the two are never linked again.",
    near_duplicates.memory_keep_apart,
    refusable=True,
)
MemoryReinstateView = _memory_action(
    "memories_reinstate",
    "Make a superseded or merged memory current again",
    "It returns to search, lists, counts and the session context.",
    services.memory_reinstate,
    refusable=False,
)


class MemoryShareView(APIView):
    @extend_schema(
        operation_id="memories_share",
        summary="Share a memory into another space: a copy, or with `move` the memory itself",
        description=(
            "A copy is a new memory (201) the token's user writes in that space; a move keeps the memory's id "
            "and needs the right to write where it is too (200). Either carries where it came from "
            "(`shared_from`, `shared_by`). Text already current there is not stored twice: that memory is "
            "returned (200, `duplicate: true`; a move then removes the memory moved). A superseded memory, the "
            "space it is in, or a move onto an id the space holds already is refused (400)."
        ),
        request=shapes.MemoryShareIn,
        responses={
            201: shapes.WrittenMemoryOut,
            200: OpenApiResponse(shapes.WrittenMemoryOut, description="Moved, or the text was there already."),
            **ERRORS,
            **BODY_ERRORS,
            403: OpenApiResponse(
                shapes.ErrorOut,
                description="A read token, a role that does not allow writing there (or, to move, here), or the "
                "quota (`quota_exceeded`).",
            ),
            404: OpenApiResponse(shapes.ErrorOut, description="No such memory, or no such space, among those reached."),
        },
    )
    def post(self, request: TokenRequest, public_id: uuid.UUID) -> Response:
        data = _write_body(request, shapes.SHARE_PROPERTIES)
        move = data.get("move", False)
        memory = memory_share(
            owner=token_reach(request.auth),
            public_id=public_id,
            space=data.get("space"),
            move=move,
            actor_token=request.auth,
        )
        created = not move and not memory.written_again
        return Response(
            written_memory_to_dict(memory),
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
            headers={"Location": reverse("api-memory", args=[memory.public_id])},
        )


class MemoryHistoryView(APIView):
    @extend_schema(
        operation_id="memories_history",
        summary="A memory and its earlier versions, newest first",
        responses={200: shapes.HistoryOut, **ANY_REQUEST_ERRORS, 404: shapes.ErrorOut},
    )
    def get(self, request: TokenRequest, public_id: uuid.UUID) -> Response:
        return Response(
            history_to_dict(*selectors.memory_history(owner=token_reach(request.auth), public_id=public_id))
        )


class MemoryCountView(APIView):
    @extend_schema(
        operation_id="memories_count",
        summary="How many memories match: exact counts, optionally about a topic and grouped",
        parameters=[
            OpenApiParameter(
                "query",
                QUERY_SCHEMA,
                description=(
                    "Count only memories about this topic: an own passage with similarity at least "
                    f"{ABOUT_MIN_SIMILARITY:g} to it, or containing every word of it."
                ),
            ),
            OpenApiParameter("group_by", str, enum=list(GROUPINGS), description="Also count per group."),
            *FILTER_PARAMETERS,
            SPACE_PARAMETER,
            INCLUDE_SUPERSEDED_PARAMETER,
        ],
        responses={200: shapes.CountOut, **ERRORS, **SPACE_NOT_FOUND},
    )
    def get(self, request: TokenRequest) -> Response:
        params = request.query_params
        counted = memory_count(
            owner=_reach(request),
            filters=_filters(request),
            query=params.get("query") if "query" in params else None,
            group_by=params.get("group_by") or None,
        )
        return Response(counted.as_dict())


NOTE_TAGS_PARAMETER = OpenApiParameter("tags", str, description="Only notes carrying all of these (comma-separated).")


class NoteListView(APIView):
    @extend_schema(
        operation_id="notes_list",
        summary="List notes, most recently changed first (without their text)",
        parameters=[
            OpenApiParameter("limit", LIMIT_SCHEMA, description=f"1-{MAX_LIST_LIMIT} (default {DEFAULT_LIST_LIMIT})."),
            OpenApiParameter("cursor", str, description="`next_cursor` of the previous page."),
            NOTE_TAGS_PARAMETER,
            SPACE_PARAMETER,
        ],
        responses={200: shapes.NotePageOut, **ERRORS, **SPACE_NOT_FOUND},
    )
    def get(self, request: TokenRequest) -> Response:
        page = notes.note_list(
            owner=_reach(request),
            tags=_listed(request, "tags"),
            limit=_whole_number(request, "limit"),
            cursor=request.query_params.get("cursor") or None,
        )
        return Response(note_page_to_dict(page))

    @extend_schema(
        operation_id="notes_create",
        summary="Write a note",
        description="Stored at once (201); its passages are embedded in the background (`indexing_status`).",
        request=shapes.NoteCreateIn,
        responses={201: shapes.NoteOut, **ERRORS, **SPACE_NOT_FOUND, **BODY_ERRORS, 403: QUOTA_REFUSED},
    )
    def post(self, request: TokenRequest) -> Response:
        data = _write_body(request, shapes.NOTE_CREATE_PROPERTIES)
        note = notes.note_write(
            owner=token_reach(request.auth),
            title=data.get("title"),
            content=data.get("content"),
            tags=data.get("tags"),
            space=data.get("space"),
        )
        location = reverse("api-note", args=[note.public_id])
        return Response(note_to_dict(note), status=status.HTTP_201_CREATED, headers={"Location": location})


class NoteDetailView(APIView):
    @extend_schema(
        operation_id="notes_retrieve",
        summary="A note with its text (from `start`, at most `max_tokens` of it)",
        parameters=[
            OpenApiParameter("start", NOTE_START_SCHEMA, description="Read from this character on (default 0)."),
            MAX_TOKENS_PARAMETER,
        ],
        responses={200: shapes.NoteReadOut, **ERRORS, 404: shapes.ErrorOut},
    )
    def get(self, request: TokenRequest, public_id: uuid.UUID) -> Response:
        note = notes.note_get(owner=token_reach(request.auth), public_id=public_id)
        start = notes.clean_note_start(_whole_number(request, "start"), note=note)
        max_tokens = clean_max_tokens(_whole_number(request, "max_tokens"))
        return Response(note_read_to_dict(note, start=start, max_tokens=max_tokens))

    @extend_schema(
        operation_id="notes_update",
        summary="Change a note's title, text or tags",
        request=shapes.NoteUpdateIn,
        responses={200: shapes.NoteOut, **ERRORS, **BODY_ERRORS, 403: QUOTA_REFUSED, 404: shapes.ErrorOut},
    )
    def patch(self, request: TokenRequest, public_id: uuid.UUID) -> Response:
        data = _write_body(request, shapes.NOTE_UPDATE_PROPERTIES)
        return Response(note_to_dict(notes.note_update(owner=token_reach(request.auth), public_id=public_id, **data)))

    @extend_schema(
        operation_id="notes_destroy",
        summary="Delete a note",
        responses={204: None, **ANY_REQUEST_ERRORS, 403: shapes.ErrorOut, 404: shapes.ErrorOut},
    )
    def delete(self, request: TokenRequest, public_id: uuid.UUID) -> Response:
        notes.note_delete(owner=token_reach(request.auth), public_id=public_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class SemanticSearchView(APIView):
    @extend_schema(
        operation_id="semantic_search",
        summary="Find notes (each with its best passage) and memories by meaning and by exact words",
        parameters=[
            OpenApiParameter("query", QUERY_SCHEMA, required=True, description="What to look for."),
            OpenApiParameter("kinds", str, description="notes, memories or notes,memories (the default)."),
            OpenApiParameter(
                "top_k", TOP_K_SCHEMA, description=f"How many results, 1-{MAX_TOP_K} (default {DEFAULT_TOP_K})."
            ),
            OpenApiParameter("tags", str, description="Only notes and memories carrying all of these."),
            EXCLUDE_PARAMETER,
            SPACE_PARAMETER,
        ],
        responses={200: shapes.SemanticOut, **ERRORS, **SPACE_NOT_FOUND},
    )
    def get(self, request: TokenRequest) -> Response:
        hits = semantic_search(
            owner=_reach(request),
            query=request.query_params.get("query"),
            kinds=_listed(request, "kinds"),
            top_k=_whole_number(request, "top_k"),
            tags=_listed(request, "tags"),
            exclude=_listed(request, "exclude"),
        )
        return Response(semantic_results_to_dict(hits))


class GraphExploreView(APIView):
    @extend_schema(
        operation_id="graph_explore",
        summary="What is known about one entity, or around what a query finds: its memories and its neighbours",
        description=(
            "Give `entity` (a name), `entity_id` or `query`. Entities are extracted from each memory's text, tags "
            "and compressed facts; two are linked by the current memories mentioning both. The answer's memories "
            "are the starting entities' own first (from a query, its results mentioning them, best first), then "
            "those linking them to their neighbours. An unknown entity is 404 (an unknown name's message names the "
            "closest names there are)."
        ),
        parameters=[
            OpenApiParameter("entity", str, description="The entity to start from (case and plurals do not matter)."),
            OpenApiParameter(
                "entity_id", OpenApiTypes.UUID, description="Start from the entity with this id (as `entities` give)."
            ),
            OpenApiParameter("query", QUERY_SCHEMA, description="Start from the entities of its best results."),
            OpenApiParameter("depth", int, enum=list(range(1, MAX_DEPTH + 1)), description="Steps (default 1)."),
            OpenApiParameter(
                "limit",
                int,
                description=f"The most entities, 1-{MAX_ENTITY_LIMIT} (default {DEFAULT_ENTITY_LIMIT}).",
            ),
            MAX_TOKENS_PARAMETER,
            SPACE_PARAMETER,
        ],
        responses={
            200: shapes.GraphOut,
            **ERRORS,
            404: OpenApiResponse(
                shapes.ErrorOut, description="No entity of that name or id; for a name, the message names close ones."
            ),
        },
    )
    def get(self, request: TokenRequest) -> Response:
        params = request.query_params
        max_tokens = clean_max_tokens(_whole_number(request, "max_tokens"))
        view = graph_explore(
            owner=_reach(request),
            entity=params.get("entity") if "entity" in params else None,
            entity_id=params.get("entity_id") if "entity_id" in params else None,
            query=params.get("query") if "query" in params else None,
            depth=_whole_number(request, "depth"),
            limit=_whole_number(request, "limit"),
            max_tokens=max_tokens,
        )
        return Response(graph_to_dict(view))


class SessionContextView(APIView):
    @extend_schema(
        operation_id="context",
        summary="What an assistant should know at the start of a conversation, within a token budget",
        description=(
            "Pinned memories, the memories written since this client (`written_by`, default: the token's name) "
            "last wrote one, and with `query` the most relevant ones, as one text block of numbered lines plus "
            "the ids behind them. Superseded memories are left out."
        ),
        parameters=[
            OpenApiParameter("query", QUERY_SCHEMA, description="The first request or topic of the conversation."),
            OpenApiParameter(
                "max_tokens",
                MAX_TOKENS_SCHEMA,
                description=f"The most tokens the text may take (default {DEFAULT_SESSION_MAX_TOKENS:,}).",
            ),
            OpenApiParameter("written_by", WRITTEN_BY_SCHEMA, description="The client whose last memory dates 'new'."),
            SPACE_PARAMETER,
        ],
        responses={200: shapes.SessionOut, **ERRORS, **SPACE_NOT_FOUND},
    )
    def get(self, request: TokenRequest) -> Response:
        params = request.query_params
        context = session_start(
            owner=_reach(request),
            client=written_by_or_default(params.get("written_by") or None, token_name=request.auth.name),
            query=params.get("query") if "query" in params else None,
            max_tokens=_whole_number(request, "max_tokens"),
        )
        return Response(context.as_dict())


class FileFormatNegotiation(DefaultContentNegotiation):
    """Content negotiation for the views whose `?format=` names a file's format (export, import),
    not a renderer: only the Accept header chooses the answer's."""

    settings = SimpleNamespace(URL_FORMAT_OVERRIDE=None)  # type: ignore[assignment]  # the one setting it reads


class ExportView(APIView):
    content_negotiation_class = FileFormatNegotiation

    @extend_schema(
        operation_id="export",
        summary="Every memory and note of one space as one file (a Gnosem export document by default, streamed)",
        description=(
            "The space named by `space`, or the token's default write space. A team space is exported whole by "
            "its owners and admins; for its other members, what they wrote there. `format` picks the file: "
            "`gnosem` (the export document, JSON) or `mcp-memory` (the MCP reference memory server's memory.jsonl)."
        ),
        parameters=[
            OpenApiParameter(
                "space", str, description="The space to export (its name or id); default: the default write space."
            ),
            OpenApiParameter("format", str, enum=list(EXPORT_FORMATS), description="The format; default gnosem."),
        ],
        responses={
            (200, "application/json"): OpenApiTypes.OBJECT,
            (200, "application/x-ndjson"): OpenApiTypes.STR,
            (200, "application/zip"): OpenApiTypes.BINARY,
            **ERRORS,
            **SPACE_NOT_FOUND,
        },
    )
    def get(self, request: TokenRequest) -> StreamingHttpResponse:
        return export_response(
            token_reach(request.auth),
            request.query_params.get("space"),
            format=request.query_params.get("format"),
            request=request,
            token=request.auth,
        )


def _import_too_large() -> Response:
    """413 for a file to import over GNOSEM_IMPORT_MAX_BYTES, judged before it is read."""
    limit = import_limit_description()
    return Response(
        error_body("too_large", f"The body is over the {limit} import limit; nothing was imported."),
        status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
    )


def _import_body(request: TokenRequest) -> bytes:
    """The file to import, read from the stream itself: request.data would stop at Django's small
    in-memory body limit."""
    return request.stream.read() if request.stream else b""


class ImportView(APIView):
    content_negotiation_class = FileFormatNegotiation
    throttle_classes = [TokenRateThrottle, ImportRateThrottle]

    @extend_schema(
        operation_id="import",
        summary="Import a Gnosem export document or another memory tool's file, all or nothing",
        description=(
            "The body is an export document (as `GET /api/v1/export` returns) or the file of another memory tool "
            "(`format`; recognised from the file when not given). It is checked whole first; on any problem nothing "
            "is imported. Duplicates are skipped: from a Gnosem export, the same text written at the same time; "
            "from another tool, the same text. With `preview=true` nothing is written: the answer says what the "
            "import would do (ImportPreviewOut). Bodies over the server's import limit (GNOSEM_IMPORT_MAX_BYTES) "
            "are refused with 413 before they are read."
        ),
        request=OpenApiTypes.BINARY,
        parameters=[
            OpenApiParameter(
                "space", str, description="The space to import into (its name or id); default: the default write space."
            ),
            OpenApiParameter(
                "format", str, enum=list(IMPORT_FORMATS), description="The file's format; default: recognised."
            ),
            OpenApiParameter("preview", bool, description="Only say what the import would do."),
        ],
        responses={
            200: OpenApiResponse(
                PolymorphicProxySerializer(
                    "ImportOut", [shapes.ImportReportOut, shapes.ImportPreviewOut], resource_type_field_name=None
                ),
                description="The import's report, or with `preview=true` what it would do.",
            ),
            **ERRORS,
            **SPACE_NOT_FOUND,
            403: QUOTA_REFUSED,
            429: _rate_limited("the token's rate limit or the account's import limit (GNOSEM_IMPORT_RATE_LIMIT)"),
            413: OpenApiResponse(shapes.ErrorOut, description="Body over the import limit."),
        },
    )
    def post(self, request: TokenRequest) -> Response:
        if exceeds_import_limit(request.META.get("CONTENT_LENGTH")):
            return _import_too_large()
        data = _import_body(request)
        owner, file_format = token_reach(request.auth), request.query_params.get("format")
        space = request.query_params.get("space")
        file = read_import_file(data, file_format)
        if _flag(request, "preview"):
            return Response(import_file_preview(owner=owner, file=file, space=space).as_dict())
        report = import_file(owner=owner, file=file, space=space)
        activity_record(
            owner=request.user,
            action=ActivityAction.IMPORTED,
            token=request.auth,
            detail=report.as_dict(),
            request=request,
        )
        return Response(report.as_dict())


IMPORT_JOB_NOT_FOUND = OpenApiResponse(shapes.ErrorOut, description="No import of this id of the token's user.")
IMPORT_JOB_FILE_PARAMETERS = [
    OpenApiParameter("space", str, description="The space to import into (its name or id); default: the default one."),
    OpenApiParameter("format", str, enum=list(IMPORT_FORMATS), description="The file's format; default: recognised."),
    OpenApiParameter("name", str, description="The file's name, shown with the import."),
]


class ImportJobsView(APIView):
    content_negotiation_class = FileFormatNegotiation
    throttle_classes = [TokenRateThrottle, ImportRateThrottle]

    @extend_schema(
        operation_id="imports_create",
        summary="Read, check and preview a file for import, in the background once started",
        description=(
            "The body is a Gnosem export document or another memory tool's file (`format`, recognised when not "
            "given). It is read and checked whole: a file that would be refused is answered 400 and nothing is "
            "kept. Otherwise the answer is the import, `previewed`, with what it would do; "
            "`POST /api/v1/imports/{id}/start` starts it and `GET /api/v1/imports/{id}` follows it."
        ),
        request=OpenApiTypes.BINARY,
        parameters=IMPORT_JOB_FILE_PARAMETERS,
        responses={
            201: shapes.ImportJobOut,
            **ERRORS,
            **SPACE_NOT_FOUND,
            403: QUOTA_REFUSED,
            413: OpenApiResponse(shapes.ErrorOut, description="Body over the import limit."),
            429: _rate_limited("the token's rate limit or the account's import limit (GNOSEM_IMPORT_RATE_LIMIT)"),
        },
    )
    def post(self, request: TokenRequest) -> Response:
        if exceeds_import_limit(request.META.get("CONTENT_LENGTH")):
            return _import_too_large()
        job = import_job_create(
            owner=token_reach(request.auth),
            data=_import_body(request),
            format=request.query_params.get("format"),
            space=request.query_params.get("space"),
            file_name=request.query_params.get("name") or "",
            request=request,
            token=request.auth,
        )
        return Response(import_job_to_dict(job), status=status.HTTP_201_CREATED)


class ImportJobView(APIView):
    @extend_schema(
        operation_id="imports_get",
        summary="An import: its preview, then its progress, then its report",
        responses={200: shapes.ImportJobOut, **ANY_REQUEST_ERRORS, 404: IMPORT_JOB_NOT_FOUND},
    )
    def get(self, request: TokenRequest, public_id: uuid.UUID) -> Response:
        return Response(import_job_to_dict(import_job_get(owner=token_reach(request.auth), public_id=public_id)))


class ImportJobStartView(APIView):
    @extend_schema(
        operation_id="imports_start",
        summary="Start a previewed import in the background (one already started is answered as it stands)",
        request=None,
        responses={
            202: shapes.ImportJobOut,
            **ANY_REQUEST_ERRORS,
            404: IMPORT_JOB_NOT_FOUND,
        },
    )
    def post(self, request: TokenRequest, public_id: uuid.UUID) -> Response:
        job = import_job_start(owner=token_reach(request.auth), public_id=public_id)
        return Response(import_job_to_dict(job), status=status.HTTP_202_ACCEPTED)


def _allowance(name: str, what: str) -> serializers.Serializer:
    return inline_serializer(
        name,
        {
            "used": serializers.IntegerField(help_text=f"{what} stored now."),
            "limit": serializers.IntegerField(allow_null=True, help_text="The quota's limit; null: unlimited."),
        },
    )


def _stored(name: str, what: str) -> serializers.Serializer:
    return inline_serializer(
        name,
        {
            "count": serializers.IntegerField(help_text=f"How many {what}."),
            "characters": serializers.IntegerField(help_text="Their characters."),
            "tokens": serializers.IntegerField(help_text="Their estimated tokens (ceil(characters / 4) each)."),
        },
        help_text=f"The {what} stored.",
    )


class UsageView(APIView):
    @extend_schema(
        operation_id="usage",
        summary="What the account stores, next to its quota",
        description=(
            "Memories and notes together, characters and estimated tokens (ceil(characters / 4) per text), "
            "each with the quota's limit (null: unlimited). Every stored text counts: memories, the earlier "
            "versions edits keep, compressed forms and notes; `stored` breaks them down. Writes over a limit "
            "are refused with 403 `quota_exceeded`."
        ),
        responses={
            200: inline_serializer(
                "UsageOut",
                {
                    "memories": _allowance("MemoriesAllowance", "Memories and notes together"),
                    "characters": _allowance("CharactersAllowance", "Characters of every stored text"),
                    "tokens": _allowance("TokensAllowance", "Estimated tokens of every stored text"),
                    "stored": inline_serializer(
                        "StoredOut",
                        {
                            "memories": _stored("StoredMemories", "memories"),
                            "revisions": _stored("StoredRevisions", "earlier versions kept of memories"),
                            "compressed": _stored("StoredCompressed", "compressed forms of memories"),
                            "notes": _stored("StoredNotes", "notes"),
                        },
                    ),
                },
            ),
            **ANY_REQUEST_ERRORS,
        },
    )
    def get(self, request: TokenRequest) -> Response:
        return Response(quotas.quota_usage(request.user).as_dict())


@csrf_exempt  # changes nothing; without it a token client's POST gets Django's HTML CSRF page
def api_not_found(request: HttpRequest, path: str) -> JsonResponse:
    """Unknown paths under /api/v1/ answer JSON too, whatever the method."""
    return JsonResponse(error_body("not_found", f"No API endpoint /api/v1/{path}; see /api/v1/docs."), status=404)
