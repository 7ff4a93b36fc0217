"""Signal receivers of the memories app: thin callers of services."""

import logging
from typing import Any

from allauth.account.signals import user_signed_up
from django.db import DatabaseError
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.signals import connection_created
from django.db.models.signals import post_save
from django.dispatch import receiver
from django.http import HttpRequest

from accounts.models import Space, SpaceKind
from gnosem.types import Owner
from memories.encryption.keys import space_key_create
from memories.indexing.vector_indexes import vector_index_session_settings
from memories.limits.quotas import quota_create_for_signup, space_quota_create

logger = logging.getLogger(__name__)


@receiver(user_signed_up, dispatch_uid="memories.quota_for_signup")
def give_signup_its_quota(sender: object, request: HttpRequest, user: Owner, **kwargs: Any) -> None:
    """Someone signed up through the site: they get the sign-up quota (GNOSEM_SIGNUP_MAX_*).
    Accounts the operator creates (createsuperuser, createtoken --create-user) get none."""
    quota_create_for_signup(user=user)


@receiver(post_save, sender=Space, dispatch_uid="memories.quota_for_team_space")
def give_team_space_its_quota(sender: object, instance: Space, created: bool, raw: bool = False, **kwargs: Any) -> None:
    """A new team space gets the quota configured for team spaces (GNOSEM_TEAM_SPACE_MAX_*)."""
    if created and not raw and instance.kind == SpaceKind.TEAM:
        space_quota_create(space_id=instance.pk)


@receiver(post_save, sender=Space, dispatch_uid="memories.key_for_space")
def give_space_its_key(sender: object, instance: Space, created: bool, raw: bool = False, **kwargs: Any) -> None:
    """A new space gets its first data key with it (memories.encryption.keys)."""
    if created and not raw:
        space_key_create(instance.pk)


@receiver(connection_created, dispatch_uid="memories.vector_index_settings")
def set_up_vector_index_searches(sender: object, connection: BaseDatabaseWrapper, **kwargs: Any) -> None:
    """Each new database connection searches HNSW indexes as the vector signal needs."""
    try:
        with connection.cursor() as cursor:
            vector_index_session_settings(cursor)
    except DatabaseError:
        # A pgvector older than 0.8 knows no iterative scans: large spaces' searches then find fewer.
        logger.warning("this PostgreSQL's pgvector does not take Gnosem's HNSW settings", exc_info=True)
