import re
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from accounts.models import ApiToken
from accounts.tokens import LOOKUP_PREFIX_CHARS, token_authenticate, token_create


def run(*args: str) -> tuple[str, str]:
    stdout, stderr = StringIO(), StringIO()
    call_command(*args, stdout=stdout, stderr=stderr)
    return stdout.getvalue(), stderr.getvalue()


def test_createtoken_prints_only_the_token_and_it_authenticates(db):
    stdout, stderr = run("createtoken", "alice", "--create-user", "--scope", "write")
    assert re.fullmatch(r"gno_[A-Za-z0-9_-]{43}\n", stdout)
    token = token_authenticate(stdout.strip())
    assert token is not None
    assert token.owner.username == "alice"
    assert token.can_write
    assert "Created user 'alice'" in stderr
    assert token.prefix in stderr and stdout.strip() not in stderr


def test_a_user_created_by_createtoken_cannot_log_in_with_a_password(db):
    run("createtoken", "alice", "--create-user", "--email", "alice@example.com")
    alice = get_user_model().objects.get(username="alice")
    assert alice.email == "alice@example.com"
    assert not alice.has_usable_password()


def test_createtoken_for_an_existing_user_honours_scope_and_name(owner):
    stdout, stderr = run("createtoken", "owner", "--scope", "read", "--name", "ci runner")
    token = token_authenticate(stdout.strip())
    assert token.owner == owner
    assert token.scope == "read"
    assert token.name == "ci runner"
    assert "Created user" not in stderr


def test_createtoken_for_an_unknown_user_without_create_user_is_an_error(db):
    with pytest.raises(CommandError, match="--create-user"):
        run("createtoken", "nobody")
    assert not get_user_model().objects.filter(username="nobody").exists()
    assert not ApiToken.objects.exists()


def test_createtoken_refuses_an_unknown_scope(owner):
    with pytest.raises(CommandError):
        run("createtoken", "owner", "--scope", "admin")
    assert not ApiToken.objects.exists()


def test_revoketoken_revokes_the_given_token(owner):
    secret = token_create(owner=owner, name="laptop", scope="write").secret
    stdout, _ = run("revoketoken", secret)
    assert token_authenticate(secret) is None
    assert secret[:LOOKUP_PREFIX_CHARS] in stdout
    assert secret not in stdout


def test_revoketoken_accepts_the_listed_prefix(owner):
    secret = token_create(owner=owner, name="laptop", scope="write").secret
    run("revoketoken", secret[:LOOKUP_PREFIX_CHARS])
    assert token_authenticate(secret) is None


def test_revoketoken_leaves_other_tokens_working(owner, stranger):
    revoked = token_create(owner=owner, name="laptop", scope="write").secret
    kept = token_create(owner=owner, name="desktop", scope="write").secret
    strangers = token_create(owner=stranger, name="laptop", scope="write").secret
    run("revoketoken", revoked)
    assert token_authenticate(kept) is not None
    assert token_authenticate(strangers) is not None


@pytest.mark.parametrize("token", ["gno_doesnotexist000000000000", "gno_"])
def test_revoketoken_of_an_unknown_token_is_an_error(owner, token):
    token_create(owner=owner, name="laptop", scope="write")
    with pytest.raises(CommandError, match="No active token"):
        run("revoketoken", token)


def test_revoketoken_without_a_token_says_what_to_give(db):
    with pytest.raises(CommandError, match="--list"):
        run("revoketoken")


def test_revoketoken_list_shows_prefixes_and_states_never_full_tokens(owner, stranger):
    laptop = token_create(owner=owner, name="laptop", scope="write").secret
    reader = token_create(owner=owner, name="reader", scope="read").secret
    strangers = token_create(owner=stranger, name="stranger laptop", scope="write").secret
    run("revoketoken", reader)
    stdout, _ = run("revoketoken", "--list", "owner")
    lines = stdout.splitlines()
    assert len(lines) == 2
    assert laptop[:LOOKUP_PREFIX_CHARS] in lines[0] and "active" in lines[0] and "laptop" in lines[0]
    assert reader[:LOOKUP_PREFIX_CHARS] in lines[1] and "revoked" in lines[1]
    for secret in (laptop, reader):
        assert secret not in stdout
        assert secret[LOOKUP_PREFIX_CHARS:] not in stdout
    assert strangers[:LOOKUP_PREFIX_CHARS] not in stdout


def test_revoketoken_list_takes_an_e_mail_and_says_when_there_is_nothing(owner):
    assert run("revoketoken", "--list", "owner@example.com")[0] == "owner@example.com has no tokens.\n"
    with pytest.raises(CommandError, match="No user with the username or e-mail 'nobody'"):
        run("revoketoken", "--list", "nobody")


def test_createtoken_finds_a_web_user_by_e_mail(owner):
    stdout, _ = run("createtoken", "OWNER@example.com")
    assert token_authenticate(stdout.strip()).owner == owner


def test_commands_refuse_an_e_mail_that_several_users_share(db):
    User = get_user_model()
    User.objects.create_user(username="one", email="shared@example.com")
    User.objects.create_user(username="two", email="shared@example.com")
    with pytest.raises(CommandError, match="Several users have the e-mail"):
        run("createtoken", "shared@example.com")
    with pytest.raises(CommandError, match="Several users have the e-mail"):
        run("exportmemories", "shared@example.com")
