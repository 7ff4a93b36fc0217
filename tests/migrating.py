"""Running migrations inside a test: to a past state with rows written there, then forward. Such a
test needs `django_db(transaction=True)`: PostgreSQL refuses to alter a table with rows whose
deferred constraint checks are still pending in the same transaction."""

from collections.abc import Iterator
from contextlib import contextmanager

from django.apps.registry import Apps
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from memories.encryption.keys import forget_cached_keys

Targets = list[tuple[str, str]]


def migrate(targets: Targets) -> Apps:
    """Migrate to `targets` (forwards or backwards); the apps as they are there. The process's
    cached space keys are forgotten: going back past their table drops the keys."""
    MigrationExecutor(connection).migrate(targets)
    forget_cached_keys()
    return MigrationExecutor(connection).loader.project_state(targets).apps


def latest() -> Targets:
    """Every app's newest migration: where the application's models are."""
    return MigrationExecutor(connection).loader.graph.leaf_nodes()


@contextmanager
def migrated_to(targets: Targets) -> Iterator[Apps]:
    """The apps at `targets`, and every migration applied again afterwards, whatever happens."""
    try:
        yield migrate(targets)
    finally:
        MigrationExecutor(connection).migrate(latest())
        forget_cached_keys()
