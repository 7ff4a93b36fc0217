"""accounts.users: every command finds the user an operator names (a username, an e-mail or `#ID`)
the same way, refuses a name that fits several accounts, and names accounts alike."""

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError

from accounts.models import ApiToken
from accounts.tokens import token_authenticate
from accounts.users import describe_account
from tests.accounts.email_confirmation import visitor_signs_up


def test_commands_refuse_an_e_mail_that_several_users_share(db, command):
    User = get_user_model()
    User.objects.create_user(username="one", email="shared@example.com")
    User.objects.create_user(username="two", email="shared@example.com")
    with pytest.raises(CommandError, match="Several users have the e-mail") as caught:
        command("createtoken", "shared@example.com")
    assert "account #" in str(caught.value) and "<shared@example.com>" in str(caught.value)
    with pytest.raises(CommandError, match="Several users have the e-mail"):
        command("exportmemories", "shared@example.com")


def test_a_name_that_is_one_users_username_and_anothers_e_mail_is_ambiguous(db, client, command):
    operators = get_user_model().objects.create_user(username="dave@example.com")  # made by createtoken long ago
    visitor = visitor_signs_up(client, "dave@example.com")  # username "dave"
    for arguments in (
        ["createtoken", "dave@example.com"],
        ["revoketoken", "--list", "dave@example.com"],
        ["exportmemories", "dave@example.com"],
    ):
        with pytest.raises(CommandError, match="is the username of one account and the e-mail of another") as caught:
            command(*arguments)
        assert f"#{operators.pk}" in str(caught.value) and f"#{visitor.pk}" in str(caught.value)
    assert not ApiToken.objects.exists()
    # Named by id, each is reachable.
    stdout, stderr = command("createtoken", f"#{visitor.pk}")
    assert token_authenticate(stdout.strip()).owner == visitor
    assert f"account #{visitor.pk} dave <dave@example.com>" in stderr


def test_an_unknown_or_malformed_account_id_is_an_error(db, command):
    with pytest.raises(CommandError, match="No account #999"):
        command("createtoken", "#999")
    with pytest.raises(CommandError, match="like #12"):
        command("exportmemories", "#twelve")


def test_every_account_description_has_the_same_shape(db):
    carol = get_user_model().objects.create_user(username="carol", email="carol@evil.example")
    assert describe_account(carol) == f"account #{carol.pk} carol <carol@evil.example>"
