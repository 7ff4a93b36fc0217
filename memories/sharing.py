"""Sharing a memory into another space: a copy (`memory_share`) or, with `move`, the memory itself.

One service behind the MCP tool `memory_share`, `POST /api/v1/memories/<id>/share` and the memory's
page. The caller must reach the memory (else it is not found) and may write the space it goes to
(a space outside the reach is not found; a viewer's space, or a read token, is refused); a move
needs the right to write where the memory is too, since it leaves. The memory arrives with its
provenance, the name of the space it came from and who shared it, which every read shows.

A copy is a new memory (a new id) written by the caller in the other space: it counts toward the
caller's quota, is embedded by the worker like any write, and text that is current there already
is answered as a write of it is (the memory holding it, `written_again`). A move keeps the memory's
id and history (memories.services.memory_move) and drops whatever tied it to its old space.
A superseded memory is refused: the memory that corrects it is the one worth sharing.
"""

import uuid

from django.db import transaction
from django.http import HttpRequest

from accounts.activity import activity_record
from accounts.models import ActivityAction, ApiToken
from accounts.reach import Actor, Reach, reach_of
from gnosem.errors import ValidationError
from memories import services
from memories.models import Memory
from memories.selectors import memories_of, memory_get


@transaction.atomic
def memory_share(
    *,
    owner: Actor,
    public_id: uuid.UUID,
    space: object,
    move: object = False,
    request: HttpRequest | None = None,
    actor_token: ApiToken | None = None,
) -> Memory:
    """Copy the memory into `space` (a reached space's name or id), or with `move` move it there;
    returns the memory in that space (marked `written_again` when its text was there already).
    `request` (a web page) or `actor_token` (an API call) say, for the activity log, where it was
    shared from."""
    if not isinstance(move, bool):
        raise ValidationError("move", "must be true (move the memory) or false (share a copy).")
    if space is None:
        raise ValidationError("space", "name the space to share it into (its name or id, as spaces_list gives them).")
    reach = reach_of(owner)
    memory = memory_get(owner=reach, public_id=public_id)
    target = reach.write_space(space)
    source = reach.space(memory.space_id)
    if move:
        reach.check_write(source.id)
    if target.id == source.id:
        raise ValidationError("space", f"memory {public_id} is in {source.name!r} already: name another space.")
    if memory.superseded_by is not None:
        raise ValidationError(
            "id",
            f"memory {public_id} is superseded by {memory.superseded_by.public_id}: share that one, which corrects "
            "it (or make this one current again first).",
        )
    if move:
        shared = services.memory_move(memory, space_id=target.id, shared_from=source.name, shared_by=reach.user)
    else:
        shared = _copy(memory, reach=reach, space=str(target.public_id), shared_from=source.name)
    activity_record(
        owner=reach.user,
        action=ActivityAction.MEMORY_MOVED if move else ActivityAction.MEMORY_SHARED,
        detail={
            "memory_id": str(public_id),
            "from": source.name,
            "to": target.name,
            "space_id": str(target.public_id),
            "id_there": str(shared.public_id),
        },
        request=request,
        token=actor_token,
    )
    answer = memories_of(reach).get(pk=shared.pk)
    answer.written_again = shared.written_again
    return answer


def _copy(memory: Memory, *, reach: Reach, space: str, shared_from: str) -> Memory:
    """A copy of the memory written into `space` by the caller (its text, tags, client, time and
    compressed form), marked with where it came from; or the memory already holding its text there."""
    copy = services.memory_write(
        owner=reach,
        content=memory.content,
        tags=memory.tags,
        written_by=memory.written_by,
        created_at=memory.created_at,
        space=space,
    )
    if copy.written_again:
        return copy
    copy.shared_from, copy.shared_by = shared_from, reach.user
    copy.also_written_by = list(memory.also_written_by)
    changed = ["shared_from", "shared_by", "also_written_by"]
    if memory.content_optimized is not None:
        # The same text condenses the same way: no need to ask the model again.
        copy.content_optimized, copy.compression_status = memory.content_optimized, memory.compression_status
        copy.compression_error, copy.compression_due_at = "", None
        changed += ["content_optimized", "compression_status", "compression_error", "compression_due_at"]
    copy.save(update_fields=changed)
    return copy
