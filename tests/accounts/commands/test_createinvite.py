"""manage.py createinvite [--email X] [--days N]: a single-use sign-up link; the link itself is tested
with the sign-up policy it serves (tests/accounts/test_signup_policy.py)."""

import pytest
from django.core.management import CommandError

from accounts.models import Invite


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("args", "message"),
    [(["--days", "0"], "--days must be 1 to 365"), (["--email", "not-an-address"], "is not an e-mail address")],
)
def test_it_refuses_nonsense(args, message, command):
    with pytest.raises(CommandError, match=message):
        command("createinvite", *args, "--base-url", "http://testserver")
    assert not Invite.objects.exists()


@pytest.mark.django_db
def test_it_warns_when_sign_up_is_not_by_invitation(command):
    _, stderr = command("createinvite")
    assert "GNOSEM_SIGNUP is 'open'" in stderr
