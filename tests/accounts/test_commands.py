import re
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.urls import reverse

from accounts.models import ActivityEvent, ApiToken
from accounts.tokens import LOOKUP_PREFIX_CHARS, token_authenticate, token_create
from accounts.users import describe_account


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
    assert f"Created user 'alice': account #{token.owner.pk} alice <no e-mail>" in stderr
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
    stdout, stderr = run("revoketoken", "--list", "owner@example.com")
    assert stdout == f"account #{owner.pk} owner <owner@example.com> has no tokens.\n"
    assert f"Tokens of account #{owner.pk} owner <owner@example.com>" in stderr
    with pytest.raises(CommandError, match="No user with the username or e-mail 'nobody'"):
        run("revoketoken", "--list", "nobody")


def test_createtoken_finds_a_web_user_by_e_mail(owner):
    stdout, _ = run("createtoken", "OWNER@example.com")
    assert token_authenticate(stdout.strip()).owner == owner


def test_commands_refuse_an_e_mail_that_several_users_share(db):
    User = get_user_model()
    User.objects.create_user(username="one", email="shared@example.com")
    User.objects.create_user(username="two", email="shared@example.com")
    with pytest.raises(CommandError, match="Several users have the e-mail") as caught:
        run("createtoken", "shared@example.com")
    assert "account #" in str(caught.value) and "<shared@example.com>" in str(caught.value)
    with pytest.raises(CommandError, match="Several users have the e-mail"):
        run("exportmemories", "shared@example.com")


# Finding 1: a command never attaches to an account the operator did not name unambiguously.


def visitor_signs_up(client, email: str = "carol@evil.example"):
    """A stranger signs up on the web; allauth derives the username from the e-mail."""
    password = "a long visitor passphrase 1"
    client.post(reverse("account_signup"), {"email": email, "password1": password, "password2": password})
    return get_user_model().objects.get(email=email)


def test_createtoken_create_user_refuses_a_username_a_visitor_signed_up_with(db, client):
    carol = visitor_signs_up(client)
    assert carol.username == "carol"
    with pytest.raises(CommandError) as caught:
        run("createtoken", "carol", "--create-user", "--scope", "write")
    message = str(caught.value)
    assert f"account #{carol.pk} carol <carol@evil.example>" in message
    assert "without --create-user" in message
    assert not ApiToken.objects.exists()


def test_createtoken_create_user_refuses_an_e_mail_that_is_taken(db, client):
    carol = visitor_signs_up(client)
    with pytest.raises(CommandError, match=f"the e-mail 'CAROL@evil.example' belongs to account #{carol.pk}"):
        run("createtoken", "carol2", "--create-user", "--email", "CAROL@evil.example")
    with pytest.raises(CommandError, match="belongs to account"):
        run("createtoken", "carol@evil.example", "--create-user")
    assert not get_user_model().objects.filter(username__in=["carol2", "carol@evil.example"]).exists()
    assert not ApiToken.objects.exists()


def test_createtoken_create_user_refuses_a_name_that_cannot_be_a_username(db):
    with pytest.raises(CommandError, match="cannot be a username"):
        run("createtoken", "#7", "--create-user")
    assert not get_user_model().objects.exists()


def test_createtoken_with_a_refused_token_name_creates_no_user(db):
    with pytest.raises(CommandError, match="name"):
        run("createtoken", "dora", "--create-user", "--name", " ")
    assert not get_user_model().objects.filter(username="dora").exists()


def test_a_name_that_is_one_users_username_and_anothers_e_mail_is_ambiguous(db, client):
    operators = get_user_model().objects.create_user(username="dave@example.com")  # made by createtoken long ago
    visitor = visitor_signs_up(client, "dave@example.com")  # username "dave"
    for command in (
        ["createtoken", "dave@example.com"],
        ["revoketoken", "--list", "dave@example.com"],
        ["exportmemories", "dave@example.com"],
    ):
        with pytest.raises(CommandError, match="is the username of one account and the e-mail of another") as caught:
            run(*command)
        assert f"#{operators.pk}" in str(caught.value) and f"#{visitor.pk}" in str(caught.value)
    assert not ApiToken.objects.exists()
    # Named by id, each is reachable.
    stdout, stderr = run("createtoken", f"#{visitor.pk}")
    assert token_authenticate(stdout.strip()).owner == visitor
    assert f"account #{visitor.pk} dave <dave@example.com>" in stderr


def test_an_unknown_or_malformed_account_id_is_an_error(db):
    with pytest.raises(CommandError, match="No account #999"):
        run("createtoken", "#999")
    with pytest.raises(CommandError, match="like #12"):
        run("exportmemories", "#twelve")


def test_createtoken_says_which_account_got_the_token(owner):
    _, stderr = run("createtoken", "owner@example.com", "--name", "ci")
    assert f"for account #{owner.pk} owner <owner@example.com>" in stderr


def test_revoketoken_says_whose_token_it_revoked(owner):
    secret = token_create(owner=owner, name="laptop", scope="write").secret
    _, stderr = run("revoketoken", secret[:LOOKUP_PREFIX_CHARS])
    assert f"“laptop” of account #{owner.pk} owner <owner@example.com>" in stderr


def test_revoketoken_goes_through_the_token_service_and_is_logged(owner):
    secret = token_create(owner=owner, name="laptop", scope="write").secret
    run("revoketoken", secret)
    event = ActivityEvent.objects.get(owner=owner, action="token_revoked")
    assert event.detail == {"via": "command line", "name": "laptop", "prefix": secret[:16], "scope": "write"}
    with pytest.raises(CommandError, match="No active token"):
        run("revoketoken", secret)  # a second revocation is refused and not logged again
    assert ActivityEvent.objects.filter(owner=owner, action="token_revoked").count() == 1


def test_export_and_import_commands_say_which_account_they_acted_on(owner, tmp_path):
    path = tmp_path / "export.json"
    _, stderr = run("exportmemories", "owner@example.com", "--output", str(path))
    assert f"account #{owner.pk} owner <owner@example.com>" in stderr
    _, stderr = run("importmemories", "owner@example.com", str(path))
    assert f"Imported into account #{owner.pk} owner <owner@example.com>" in stderr


def test_compressmemories_finds_the_user_like_the_other_commands_and_says_which(owner, settings):
    settings.GNOSEM_LLM_BASE_URL = "http://127.0.0.1:9/v1"  # never called: there is nothing to compress
    settings.GNOSEM_LLM_MODEL = "test-model"
    stdout, stderr = run("compressmemories", "--user", "owner@example.com")
    assert stdout == "No memories to compress.\n"
    assert f"account #{owner.pk} owner <owner@example.com>" in stderr
    with pytest.raises(CommandError, match="No user with the username or e-mail 'nobody'"):
        run("compressmemories", "--user", "nobody")


def test_every_account_description_has_the_same_shape(db):
    carol = get_user_model().objects.create_user(username="carol", email="carol@evil.example")
    assert describe_account(carol) == f"account #{carol.pk} carol <carol@evil.example>"
