"""Types the apps share: the owner every service, selector and quota takes.

Import it from modules that load once the app registry is ready (models, services, views): the
user model's base class is a model class.
"""

from typing import TypeAlias

from django.contrib.auth.base_user import AbstractBaseUser

# A user (whatever settings.AUTH_USER_MODEL names) as the owner of memories, tokens and events.
Owner: TypeAlias = AbstractBaseUser
