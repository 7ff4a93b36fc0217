"""The accounts app's migrations that fill a new column of existing rows."""

import pytest
from django.conf import settings

from tests.migrating import migrate, migrated_to


@pytest.mark.django_db(transaction=True)
def test_existing_tokens_get_distinct_random_public_ids():
    with migrated_to([("accounts", "0004_apitoken_oauth_code_digest")]) as apps:
        users, tokens = apps.get_model(settings.AUTH_USER_MODEL), apps.get_model("accounts", "ApiToken")
        for name in ("owner", "stranger"):
            user = users.objects.create(username=name, email=f"{name}@example.com")
            tokens.objects.bulk_create(
                tokens(owner=user, name=f"laptop {i}", scope="write", prefix=f"gno_{name[:3]}{i:08}", digest="x" * 64)
                for i in range(20)
            )

        apps = migrate([("accounts", "0005_apitoken_public_id")])

        public_ids = list(apps.get_model("accounts", "ApiToken").objects.values_list("public_id", flat=True))
        assert len(public_ids) == len(set(public_ids)) == 40
        assert {public_id.version for public_id in public_ids} == {4}


@pytest.mark.django_db(transaction=True)
def test_tokens_bound_to_spaces_keep_their_binding_and_the_others_reach_all():
    with migrated_to([("accounts", "0008_token_spaces")]) as apps:
        users, tokens = apps.get_model(settings.AUTH_USER_MODEL), apps.get_model("accounts", "ApiToken")
        space = apps.get_model("accounts", "Space").objects.create(name="Platform", kind="team")
        user = users.objects.create(username="owner", email="owner@example.com")
        for name in ("bound", "unbound"):
            tokens.objects.create(owner=user, name=name, scope="write", prefix=f"gno_{name:>12}", digest="x" * 64)
        tokens.objects.get(name="bound").spaces.set([space])

        apps = migrate([("accounts", "0009_apitoken_all_spaces")])

        reaching = dict(apps.get_model("accounts", "ApiToken").objects.values_list("name", "all_spaces"))
        assert reaching == {"bound": False, "unbound": True}
