"""One list of a user's tokens (accounts.tokens.token_list), shown the same on the tokens page and
by `revoketoken --list`: active tokens first, newest first, then revoked ones, latest revoked first."""

from io import StringIO

import pytest
from django.core.management import call_command
from django.urls import reverse

from accounts.tokens import token_create, token_list, token_revoke


@pytest.fixture
def names(owner, stranger) -> list[str]:
    """The owner's tokens in the order they should be listed."""
    created = {
        name: token_create(owner=owner, name=name, scope="write").token
        for name in ("oldest", "revoked first", "active", "revoked last", "newest")
    }
    token_revoke(owner=owner, public_id=created["revoked first"].public_id)
    token_revoke(owner=owner, public_id=created["revoked last"].public_id)
    token_create(owner=stranger, name="stranger's", scope="write")
    return ["newest", "active", "oldest", "revoked last", "revoked first"]


def test_token_list_puts_active_tokens_first_and_leaves_out_other_owners(owner, names):
    assert [token.name for token in token_list(owner=owner)] == names


def test_the_tokens_page_lists_them_in_that_order(owner_client, names):
    response = owner_client.get(reverse("tokens"))

    assert [token.name for token in response.context["tokens"]] == names


def test_revoketoken_list_lists_them_in_that_order(names):
    stdout = StringIO()
    call_command("revoketoken", "--list", "owner", stdout=stdout, stderr=StringIO())

    assert [line.split("  ")[-1] for line in stdout.getvalue().splitlines()] == names
