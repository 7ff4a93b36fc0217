"""Replacing a space's data key: a new key version, then everything sealed or indexed under the
older ones sealed and indexed again under it, then the older keys dropped.

From the moment the new key exists every write seals under it, while reads open each value with
the version its header names and search looks words up under every version the space still has
(memories.encryption.blind_index): nothing is unreadable or unfindable at any moment. The rows
still under an older key are re-sealed a batch at a time, each batch its own transaction with its
rows locked, so a rotation stopped anywhere is continued by running it again (the worker does so
every ten minutes). The older keys go once no row names them and the new key has existed for
`RETIRE_AFTER`: long enough for any write that read the old key before the new one was made to
have committed, and been re-sealed.
"""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.apps import apps
from django.db import models, transaction
from django.db.models import Q
from django.utils import timezone

from memories.encryption.fields import SealedModel, sealed_fields
from memories.encryption.keys import space_key_add, space_keys_drop_older

RETIRE_AFTER = timedelta(minutes=10)
# Rows re-sealed per transaction.
BATCH = 200


class SealedVersion(models.Func):
    """The key version a sealed value's header names (`memories.encryption.cipher.seal`: a format
    byte, then the version as four bytes, big-endian); NULL for NULL. Read from the value's first
    five bytes only: PostgreSQL fetches that slice of a long value, not all of it."""

    template = "('x' || encode(substring(%(expressions)s FROM 2 FOR 4), 'hex'))::bit(32)::bigint"
    output_field = models.BigIntegerField()


@dataclass(frozen=True)
class Rotation:
    """Where a space's key rotation stands: the version everything moves to, the rows sealed
    under older ones, and the rows in all."""

    space_id: int
    version: int
    remaining: int
    total: int

    @property
    def done(self) -> int:
        return self.total - self.remaining


def _sealed_models() -> list[type[SealedModel]]:
    return [model for model in apps.get_models() if issubclass(model, SealedModel)]


def _older(model: type[SealedModel], space_id: int, version: int) -> "models.QuerySet[SealedModel]":
    """The space's rows of `model` with a value sealed, or a column derived, under a key older than `version`."""
    fields = sealed_fields(model)
    rows = model._default_manager.filter(Q(space_id=space_id)).alias(
        **{f"sealed_{field.name}": SealedVersion(field.name) for field in fields}
    )
    older = Q()
    for field in fields:
        older |= Q(**{f"sealed_{field.name}__lt": version})
    if any(field.name == "key_version" for field in model._meta.concrete_fields):
        older |= Q(key_version__lt=version)
    return rows.filter(older)


def _versions(space_id: int) -> list[tuple[int, datetime]]:
    space_keys = apps.get_model("memories", "SpaceKey")
    return list(space_keys.objects.filter(space_id=space_id).order_by("-version").values_list("version", "created_at"))


def sealing_progress(space_id: int, version: int) -> Rotation:
    """How many of the space's rows are sealed under keys older than `version`, of how many."""
    sealed = _sealed_models()
    return Rotation(
        space_id=space_id,
        version=version,
        remaining=sum(_older(model, space_id, version).count() for model in sealed),
        total=sum(model._default_manager.filter(Q(space_id=space_id)).count() for model in sealed),
    )


def rotation_of(space_id: int) -> Rotation | None:
    """The space's rotation under way, or None when it has one key only."""
    versions = _versions(space_id)
    return sealing_progress(space_id, versions[0][0]) if len(versions) > 1 else None


def rotation_start(space_id: int) -> Rotation:
    """Give the space a new key; what older keys sealed is re-sealed by `rotation_continue`.
    A rotation already under way is returned as it is (it moves everything to its newest key)."""
    return rotation_of(space_id) or sealing_progress(space_id, space_key_add(space_id))


def rotation_step(space_id: int, version: int, batch: int = BATCH) -> int:
    """Re-seal up to `batch` of the space's rows still under keys older than `version` (at most a
    model's `rotation_batch` of its rows), a transaction per model; how many were (0: none is left).
    The newest rows go first: what is written meanwhile, under the new key, has its neighbours
    (the same client's memories minutes before, memories.indexing.sequences) under it too. They
    are locked in id order, as writers lock rows, so that neither waits for the other in a cycle."""
    done = 0
    for model in _sealed_models():
        size = min(batch - done, model.rotation_batch or batch)
        with transaction.atomic():
            older = _older(model, space_id, version)
            newest = list(older.order_by("-pk").values_list("pk", flat=True)[:size])
            rows = list(older.filter(pk__in=newest).select_for_update().order_by("pk"))
            for row in model.rekeyed(rows):
                row.save()
        done += len(rows)
        if done >= batch:
            break
    return done


def rotation_continue(
    space_id: int,
    *,
    batch: int = BATCH,
    retire_after: timedelta = RETIRE_AFTER,
    progress: Callable[[Rotation], None] | None = None,
) -> Rotation | None:
    """Re-seal everything of the space's rotation under way, then drop the older keys once their
    time is up; the rotation as it stands (None once it has ended, or when none was under way)."""
    rotation = rotation_of(space_id)
    if rotation is None:
        return None
    version = rotation.version
    while rotation_step(space_id, version, batch):
        if progress:
            progress(sealing_progress(space_id, version))
    made = _versions(space_id)[0][1]
    if timezone.now() - made < retire_after:
        return sealing_progress(space_id, version)
    # Past the grace time nothing new is sealed under an older key: re-seal any late write, then drop them.
    rotation_step(space_id, version, batch)
    rotation = sealing_progress(space_id, version)
    if rotation.remaining:
        return rotation
    space_keys_drop_older(space_id, version)
    return None
