import hashlib
import re
import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.models import ApiToken
from accounts.tokens import LOOKUP_PREFIX_CHARS, bearer_secret, token_authenticate, token_create, token_revoke
from gnosem.errors import NotFound, ValidationError


def test_it_issues_gno_plus_43_url_safe_characters(owner):
    issued = token_create(owner=owner, name="laptop", scope="write")
    assert re.fullmatch(r"gno_[A-Za-z0-9_-]{43}", issued.secret)
    assert issued.token.owner == owner
    assert issued.token.scope == "write"
    assert issued.token.prefix == issued.secret[:LOOKUP_PREFIX_CHARS]


def test_each_token_is_different(owner):
    secrets = {token_create(owner=owner, name=f"t{i}", scope="read").secret for i in range(5)}
    assert len(secrets) == 5


def test_the_stored_row_holds_only_the_prefix_of_the_token(owner):
    issued = token_create(owner=owner, name="laptop", scope="write")
    row = ApiToken.objects.filter(pk=issued.token.pk).values().get()
    hidden = issued.secret[LOOKUP_PREFIX_CHARS:]
    # No column holds the token, its secret part, or any 8-character piece of that part.
    pieces = {hidden[i : i + 8] for i in range(len(hidden) - 7)}
    for column, value in row.items():
        text = str(value)
        assert issued.secret not in text, column
        assert not any(piece in text for piece in pieces), column
    # The digest is keyed: a plain hash of the token (which anyone could recompute) is not stored.
    assert row["digest"] not in {
        hashlib.sha256(issued.secret.encode()).hexdigest(),
        hashlib.sha256(hidden.encode()).hexdigest(),
    }


def test_the_digest_depends_on_the_token_secret_setting(owner, settings):
    issued = token_create(owner=owner, name="laptop", scope="write")
    settings.GNOSEM_TOKEN_SECRET = "another-secret-of-at-least-32-characters!"
    assert token_authenticate(issued.secret) is None


def test_the_right_token_authenticates_with_its_owner(owner):
    issued = token_create(owner=owner, name="laptop", scope="read")
    token = token_authenticate(issued.secret)
    assert token == issued.token
    assert token.owner == owner
    assert not token.can_write


def test_a_wrong_token_with_the_same_prefix_is_rejected(owner):
    issued = token_create(owner=owner, name="laptop", scope="write")
    forged = issued.secret[:LOOKUP_PREFIX_CHARS] + ("A" if issued.secret[-1] != "A" else "B") * (
        len(issued.secret) - LOOKUP_PREFIX_CHARS
    )
    assert token_authenticate(forged) is None
    one_char_off = issued.secret[:-1] + ("x" if issued.secret[-1] != "x" else "y")
    assert token_authenticate(one_char_off) is None


def test_a_revoked_token_is_rejected(owner):
    issued = token_create(owner=owner, name="laptop", scope="write")
    token_revoke(owner=owner, public_id=issued.token.public_id)
    assert token_authenticate(issued.secret) is None


def test_a_token_of_an_inactive_user_is_rejected(owner):
    issued = token_create(owner=owner, name="laptop", scope="write")
    owner.is_active = False
    owner.save()
    assert token_authenticate(issued.secret) is None


@pytest.mark.parametrize(
    "secret",
    [
        None,
        "",
        "gno_",
        "gno_short",
        "Bearer gno_x",
        "not-a-token-at-all-but-long-enough",
        "GNO_" + "a" * 43,
        "\x00" * 60,
        "gno_" + "\x00" * 43,  # PostgreSQL refuses NUL in text: must be turned away before any query
        "gno_" + "é" * 43,
    ],
)
def test_garbage_is_rejected(owner, secret):
    token_create(owner=owner, name="laptop", scope="write")
    assert token_authenticate(secret) is None


def test_the_same_secret_under_another_prefix_is_rejected(owner):
    issued = token_create(owner=owner, name="laptop", scope="write")
    assert token_authenticate("xyz_" + issued.secret[4:]) is None


def test_authentication_records_when_the_token_was_last_used(owner):
    issued = token_create(owner=owner, name="laptop", scope="write")
    assert issued.token.last_used_at is None
    before = timezone.now()
    token = token_authenticate(issued.secret)
    stored = ApiToken.objects.get(pk=issued.token.pk).last_used_at
    assert stored is not None and stored >= before
    assert token.last_used_at == stored


def test_last_used_is_not_rewritten_within_a_minute(owner):
    issued = token_create(owner=owner, name="laptop", scope="write")
    recent = timezone.now() - timedelta(seconds=30)
    ApiToken.objects.filter(pk=issued.token.pk).update(last_used_at=recent)
    token_authenticate(issued.secret)
    assert ApiToken.objects.get(pk=issued.token.pk).last_used_at == recent


def test_last_used_is_refreshed_after_a_minute(owner):
    issued = token_create(owner=owner, name="laptop", scope="write")
    old = timezone.now() - timedelta(minutes=2)
    ApiToken.objects.filter(pk=issued.token.pk).update(last_used_at=old)
    token_authenticate(issued.secret)
    assert ApiToken.objects.get(pk=issued.token.pk).last_used_at > old + timedelta(minutes=1)


def test_revoking_keeps_the_first_revocation_time(owner):
    issued = token_create(owner=owner, name="laptop", scope="write")
    first = token_revoke(owner=owner, public_id=issued.token.public_id).revoked_at
    second = token_revoke(owner=owner, public_id=issued.token.public_id).revoked_at
    assert first is not None and second == first


def test_revoking_another_users_token_is_not_found_and_changes_nothing(owner, stranger):
    issued = token_create(owner=owner, name="laptop", scope="write")
    with pytest.raises(NotFound):
        token_revoke(owner=stranger, public_id=issued.token.public_id)
    assert ApiToken.objects.get(pk=issued.token.pk).revoked_at is None
    assert token_authenticate(issued.secret) is not None


def test_revoking_an_unknown_token_is_not_found(owner):
    with pytest.raises(NotFound):
        token_revoke(owner=owner, public_id=uuid.uuid4())


@pytest.mark.parametrize(
    ("name", "scope", "field"),
    [("", "write", "name"), ("x" * 101, "write", "name"), ("   ", "read", "name"), ("ok", "admin", "scope")],
)
def test_it_refuses_a_bad_name_or_scope_and_stores_nothing(owner, name, scope, field):
    with pytest.raises(ValidationError) as caught:
        token_create(owner=owner, name=name, scope=scope)
    assert caught.value.field == field
    assert not ApiToken.objects.exists()


@pytest.mark.parametrize(
    ("header", "secret"),
    [
        ("Bearer gno_abc", "gno_abc"),
        ("bearer gno_abc", "gno_abc"),
        ("BEARER   gno_abc  ", "gno_abc"),
        ("Bearer", None),
        ("Bearer ", None),
        ("Basic dXNlcjpwYXNz", None),
        ("gno_abc", None),
        ("", None),
        (None, None),
    ],
)
def test_bearer_secret_reads_the_token_from_an_authorization_header(header, secret):
    assert bearer_secret(header) == secret
