"""What one request may read and write: the spaces it reaches, the caller's role in each, and where
it writes unless told otherwise.

A reach is read from the database on every request (`reach_of`), never kept between requests, so
removing a member or lowering a role takes effect on that member's very next call, whatever
credential it comes with. Every read of memories, notes and entities filters to `space_ids`; every
write names its space through `write_space`, which refuses a space the caller may only read.

A space the caller does not reach is answered exactly like one that does not exist.
"""

import uuid
from dataclasses import dataclass, replace
from typing import TypeAlias

from django.db import connection
from django.db.models import Case, When

from accounts.models import MAX_SPACE_NAME_CHARS, ApiToken, Membership, Role, Space, SpaceKind
from gnosem.errors import NotFound, PermissionDenied, ValidationError
from gnosem.types import Owner


class SpaceNotFound(NotFound):
    """No such space among those reached (one outside the reach is reported the same way)."""


# The roles that may write memories, notes and entities into a space.
WRITING_ROLES = frozenset({Role.OWNER, Role.ADMIN, Role.EDITOR})


@dataclass(frozen=True)
class ReachedSpace:
    """One space a request reaches, with the caller's role there."""

    id: int
    public_id: uuid.UUID
    name: str
    kind: str
    role: str

    @property
    def is_personal(self) -> bool:
        return self.kind == SpaceKind.PERSONAL

    @property
    def can_write(self) -> bool:
        return self.role in WRITING_ROLES


@dataclass(frozen=True)
class Reach:
    """The acting user, the spaces reached (the personal space first), the default write space
    (None for a token bound only to spaces its user has left), and whether the credential may
    write at all (a read token may not, whatever the roles say)."""

    user: Owner
    spaces: tuple[ReachedSpace, ...]
    default_space_id: int | None
    may_write: bool = True

    @property
    def space_ids(self) -> list[int]:
        return [space.id for space in self.spaces]

    def space(self, space_id: int) -> ReachedSpace:
        """The reached space with this row id (a space outside the reach is NotFound)."""
        for space in self.spaces:
            if space.id == space_id:
                return space
        raise SpaceNotFound("No such space.")

    def find(self, name_or_id: object) -> ReachedSpace:
        """The reached space a caller names by its id or its name (case aside); NotFound for a space
        outside the reach, exactly as for one that does not exist."""
        if not isinstance(name_or_id, str) or not name_or_id.strip() or len(name_or_id) > MAX_SPACE_NAME_CHARS:
            raise ValidationError(
                "space",
                f"must be a space's name (at most {MAX_SPACE_NAME_CHARS} characters) or id, as spaces_list gives them.",
            )
        wanted = name_or_id.strip()
        try:
            public_id: uuid.UUID | None = uuid.UUID(wanted)
        except ValueError:
            public_id = None
        if public_id is not None:
            by_id = [space for space in self.spaces if space.public_id == public_id]
            if by_id:
                return by_id[0]
        by_name = [space for space in self.spaces if space.name.casefold() == wanted.casefold()]
        if len(by_name) > 1:
            ids = ", ".join(str(space.public_id) for space in by_name)
            raise ValidationError(
                "space", f"{len(by_name)} of your spaces are called {wanted!r}; name one by id: {ids}."
            )
        if not by_name:
            raise SpaceNotFound(f"No space {wanted!r}.")
        return by_name[0]

    def narrowed(self, name_or_id: object) -> "Reach":
        """This reach limited to one space the caller names (None: unchanged)."""
        if name_or_id is None:
            return self
        return self.within(self.find(name_or_id).id)

    def within(self, space_id: int) -> "Reach":
        """This reach limited to one of its spaces (by row id), which becomes the default write space."""
        return replace(self, spaces=(self.space(space_id),), default_space_id=space_id)

    def write_space(self, name_or_id: object = None) -> ReachedSpace:
        """Where a write goes: the space named, or the default write space. PermissionDenied where the
        credential or the caller's role there allows reading only."""
        space = self.default_space() if name_or_id is None else self.find(name_or_id)
        self.check_write(space.id)
        return space

    def default_space(self) -> ReachedSpace:
        """The default write space; NotFound when the reach has none left."""
        if self.default_space_id is None:
            raise SpaceNotFound("This credential reaches no space any more; name a space, or use another token.")
        return self.space(self.default_space_id)

    def default_space_first(self) -> tuple[Case, str]:
        """An ordering for rows with a `space` that puts the default write space's first, then the
        oldest: which one an id names when two reached spaces hold it (a memory imported into both)."""
        return Case(When(space_id=self.default_space_id, then=0), default=1), "id"

    def check_write(self, space_id: int) -> None:
        """PermissionDenied unless this request may change what the reached space `space_id` holds."""
        space = self.space(space_id)
        if not self.may_write:
            raise PermissionDenied("This credential may read only.")
        if not space.can_write:
            raise PermissionDenied(f"You may read the space {space.name!r} but not write to it ({space.role}).")


# Whoever a service acts for: a user (reaching every space they belong to, writing to their personal
# one) or a request's reach.
Actor: TypeAlias = Owner | Reach


def reach_of(actor: Actor) -> Reach:
    """The actor's reach: a reach as it is; for a user, every space they are a member of now, with
    their personal space as the default write space."""
    if isinstance(actor, Reach):
        return actor
    spaces = tuple(space for space, _ in _memberships(actor))
    return Reach(user=actor, spaces=spaces, default_space_id=_personal_space_id(spaces))


def token_reach(token: ApiToken) -> Reach:
    """The reach of a request made with this token (or OAuth connection): its user's spaces as
    they are now, limited to those the token is bound to (unless it reaches all), writing to the
    token's default space (where it is still reached; else the personal space, if reached; else
    none) and only with a write token."""
    memberships = _memberships(token.owner, bound_to=None if token.all_spaces else token)
    every = tuple(space for space, _ in memberships)
    spaces = tuple(space for space, bound in memberships if token.all_spaces or bound)
    reached = {space.id for space in spaces}
    default = next(
        (space_id for space_id in (token.default_space_id, _personal_space_id(every)) if space_id in reached), None
    )
    return Reach(user=token.owner, spaces=spaces, default_space_id=default, may_write=token.can_write)


# Read on every request: one statement written out, not compiled by the ORM each time.
_MEMBERSHIPS_SQL = f"""
    SELECT s.id, s.public_id, s.name, s.kind, m.role, EXISTS (
        SELECT 1 FROM {ApiToken.spaces.through._meta.db_table} b WHERE b.apitoken_id = %(token)s AND b.space_id = s.id
    )
    FROM {Membership._meta.db_table} m JOIN {Space._meta.db_table} s ON s.id = m.space_id
    WHERE m.user_id = %(user)s
    ORDER BY s.kind, s.name, s.id
"""


def _memberships(user: Owner, bound_to: ApiToken | None = None) -> list[tuple[ReachedSpace, bool]]:
    """The spaces the user is a member of now, the personal one first, each with whether the token
    `bound_to` lists it."""
    with connection.cursor() as cursor:
        cursor.execute(_MEMBERSHIPS_SQL, {"user": user.pk, "token": bound_to.pk if bound_to else None})
        rows = cursor.fetchall()
    return [
        (ReachedSpace(id=space_id, public_id=public_id, name=name, kind=kind, role=role), bound)
        for space_id, public_id, name, kind, role, bound in rows
    ]


def _personal_space_id(spaces: tuple[ReachedSpace, ...]) -> int:
    personal = [space.id for space in spaces if space.is_personal]
    if not personal:
        raise NotFound("This account has no personal space.")
    return personal[0]


def user_of(actor: Actor) -> Owner:
    """The user acting, whether given as a user or a reach."""
    return actor.user if isinstance(actor, Reach) else actor
