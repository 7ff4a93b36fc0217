"""Types the apps share: the owner every service, selector and quota takes.

Import it from modules that load once the app registry is ready (models, services, views): the
user model's base class is a model class.
"""

from typing import TYPE_CHECKING, TypeAlias

from django.contrib.auth.base_user import AbstractBaseUser
from django.http import HttpRequest

# A user (whatever settings.AUTH_USER_MODEL names) as the owner of memories, tokens and events.
if TYPE_CHECKING:
    # The type checker sees the model settings.AUTH_USER_MODEL names, as the django-stubs plugin
    # types the foreign keys to it: Django's own User, which this project does not swap.
    from django.contrib.auth.models import User

    Owner: TypeAlias = User
else:
    Owner: TypeAlias = AbstractBaseUser


class SignedInRequest(HttpRequest):
    """A request to a page behind @login_required (or after checking `user.is_authenticated`): its
    user is signed in. For annotations only; Django builds plain HttpRequests."""

    user: Owner
