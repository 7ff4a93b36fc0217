"""Background work for accounts (found by huey's autodiscovery of `tasks` modules)."""

from huey import crontab
from huey.contrib.djhuey import db_periodic_task

from accounts.activity import activity_prune


@db_periodic_task(crontab(minute="41", hour="3"))
def prune_activity_task() -> int:
    """Daily: drop activity events older than GNOSEM_ACTIVITY_RETENTION_DAYS."""
    return activity_prune()
