"""Isolation fuzzing across spaces: four users, each with a personal space, and two team spaces they
join (through invitation links), leave, are removed from and change roles in, while tokens bound to
some of their spaces or reaching all, with read or write scope, are made as they go. Random
operations by the users and their tokens (spaces_list, get, list, search, count, export, explore,
write, update, delete, and share: a copy or a move into another space) name memories, entities and
spaces of every space, reached or not, each checked against a plain model: which spaces each user
and token reaches, with which role, and what each space holds. Nothing of a space out of reach may
be returned, changed or confirmed to exist; what is allowed must work (a write lands where the
model says, by its author; a copy is the sharer's new memory there, a moved memory keeps its id and
author); a viewer's or a read token's writes are refused with nothing written. After every step
the database must hold exactly what the model does.

The spaces hold near-identical memories (the same sentence with each space's own secret word,
written seconds apart, and sometimes the very same text in two spaces), so a mixed-up space shows
at once. Operations are cheap, so that a run tries many: mostly the services, called as a door
calls them (a token's reach read afresh on every call), a share through REST and MCP; nothing
waits for the worker (search finds what is not embedded yet by its words) except a rare step that
runs it. Each example is a sequence of steps drawn from one seed, inside a savepoint rolled back at
its end, so every example starts from the same seeded world.

`test_the_fuzz_catches_planted_bugs` plants these bugs one at a time and shows that a short run
finds each:

- `reach_of` reading a user's memberships once and keeping them (a removal, a departure or a new
  role ignored);
- `token_reach` ignoring the token's binding (a token bound to one space reaching them all);
- `token_reach` ignoring the token's scope (a read token writing);
- `Reach.check_write` ignoring the viewer role;
- `memories_of` and `memories_by_id` dropping the space filter (every read seeing every space);
- `memory_share` not checking that the caller may write the space it shares into.
"""

import json
import os
import random
import re
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.db.models import F, Q
from django.test import Client
from hypothesis import HealthCheck, Phase, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from accounts.models import ApiToken, Membership, Role, Space
from accounts.reach import WRITING_ROLES, Reach, ReachedSpace, reach_of, token_reach
from accounts.spaces import (
    member_remove,
    member_role_change,
    personal_space_of,
    space_invitation_accept,
    space_invitation_create,
    space_leave,
    team_space_create,
)
from accounts.tokens import token_create
from gnosem.errors import NotFound, PermissionDenied, ValidationError
from memories import selectors, services, sharing
from memories.encryption.fields import open_value
from memories.models import Chunk, Entity, IndexingStatus, Memory
from memories.presenters import spaces_to_dict
from memories.reading.counting import memory_count
from memories.search.pipeline import search_hybrid
from memories.selectors import MemoryFilters
from memories.transfer.export import export_chunks, exported_space
from tests.memories.mcp.conftest import LEGACY, MODERN
from tests.memories.test_isolation_fuzz import (
    BASE,
    WRITER,
    Actor,
    Held,
    Leak,
    do_explore,
    do_get,
    expect,
    held_of,
    newest_first,
    seed_text,
)

EXPLORING = os.environ.get("HYPOTHESIS_PROFILE") == "explore"
EXAMPLES = 160 if EXPLORING else 40
STEPS = 250  # per example: 40 examples try 10,000 operations
MIN_OPERATIONS = 10_000
SEEDS = 3  # memories per space to start with, embedded
# Each user, with the secret word of their personal space's memories; the team spaces, with theirs.
USERS = {"ana": "tulip", "ben": "maple", "cai": "cedar", "dee": "birch"}
TEAMS = {"Platform": "aspen", "Research": "larch"}
WORDS = USERS | TEAMS  # a personal space's key is its user's name, a team space's its name
SECRET = re.compile(rf"\b(?:{'|'.join(WORDS.values())})-\d+\b")
# Who is in which team space at the start, and as what.
STARTING_MEMBERS = {
    "Platform": {"ana": Role.OWNER, "ben": Role.EDITOR, "cai": Role.VIEWER},
    "Research": {"ben": Role.OWNER, "ana": Role.ADMIN, "dee": Role.VIEWER},
}
NO_SUCH_ID = uuid.UUID("0ddba11c-0000-4000-8000-000000000000")  # of no space, memory or entity
RANK: dict[str, int] = {Role.VIEWER: 0, Role.EDITOR: 1, Role.ADMIN: 2, Role.OWNER: 3}
# How often each operation is drawn: mostly reads and writes of memories, the rest changes of
# members and new tokens, which change what the reads and writes after them may reach.
OPERATIONS = {
    "spaces": 5,
    "get": 22,
    "list": 12,
    "count": 10,
    "search": 2,
    "export": 1,
    "explore": 2,
    "write": 15,
    "update": 5,
    "delete": 5,
    "share": 4,
    "join": 5,
    "leave": 3,
    "remove": 3,
    "role": 5,
    "token": 4,
    "worker": 0.15,
}
DOORS = ("service", "rest", "mcp")
DOOR_WEIGHTS = (0.88, 0.06, 0.06)  # for a token; a user acts through the services (the dashboard's calls)

OK, NOT_FOUND, REFUSED, INVALID = "ok", "not found", "refused", "invalid"
REST_OUTCOMES = {200: OK, 201: OK, 204: OK, 400: INVALID, 403: REFUSED, 404: NOT_FOUND}


# --- the model ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class TokenHeld:
    """What the model says one token is: its user, scope, the spaces it is bound to (None: every
    space of its user's) and its default write space (None: the personal one), by space key."""

    user: str
    row: ApiToken
    secret: str
    may_write: bool
    bound: tuple[str, ...] | None
    default: str | None

    def __str__(self) -> str:
        scope = "write" if self.may_write else "read"
        return f"{self.user}'s {scope} token bound to {self.bound or 'all'} writing to {self.default or 'Personal'}"


@dataclass(frozen=True)
class Caller:
    """Who acts: a user (as the dashboard does) or one of their tokens."""

    user: str
    token: TokenHeld | None = None

    def __str__(self) -> str:
        return str(self.token) if self.token else self.user


@dataclass(frozen=True)
class ModelReach:
    """The spaces (by key) a caller reaches with its role there, where it writes by default, and
    whether it may write at all."""

    spaces: dict[str, str]
    default: str | None
    may_write: bool

    def writable(self, key: str) -> bool:
        return self.may_write and self.spaces.get(key) in WRITING_ROLES


@dataclass
class Model:
    """Who is a member of which space, as what; what each space holds, by whom; the tokens."""

    roles: dict[str, dict[str, str]]
    held: dict[str, dict[uuid.UUID, Held]]
    authors: dict[uuid.UUID, str]
    tokens: list[TokenHeld] = field(default_factory=list)

    def copy(self) -> "Model":
        return Model(
            {key: dict(members) for key, members in self.roles.items()},
            {key: dict(memories) for key, memories in self.held.items()},
            dict(self.authors),
            list(self.tokens),
        )

    def reach(self, caller: Caller) -> ModelReach:
        spaces = {key: members[caller.user] for key, members in self.roles.items() if caller.user in members}
        token = caller.token
        if token is None:
            return ModelReach(spaces, caller.user, True)
        if token.bound is not None:
            spaces = {key: role for key, role in spaces.items() if key in token.bound}
        default = next((key for key in (token.default, caller.user) if key in spaces), None)
        return ModelReach(spaces, default, token.may_write)

    def space_of(self, public_id: uuid.UUID) -> str | None:
        return next((key for key, memories in self.held.items() if public_id in memories), None)

    def visible(self, spaces: list[str] | dict[str, str]) -> dict[uuid.UUID, Held]:
        return {public_id: held for key in spaces for public_id, held in self.held[key].items()}


# --- the world: users, spaces, seeded memories, tokens ---------------------------------------------


@dataclass
class World:
    users: dict[str, Any]
    spaces: dict[str, Space]
    entities: dict[uuid.UUID, str]  # the seeded entities' ids, with their space's key
    model: Model
    api: Client = field(default_factory=Client)

    @property
    def key_of(self) -> dict[int, str]:
        return {space.pk: key for key, space in self.spaces.items()}

    def named(self, name_or_id: str, user: str) -> str | None:
        """The space a caller names (by id, or by name: "Personal" is their own), whether they reach
        it or not; None for no space at all."""
        if name_or_id.casefold() == "personal":
            return user
        by_name = {key.casefold(): key for key in TEAMS}
        by_id = {str(space.public_id): key for key, space in self.spaces.items()}
        return by_name.get(name_or_id.casefold()) or by_id.get(name_or_id.casefold())

    def references(self) -> list[str]:
        """Every way to name a space: each space's id, each team's name, "Personal", and names of none."""
        return [
            *(str(space.public_id) for space in self.spaces.values()),
            *TEAMS,
            "Personal",
            str(NO_SUCH_ID),
            "Nowhere",
        ]


def outcome_of(call: Callable[[], Any]) -> tuple[str, Any]:
    """A service's outcome: OK with what it returned, or which refusal."""
    try:
        return OK, call()
    except NotFound:
        return NOT_FOUND, None
    except PermissionDenied:
        return REFUSED, None
    except ValidationError:
        return INVALID, None


def rest_outcome(response: Any) -> tuple[str, Any]:  # the test client's response
    expect(response.status_code in REST_OUTCOMES, f"REST answered {response.status_code}")
    outcome = REST_OUTCOMES[response.status_code]
    if outcome != OK or response.status_code == 204:
        return outcome, None
    if response.streaming:
        return OK, json.loads(b"".join(response.streaming_content))
    return OK, response.json()


def mcp_outcome(result: dict[str, Any]) -> tuple[str, Any]:
    if not result["isError"]:
        return OK, result["structuredContent"]
    text = result["content"][0]["text"]
    if "Check the id" in text or "spaces you reach" in text:
        return NOT_FOUND, None
    if "read-only" in text or "read only" in text or "not write to it" in text:
        return REFUSED, None
    if text.startswith("Invalid argument"):
        return INVALID, None
    raise Leak(f"MCP answered {text!r}")


def change_expected(reach: ModelReach, door: str, key: str | None) -> str:
    """The outcome of a write, update or delete in the reached space `key` (None: out of reach).
    REST and MCP refuse a read token before they look for anything."""
    if door != "service" and not reach.may_write:
        return REFUSED
    if key is None:
        return NOT_FOUND
    return OK if reach.writable(key) else REFUSED


def share_expected(reach: ModelReach, door: str, source: str | None, target: str | None, move: bool) -> str:
    """The outcome of sharing a memory of the reached space `source` into the reached space `target`
    (None: out of reach or none), a copy or with `move` a move: the memory and the space must be
    reached, the caller must write the space and, to move it out, the memory's own; the space must
    be another one. REST and MCP refuse a read token before they look for anything."""
    if door != "service" and not reach.may_write:
        return REFUSED
    if source is None or target is None:
        return NOT_FOUND
    if not reach.writable(target) or (move and not reach.writable(source)):
        return REFUSED
    return INVALID if source == target else OK


def token_made(world: World, model: Model, user: str, scope: str, spaces: list[str], default: str | None) -> str:
    """Make a token as `user` (bound to `spaces`, none: all, writing to `default`) and check the
    outcome against the model, which gains the token; returns the outcome."""
    reach = model.reach(Caller(user))
    keys = [world.named(name, user) for name in spaces]
    chosen = None if default is None else world.named(default, user)
    if not all(key in reach.spaces for key in keys) or (default is not None and chosen not in reach.spaces):
        expected = NOT_FOUND
    elif keys and chosen is not None and chosen not in keys:
        expected = INVALID
    else:
        expected = OK
    outcome, issued = outcome_of(
        lambda: token_create(owner=world.users[user], name="fuzz", scope=scope, spaces=spaces, default_space=default)
    )
    expect(outcome == expected, f"making a token bound to {spaces} writing to {default}: {outcome}, not {expected}")
    if outcome == OK:
        bound = tuple(dict.fromkeys(key for key in keys if key is not None))
        if chosen is None and bound and user not in bound:
            chosen = bound[0]
        model.tokens.append(TokenHeld(user, issued.token, issued.secret, scope == "write", bound or None, chosen))
    return outcome


@pytest.fixture
def world(db, settings, django_capture_on_commit_callbacks) -> World:
    """Four users, two team spaces with their starting members, five tokens each, and on every
    space the same sentences with its own secret word, interleaved a second apart and embedded."""
    settings.GNOSEM_TOKEN_RATE_LIMIT = None  # thousands of calls a minute are the point here
    users = {name: get_user_model().objects.create_user(name, f"{name}@example.com") for name in USERS}
    spaces: dict[str, Space] = {name: personal_space_of(user) for name, user in users.items()}
    roles: dict[str, dict[str, str]] = {name: {name: Role.OWNER} for name in USERS}
    for team, members in STARTING_MEMBERS.items():
        owner = next(name for name, role in members.items() if role == Role.OWNER)
        spaces[team] = team_space_create(user=users[owner], name=team)
        for name, role in members.items():
            if role != Role.OWNER:
                secret = space_invitation_create(user=users[owner], space_id=spaces[team].public_id, role=role).secret
                space_invitation_accept(user=users[name], secret=secret)
        roles[team] = dict(members)
    authors = {key: next(name for name, role in roles[key].items() if role == Role.OWNER) for key in spaces}
    with django_capture_on_commit_callbacks(execute=True):
        for i in range(SEEDS):
            for offset, key in enumerate(spaces):
                services.memory_write(
                    owner=users[authors[key]],
                    content=seed_text(WORDS[key], i),
                    tags=["deploy"],
                    written_by=WRITER,
                    created_at=BASE + timedelta(seconds=len(spaces) * i + offset),
                    space=str(spaces[key].public_id),
                )
    assert set(Memory.objects.values_list("indexing_status", flat=True)) == {IndexingStatus.INDEXED}
    key_of = {space.pk: key for key, space in spaces.items()}
    held: dict[str, dict[uuid.UUID, Held]] = {key: {} for key in spaces}
    for memory in Memory.objects.all():
        held[key_of[memory.space_id]][memory.public_id] = held_of(memory)
    model = Model(roles, held, {public_id: authors[key] for key in spaces for public_id in held[key]})
    world = World(users, spaces, {e.public_id: key_of[e.space_id] for e in Entity.objects.all()}, model)
    for name in USERS:
        team = next(key for key in TEAMS if name in roles[key])
        team_id = str(spaces[team].public_id)
        for scope, bound, default in (
            ("write", [], None),
            ("read", [], None),
            ("write", [team], None),
            ("read", ["Personal"], None),
            ("write", ["Personal", team_id], team_id),
        ):
            assert token_made(world, model, name, scope, bound, default) == OK
    return world


# --- one example -------------------------------------------------------------------------------


CONTENT = Memory._meta.get_field("content")


class Run:
    """One example: steps drawn from `rng`, each checked against the model, which it then updates."""

    def __init__(self, world: World, rng: random.Random, tried: Counter[str]) -> None:
        self.world, self.rng, self.tried = world, rng, tried
        self.model = world.model.copy()
        self.gone: list[uuid.UUID] = []  # ids deleted in this example, still tried
        self.serial = iter(range(10_000, 10**9))
        self.space_pks = [space.pk for space in world.spaces.values()]
        self.texts: dict[bytes, str] = {}  # memories' texts by their ciphertexts (`opened`)

    def step(self) -> None:
        rng = self.rng
        operation = rng.choices(list(OPERATIONS), weights=list(OPERATIONS.values()))[0]
        if operation in ("join", "leave", "remove", "role", "token", "worker"):
            self.tried[operation] += 1
            getattr(self, operation)()
            self.check_members()
        else:
            caller = self.caller()
            doors = DOORS[:2] if operation == "export" else DOORS
            door = rng.choices(doors, DOOR_WEIGHTS[: len(doors)])[0] if caller.token else "service"
            self.tried[f"{operation} ({door})"] += 1
            try:
                getattr(self, operation)(caller, door)
            except Leak as leak:
                raise Leak(f"{operation} through {door} by {caller}: {leak}") from None
        self.check_memories()

    # --- drawing ---

    def caller(self) -> Caller:
        if self.rng.random() < 0.3:
            return Caller(self.rng.choice(list(USERS)))
        token = self.rng.choice(self.model.tokens)
        return Caller(token.user, token)

    def memory_id(self) -> uuid.UUID:
        """Any space's memory, one deleted, or none."""
        pool = [public_id for memories in self.model.held.values() for public_id in memories]
        return self.rng.choice([*pool, *self.gone[-3:], NO_SUCH_ID])

    def space_name(self) -> str:
        """A space named as a caller may name one (case aside), reached or not."""
        name = self.rng.choice(self.world.references())
        return self.rng.choice([name, name.upper()])

    def content(self, key: str | None) -> str:
        """A new sentence with the secret word of the space it is meant for, or (one time in
        six) the very text of a memory of any space."""
        everything = [held.content for memories in self.model.held.values() for held in memories.values()]
        if self.rng.random() < 1 / 6 and everything:
            return self.rng.choice(everything)
        n = next(self.serial)
        return f"Session {n}: the staging password is {WORDS.get(key or '', 'oak')}-{n}; deploy to eu-west-{n % 3}."

    # --- calling a door ---

    def owner(self, caller: Caller, space: str | None = None) -> Any:
        """Whom a service acts for, read afresh as a door reads it: the user, or the token's reach,
        narrowed to `space`."""
        owner = self.world.users[caller.user] if caller.token is None else token_reach(caller.token.row)
        return owner if space is None else reach_of(owner).narrowed(space)

    def actor(self, caller: Caller, door: str) -> Actor:
        """The caller as the personal-space fuzz's helpers take it (who acts through the services,
        or the token for REST and MCP; no page is visited)."""
        owner = self.owner(caller) if door == "service" else None
        secret = caller.token.secret if caller.token else ""
        api = self.world.api
        return Actor(name=str(caller), user=owner, token=secret, browser=api, word="", api=api)

    def call(
        self,
        caller: Caller,
        door: str,
        service: Callable[[], Any],
        rest: Callable[[dict[str, str]], Any],
        tool: tuple[str, dict[str, Any]] | None,
    ) -> tuple[str, Any]:
        """The outcome of one operation through `door`: the service as a door calls it, the REST
        request given the token's header, or the MCP tool with its arguments (None: none)."""
        if door == "service":
            return outcome_of(service)
        assert caller.token is not None
        if door == "rest":
            return rest_outcome(rest({"Authorization": f"Bearer {caller.token.secret}"}))
        assert tool is not None
        name, arguments = tool
        mcp = self.actor(caller, door).mcp(self.rng.choice([LEGACY, MODERN]))
        return mcp_outcome(mcp.call(name, {key: value for key, value in arguments.items() if value is not None}))

    def narrowed_scope(self, caller: Caller, space: str | None) -> list[str] | None:
        """The spaces (keys) a read narrowed to `space` covers; None when `space` is not reached."""
        reach = self.model.reach(caller)
        if space is None:
            return list(reach.spaces)
        key = self.world.named(space, caller.user)
        return [key] if key in reach.spaces else None

    def shown(self, results: list[tuple[uuid.UUID, str]], scope: list[str], what: str) -> None:
        visible = self.model.visible(scope)
        for public_id, content in results:
            expect(
                public_id in visible and visible[public_id].content == content,
                f"{what} showed {content!r} ({public_id}), out of its reach {scope}",
            )

    # --- reads ---

    def spaces(self, caller: Caller, door: str) -> None:
        """spaces_list: exactly the spaces the model says, with the role, whether writable, the
        default write space and how many memories each holds."""

        def summaries() -> dict[str, Any]:
            reach = reach_of(self.owner(caller))
            return spaces_to_dict(selectors.space_summaries(reach), may_write=reach.may_write)

        outcome, listed = self.call(
            caller,
            door,
            summaries,
            lambda auth: self.world.api.get("/api/v1/spaces", headers=auth),
            ("spaces_list", {}),
        )
        expect(outcome == OK, f"spaces_list: {outcome}")
        reach = self.model.reach(caller)
        shown = {(s["id"], s["role"], s["writable"], s["default"], s["memories"]) for s in listed["spaces"]}
        expected = {
            (
                str(self.world.spaces[key].public_id),
                role,
                reach.writable(key),
                key == reach.default,
                len(self.model.held[key]),
            )
            for key, role in reach.spaces.items()
        }
        expect(shown == expected, f"spaces_list showed {shown - expected}, not {expected - shown}")

    def get(self, caller: Caller, door: str) -> None:
        public_id = self.memory_id()
        held = self.model.visible(self.model.reach(caller).spaces).get(public_id)
        content = do_get(self.actor(caller, door), public_id, door, self.rng.choice([LEGACY, MODERN]))
        expect(content == (held.content if held else None), f"get {public_id} read {content!r}")

    def list(self, caller: Caller, door: str) -> None:
        space = self.space_name() if self.rng.random() < 0.5 else None
        limit = self.rng.randint(1, 10)
        outcome, page = self.call(
            caller,
            door,
            lambda: selectors.memory_list(owner=self.owner(caller, space), filters=MemoryFilters(), limit=limit),
            lambda auth: self.world.api.get(
                "/api/v1/memories", {"limit": limit, "raw": "true", **({"space": space} if space else {})}, headers=auth
            ),
            ("memory_list", {"limit": limit, "raw": True, "space": space}),
        )
        scope = self.narrowed_scope(caller, space)
        expect(outcome == (OK if scope is not None else NOT_FOUND), f"list in {space}: {outcome}")
        if scope is None:
            return
        if door == "service":
            shown = [(memory.public_id, memory.content) for memory in page.memories]
        else:
            shown = [(uuid.UUID(item["id"]), item["content"]) for item in page["memories"]]
        self.shown(shown, scope, "list")
        expected = [(public_id, held.content) for public_id, held in newest_first(self.model.visible(scope))]
        expect(shown == expected[:limit], f"list in {scope} showed {len(shown)} memories, not the newest {limit}")

    def count(self, caller: Caller, door: str) -> None:
        space = self.space_name() if self.rng.random() < 0.5 else None
        group_by = self.rng.choice([None, "space"])
        outcome, counted = self.call(
            caller,
            door,
            lambda: memory_count(owner=self.owner(caller, space), filters=MemoryFilters(), group_by=group_by).as_dict(),
            lambda auth: self.world.api.get(
                "/api/v1/memories/count",
                {key: value for key, value in (("space", space), ("group_by", group_by)) if value},
                headers=auth,
            ),
            ("memory_count", {"space": space, "group_by": group_by}),
        )
        scope = self.narrowed_scope(caller, space)
        expect(outcome == (OK if scope is not None else NOT_FOUND), f"count in {space}: {outcome}")
        if scope is None:
            return
        expect(counted["count"] == len(self.model.visible(scope)), f"count in {scope}: {counted['count']}")
        if group_by:
            names = {key: "Personal" if key in USERS else key for key in scope}
            expected = {names[key]: len(self.model.held[key]) for key in scope if self.model.held[key]}
            groups = {group["key"]: group["count"] for group in counted["groups"]}
            expect(groups == expected, f"count by space: {groups}, not {expected}")

    def search(self, caller: Caller, door: str) -> None:
        space = self.space_name() if self.rng.random() < 0.3 else None
        contents = [held.content for memories in self.model.held.values() for held in memories.values()]
        query = self.rng.choice([*(SECRET.findall(self.rng.choice(contents)) if contents else []), "staging password"])
        outcome, found = self.call(
            caller,
            door,
            lambda: search_hybrid(owner=self.owner(caller, space), query=query, top_k=10),
            lambda auth: self.world.api.get(
                "/api/v1/memories/search",
                {"query": query, "top_k": 10, "raw": "true", **({"space": space} if space else {})},
                headers=auth,
            ),
            ("memory_search", {"query": query, "top_k": 10, "raw": True, "space": space}),
        )
        scope = self.narrowed_scope(caller, space)
        expect(outcome == (OK if scope is not None else NOT_FOUND), f"search in {space}: {outcome}")
        if scope is None:
            return
        if door == "service":
            shown = [(hit.memory.public_id, hit.memory.content) for hit in found]
        else:
            shown = [(uuid.UUID(item["id"]), item["content"]) for item in found["results"]]
        self.shown(shown, scope, f"search for {query!r}")
        visible = self.model.visible(scope).items()
        holding = {public_id for public_id, held in visible if query in SECRET.findall(held.content)}
        if SECRET.fullmatch(query) and holding:
            expect(bool(holding & {public_id for public_id, _ in shown}), f"search for {query!r} missed its memory")

    def export(self, caller: Caller, door: str) -> None:
        space = self.space_name() if self.rng.random() < 0.7 else None
        outcome, document = self.call(
            caller,
            door,
            lambda: json.loads("".join(export_chunks(exported_space(self.owner(caller), space)))),
            lambda auth: self.world.api.get("/api/v1/export", {"space": space} if space else {}, headers=auth),
            None,  # MCP exports nothing
        )
        reach = self.model.reach(caller)
        key = reach.default if space is None else self.world.named(space, caller.user)
        expected = NOT_FOUND if key not in reach.spaces else OK
        expect(outcome == expected, f"export of {space}: {outcome}, not {expected}")
        if outcome == OK:
            assert key is not None
            # A team space whole for its owners and admins; for other members what they wrote there.
            whole = key not in TEAMS or reach.spaces[key] in (Role.OWNER, Role.ADMIN)
            exported = {(uuid.UUID(item["id"]), item["content"]) for item in document["memories"]}
            held = {
                (public_id, held.content)
                for public_id, held in self.model.held[key].items()
                if whole or self.model.authors[public_id] == caller.user
            }
            expect(exported == held, f"export of {key}: {len(exported)} memories, not its {len(held)}")

    def explore(self, caller: Caller, door: str) -> None:
        entity_id = self.rng.choice([*self.world.entities, NO_SUCH_ID])
        reach = self.model.reach(caller)
        seen = do_explore(self.actor(caller, door), entity_id, door, self.rng.choice([LEGACY, MODERN]))
        if self.world.entities.get(entity_id) not in reach.spaces:
            expect(seen is None, f"explored entity {entity_id} of {self.world.entities.get(entity_id)}")
        if seen is not None:
            entity_ids, memory_ids = seen
            spaces = Entity.objects.filter(public_id__in=entity_ids).values_list("space_id", flat=True)
            expect({self.world.key_of[pk] for pk in spaces} <= set(reach.spaces), "explore showed another's entities")
            visible = {str(public_id) for public_id in self.model.visible(reach.spaces)}
            expect(memory_ids <= visible, f"explore showed memories {memory_ids - visible}")

    # --- writes ---

    def write(self, caller: Caller, door: str) -> None:
        space = self.space_name() if self.rng.random() < 0.6 else None
        reach = self.model.reach(caller)
        key = reach.default if space is None else self.world.named(space, caller.user)
        key = key if key in reach.spaces else None
        content = self.content(key)
        body = {"content": content, "tags": ["deploy"], "written_by": WRITER, "space": space}
        outcome, written = self.call(
            caller,
            door,
            lambda: services.memory_write(
                owner=self.owner(caller), content=content, tags=["deploy"], written_by=WRITER, space=space
            ),
            lambda auth: self.world.api.post(
                "/api/v1/memories",
                {name: value for name, value in body.items() if value is not None},
                content_type="application/json",
                headers=auth,
            ),
            ("memory_write", body),
        )
        expected = change_expected(reach, door, key)
        expect(outcome == expected, f"write to {space or 'the default space'} ({key}): {outcome}, not {expected}")
        if outcome != OK:
            return
        assert key is not None
        public_id = written.public_id if door == "service" else uuid.UUID(written["id"])
        same = [pid for pid, held in self.model.held[key].items() if held.content.casefold() == content.casefold()]
        if same:
            expect(public_id in same, f"writing the text {key} holds gave {public_id}, not one of {same}")
            return
        memory = Memory.objects.filter(space=self.world.spaces[key], public_id=public_id).first()
        expect(memory is not None, f"the write {public_id} did not land in {key}")
        assert memory is not None
        expect(memory.author_id == self.world.users[caller.user].pk, f"the write {public_id} has another author")
        self.model.held[key][public_id] = held_of(memory)
        self.model.authors[public_id] = caller.user

    def changed(self, caller: Caller, door: str, public_id: uuid.UUID, outcome: str) -> str | None:
        """Check a change's outcome; the space of the memory changed when it was allowed."""
        reach = self.model.reach(caller)
        key = self.model.space_of(public_id)
        key = key if key in reach.spaces else None
        expected = change_expected(reach, door, key)
        expect(outcome == expected, f"changing {public_id} of {self.model.space_of(public_id)}: {outcome}")
        return key if outcome == OK else None

    def update(self, caller: Caller, door: str) -> None:
        public_id = self.memory_id()
        content = self.content(self.model.space_of(public_id))
        outcome, _ = self.call(
            caller,
            door,
            lambda: services.memory_update(owner=self.owner(caller), public_id=public_id, content=content),
            lambda auth: self.world.api.patch(
                f"/api/v1/memories/{public_id}", {"content": content}, content_type="application/json", headers=auth
            ),
            ("memory_update", {"id": str(public_id), "content": content}),
        )
        if key := self.changed(caller, door, public_id, outcome):
            self.model.held[key][public_id] = replace(self.model.held[key][public_id], content=content)

    def delete(self, caller: Caller, door: str) -> None:
        public_id = self.memory_id()
        outcome, _ = self.call(
            caller,
            door,
            lambda: services.memory_delete(owner=self.owner(caller), public_id=public_id),
            lambda auth: self.world.api.delete(f"/api/v1/memories/{public_id}", headers=auth),
            ("memory_delete", {"id": str(public_id)}),
        )
        if key := self.changed(caller, door, public_id, outcome):
            del self.model.held[key][public_id]
            self.gone.append(public_id)

    def share(self, caller: Caller, door: str) -> None:
        """Share a memory into a space, a copy or a move: a copy is the caller's new memory there, a
        move the memory itself (its id, its author), and text already current there is that memory
        instead (a move then deletes the one moved)."""
        reach = self.model.reach(caller)
        public_id, space = self.share_drawn(reach)
        move = self.rng.random() < 0.5
        body = {"space": space, "move": move}
        outcome, shared = self.call(
            caller,
            door,
            lambda: sharing.memory_share(owner=self.owner(caller), public_id=public_id, space=space, move=move),
            lambda auth: self.world.api.post(
                f"/api/v1/memories/{public_id}/share", body, content_type="application/json", headers=auth
            ),
            ("memory_share", {"id": str(public_id), **body}),
        )
        source, target = self.model.space_of(public_id), self.world.named(space, caller.user)
        what = f"{'moving' if move else 'copying'} {public_id} of {source} to {space} ({target})"
        source, target = (key if key in reach.spaces else None for key in (source, target))
        expected = share_expected(reach, door, source, target, move)
        expect(outcome == expected, f"{what}: {outcome}, not {expected}")
        if outcome != OK:
            return
        assert source is not None and target is not None
        if door == "service":
            there, again = shared.public_id, shared.written_again
        else:
            there, again = uuid.UUID(shared["id"]), shared["duplicate"]
        content = self.model.held[source][public_id].content
        if move:
            del self.model.held[source][public_id]
        same = [pid for pid, held in self.model.held[target].items() if held.content.casefold() == content.casefold()]
        if same:
            expect(again and there in same, f"{what} gave {there}, not the memory holding its text: one of {same}")
            if move:
                self.gone.append(public_id)
            return
        expect(not again and (there == public_id if move else there not in self.model.authors), f"{what} gave {there}")
        memory = Memory.objects.filter(space=self.world.spaces[target], public_id=there).first()
        expect(memory is not None and memory.content == content, f"{what}: {there} did not land there")
        assert memory is not None
        author = self.model.authors[public_id] if move else caller.user
        users = self.world.users
        expect(memory.author_id == users[author].pk, f"{what}: {there} is by another author, not {author}")
        came_from = "Personal" if source in USERS else source
        provenance = (memory.shared_from, memory.shared_by_id)
        expect(provenance == (came_from, users[caller.user].pk), f"{what}: {there} came from {provenance}")
        self.model.held[target][there] = held_of(memory)
        self.model.authors[there] = author

    def share_drawn(self, reach: ModelReach) -> tuple[uuid.UUID, str]:
        """What to share where: a memory and a space, each half the time one the caller reaches, or
        (where there is one, half the time) a reached memory and another reached space holding its text."""
        held = self.model.held
        names = {
            key: [str(self.world.spaces[key].public_id), "Personal" if key in USERS else key] for key in reach.spaces
        }
        texts = {key: {memory.content.casefold() for memory in held[key].values()} for key in reach.spaces}
        pairs = [
            (public_id, other)
            for key in reach.spaces
            for public_id, memory in held[key].items()
            for other in reach.spaces
            if other != key and memory.content.casefold() in texts[other]
        ]
        if pairs and self.rng.random() < 0.5:
            public_id, key = self.rng.choice(pairs)
            return public_id, self.rng.choice(names[key])
        reached = [public_id for key in reach.spaces for public_id in held[key]]
        public_id = self.rng.choice(reached) if reached and self.rng.random() < 0.5 else self.memory_id()
        spaces = [name for key_names in names.values() for name in key_names]
        return public_id, self.rng.choice(spaces) if spaces and self.rng.random() < 0.5 else self.space_name()

    # --- members, tokens and the worker ---

    def join(self) -> None:
        """Someone invites someone into a team space, who accepts the link."""
        team, inviter, invitee = self.rng.choice(list(TEAMS)), *self.rng.choices(list(USERS), k=2)
        role = self.rng.choice([Role.ADMIN, Role.EDITOR, Role.VIEWER])
        members = self.model.roles[team]
        space_id = self.world.spaces[team].public_id
        outcome, issued = outcome_of(
            lambda: space_invitation_create(user=self.world.users[inviter], space_id=space_id, role=role)
        )
        expected = self.manager_refusal(members, inviter) or OK
        expect(outcome == expected, f"{inviter} inviting into {team}: {outcome}, not {expected}")
        if outcome == OK:
            outcome, _ = outcome_of(
                lambda: space_invitation_accept(user=self.world.users[invitee], secret=issued.secret)
            )
            expected = INVALID if invitee in members else OK
            expect(outcome == expected, f"{invitee} joining {team}: {outcome}, not {expected}")
            if outcome == OK:
                members[invitee] = role

    def leave(self) -> None:
        key, user = self.rng.choice(list(WORDS)), self.rng.choice(list(USERS))
        members = self.model.roles[key]
        outcome, _ = outcome_of(
            lambda: space_leave(user=self.world.users[user], space_id=self.world.spaces[key].public_id)
        )
        if user not in members:
            expected = NOT_FOUND
        elif key in USERS or (members[user] == Role.OWNER and list(members.values()).count(Role.OWNER) == 1):
            expected = INVALID
        else:
            expected = OK
        expect(outcome == expected, f"{user} leaving {key}: {outcome}, not {expected}")
        if outcome == OK:
            del members[user]

    def remove(self) -> None:
        key, actor, target = self.rng.choice(list(WORDS)), *self.rng.choices(list(USERS), k=2)
        members = self.model.roles[key]
        outcome, _ = outcome_of(
            lambda: member_remove(
                user=self.world.users[actor], space_id=self.world.spaces[key].public_id, member=target
            )
        )
        expected = self.management(members, actor, target) or (INVALID if actor == target else OK)
        expect(outcome == expected, f"{actor} removing {target} from {key}: {outcome}, not {expected}")
        if outcome == OK:
            del members[target]

    def role(self) -> None:
        key, actor, target = self.rng.choice(list(WORDS)), *self.rng.choices(list(USERS), k=2)
        role = self.rng.choice(list(Role))
        members = self.model.roles[key]
        outcome, _ = outcome_of(
            lambda: member_role_change(
                user=self.world.users[actor], space_id=self.world.spaces[key].public_id, member=target, role=role
            )
        )
        expected = self.management(members, actor, target, role)
        if expected is None:
            last_owner = members[target] == Role.OWNER and list(members.values()).count(Role.OWNER) == 1
            expected = INVALID if last_owner and role != Role.OWNER else OK
        expect(outcome == expected, f"{actor} making {target} {role} in {key}: {outcome}, not {expected}")
        if outcome == OK:
            members[target] = role

    @staticmethod
    def manager_refusal(members: dict[str, str], actor: str) -> str | None:
        """Why `actor` may not manage the space's members (not a member, or below admin); None if they may."""
        if actor not in members:
            return NOT_FOUND
        return REFUSED if RANK[members[actor]] < RANK[Role.ADMIN] else None

    @staticmethod
    def management(members: dict[str, str], actor: str, target: str, role: str | None = None) -> str | None:
        """The refusal of a change by `actor` to `target`'s membership, as the space services decide
        before anything specific to the change; None when they let it through."""
        if refusal := Run.manager_refusal(members, actor):
            return refusal
        if target not in members:
            return NOT_FOUND
        changes_an_owner = Role.OWNER in (members[target], role)
        return REFUSED if changes_an_owner and members[actor] != Role.OWNER else None

    def token(self) -> None:
        user = self.rng.choice(list(USERS))
        spaces = self.rng.sample(self.world.references(), k=self.rng.randint(1, 3)) if self.rng.random() < 0.6 else []
        default = self.space_name() if self.rng.random() < 0.4 else None
        token_made(self.world, self.model, user, self.rng.choice(["read", "write"]), spaces, default)

    def worker(self) -> None:
        """The worker catches up: what was written is embedded, in context, in its own space."""
        waiting = Memory.objects.filter(space_id__in=self.space_pks, indexing_status=IndexingStatus.PENDING)
        services.memories_index(memory_ids=list(waiting.values_list("pk", flat=True)))
        expect(not Chunk.objects.exclude(space_id=F("memory__space_id")).exists(), "a chunk filed under another space")

    # --- the checks after every step ---

    def check_memories(self) -> None:
        """The database holds exactly the memories the model does, each in its space, by its author."""
        # In SQL: this runs after every step, and building the query through the ORM would cost
        # more than running it.
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT space_id, public_id, content, author_id FROM memories_memory WHERE space_id = ANY(%s)",
                [self.space_pks],
            )
            rows = {
                (space_id, public_id, self.opened(space_id, public_id, bytes(sealed)), author_id)
                for space_id, public_id, sealed, author_id in cursor.fetchall()
            }
        expected = {
            (self.world.spaces[key].pk, public_id, held.content, self.world.users[self.model.authors[public_id]].pk)
            for key, memories in self.model.held.items()
            for public_id, held in memories.items()
        }
        expect(rows == expected, f"memories changed out of turn: {rows ^ expected}")

    def opened(self, space_id: int, public_id: uuid.UUID, sealed: bytes) -> str:
        """A memory's sealed text, opened once per ciphertext (a row keeps it until its text or space changes)."""
        text = self.texts.get(sealed)
        if text is None:
            text = self.texts[sealed] = open_value(Memory(space_id=space_id, public_id=public_id), CONTENT, sealed)
        return text

    def check_members(self) -> None:
        rows = set(Membership.objects.filter(space_id__in=self.space_pks).values_list("space_id", "user_id", "role"))
        expected = {
            (self.world.spaces[key].pk, self.world.users[user].pk, role)
            for key, members in self.model.roles.items()
            for user, role in members.items()
        }
        expect(rows == expected, f"memberships: {rows ^ expected}")


@dataclass
class Tally:
    """What a fuzzing run tried (by operation and door) and what it found, each leak saying which
    seed, step, operation, door and caller broke the model."""

    tried: Counter[str] = field(default_factory=Counter)
    leaks: list[str] = field(default_factory=list)


def fuzz(world: World, *, examples: int, steps: int) -> Tally:
    """Run `examples` examples of `steps` steps each, stopping at the first leak."""
    tally = Tally()

    @hypothesis_settings(
        max_examples=examples,
        deadline=None,
        database=None,
        # No shrinking: an example is a seed, and the failure already names the step that broke.
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=[HealthCheck.too_slow],
    )
    @given(seed=st.integers(min_value=0, max_value=2**32 - 1))
    def run(seed: int) -> None:
        example = Run(world, random.Random(seed), tally.tried)
        savepoint = transaction.savepoint()
        try:
            for number in range(steps):
                try:
                    example.step()
                except Leak as leak:
                    tally.leaks.append(f"seed {seed}, step {number}: {leak}")
                    raise
        finally:
            transaction.savepoint_rollback(savepoint)

    try:
        run()
    except Exception:
        # Hypothesis raises the leak again, or calls it flaky when a planted bug keeps state from
        # one run of the example to its replay: the leak recorded says what broke either way.
        if not tally.leaks:
            raise
    return tally


def test_random_operations_across_spaces_never_cross_a_wall(world, capsys):
    started = time.monotonic()
    tally = fuzz(world, examples=EXAMPLES, steps=STEPS)

    total = sum(tally.tried.values())
    with capsys.disabled():
        counts = ", ".join(f"{name} {count}" for name, count in sorted(tally.tried.items()))
        print(
            f"\nspace isolation fuzzing: {total} operations tried in {time.monotonic() - started:.0f} s, "
            f"{len(tally.leaks)} leaks found ({counts})"
        )
    assert not tally.leaks
    assert total >= MIN_OPERATIONS


# --- planted bugs ------------------------------------------------------------------------------


def plant(monkeypatch: pytest.MonkeyPatch, original: Callable[..., Any], bug: Callable[..., Any]) -> None:
    """`bug` in place of the function `original` in every module that imported it."""
    for module in list(sys.modules.values()):
        if getattr(module, original.__name__, None) is original:
            monkeypatch.setattr(module, original.__name__, bug)


def reach_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """reach_of keeping each user's memberships as it first read them."""
    kept: dict[int, Reach] = {}
    read = reach_of

    def reach_of_kept(actor: Any) -> Reach:
        if isinstance(actor, Reach):
            return actor
        if actor.pk not in kept:
            kept[actor.pk] = read(actor)
        return kept[actor.pk]

    plant(monkeypatch, reach_of, reach_of_kept)


def token_binding_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    def token_reach_unbound(token: ApiToken) -> Reach:
        reach = reach_of(token.owner)
        default = token.default_space_id or reach.default_space_id
        return replace(reach, default_space_id=default, may_write=token.can_write)

    plant(monkeypatch, token_reach, token_reach_unbound)


def token_scope_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    read = token_reach

    def token_reach_writing(token: ApiToken) -> Reach:
        return replace(read(token), may_write=True)

    plant(monkeypatch, token_reach, token_reach_writing)


def viewer_role_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    def check_write_ignoring_roles(reach: Reach, space_id: int) -> None:
        reach.space(space_id)
        if not reach.may_write:
            raise PermissionDenied("This credential may read only.")

    monkeypatch.setattr(Reach, "check_write", check_write_ignoring_roles)


def space_filter_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both ways memories are read (a query, or known ids) without the spaces reached."""

    def memories_of_every_space(owner: Any) -> Any:
        return Memory.objects.select_related("space", "author").defer("search_vector")

    def memories_by_id_every_space(owner: Any, memory_ids: Any, *, groups: Any = ()) -> dict[int, Memory]:
        wanted = Q(pk__in=list(memory_ids)) | Q(duplicate_of__in=list(groups))
        return {
            memory.pk: memory for memory in memories_of_every_space(owner).filter(wanted).order_by("created_at", "id")
        }

    plant(monkeypatch, selectors.memories_of, memories_of_every_space)
    plant(monkeypatch, selectors.memories_by_id, memories_by_id_every_space)


class ReachWritingAnywhere(Reach):
    """A reach whose writes go to any space it reaches, whatever the role or the credential."""

    def write_space(self, name_or_id: object = None) -> ReachedSpace:
        return self.default_space() if name_or_id is None else self.find(name_or_id)


def share_target_unchecked(monkeypatch: pytest.MonkeyPatch) -> None:
    """memory_share copying or moving into a space the caller reaches without checking that it may
    write there (a move still checks the memory's own space)."""

    def reach_of_writing_anywhere(actor: Any) -> Reach:
        reach = reach_of(actor)
        return ReachWritingAnywhere(**vars(reach))

    monkeypatch.setattr(sharing, "reach_of", reach_of_writing_anywhere)


PLANTED_BUGS = (
    reach_read_once,
    token_binding_ignored,
    token_scope_ignored,
    viewer_role_ignored,
    space_filter_dropped,
    share_target_unchecked,
)


def test_the_fuzz_catches_planted_bugs(world, capsys):
    caught = {}
    for bug in PLANTED_BUGS:
        with pytest.MonkeyPatch.context() as monkeypatch:
            bug(monkeypatch)
            caught[bug.__name__] = fuzz(world, examples=4, steps=STEPS).leaks
    assert all(caught.values()), [name for name, leaks in caught.items() if not leaks]
    with capsys.disabled():
        print("\nplanted bugs caught:\n" + "\n".join(f"  {name}: {leaks[0]}" for name, leaks in caught.items()))
