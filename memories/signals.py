"""Signal receivers of the memories app: thin callers of services."""

from allauth.account.signals import user_signed_up
from django.db.backends.signals import connection_created
from django.dispatch import receiver

from gnosem.types import Owner
from memories.quotas import quota_create_for_signup
from memories.vector_indexes import vector_index_session_settings


@receiver(user_signed_up, dispatch_uid="memories.quota_for_signup")
def give_signup_its_quota(sender, request, user: Owner, **kwargs) -> None:
    """Someone signed up through the site: they get the sign-up quota (GNOSEM_SIGNUP_MAX_*).
    Accounts the operator creates (createsuperuser, createtoken --create-user) get none."""
    quota_create_for_signup(user=user)


@receiver(connection_created, dispatch_uid="memories.vector_index_settings")
def set_up_vector_index_searches(sender, connection, **kwargs) -> None:
    """Each new database connection searches HNSW indexes as the vector signal needs."""
    with connection.cursor() as cursor:
        vector_index_session_settings(cursor)
