"""A token's name may be as long as its column, no longer: token_create and both token forms (the
tokens page and the connect page) take that length from one place."""

import pytest
from django.urls import reverse

from accounts.models import ApiToken
from accounts.tokens import token_create
from gnosem.errors import ValidationError

LONGEST = ApiToken._meta.get_field("name").max_length


def test_token_create_takes_the_longest_name_and_refuses_a_longer_one(owner):
    assert token_create(owner=owner, name="n" * LONGEST, scope="read").token.name == "n" * LONGEST
    with pytest.raises(ValidationError, match=f"1-{LONGEST} characters"):
        token_create(owner=owner, name="n" * (LONGEST + 1), scope="read")


@pytest.mark.parametrize("page", ["tokens", "connect"])
def test_the_token_forms_allow_that_length(owner_client, page):
    assert f'name="name" maxlength="{LONGEST}" required' in owner_client.get(reverse(page)).content.decode()
