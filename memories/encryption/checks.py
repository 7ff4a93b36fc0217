"""The master key as a system check: well-formed wherever Django starts, and, where a command names
a database (`migrate`, `check --database default`), the one that database's data is encrypted
with. Other processes compare it with the database before they first wrap or unwrap a data key
(memories.encryption.master), so that merely starting one never starts the embedded database.
"""

from collections.abc import Sequence
from typing import Any

from django.apps import AppConfig
from django.core.checks import Error, register
from django.core.exceptions import ImproperlyConfigured
from django.db import DEFAULT_DB_ALIAS, OperationalError

from memories.encryption.master import master_key, previous_master_key, verify_master_key


@register()
def check_master_key(
    app_configs: Sequence[AppConfig] | None, databases: Sequence[str] | None = None, **kwargs: Any
) -> list[Error]:
    """A malformed master key (memories.E001), or one that does not open this database's data (memories.E002)."""
    try:
        master_key()
        previous_master_key()
    except ImproperlyConfigured as error:
        return [Error(str(error), id="memories.E001")]
    if not databases or DEFAULT_DB_ALIAS not in databases:
        return []
    try:
        verify_master_key()
    except ImproperlyConfigured as error:
        return [Error(str(error), id="memories.E002")]
    except OperationalError:  # no database to compare with: the command that needs one says so
        return []
    return []
