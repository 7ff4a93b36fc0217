"""manage.py revoketoken TOKEN_OR_PREFIX: a token stops working at once; `--list USER` shows a user's
tokens by prefix, never in full."""

import pytest
from django.core.management import CommandError

from accounts.models import ActivityEvent
from accounts.tokens import LOOKUP_PREFIX_CHARS, token_authenticate, token_create


def test_revoketoken_revokes_the_given_token(owner, command):
    secret = token_create(owner=owner, name="laptop", scope="write").secret
    stdout, _ = command("revoketoken", secret)
    assert token_authenticate(secret) is None
    assert secret[:LOOKUP_PREFIX_CHARS] in stdout
    assert secret not in stdout


def test_revoketoken_accepts_the_listed_prefix(owner, command):
    secret = token_create(owner=owner, name="laptop", scope="write").secret
    command("revoketoken", secret[:LOOKUP_PREFIX_CHARS])
    assert token_authenticate(secret) is None


def test_revoketoken_leaves_other_tokens_working(owner, stranger, command):
    revoked = token_create(owner=owner, name="laptop", scope="write").secret
    kept = token_create(owner=owner, name="desktop", scope="write").secret
    strangers = token_create(owner=stranger, name="laptop", scope="write").secret
    command("revoketoken", revoked)
    assert token_authenticate(kept) is not None
    assert token_authenticate(strangers) is not None


@pytest.mark.parametrize("token", ["gno_doesnotexist000000000000", "gno_"])
def test_revoketoken_of_an_unknown_token_is_an_error(owner, token, command):
    token_create(owner=owner, name="laptop", scope="write")
    with pytest.raises(CommandError, match="No active token"):
        command("revoketoken", token)


def test_revoketoken_without_a_token_says_what_to_give(db, command):
    with pytest.raises(CommandError, match="--list"):
        command("revoketoken")


def test_revoketoken_list_shows_prefixes_and_states_never_full_tokens(owner, stranger, command):
    laptop = token_create(owner=owner, name="laptop", scope="write").secret
    reader = token_create(owner=owner, name="reader", scope="read").secret
    strangers = token_create(owner=stranger, name="stranger laptop", scope="write").secret
    command("revoketoken", reader)
    stdout, _ = command("revoketoken", "--list", "owner")
    lines = stdout.splitlines()
    assert len(lines) == 2
    assert laptop[:LOOKUP_PREFIX_CHARS] in lines[0] and "active" in lines[0] and "laptop" in lines[0]
    assert reader[:LOOKUP_PREFIX_CHARS] in lines[1] and "revoked" in lines[1]
    for secret in (laptop, reader):
        assert secret not in stdout
        assert secret[LOOKUP_PREFIX_CHARS:] not in stdout
    assert strangers[:LOOKUP_PREFIX_CHARS] not in stdout


def test_revoketoken_list_takes_an_e_mail_and_says_when_there_is_nothing(owner, command):
    stdout, stderr = command("revoketoken", "--list", "owner@example.com")
    assert stdout == f"account #{owner.pk} owner <owner@example.com> has no tokens.\n"
    assert f"Tokens of account #{owner.pk} owner <owner@example.com>" in stderr
    with pytest.raises(CommandError, match="No user with the username or e-mail 'nobody'"):
        command("revoketoken", "--list", "nobody")


def test_revoketoken_says_whose_token_it_revoked(owner, command):
    secret = token_create(owner=owner, name="laptop", scope="write").secret
    _, stderr = command("revoketoken", secret[:LOOKUP_PREFIX_CHARS])
    assert f"“laptop” of account #{owner.pk} owner <owner@example.com>" in stderr


def test_revoketoken_goes_through_the_token_service_and_is_logged(owner, command):
    secret = token_create(owner=owner, name="laptop", scope="write").secret
    command("revoketoken", secret)
    event = ActivityEvent.objects.get(owner=owner, action="token_revoked")
    assert event.detail == {"via": "command line", "name": "laptop", "prefix": secret[:16], "scope": "write"}
    with pytest.raises(CommandError, match="No active token"):
        command("revoketoken", secret)  # a second revocation is refused and not logged again
    assert ActivityEvent.objects.filter(owner=owner, action="token_revoked").count() == 1
