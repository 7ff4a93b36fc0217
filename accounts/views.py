"""Account pages beyond allauth's: API tokens and connected applications, "connect a client" and
the activity log. Views are thin: the token functions in accounts.tokens and accounts.oauth.connections
and the selectors in accounts.activity do the work."""

import uuid

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from accounts.activity import activity_for_owner
from accounts.binding import SpaceBindingForm
from accounts.connect import client_snippets, connector_guides, reaches_connectors
from accounts.models import TokenScope
from accounts.oauth.connections import connection_list, connection_revoke, redirect_host
from accounts.oauth.urls_for import mcp_resource
from accounts.reach import reach_of
from accounts.tokens import MAX_NAME_CHARS, token_create, token_list, token_revoke
from gnosem.errors import NotFound, ValidationError
from gnosem.types import SignedInRequest


@login_required
@require_http_methods(["GET", "POST"])
def tokens(request: SignedInRequest) -> HttpResponse:
    """List the user's tokens and connections with the spaces each reaches; POST creates a token
    (for all the user's spaces or those ticked) and shows it, this once, with client snippets."""
    reach = reach_of(request.user)
    context = {
        "scopes": TokenScope.values,
        "max_name_chars": MAX_NAME_CHARS,
        "issued": None,
        "error": None,
        "form": {"name": "", "scope": "write"},
        "binding": SpaceBindingForm(choices=reach.spaces),
    }
    if request.method == "POST":
        form = {"name": request.POST.get("name", ""), "scope": request.POST.get("scope", "")}
        binding = SpaceBindingForm.from_post(reach, request.POST)
        try:
            spaces, default_space = binding.arguments()
            issued = token_create(
                owner=request.user,
                name=form["name"],
                scope=form["scope"],
                spaces=spaces,
                default_space=default_space,
                request=request,
            )
        except (ValidationError, NotFound) as error:
            context.update(error=str(error), form=form, binding=binding)
        else:
            context["issued"] = issued
            context["snippets"] = client_snippets(mcp_url=mcp_resource(request), token=issued.secret)
    context["tokens"] = token_list(owner=request.user)
    context["connections"] = [
        (connection, redirect_host(connection.oauth_client)) for connection in connection_list(owner=request.user)
    ]
    response = render(request, "accounts/tokens.html", context, status=400 if context["error"] else 200)
    if context["issued"]:
        response["Cache-Control"] = "no-store"  # the only copy of the secret: never cached
    return response


@login_required
@require_POST
def token_revoke_view(request: SignedInRequest, public_id: uuid.UUID) -> HttpResponse:
    try:
        token = token_revoke(owner=request.user, public_id=public_id, request=request)
    except NotFound:
        raise Http404("No such token.") from None
    messages.success(request, f"Token “{token.name}” is revoked; clients using it are refused from now on.")
    return redirect("tokens")


@login_required
@require_POST
def connection_revoke_view(request: SignedInRequest, public_id: uuid.UUID) -> HttpResponse:
    try:
        connection = connection_revoke(owner=request.user, public_id=public_id, request=request)
    except NotFound:
        raise Http404("No such connected application.") from None
    messages.success(request, f"“{connection.name}” is disconnected; it is refused from its next request on.")
    return redirect("tokens")


@login_required
@require_http_methods(["GET"])
def connect(request: SignedInRequest) -> HttpResponse:
    """How each MCP client connects: the steps for those that take the URL alone, and configuration
    for those that take a token, with a placeholder where a new token goes."""
    mcp_url = mcp_resource(request)
    return render(
        request,
        "accounts/connect.html",
        {
            "mcp_url": mcp_url,
            "guides": connector_guides(mcp_url=mcp_url),
            "reaches_connectors": reaches_connectors(mcp_url),
            "snippets": client_snippets(mcp_url=mcp_url, token=None),
            "max_name_chars": MAX_NAME_CHARS,
            "binding": SpaceBindingForm(choices=reach_of(request.user).spaces),
        },
    )


ACTIVITY_PAGE_SIZE = 50


@login_required
@require_http_methods(["GET"])
def activity(request: SignedInRequest) -> HttpResponse:
    """The user's own activity log, newest first, 50 a page."""
    page = Paginator(activity_for_owner(request.user), ACTIVITY_PAGE_SIZE).get_page(request.GET.get("page"))
    return render(
        request,
        "accounts/activity.html",
        {"page": page, "retention_days": settings.GNOSEM_ACTIVITY_RETENTION_DAYS},
    )
