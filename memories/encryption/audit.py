"""Whether every sealed value opens: what an operator checks after restoring a backup, moving to
another master key, or when a value was reported unreadable (`manage.py checksealed`, and the
worker once a day for /healthz)."""

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from django.apps import apps
from django.utils import timezone

from memories.encryption.fields import SealedModel, unreadable_fields

# Rows read at a time: a note may hold megabytes.
READ_BATCH = 100


@dataclass
class SealedAudit:
    """How many rows were opened, and those with a value that does not open ("memories.memory 42:
    content"), when the check finished."""

    checked: int = 0
    unreadable: list[str] = field(default_factory=list)
    finished_at: datetime | None = None


def sealed_audit(progress: Callable[[int], None] | None = None) -> SealedAudit:
    """Open every sealed value of every space (each failure is logged as it is met)."""
    audit = SealedAudit()
    for model in apps.get_models():
        if not issubclass(model, SealedModel):
            continue
        for row in model._default_manager.order_by("pk").iterator(chunk_size=READ_BATCH):
            audit.checked += 1
            if failed := unreadable_fields(row):
                audit.unreadable.append(f"{model._meta.label_lower} {row.pk}: {', '.join(failed)}")
            if progress and audit.checked % 1000 == 0:
                progress(audit.checked)
    audit.finished_at = timezone.now()
    return audit
