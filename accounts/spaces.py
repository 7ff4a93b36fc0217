"""Spaces: every user's personal space, made with the account, and the team spaces people make and share.

A personal space is made for every account however it is made (sign-up, an invitation, the
admin, `createsuperuser`): a receiver of the user model's `post_save` calls
`personal_space_create`, so no path can leave a user without one. Deleting the account deletes it,
and with it everything it holds. It has one member, its user, as owner, and is always called
"Personal": it cannot be renamed, left, shared or deleted on its own.

A team space is made by a user (as GNOSEM_TEAM_SPACES allows), who becomes its owner; others join
it through single-use invitation links (`spi_` + a random secret, of which only an HMAC digest is
stored; accepting claims the link with a conditional UPDATE). Roles nest (owner > admin > editor
> viewer): admins manage members and invitations, only owners manage owners, and a space always
keeps an owner. To anyone who is not a member, a space does not exist: every service says
NotFound, as for a space that never was. Every change to a space's name, members or invitations
first locks the space's row, so changes to one space happen one at a time and two of them cannot
together break a rule that each alone keeps (two owners leaving at once).
"""

import hashlib
import hmac
import secrets
import uuid
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Case, Count, IntegerField, QuerySet, Value, When
from django.db.models.fields.json import KT
from django.db.models.functions import Lower
from django.http import HttpRequest
from django.utils import timezone

from accounts.activity import activity_record
from accounts.models import (
    MAX_SPACE_NAME_CHARS,
    PERSONAL_SPACE_NAME,
    ActivityAction,
    ActivityEvent,
    ApiToken,
    Membership,
    Role,
    Space,
    SpaceInvitation,
    SpaceKind,
)
from gnosem.errors import NotFound, PermissionDenied, ValidationError
from gnosem.labels import label_problem
from gnosem.types import Owner

INVITATION_PREFIX = "spi_"
INVITATION_DEFAULT_DAYS = 7
# A link is a secret that anyone holding it can use: it should not outlive its purpose by much.
INVITATION_MAX_DAYS = 30
# The roles an invitation may give: owners are made by handing a space over.
INVITABLE_ROLES = (Role.ADMIN, Role.EDITOR, Role.VIEWER)
_RANK = {Role.VIEWER: 0, Role.EDITOR: 1, Role.ADMIN: 2, Role.OWNER: 3}
# Owners first, then admins, editors and viewers.
_ROLE_ORDER = Case(*(When(role=role, then=Value(-rank)) for role, rank in _RANK.items()), output_field=IntegerField())


@dataclass(frozen=True)
class SpaceOfUser:
    """One of a user's spaces, with the user's role in it and how many members it has."""

    space: Space
    role: str
    member_count: int


@dataclass(frozen=True)
class IssuedSpaceInvitation:
    """A new invitation: `secret` goes into the link and is never stored."""

    invitation: SpaceInvitation
    secret: str

    def url(self, base_url: str) -> str:
        """The link under `base_url` (the server's address, like https://memory.example.org)."""
        return f"{base_url.rstrip('/')}/spaces/join/{self.secret}/"


def personal_space_create(user: Owner) -> Space:
    """The user's personal space, made (with the user as its owner) if it does not exist yet."""
    with transaction.atomic():
        space, created = Space.objects.get_or_create(
            personal_of=user, defaults={"name": PERSONAL_SPACE_NAME, "kind": SpaceKind.PERSONAL}
        )
        if created:
            Membership.objects.create(space=space, user=user, role=Role.OWNER)
    return space


def personal_space_of(user: Owner) -> Space:
    """The user's personal space (every user has one)."""
    return Space.objects.get(personal_of=user)


def spaces_of(user: Owner) -> list[SpaceOfUser]:
    """The user's spaces: the personal one first, then the team spaces by name."""
    memberships = (
        Membership.objects.filter(user=user)
        .select_related("space")
        .annotate(member_count=Count("space__memberships"))
        .order_by(
            Case(When(space__kind=SpaceKind.PERSONAL, then=Value(0)), default=Value(1)),
            Lower("space__name"),
            "space__pk",
        )
    )
    return [SpaceOfUser(space=m.space, role=m.role, member_count=m.member_count) for m in memberships]


def space_members(*, user: Owner, space_id: uuid.UUID) -> QuerySet[Membership]:
    """The space's members with their user (username, email), owners first; any member may read it."""
    space = _membership(user=user, space_id=space_id).space
    return Membership.objects.filter(space=space).select_related("user").order_by(_ROLE_ORDER, "user__username")


def space_invitations(*, user: Owner, space_id: uuid.UUID) -> QuerySet[SpaceInvitation]:
    """The space's invitations that can still be used, newest first; for its owners and admins."""
    membership = _membership(user=user, space_id=space_id)
    _require(membership, Role.ADMIN, "see its invitations")
    return (
        SpaceInvitation.objects.filter(
            space=membership.space, used_at__isnull=True, revoked_at__isnull=True, expires_at__gt=timezone.now()
        )
        .select_related("created_by")
        .order_by("-created_at", "-pk")
    )


# How many of a space's events its page shows.
SPACE_ACTIVITY_SHOWN = 50


def space_activity(*, user: Owner, space_id: uuid.UUID) -> QuerySet[ActivityEvent]:
    """What was done to or in the space by anyone, newest first: members added, removed and their
    roles changed, invitations, renames, exports and memories shared or moved into it; for its
    owners and admins. Each event is the acting member's (their address stays in their own log)."""
    membership = _membership(user=user, space_id=space_id)
    _require(membership, Role.ADMIN, "see its activity")
    return (
        ActivityEvent.objects.alias(space_id=KT("detail__space_id"))
        .filter(space_id=str(membership.space.public_id))
        .select_related("owner")
        .order_by("-created_at", "-pk")
    )


def team_space_refusal(user: Owner) -> str | None:
    """Why the operator's policy (GNOSEM_TEAM_SPACES) keeps the user from making team spaces; None
    when it lets them."""
    policy = settings.GNOSEM_TEAM_SPACES
    if policy == "off" or (policy == "staff" and not user.is_staff):
        who = "nobody" if policy == "off" else "only staff"
        return f"On this server {who} may make team spaces; ask its operator."
    return None


@transaction.atomic
def team_space_create(
    *, user: Owner, name: object, request: HttpRequest | None = None, actor_token: ApiToken | None = None
) -> Space:
    """A new team space named `name`, with `user` as its owner. `request` (a web page) or
    `actor_token` (an API call) say, for the activity log, where it was made from."""
    if refusal := team_space_refusal(user):
        raise PermissionDenied(refusal)
    # The user's row serialises their own creations, so a form sent twice makes one space of a name.
    get_user_model().objects.select_for_update().get(pk=user.pk)
    name = _clean_name(name, user=user)
    space = Space.objects.create(name=name, kind=SpaceKind.TEAM)
    Membership.objects.create(space=space, user=user, role=Role.OWNER)
    _record(user, ActivityAction.SPACE_CREATED, space, request=request, actor_token=actor_token)
    return space


@transaction.atomic
def space_rename(
    *,
    user: Owner,
    space_id: uuid.UUID,
    name: object,
    request: HttpRequest | None = None,
    actor_token: ApiToken | None = None,
) -> Space:
    """Rename a team space (its owners and admins may). The new name must differ, case aside, from
    those of the acting user's other spaces. A personal space keeps its name."""
    membership = _membership(user=user, space_id=space_id, lock=True)
    _require(membership, Role.ADMIN, "rename it")
    space = _team_space(membership, "your personal space is always called “Personal”.")
    name = _clean_name(name, user=user, renaming=space)
    if name != space.name:
        was, space.name = space.name, name
        space.save(update_fields=["name"])
        _record(user, ActivityAction.SPACE_RENAMED, space, {"was": was}, request=request, actor_token=actor_token)
    return space


@transaction.atomic
def space_delete(
    *,
    user: Owner,
    space_id: uuid.UUID,
    confirm_name: object,
    request: HttpRequest | None = None,
    actor_token: ApiToken | None = None,
) -> None:
    """Delete a team space and everything it holds (memories, notes, entities, memberships,
    invitations); only an owner may, typing its name exactly as `confirm_name`. A personal space
    goes only with its account."""
    membership = _membership(user=user, space_id=space_id, lock=True)
    _require(membership, Role.OWNER, "delete it")
    space = _team_space(membership, "your personal space goes only with your account.")
    if confirm_name != space.name:
        raise ValidationError(
            "confirm_name",
            f"type the space's name exactly, “{space.name}”, to confirm deleting it and everything in it.",
        )
    detail = _space_detail(space)
    space.delete()
    activity_record(owner=user, action=ActivityAction.SPACE_DELETED, detail=detail, request=request, token=actor_token)


@transaction.atomic
def member_role_change(
    *,
    user: Owner,
    space_id: uuid.UUID,
    member: object,
    role: object,
    request: HttpRequest | None = None,
    actor_token: ApiToken | None = None,
) -> Membership:
    """Give a member (by username) another role; owners and admins may, but only an owner may make
    an owner or change an owner's role, and the last owner keeps the role."""
    membership = _membership(user=user, space_id=space_id, lock=True)
    _require(membership, Role.ADMIN, "change roles")
    role = _clean_role(role, Role.values)
    target = _member(membership.space, member)
    if Role.OWNER in (role, target.role):
        _require(membership, Role.OWNER, "make an owner or change an owner's role")
    if target.role == Role.OWNER and role != Role.OWNER and _owner_count(membership.space) == 1:
        raise ValidationError(
            "role", f"{target.user.username} is the space's last owner: hand the space over to another member first."
        )
    if role != target.role:
        was, target.role = target.role, role
        target.save(update_fields=["role"])
        detail = {"member": target.user.username, "role": role, "was": was}
        _record(user, ActivityAction.ROLE_CHANGED, membership.space, detail, request=request, actor_token=actor_token)
    return target


@transaction.atomic
def member_remove(
    *,
    user: Owner,
    space_id: uuid.UUID,
    member: object,
    request: HttpRequest | None = None,
    actor_token: ApiToken | None = None,
) -> None:
    """Take a member (by username) out of the space; owners and admins may, but only an owner may
    remove an owner. Members leave on their own with `space_leave`."""
    membership = _membership(user=user, space_id=space_id, lock=True)
    _require(membership, Role.ADMIN, "remove members")
    target = _member(membership.space, member)
    if target.pk == membership.pk:
        raise ValidationError("member", "you cannot remove yourself: leave the space instead.")
    if target.role == Role.OWNER:
        _require(membership, Role.OWNER, "remove an owner")
    target.delete()
    detail = {"member": target.user.username, "role": target.role}
    _record(user, ActivityAction.MEMBER_REMOVED, membership.space, detail, request=request, actor_token=actor_token)


@transaction.atomic
def space_leave(
    *, user: Owner, space_id: uuid.UUID, request: HttpRequest | None = None, actor_token: ApiToken | None = None
) -> None:
    """Leave a team space; any member may, except its last owner, who hands it over (or deletes it) first."""
    membership = _membership(user=user, space_id=space_id, lock=True)
    space = _team_space(membership, "your personal space goes only with your account.")
    if membership.role == Role.OWNER and _owner_count(space) == 1:
        raise ValidationError(
            "space",
            f"you are the last owner of “{space.name}”: hand it over to another member first, or delete it.",
        )
    membership.delete()
    _record(user, ActivityAction.SPACE_LEFT, space, {"role": membership.role}, request=request, actor_token=actor_token)


@transaction.atomic
def space_hand_over(
    *,
    user: Owner,
    space_id: uuid.UUID,
    to: object,
    request: HttpRequest | None = None,
    actor_token: ApiToken | None = None,
) -> None:
    """Make another member (by username) an owner, the acting owner becoming an admin."""
    membership = _membership(user=user, space_id=space_id, lock=True)
    _require(membership, Role.OWNER, "hand it over")
    target = _member(membership.space, to, field="to")
    if target.pk == membership.pk:
        raise ValidationError("to", "you own the space already: name the member who is to own it.")
    target.role, membership.role = Role.OWNER, Role.ADMIN
    target.save(update_fields=["role"])
    membership.save(update_fields=["role"])
    detail = {"to": target.user.username}
    _record(user, ActivityAction.SPACE_HANDED_OVER, membership.space, detail, request=request, actor_token=actor_token)


def _invitation_digest(secret: str) -> str:
    key = settings.GNOSEM_TOKEN_SECRET.encode()
    return hmac.new(key, f"space-invitation:{secret}".encode(), hashlib.sha256).hexdigest()


@transaction.atomic
def space_invitation_create(
    *,
    user: Owner,
    space_id: uuid.UUID,
    role: object,
    days: object = INVITATION_DEFAULT_DAYS,
    request: HttpRequest | None = None,
    actor_token: ApiToken | None = None,
) -> IssuedSpaceInvitation:
    """A link that lets one person join the team space as `role` (admin, editor or viewer) within
    `days` days; its owners and admins may make one. The secret is returned once, never stored."""
    membership = _membership(user=user, space_id=space_id, lock=True)
    _require(membership, Role.ADMIN, "invite people")
    space = _team_space(membership, "a personal space is yours alone: make a team space to share memories.")
    if role == Role.OWNER:
        raise ValidationError("role", "an invitation cannot make an owner: invite as admin, then hand the space over.")
    role = _clean_role(role, INVITABLE_ROLES)
    if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= INVITATION_MAX_DAYS:
        raise ValidationError("days", f"an invitation lasts 1 to {INVITATION_MAX_DAYS} days.")
    secret = INVITATION_PREFIX + secrets.token_urlsafe(32)
    invitation = SpaceInvitation.objects.create(
        space=space,
        role=role,
        digest=_invitation_digest(secret),
        created_by=user,
        expires_at=timezone.now() + timedelta(days=days),
    )
    _record(user, ActivityAction.INVITATION_MADE, space, {"role": role}, request=request, actor_token=actor_token)
    return IssuedSpaceInvitation(invitation=invitation, secret=secret)


def space_invitation_of_link(secret: object) -> SpaceInvitation:
    """The invitation a link's secret belongs to, while it can be accepted: NotFound for a secret of
    no invitation, ValidationError for one used, withdrawn or expired, worded as
    `space_invitation_accept` words them (neither names the space)."""
    invitation = _invitation_by_secret(secret)
    if invitation.used_at is not None or invitation.revoked_at is not None or invitation.expires_at <= timezone.now():
        raise _unusable(invitation)
    return invitation


@transaction.atomic
def space_invitation_accept(
    *, user: Owner, secret: object, request: HttpRequest | None = None, actor_token: ApiToken | None = None
) -> Membership:
    """Join the space the link invites to, with the invitation's role. A link works once: of two
    people opening it at once, one joins. Someone already a member is told so, and the link stays
    unused for the person it was meant for (their role is changed by the space's admins instead).
    The joiner's activity log records the invitation used; the log of whoever made it, the member added."""
    invitation = _invitation_by_secret(secret)
    # Locked as for every change to the space's members; a space deleted meanwhile took its invitations along.
    space = Space.objects.select_for_update().filter(pk=invitation.space_id).first()
    if space is None:
        raise _no_invitation()
    now = timezone.now()
    claimed = SpaceInvitation.objects.filter(
        pk=invitation.pk, used_at__isnull=True, revoked_at__isnull=True, expires_at__gt=now
    ).update(used_by=user, used_at=now)
    if not claimed:
        invitation.refresh_from_db()
        raise _unusable(invitation)
    if Membership.objects.filter(space=space, user=user).exists():
        raise ValidationError(
            "invitation", f"you are already a member of “{space.name}”; the link is left unused for someone else."
        )
    membership = Membership.objects.create(space=space, user=user, role=invitation.role)
    detail = {"role": invitation.role}
    _record(user, ActivityAction.INVITATION_USED, space, detail, request=request, actor_token=actor_token)
    if invitation.created_by is not None:
        # The creator's log: not their request, so neither its address nor its token.
        activity_record(
            owner=invitation.created_by,
            action=ActivityAction.MEMBER_ADDED,
            detail={**_space_detail(space), "member": user.username, "role": invitation.role, "via": "invitation link"},
        )
    return membership


@transaction.atomic
def space_invitation_revoke(
    *,
    user: Owner,
    space_id: uuid.UUID,
    invitation_id: uuid.UUID,
    request: HttpRequest | None = None,
    actor_token: ApiToken | None = None,
) -> SpaceInvitation:
    """Withdraw an unused invitation, so its link stops working; the space's owners and admins may.
    Withdrawing one already withdrawn changes nothing."""
    membership = _membership(user=user, space_id=space_id, lock=True)
    _require(membership, Role.ADMIN, "withdraw invitations")
    invitation = SpaceInvitation.objects.filter(space=membership.space, public_id=invitation_id).first()
    if invitation is None:
        raise NotFound(f"No invitation with id {invitation_id} in this space.")
    if invitation.used_at is not None:
        raise ValidationError("invitation", "it has been used already: remove the member who joined instead.")
    if invitation.revoked_at is None:
        # Accepting locks the space too, so the invitation cannot be claimed between the check and this.
        invitation.revoked_at = timezone.now()
        invitation.save(update_fields=["revoked_at"])
        detail = {"role": invitation.role}
        _record(
            user, ActivityAction.INVITATION_REVOKED, membership.space, detail, request=request, actor_token=actor_token
        )
    return invitation


def space_of_owner(*, user: Owner, space_id: uuid.UUID, what: str) -> Space:
    """The space, when the user is one of its owners (NotFound for a non-member, PermissionDenied
    saying they may not `what` for another member)."""
    membership = _membership(user=user, space_id=space_id)
    _require(membership, Role.OWNER, what)
    return membership.space


def _membership(*, user: Owner, space_id: uuid.UUID, lock: bool = False) -> Membership:
    """The user's membership of the space, with the space; NotFound when there is none, whether
    the space exists or not. With `lock`, the space's row is locked for the transaction first."""
    spaces = Space.objects.filter(public_id=space_id, memberships__user=user)
    space = (spaces.select_for_update(of=("self",)) if lock else spaces).first()
    # Read after the lock, so that a change which held it (this member's removal) is seen.
    membership = Membership.objects.filter(space=space, user=user).first() if space is not None else None
    if membership is None or space is None:
        raise NotFound(f"No space with id {space_id}.")
    membership.space = space
    return membership


def _require(membership: Membership, role: Role, what: str) -> None:
    if _RANK[Role(membership.role)] < _RANK[role]:
        allowed = "owners" if role == Role.OWNER else "owners and admins"
        raise PermissionDenied(f"Only the space's {allowed} may {what}; you are {_article(membership.role)}.")


def _article(role: str) -> str:
    return f"an {role}" if role[0] in "aeiou" else f"a {role}"


def _team_space(membership: Membership, refusal: str) -> Space:
    if membership.space.kind != SpaceKind.TEAM:
        raise ValidationError("space", refusal)
    return membership.space


def _member(space: Space, username: object, field: str = "member") -> Membership:
    """The space's member with this username; NotFound when nobody of that name is a member."""
    if not isinstance(username, str) or not username or "\x00" in username:
        raise ValidationError(field, "give the member's username, as the space's member list shows it.")
    member = Membership.objects.select_related("user").filter(space=space, user__username=username).first()
    if member is None:
        raise NotFound(f"No member {username!r} in this space.")
    return member


def _owner_count(space: Space) -> int:
    """How many owners the space has, their memberships locked so that a deletion elsewhere (an
    account's) cannot slip past a check that counts on them."""
    return len(Membership.objects.select_for_update().filter(space=space, role=Role.OWNER).values_list("pk"))


def _clean_role(role: object, allowed: tuple[str, ...] | list[str]) -> Role:
    if not isinstance(role, str) or role not in allowed:
        raise ValidationError("role", f"must be one of {', '.join(allowed)}.")
    return Role(role)


def _clean_name(name: object, *, user: Owner, renaming: Space | None = None) -> str:
    """A space's name: one line of 1 to MAX_SPACE_NAME_CHARS characters, told apart (case aside)
    from "Personal" and the names of the user's other spaces."""
    if not isinstance(name, str) or not (name := name.strip()) or len(name) > MAX_SPACE_NAME_CHARS:
        raise ValidationError(
            "name", f"give the space a name of 1-{MAX_SPACE_NAME_CHARS} characters, like 'Research team'."
        )
    if problem := label_problem(name):
        raise ValidationError("name", problem)
    if name.casefold() == PERSONAL_SPACE_NAME.casefold():
        raise ValidationError("name", f"“{PERSONAL_SPACE_NAME}” is the name of everyone's own space: choose another.")
    same = Space.objects.filter(memberships__user=user, name__iexact=name)
    if renaming is not None:
        same = same.exclude(pk=renaming.pk)
    if same.exists():
        raise ValidationError(
            "name", f"you already belong to a space called “{name}”: choose a name that tells the two apart."
        )
    return name


def _invitation_by_secret(secret: object) -> SpaceInvitation:
    """The invitation this link's secret belongs to, used or not; NotFound for a secret of no invitation."""
    invitation = None
    if isinstance(secret, str) and secret.startswith(INVITATION_PREFIX) and len(secret) <= 100:
        invitation = SpaceInvitation.objects.filter(digest=_invitation_digest(secret)).first()
    if invitation is None:
        raise _no_invitation()
    return invitation


def _no_invitation() -> NotFound:
    return NotFound("No invitation has this link: check that it was copied whole, or ask for a new one.")


def _unusable(invitation: SpaceInvitation) -> ValidationError:
    """Why an invitation that was found cannot be accepted (used, withdrawn or expired), without naming its space."""
    if invitation.used_at is not None:
        why = "has been used already: a link lets one person in."
    elif invitation.revoked_at is not None:
        why = "was withdrawn."
    else:
        why = f"expired on {invitation.expires_at:%Y-%m-%d}."
    return ValidationError("invitation", f"This invitation {why} Ask whoever invited you for a new link.")


def _space_detail(space: Space) -> dict[str, str]:
    return {"space": space.name, "space_id": str(space.public_id)}


def _record(
    user: Owner,
    action: ActivityAction,
    space: Space,
    detail: dict[str, str] | None = None,
    *,
    request: HttpRequest | None,
    actor_token: ApiToken | None,
) -> None:
    activity_record(
        owner=user,
        action=action,
        detail={**_space_detail(space), **(detail or {})},
        request=request,
        token=actor_token,
    )
