"""A user's OAuth grant never sees another user's memories: the existing stranger tests for MCP
and REST, run again with the stranger connected through OAuth instead of by API token."""

import pytest

from tests.accounts.oauth.grants import granted_tokens
from tests.memories.api import test_api
from tests.memories.mcp import conftest as mcp_fixtures
from tests.memories.mcp import test_isolation


@pytest.fixture
def stranger_token(stranger) -> str:
    """The stranger's access token from a grant of read and write (replacing the API token)."""
    return granted_tokens(stranger)["access_token"]


# The fixtures the borrowed tests take; `stranger_token` above replaces the one they would get.
mcp = mcp_fixtures.mcp
owners_memory = test_isolation.owners_memory
stranger_mcp = test_isolation.stranger_mcp
strangers = test_api.strangers

test_over_mcp_a_stranger_neither_lists_nor_finds_the_owners_memories = (
    test_isolation.test_a_stranger_neither_lists_nor_finds_the_owners_memories
)
test_over_mcp_another_users_id_looks_exactly_like_an_unknown_id = (
    test_isolation.test_another_users_id_looks_exactly_like_an_unknown_id
)
test_over_mcp_a_strangers_writes_go_to_the_stranger = test_isolation.test_a_strangers_writes_go_to_the_stranger
test_over_rest_a_stranger_cannot_see_or_touch_the_owners_memories = (
    test_api.test_a_stranger_cannot_see_or_touch_the_owners_memories
)


def test_the_borrowed_tests_really_use_an_oauth_token(stranger_token):
    assert not stranger_token.startswith("gno_")
