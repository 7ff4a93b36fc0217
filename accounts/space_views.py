"""The Spaces pages: the user's spaces, one space with its members and invitations, and the
invitation link. Views are thin: the services in accounts.spaces decide and refuse; a refusal is
shown on the page as the service words it, and changes nothing.

A space the user is not a member of is a 404, exactly like one that does not exist.
"""

import uuid
from collections.abc import Callable

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from accounts.models import MAX_SPACE_NAME_CHARS, Role, SpaceKind
from accounts.oauth.urls_for import public_base_url
from accounts.spaces import (
    INVITABLE_ROLES,
    INVITATION_DEFAULT_DAYS,
    INVITATION_MAX_DAYS,
    SPACE_ACTIVITY_SHOWN,
    IssuedSpaceInvitation,
    SpaceOfUser,
    member_remove,
    member_role_change,
    space_activity,
    space_delete,
    space_hand_over,
    space_invitation_accept,
    space_invitation_create,
    space_invitation_of_link,
    space_invitation_revoke,
    space_invitations,
    space_leave,
    space_members,
    space_rename,
    spaces_of,
    team_space_create,
    team_space_refusal,
)
from gnosem.errors import GnosemError, NotFound, ValidationError
from gnosem.types import SignedInRequest


def _refusal(error: GnosemError) -> str:
    """A service's refusal as a page says it: a sentence, without the name of the field it is about."""
    text = error.message if isinstance(error, ValidationError) else str(error)
    return text[:1].upper() + text[1:]


def _space_of(request: SignedInRequest, space_id: uuid.UUID) -> SpaceOfUser:
    """The user's space with this id, with their role; a 404 for any other, as for one that does not exist."""
    for entry in spaces_of(request.user):
        if entry.space.public_id == space_id:
            return entry
    raise Http404("No such space.")


@login_required
@require_http_methods(["GET", "POST"])
def spaces(request: SignedInRequest) -> HttpResponse:
    """The user's spaces; POST makes a team space and opens it."""
    name = ""
    status = 200
    if request.method == "POST":
        name = request.POST.get("name", "")
        try:
            space = team_space_create(user=request.user, name=name, request=request)
        except GnosemError as error:
            messages.error(request, _refusal(error))
            status = 400
        else:
            messages.success(request, f"“{space.name}” is made, with you as its owner: invite its members below.")
            return redirect("space", space_id=space.public_id)
    context = {
        "spaces": spaces_of(request.user),
        "refusal": team_space_refusal(request.user),
        "name": name,
        "max_name_chars": MAX_SPACE_NAME_CHARS,
    }
    return render(request, "accounts/spaces.html", context, status=status)


def _space_page(
    request: SignedInRequest, entry: SpaceOfUser, issued: IssuedSpaceInvitation | None = None
) -> HttpResponse:
    """One space's page as its member sees it: the forms shown are those the member's role allows."""
    space_id = entry.space.public_id
    is_team = entry.space.kind == SpaceKind.TEAM
    manages = entry.role in (Role.OWNER, Role.ADMIN)
    invitable_roles = [role.value for role in INVITABLE_ROLES]
    context = {
        "entry": entry,
        "space": entry.space,
        "is_team": is_team,
        "is_owner": entry.role == Role.OWNER,
        "manages": manages,
        "members": space_members(user=request.user, space_id=space_id),
        "invitations": space_invitations(user=request.user, space_id=space_id) if is_team and manages else [],
        "activity": space_activity(user=request.user, space_id=space_id)[:SPACE_ACTIVITY_SHOWN]
        if is_team and manages
        else [],
        "retention_days": settings.GNOSEM_ACTIVITY_RETENTION_DAYS,
        # The roles a member's role may be changed to: only owners make owners.
        "roles": Role.values if entry.role == Role.OWNER else invitable_roles,
        "invitable_roles": invitable_roles,
        "default_days": INVITATION_DEFAULT_DAYS,
        "max_days": INVITATION_MAX_DAYS,
        "max_name_chars": MAX_SPACE_NAME_CHARS,
        "issued_url": issued.url(public_base_url(request)) if issued else None,
        "issued": issued,
    }
    response = render(request, "accounts/space_detail.html", context)
    if issued:
        response["Cache-Control"] = "no-store"  # the only copy of the link: never cached
    return response


@login_required
@require_http_methods(["GET"])
def space(request: SignedInRequest, space_id: uuid.UUID) -> HttpResponse:
    """One of the user's spaces: its members, and what the user's role lets them do there."""
    try:
        return _space_page(request, _space_of(request, space_id))
    except NotFound:  # the member was removed while the page was read
        raise Http404("No such space.") from None


def _act(
    request: SignedInRequest, space_id: uuid.UUID, act: Callable[[SpaceOfUser], str], *, gone_after: bool = False
) -> HttpResponse:
    """Make one change to a space the user belongs to: `act` makes it and says what was done, shown
    on the space's page (on the Spaces page where the change takes the space out of the user's
    reach, `gone_after`). A refusal is shown on the space's page."""
    entry = _space_of(request, space_id)
    try:
        done = act(entry)
    except GnosemError as error:
        messages.error(request, _refusal(error))
        return redirect("space", space_id=space_id)
    messages.success(request, done)
    return redirect("spaces") if gone_after else redirect("space", space_id=space_id)


@login_required
@require_POST
def space_rename_view(request: SignedInRequest, space_id: uuid.UUID) -> HttpResponse:
    def act(entry: SpaceOfUser) -> str:
        space = space_rename(user=request.user, space_id=space_id, name=request.POST.get("name"), request=request)
        return f"The space is called “{space.name}” now."

    return _act(request, space_id, act)


@login_required
@require_POST
def space_delete_view(request: SignedInRequest, space_id: uuid.UUID) -> HttpResponse:
    def act(entry: SpaceOfUser) -> str:
        confirm_name = request.POST.get("confirm_name")
        space_delete(user=request.user, space_id=space_id, confirm_name=confirm_name, request=request)
        return f"“{entry.space.name}” is deleted, with everything it held."

    return _act(request, space_id, act, gone_after=True)


@login_required
@require_POST
def space_leave_view(request: SignedInRequest, space_id: uuid.UUID) -> HttpResponse:
    def act(entry: SpaceOfUser) -> str:
        space_leave(user=request.user, space_id=space_id, request=request)
        return f"You left “{entry.space.name}”: nothing in it is within your reach any more."

    return _act(request, space_id, act, gone_after=True)


@login_required
@require_POST
def space_hand_over_view(request: SignedInRequest, space_id: uuid.UUID) -> HttpResponse:
    def act(entry: SpaceOfUser) -> str:
        to = request.POST.get("to")
        space_hand_over(user=request.user, space_id=space_id, to=to, request=request)
        return f"{to} owns “{entry.space.name}” now; you are one of its admins."

    return _act(request, space_id, act)


@login_required
@require_POST
def member_role_view(request: SignedInRequest, space_id: uuid.UUID) -> HttpResponse:
    def act(entry: SpaceOfUser) -> str:
        membership = member_role_change(
            user=request.user,
            space_id=space_id,
            member=request.POST.get("member"),
            role=request.POST.get("role"),
            request=request,
        )
        return f"{membership.user.username}'s role is {membership.role} now."

    return _act(request, space_id, act)


@login_required
@require_POST
def member_remove_view(request: SignedInRequest, space_id: uuid.UUID) -> HttpResponse:
    def act(entry: SpaceOfUser) -> str:
        member = request.POST.get("member")
        member_remove(user=request.user, space_id=space_id, member=member, request=request)
        return f"{member} is no longer a member: their next request reaches nothing in “{entry.space.name}”."

    return _act(request, space_id, act)


@login_required
@require_POST
def invitation_create_view(request: SignedInRequest, space_id: uuid.UUID) -> HttpResponse:
    """Make an invitation link and show it, this once, on the space's page."""
    entry = _space_of(request, space_id)
    try:
        issued = space_invitation_create(
            user=request.user,
            space_id=space_id,
            role=request.POST.get("role"),
            days=_whole_number(request.POST.get("days", "")),
            request=request,
        )
    except GnosemError as error:
        messages.error(request, _refusal(error))
        return redirect("space", space_id=space_id)
    return _space_page(request, entry, issued)


@login_required
@require_POST
def invitation_revoke_view(request: SignedInRequest, space_id: uuid.UUID, invitation_id: uuid.UUID) -> HttpResponse:
    def act(entry: SpaceOfUser) -> str:
        space_invitation_revoke(user=request.user, space_id=space_id, invitation_id=invitation_id, request=request)
        return "The invitation is withdrawn: its link no longer lets anyone in."

    return _act(request, space_id, act)


@login_required
@require_http_methods(["GET", "POST"])
def space_join(request: SignedInRequest, secret: str) -> HttpResponse:
    """The invitation link: which space and role it offers, and Accept (POST). A link that cannot be
    used says why without naming its space."""
    try:
        if request.method == "POST":
            membership = space_invitation_accept(user=request.user, secret=secret, request=request)
            messages.success(request, f"You joined “{membership.space.name}” as {membership.role}.")
            return redirect("space", space_id=membership.space.public_id)
        invitation = space_invitation_of_link(secret)
    except GnosemError as error:
        return render(request, "accounts/space_join.html", {"refusal": _refusal(error)}, status=400)
    return render(request, "accounts/space_join.html", {"invitation": invitation})


def _whole_number(text: str) -> int | str:
    """A number typed into a form, as an int where it is one; else as typed, for the service to refuse."""
    try:
        return int(text)
    except ValueError:
        return text
