"""Account tests check many passwords (throttles count failed sign-ins): a fast hasher keeps them
quick; what is tested is the flow around the check, not the hash."""

import pytest


@pytest.fixture(autouse=True)
def fast_password_hasher(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
