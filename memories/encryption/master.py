"""The master key: the one secret that wraps every space's data keys (memories.encryption.keys).

It comes from GNOSEM_MASTER_KEY (or GNOSEM_MASTER_KEY_FILE), the base64 of 32 bytes. Unset, one
is generated once into GNOSEM_DATA_DIR/secrets/gnosem_master_key, where the web server, the
workers and later runs find it. While the master key is rotated (`manage.py rotatekeys
--master`), the key being replaced is GNOSEM_PREVIOUS_MASTER_KEY.

The database records an HMAC of a fixed label under the master key (`MasterKeyCheck`), so that a
process given another key is refused before it seals anything with it.
"""

import base64
import binascii
import hashlib
import hmac
import logging
import os
import secrets
import tempfile
from functools import cache, partial
from pathlib import Path
from typing import TYPE_CHECKING

from django.apps import apps
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import connection, transaction

from memories.encryption.cipher import KEY_BYTES

if TYPE_CHECKING:
    from memories.models import MasterKeyCheck

logger = logging.getLogger(__name__)

KEY_FILE_NAME = "gnosem_master_key"
HOW_TO_MAKE_ONE = "the base64 of 32 random bytes, as `openssl rand -base64 32` prints"
_ID_LABEL = b"gnosem master key id"
_CHECK_LABEL = b"gnosem master key check"

# Master key ids this process has compared with the database's record (`ensure_master_key_verified`).
_verified: set[str] = set()


def master_key() -> bytes:
    """The master key this process wraps data keys with."""
    if settings.GNOSEM_MASTER_KEY is None:
        return data_dir_master_key(settings.GNOSEM_DATA_DIR)
    return decode_master_key(settings.GNOSEM_MASTER_KEY, "GNOSEM_MASTER_KEY (or GNOSEM_MASTER_KEY_FILE)")


def previous_master_key() -> bytes | None:
    """The master key being replaced during a rotation, if one is configured."""
    if settings.GNOSEM_PREVIOUS_MASTER_KEY is None:
        return None
    return decode_master_key(
        settings.GNOSEM_PREVIOUS_MASTER_KEY, "GNOSEM_PREVIOUS_MASTER_KEY (or GNOSEM_PREVIOUS_MASTER_KEY_FILE)"
    )


def decode_master_key(value: str, source: str) -> bytes:
    """The 32 bytes `value` holds in base64; `source` names where it came from in the error."""
    try:
        key = base64.b64decode(value.strip(), validate=True)
    except binascii.Error:
        raise ImproperlyConfigured(f"{source} is not base64: a master key is {HOW_TO_MAKE_ONE}.") from None
    if len(key) != KEY_BYTES:
        raise ImproperlyConfigured(
            f"{source} holds {len(key)} bytes, not {KEY_BYTES}: a master key is {HOW_TO_MAKE_ONE}."
        )
    return key


@cache
def data_dir_master_key(data_dir: Path) -> bytes:
    """The master key kept in the data folder, generated there (mode 0600) by the first process
    that needs one; that process warns that it must be backed up."""
    path = data_dir / "secrets" / KEY_FILE_NAME
    if not path.exists():
        created = _create_once(path, base64.b64encode(secrets.token_bytes(KEY_BYTES)).decode() + "\n")
        if created:
            logger.warning(
                "Generated the master key into %s. It encrypts every space's data keys: without this file "
                "no backup of the database can be read. Back it up now, apart from the database backups, or "
                "move it into your secret store and set GNOSEM_MASTER_KEY_FILE to it "
                '(docs/operations.md, "Encryption keys").',
                path,
            )
    return decode_master_key(path.read_text(), f"The master key file {path}")


def _create_once(path: Path, content: str) -> bool:
    """Write `content` to `path` unless it exists, atomically and durably: written aside (mode
    0600), then hard-linked into place, so the first process wins. True when this call wrote it."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False) as handle:
        handle.write(content)
        handle.flush()
        os.fsync(handle.fileno())
    try:
        os.link(handle.name, path)
    except FileExistsError:
        return False
    finally:
        os.unlink(handle.name)
    # The key must outlive a crash as surely as the data it is about to encrypt.
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
    return True


def master_id(key: bytes) -> str:
    """A short public id of a master key: what `SpaceKey.master_id` and error messages name."""
    return hmac.new(key, _ID_LABEL, hashlib.sha256).hexdigest()[:16]


def _check_value(key: bytes) -> bytes:
    return hmac.digest(key, _CHECK_LABEL, "sha256")


def _check_model() -> "type[MasterKeyCheck]":
    # Looked up rather than imported: memories.models imports this package (its sealed fields).
    return apps.get_model("memories", "MasterKeyCheck")


def verify_master_key() -> None:
    """Refuse a master key other than the one this database's data is encrypted with, recording
    the configured key on first use; nothing to compare with before the table exists (migrate)."""
    if _check_model()._meta.db_table not in connection.introspection.table_names():
        return
    _compare_with_record()


def ensure_master_key_verified() -> None:
    """`verify_master_key` once per process and master key, before a data key is wrapped or unwrapped."""
    current_id = master_id(master_key())
    if current_id in _verified:
        return
    _compare_with_record()
    # Remembered once committed: a record this transaction made is taken back if it rolls back.
    transaction.on_commit(partial(_verified.add, current_id))


def _compare_with_record() -> None:
    current, previous = master_key(), previous_master_key()
    model = _check_model()
    record = model.objects.filter(id=1).first()
    if record is None:  # the first use: record this key, unless another process just recorded its own
        model.objects.bulk_create(
            [model(id=1, master_id=master_id(current), check_value=_check_value(current))], ignore_conflicts=True
        )
        record = model.objects.get(id=1)
    for key in (current, previous):
        if key is not None and hmac.compare_digest(bytes(record.check_value), _check_value(key)):
            return
    source = (
        f"The master key in {settings.GNOSEM_DATA_DIR / 'secrets' / KEY_FILE_NAME}"
        if settings.GNOSEM_MASTER_KEY is None
        else "GNOSEM_MASTER_KEY"
    )
    raise ImproperlyConfigured(
        f"{source} (master key {master_id(current)}) does not match the master key this database's data is "
        f"encrypted with (master key {record.master_id}). Set GNOSEM_MASTER_KEY_FILE to the file that holds "
        "that key; while the master key is rotated, the new key goes in GNOSEM_MASTER_KEY and the previous "
        "one in GNOSEM_PREVIOUS_MASTER_KEY."
    )


def record_master_key(key: bytes) -> None:
    """Make `key` the master key the database expects (the end of a master key rotation)."""
    _check_model().objects.update_or_create(
        id=1, defaults={"master_id": master_id(key), "check_value": _check_value(key)}
    )
