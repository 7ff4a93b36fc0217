"""manage.py createtoken USER: a new API token, printed alone on stdout, for an existing user or (with
--create-user) a new one, never for an account the operator did not name unambiguously."""

import re

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError

from accounts.models import ApiToken
from accounts.tokens import token_authenticate
from tests.accounts.email_confirmation import visitor_signs_up


def test_createtoken_prints_only_the_token_and_it_authenticates(db, command):
    stdout, stderr = command("createtoken", "alice", "--create-user", "--scope", "write")
    assert re.fullmatch(r"gno_[A-Za-z0-9_-]{43}\n", stdout)
    token = token_authenticate(stdout.strip())
    assert token is not None
    assert token.owner.username == "alice"
    assert token.can_write
    assert f"Created user 'alice': account #{token.owner.pk} alice <no e-mail>" in stderr
    assert token.prefix in stderr and stdout.strip() not in stderr


def test_a_user_created_by_createtoken_cannot_log_in_with_a_password(db, command):
    command("createtoken", "alice", "--create-user", "--email", "alice@example.com")
    alice = get_user_model().objects.get(username="alice")
    assert alice.email == "alice@example.com"
    assert not alice.has_usable_password()


def test_createtoken_for_an_existing_user_honours_scope_and_name(owner, command):
    stdout, stderr = command("createtoken", "owner", "--scope", "read", "--name", "ci runner")
    token = token_authenticate(stdout.strip())
    assert token.owner == owner
    assert token.scope == "read"
    assert token.name == "ci runner"
    assert "Created user" not in stderr


def test_createtoken_for_an_unknown_user_without_create_user_is_an_error(db, command):
    with pytest.raises(CommandError, match="--create-user"):
        command("createtoken", "nobody")
    assert not get_user_model().objects.filter(username="nobody").exists()
    assert not ApiToken.objects.exists()


def test_createtoken_refuses_an_unknown_scope(owner, command):
    with pytest.raises(CommandError):
        command("createtoken", "owner", "--scope", "admin")
    assert not ApiToken.objects.exists()


def test_createtoken_finds_a_web_user_by_e_mail(owner, command):
    stdout, _ = command("createtoken", "OWNER@example.com")
    assert token_authenticate(stdout.strip()).owner == owner


def test_createtoken_says_which_account_got_the_token(owner, command):
    _, stderr = command("createtoken", "owner@example.com", "--name", "ci")
    assert f"for account #{owner.pk} owner <owner@example.com>" in stderr


def test_createtoken_create_user_refuses_a_username_a_visitor_signed_up_with(db, client, command):
    carol = visitor_signs_up(client)
    assert carol.username == "carol"
    with pytest.raises(CommandError) as caught:
        command("createtoken", "carol", "--create-user", "--scope", "write")
    message = str(caught.value)
    assert f"account #{carol.pk} carol <carol@evil.example>" in message
    assert "without --create-user" in message
    assert not ApiToken.objects.exists()


def test_createtoken_create_user_refuses_an_e_mail_that_is_taken(db, client, command):
    carol = visitor_signs_up(client)
    with pytest.raises(CommandError, match=f"the e-mail 'CAROL@evil.example' belongs to account #{carol.pk}"):
        command("createtoken", "carol2", "--create-user", "--email", "CAROL@evil.example")
    with pytest.raises(CommandError, match="belongs to account"):
        command("createtoken", "carol@evil.example", "--create-user")
    assert not get_user_model().objects.filter(username__in=["carol2", "carol@evil.example"]).exists()
    assert not ApiToken.objects.exists()


def test_createtoken_create_user_refuses_a_name_that_cannot_be_a_username(db, command):
    with pytest.raises(CommandError, match="cannot be a username"):
        command("createtoken", "#7", "--create-user")
    assert not get_user_model().objects.exists()


def test_createtoken_with_a_refused_token_name_creates_no_user(db, command):
    with pytest.raises(CommandError, match="name"):
        command("createtoken", "dora", "--create-user", "--name", " ")
    assert not get_user_model().objects.filter(username="dora").exists()
