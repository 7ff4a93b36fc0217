"""Background work for accounts (found by huey's autodiscovery of `tasks` modules)."""

from huey import crontab
from huey.contrib.djhuey import db_periodic_task

from accounts.activity import activity_prune
from accounts.oauth.connections import connections_lapsed_end
from accounts.oauth.registration import oauth_clients_unused_delete


@db_periodic_task(crontab(minute="41", hour="3"))
def prune_activity_task() -> int:
    """Daily: drop activity events older than GNOSEM_ACTIVITY_RETENTION_DAYS."""
    return activity_prune()


@db_periodic_task(crontab(minute="17"))
def oauth_cleanup_task() -> int:
    """Hourly: delete expired OAuth codes and tokens, end the connections left without a token, then
    delete the registered clients nobody uses (accounts.oauth.registration); returns how many clients."""
    connections_lapsed_end()
    return oauth_clients_unused_delete()
