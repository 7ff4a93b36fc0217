"""Text columns stored sealed under their space's data key (memories.encryption.keys).

A model with such a column derives from `SealedModel` and has a `space` foreign key. In Python
the attribute is plain text: the column's `pre_save` seals it as a row is written (a fresh nonce,
the space's current key), and `SealedModel.from_db` opens it as a row is read. The associated
data binds the ciphertext to its table, column, space and row (`row` names the fields that
identify the row), so a value copied into another row or space does not open.

Writes that bypass `save` and `bulk_create` (a queryset's `update`, `bulk_update`) would store a
plain string: they are refused. A value that does not open reads as `UnreadableText`, and is
written back unchanged rather than sealed over, so nothing is lost by saving its row.
"""

import json
import logging
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.db import models
from django.db.backends.base.base import BaseDatabaseWrapper

from memories.encryption.cipher import Unreadable, sealed_version
from memories.encryption.keys import DataKey, current_key, key_for

logger = logging.getLogger(__name__)


class SealedValue:
    """A sealed column's bytes as read, before they are opened (`SealedModel.from_db`)."""

    __slots__ = ("blob",)

    def __init__(self, blob: bytes) -> None:
        self.blob = blob

    def __repr__(self) -> str:
        return f"<sealed, {len(self.blob)} bytes>"


class UnreadableText(str):
    """What a sealed value that fails to open reads as: a notice in place of the text, keeping
    the stored bytes so that saving the row writes them back unchanged."""

    blob: bytes

    def __new__(cls, blob: bytes, reason: str) -> "UnreadableText":
        text = super().__new__(cls, f"[unreadable: {reason}]")
        text.blob = blob
        return text


class UnreadableList(list[str]):
    """What a sealed list (of tags, of client names) that fails to open reads as: empty, keeping
    the stored bytes so that saving the row writes them back unchanged."""

    def __init__(self, blob: bytes) -> None:
        super().__init__()
        self.blob = blob


class SealedTextField(models.BinaryField):
    """Text sealed under the row's space key; `row` names the fields that identify the row."""

    # Read by django-stubs: the attribute holds text, whatever the column stores.
    _pyi_private_set_type: str
    _pyi_private_get_type: str  # type: ignore[assignment]  # text, not the column's bytes

    def __init__(self, *args: Any, row: tuple[str, ...] = ("pk",), **kwargs: Any) -> None:
        self.row = row
        super().__init__(*args, **kwargs)

    def deconstruct(self) -> tuple[str, str, Sequence[Any], dict[str, Any]]:
        name, path, args, kwargs = super().deconstruct()
        kwargs["row"] = self.row
        kwargs.pop("editable", None)
        return name, path, args, kwargs

    def _check_str_default_value(self) -> list:
        """Accept a text default (BinaryField refuses one): it is sealed like any text."""
        return []

    def context(self, instance: models.Model) -> str:
        """The associated data beside the space and key version: table, column and row."""
        row = "|".join(_context_part(getattr(instance, field)) for field in self.row)
        return f"{instance._meta.db_table}.{self.column}:{row}"

    def from_db_value(self, value: Any, expression: Any, connection: BaseDatabaseWrapper) -> SealedValue | None:
        return None if value is None else SealedValue(bytes(value))

    def pre_save(self, model_instance: models.Model, add: bool) -> Any:
        value = getattr(model_instance, self.attname)
        if value is None or isinstance(value, SealedValue):
            return value
        if isinstance(value, UnreadableText | UnreadableList):
            return SealedValue(value.blob)
        key = current_key(model_instance.space_id)  # type: ignore[attr-defined]  # every sealed model has a space
        return SealedValue(key.seal(self.encode(value), self.context(model_instance)))

    def encode(self, value: Any) -> str:
        """The attribute's value as the text sealed."""
        return value

    def decode(self, text: str) -> Any:
        """The attribute's value from the text opened."""
        return text

    def unreadable(self, blob: bytes, reason: str) -> Any:
        """What the attribute holds when its value does not open."""
        return UnreadableText(blob, reason)

    def get_db_prep_value(self, value: Any, connection: BaseDatabaseWrapper, prepared: bool = False) -> Any:
        if isinstance(value, SealedValue):
            value = value.blob
        elif isinstance(value, str | list):
            raise TypeError(
                f"{self.model.__name__}.{self.name} is sealed: write it through save() or bulk_create(), "
                "which seal it under the row's space key, not through update() or raw values."
            )
        return super().get_db_prep_value(value, connection, prepared)


class SealedListField(SealedTextField):
    """A list of strings (tags, client names) sealed as one JSON array; it reads as an empty list
    when it does not open."""

    _pyi_private_set_type: list[str]  # type: ignore[assignment]  # a list, not text
    _pyi_private_get_type: list[str]  # type: ignore[assignment]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("default", list)
        super().__init__(*args, **kwargs)

    def encode(self, value: Any) -> str:
        return json.dumps(list(value), ensure_ascii=False)

    def decode(self, text: str) -> Any:
        return json.loads(text)

    def unreadable(self, blob: bytes, reason: str) -> Any:
        return UnreadableList(blob)


def seal_as(instance: models.Model, field_name: str, text: Any, key: DataKey) -> bytes:
    """`text` sealed under `key` as the `field_name` column of the row `instance` stands for:
    for writers that insert rows in SQL, bypassing `save`."""
    field = instance._meta.get_field(field_name)
    assert isinstance(field, SealedTextField)
    return key.seal(field.encode(text), field.context(instance))


def _context_part(value: object) -> str:
    """A row field as the associated data writes it: an instant as its epoch microseconds, the
    same whatever time zone it was read in."""
    if isinstance(value, datetime):
        return str(round(value.timestamp() * 1_000_000))
    return str(value)


def sealed_fields(model: type[models.Model]) -> list[SealedTextField]:
    """The model's sealed columns."""
    return [field for field in model._meta.concrete_fields if isinstance(field, SealedTextField)]


def open_sealed_fields(instance: models.Model) -> None:
    """Replace the instance's sealed values, as read, by their text."""
    for field in sealed_fields(type(instance)):
        value = instance.__dict__.get(field.attname)
        if isinstance(value, SealedValue):
            instance.__dict__[field.attname] = open_value(instance, field, value.blob)


def open_value(instance: models.Model, field: SealedTextField, blob: bytes) -> Any:
    """One sealed value as its attribute holds it, or the field's unreadable value (an
    `UnreadableText` saying why) when it does not open."""
    try:
        key = key_for(instance.space_id, sealed_version(blob))  # type: ignore[attr-defined]  # every sealed model has a space
        return field.decode(key.open(blob, field.context(instance)))
    except (Unreadable, ValueError) as error:
        logger.error("%s %s: %s cannot be opened: %s", instance._meta.label, instance.pk, field.name, error)
        return field.unreadable(blob, str(error))


def unreadable_fields(instance: models.Model) -> list[str]:
    """The names of the instance's sealed fields that did not open."""
    return [
        field.name
        for field in sealed_fields(type(instance))
        if isinstance(instance.__dict__.get(field.attname), UnreadableText | UnreadableList)
    ]


class SealedModel(models.Model):
    """A model with sealed columns, opened as its rows are read."""

    # Rows a key rotation re-seals per transaction at most (memories.encryption.rotation); None:
    # as many as its batch.
    rotation_batch: int | None = None

    class Meta:
        abstract = True

    @classmethod
    def from_db(cls, db: str | None, field_names: Any, values: Any, **kwargs: Any) -> Any:
        instance = super().from_db(db, field_names, values, **kwargs)
        open_sealed_fields(instance)
        return instance

    @classmethod
    def rekeyed(cls, rows: "Sequence[SealedModel]") -> "Sequence[SealedModel]":
        """Derive again, under their spaces' current keys, what these rows keep derived from their
        texts; the rows to save under those keys (memories.encryption.rotation). By default:
        nothing derived, every row saved."""
        return rows
