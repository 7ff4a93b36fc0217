"""Each space's data keys: random 256-bit keys, numbered from 1, stored wrapped by the master key
(`SpaceKey`; memories.encryption.master).

A space gets its first key when something is first sealed in it. Texts are sealed under a subkey
of the space's newest key, bound to the space, the key version and the caller's context, and keyed
digests (`DataKey.mac`) let the database match equal terms without holding them. Older versions
stay readable until nothing is sealed under them.

Unwrapped keys are cached in the process: a key's material never changes. Which version is a
space's newest is read from the database every time.
"""

import hmac
import secrets
import threading
import time
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING

from django.apps import apps
from django.db import connection, transaction

from memories.encryption.cipher import KEY_BYTES, Unreadable, derive_key, open_sealed, seal, sealed_version
from memories.encryption.master import ensure_master_key_verified, master_id, master_key, previous_master_key

if TYPE_CHECKING:
    from django.db.models import QuerySet

    from memories.models import SpaceKey

CONTENT_INFO = b"gnosem content"
MAC_INFO = b"gnosem mac "
WRAPPING_INFO = b"gnosem data key wrapping"


@dataclass(frozen=True)
class DataKey:
    """One version of a space's data key."""

    space_id: int
    version: int
    _material: bytes = field(repr=False)
    _subkeys: dict[bytes, bytes] = field(default_factory=dict, init=False, repr=False, compare=False)

    def seal(self, text: str, context: str) -> bytes:
        """`text` sealed for this space and `context` (what identifies the value: table, column, row)."""
        return seal(self._subkey(CONTENT_INFO), self.version, text.encode(), self._associated(context))

    def open(self, blob: bytes, context: str) -> str:
        """The text of a value sealed under this key for `context`."""
        version = sealed_version(blob)
        if version != self.version:
            raise Unreadable(f"sealed under key version {version}, not {self.version}")
        return open_sealed(self._subkey(CONTENT_INFO), blob, self._associated(context)).decode()

    def mac(self, purpose: str, data: str) -> bytes:
        """HMAC-SHA256 of `data` under this key's subkey for `purpose`: equal data, equal digest,
        within one space, key version and purpose only."""
        return hmac.digest(self._subkey(MAC_INFO + purpose.encode()), data.encode(), "sha256")

    def _associated(self, context: str) -> bytes:
        return f"{self.space_id}|{self.version}|{context}".encode()

    def _subkey(self, info: bytes) -> bytes:
        subkey = self._subkeys.get(info)
        if subkey is None:
            subkey = self._subkeys[info] = derive_key(self._material, info)
        return subkey


_lock = threading.Lock()
# By (space, version): the key, and the wrapped form it came from (a row read later with another
# wrapped form, after a migration dropped and made the keys again, replaces it).
_cache: dict[tuple[int, int], tuple[bytes, DataKey]] = {}
# The newest version of each space's key this process read, and when (time.monotonic()): trusted
# for CURRENT_TTL seconds, so that a write sealing several values reads it once. A write that seals
# under a version just replaced elsewhere is re-sealed by the rotation, which keeps the older
# versions for minutes (memories.encryption.rotation.RETIRE_AFTER); this process forgets its
# version of a space whenever it adds or drops one of the space's keys itself.
CURRENT_TTL = 2.0
_current: dict[int, tuple[float, int]] = {}
# Keys this process created in a transaction not yet committed, by their wrapped form: a rollback
# takes such a row back (and another key may later be made with its version), so it is cached only
# once its transaction commits.
_uncommitted: dict[tuple[int, int], bytes] = {}


def _space_keys() -> "type[SpaceKey]":
    # Looked up rather than imported: memories.models imports this package (its sealed fields).
    return apps.get_model("memories", "SpaceKey")


def current_key(space_id: int) -> DataKey:
    """The space's newest data key, made now if the space has none (one key however many
    processes ask at once). Which version is newest is read again after CURRENT_TTL."""
    with _lock:
        known = _current.get(space_id)
        cached = _cache.get((space_id, known[1])) if known and time.monotonic() - known[0] < CURRENT_TTL else None
    if cached is not None:
        return cached[1]
    row = _by_version(space_id).first() or _create_first_key(space_id)
    key = _data_key(space_id, *row)
    with _lock:
        if (space_id, key.version) in _cache:  # committed
            _current[space_id] = (time.monotonic(), key.version)
    return key


def key_for(space_id: int, version: int) -> DataKey:
    """Version `version` of the space's data key."""
    with _lock:
        cached = _cache.get((space_id, version))
    if cached is not None:
        return cached[1]
    row = _space_keys().objects.filter(space_id=space_id, version=version).values_list("wrapped", "master_id").first()
    if row is None:
        raise Unreadable(f"space {space_id} has no data key of version {version}")
    return _data_key(space_id, version, *row)


# Every version of the spaces' data keys, as `keys_of_rows` reads them: for queries that read them
# together with something else, in one round trip (memories.encryption.blind_index).
SPACE_KEYS_SQL = (
    "SELECT space_id, version, wrapped, master_id FROM memories_spacekey WHERE space_id = ANY(%(key_spaces)s)"
)


def readable_keys(space_ids: Collection[int]) -> dict[int, list[DataKey]]:
    """Every version of each space's data key, newest first (empty for a space with none yet)."""
    rows = (
        _space_keys()
        .objects.filter(space_id__in=list(space_ids))
        .values_list("space_id", "version", "wrapped", "master_id")
    )
    return keys_of_rows(space_ids, rows)


def keys_of_rows(
    space_ids: Collection[int], rows: Iterable[tuple[int, int, bytes | memoryview, str]]
) -> dict[int, list[DataKey]]:
    """The data keys of these spaces from their `SpaceKey` rows (space, version, wrapped, master
    id), each space's newest first."""
    found: dict[int, list[DataKey]] = {space_id: [] for space_id in space_ids}
    for space_id, version, wrapped, wrapped_by in sorted(rows, key=lambda row: (row[0], -row[1])):
        found[space_id].append(_data_key(space_id, version, wrapped, wrapped_by))
    return found


def space_key_create(space_id: int) -> None:
    """Give a space made just now its first data key, in the transaction that makes the space. It
    is cached at once: a rollback takes the space with it, and a space's id is never used again."""
    ensure_master_key_verified()
    master = master_key()
    material = secrets.token_bytes(KEY_BYTES)
    wrapped = _wrap(master, space_id, 1, material)
    _space_keys().objects.create(space_id=space_id, version=1, wrapped=wrapped, master_id=master_id(master))
    with _lock:
        _cache[(space_id, 1)] = (wrapped, DataKey(space_id, 1, material))


def space_key_add(space_id: int) -> int:
    """Give the space a new data key, the next version, which seals and indexes everything from
    now on (memories.encryption.rotation re-seals what older ones sealed); returns its version.
    The space's keys are locked meanwhile, so two rotations started at once add one key each in turn."""
    ensure_master_key_verified()
    master = master_key()
    with transaction.atomic():
        versions = list(
            _space_keys().objects.select_for_update().filter(space_id=space_id).values_list("version", flat=True)
        )
        version = max(versions, default=0) + 1
        material = secrets.token_bytes(KEY_BYTES)
        wrapped = _wrap(master, space_id, version, material)
        _space_keys().objects.create(space_id=space_id, version=version, wrapped=wrapped, master_id=master_id(master))
    with _lock:
        _current.pop(space_id, None)
    return version


def space_keys_drop_older(space_id: int, version: int) -> int:
    """Delete the space's keys older than `version` (nothing is sealed under them any more);
    returns how many went. Locked like `space_key_add`."""
    with transaction.atomic():
        older = _space_keys().objects.select_for_update().filter(space_id=space_id, version__lt=version)
        list(older.values_list("pk", flat=True))
        dropped, _ = older.delete()
    with _lock:
        for cached in [cached for cached in _cache if cached[0] == space_id and cached[1] < version]:
            del _cache[cached]
        _current.pop(space_id, None)
    return dropped


def forget_cached_keys() -> None:
    """Empty the process's cache of unwrapped keys (after the keys' table was made anew)."""
    with _lock:
        _cache.clear()
        _current.clear()


def _by_version(space_id: int) -> "QuerySet[SpaceKey, tuple[int, bytes | memoryview, str]]":
    """The space's keys as (version, wrapped, master id), newest first."""
    return (
        _space_keys()
        .objects.filter(space_id=space_id)
        .order_by("-version")
        .values_list("version", "wrapped", "master_id")
    )


def _create_first_key(space_id: int) -> tuple[int, bytes | memoryview, str]:
    """Insert version 1 unless another process just did (ON CONFLICT DO NOTHING raises no error,
    so this works inside the caller's transaction); the row that stands."""
    ensure_master_key_verified()
    master = master_key()
    wrapped = _wrap(master, space_id, 1, secrets.token_bytes(KEY_BYTES))
    model = _space_keys()
    model.objects.bulk_create(
        [model(space_id=space_id, version=1, wrapped=wrapped, master_id=master_id(master))], ignore_conflicts=True
    )
    row = _by_version(space_id)[0]
    if connection.in_atomic_block and bytes(row[1]) == wrapped:  # this transaction's row, not another's
        with _lock:
            _uncommitted[(space_id, 1)] = wrapped
        transaction.on_commit(partial(_committed, space_id, 1, wrapped))
    return row


def _committed(space_id: int, version: int, wrapped: bytes) -> None:
    with _lock:
        if _uncommitted.get((space_id, version)) == wrapped:
            del _uncommitted[(space_id, version)]


def _data_key(space_id: int, version: int, stored: bytes | memoryview, wrapped_by: str) -> DataKey:
    """The key a `SpaceKey` row holds, from the cache or unwrapped (and cached once committed)."""
    wrapped = bytes(stored)
    with _lock:
        cached = _cache.get((space_id, version))
    if cached is not None and cached[0] == wrapped:
        return cached[1]
    ensure_master_key_verified()
    key = DataKey(space_id, version, _unwrap(_master_named(wrapped_by), space_id, version, wrapped))
    with _lock:
        pending = _uncommitted.get((space_id, version))
        if pending != wrapped:
            _cache[(space_id, version)] = (wrapped, key)
            _uncommitted.pop((space_id, version), None)  # a rolled-back row's, if any
    return key


def _master_named(wrapped_by: str) -> bytes:
    """The configured master key with the id `wrapped_by`: the current one, or the previous one
    while the master key is rotated."""
    for key in (master_key(), previous_master_key()):
        if key is not None and master_id(key) == wrapped_by:
            return key
    raise Unreadable(
        f"the data key is wrapped by master key {wrapped_by}, which is neither GNOSEM_MASTER_KEY nor "
        "GNOSEM_PREVIOUS_MASTER_KEY"
    )


def _wrap(master: bytes, space_id: int, version: int, material: bytes) -> bytes:
    return seal(derive_key(master, WRAPPING_INFO), version, material, _wrapping_context(space_id, version))


def _unwrap(master: bytes, space_id: int, version: int, wrapped: bytes) -> bytes:
    try:
        return open_sealed(derive_key(master, WRAPPING_INFO), wrapped, _wrapping_context(space_id, version))
    except Unreadable as error:
        raise Unreadable(f"data key {version} of space {space_id}: {error}") from None


def _wrapping_context(space_id: int, version: int) -> bytes:
    return f"space key|{space_id}|{version}".encode()


def data_keys_wrapped_by(master: bytes) -> int:
    """How many data keys `master` wraps."""
    return _space_keys().objects.filter(master_id=master_id(master)).count()


def rewrap_data_keys(*, previous: bytes, current: bytes, limit: int) -> int:
    """Rewrap up to `limit` data keys from the `previous` master key to the `current` one, in one
    transaction; how many it rewrapped (0: none is left). Each row names the master key that wraps
    it, so a rotation stopped between batches leaves every key readable."""
    model = _space_keys()
    with transaction.atomic():
        rows = list(model.objects.select_for_update().filter(master_id=master_id(previous)).order_by("pk")[:limit])
        for row in rows:
            material = _unwrap(previous, row.space_id, row.version, bytes(row.wrapped))
            row.wrapped = _wrap(current, row.space_id, row.version, material)
            row.master_id = master_id(current)
        model.objects.bulk_update(rows, ["wrapped", "master_id"])
    return len(rows)
