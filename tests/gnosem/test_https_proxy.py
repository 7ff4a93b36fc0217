"""Behind an HTTPS proxy (GNOSEM_BEHIND_HTTPS_PROXY, docs/deploy/Caddyfile): the proxy's
X-Forwarded-Proto and X-Forwarded-For are believed only when the operator says a proxy is there,
and then only the address the proxy appended, never what a client wrote in front of it.

The settings are read by a fresh process from the environment, as at start-up; the request tests
then run with exactly those values."""

import json

import pytest
from django.contrib.auth import get_user_model
from django.test import Client, RequestFactory
from django.urls import reverse

from accounts.models import ActivityAction, ActivityEvent
from tests.accounts.email_confirmation import PASSWORD
from tests.gnosem.test_env import manage

HOST = "memory.example.com"
ORIGIN = f"https://{HOST}"
PROXY_SETTINGS = (
    "SECURE_PROXY_SSL_HEADER",
    "SESSION_COOKIE_SECURE",
    "CSRF_COOKIE_SECURE",
    "SECURE_HSTS_SECONDS",
    "ALLAUTH_TRUSTED_PROXY_COUNT",
    "ALLOWED_HOSTS",
    "CSRF_TRUSTED_ORIGINS",
)
BEHIND_PROXY = {"GNOSEM_BEHIND_HTTPS_PROXY": "true"}
DIRECT: dict[str, str] = {}
# What Caddy sends on: the client's Host, the scheme it was reached by, and the client's address
# appended to whatever the client claimed.
FROM_THE_PROXY = {"Host": HOST, "X-Forwarded-Proto": "https", "X-Forwarded-For": "198.51.100.66, 203.0.113.7"}


def settings_from_environment(env: dict[str, str], data_dir) -> dict:
    code = (
        "import json; from django.conf import settings as s; "
        f"print(json.dumps({{name: getattr(s, name, None) for name in {PROXY_SETTINGS!r}}}))"
    )
    result = manage("shell", "-c", code, env=env, data_dir=data_dir)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def read_settings(tmp_path_factory):
    """The proxy settings a process started with `env` has (read once per environment)."""
    cache: dict[str, dict] = {}

    def read(env: dict[str, str]) -> dict:
        key = json.dumps(env, sort_keys=True)
        if key not in cache:
            cache[key] = settings_from_environment(env, tmp_path_factory.mktemp("settings"))
        return cache[key]

    return read


@pytest.fixture
def started_with(settings, read_settings):
    """Apply the settings a process started with this environment has (ALLOWED_HOSTS gets the
    test client's own name too, as Django's test set-up gives it)."""

    def apply(env: dict[str, str]) -> None:
        values = read_settings(env)
        for name, value in values.items():
            setattr(settings, name, tuple(value) if name == "SECURE_PROXY_SSL_HEADER" and value else value)
        settings.ALLOWED_HOSTS = [*values["ALLOWED_HOSTS"], HOST, "testserver"]

    return apply


def test_without_the_flag_nothing_from_a_proxy_is_trusted(read_settings):
    values = read_settings(DIRECT)
    assert values["SECURE_PROXY_SSL_HEADER"] is None
    assert not values["SESSION_COOKIE_SECURE"] and not values["CSRF_COOKIE_SECURE"]
    assert values["SECURE_HSTS_SECONDS"] == 0
    assert values["ALLAUTH_TRUSTED_PROXY_COUNT"] == 0


def test_with_the_flag_the_proxys_scheme_and_last_hop_are_trusted_and_cookies_are_secure(read_settings):
    values = read_settings(BEHIND_PROXY)
    assert values["SECURE_PROXY_SSL_HEADER"] == ["HTTP_X_FORWARDED_PROTO", "https"]
    assert values["SESSION_COOKIE_SECURE"] and values["CSRF_COOKIE_SECURE"]
    assert 0 < values["SECURE_HSTS_SECONDS"] <= 7 * 86400  # modest: a mistake is undone within days
    assert values["ALLAUTH_TRUSTED_PROXY_COUNT"] == 1


def test_more_proxies_in_front_are_counted_as_the_operator_says(read_settings):
    assert read_settings({**BEHIND_PROXY, "GNOSEM_TRUSTED_PROXY_COUNT": "2"})["ALLAUTH_TRUSTED_PROXY_COUNT"] == 2


def test_the_public_urls_host_is_served_and_its_origin_may_post_forms(read_settings):
    values = read_settings({"GNOSEM_PUBLIC_URL": ORIGIN})
    assert values["ALLOWED_HOSTS"] == ["127.0.0.1", "localhost", "[::1]", HOST]
    assert values["CSRF_TRUSTED_ORIGINS"] == [ORIGIN]
    explicit = read_settings({"GNOSEM_PUBLIC_URL": "https://[2001:db8::1]:8443", "ALLOWED_HOSTS": "gnosem.lan"})
    assert explicit["ALLOWED_HOSTS"] == ["gnosem.lan", "[2001:db8::1]"]


@pytest.mark.parametrize(("env", "secure"), [(DIRECT, False), (BEHIND_PROXY, True)])
def test_x_forwarded_proto_makes_a_request_secure_only_behind_the_proxy(started_with, env, secure):
    started_with(env)
    assert RequestFactory().get("/", headers=FROM_THE_PROXY).is_secure() is secure


@pytest.mark.django_db
@pytest.mark.parametrize(("env", "secure"), [(DIRECT, False), (BEHIND_PROXY, True)])
def test_behind_the_proxy_cookies_travel_only_over_https_and_browsers_keep_to_it(started_with, env, secure):
    started_with(env)
    get_user_model().objects.create_user(username="ada", email="ada@example.com", password=PASSWORD)
    client = Client(headers=FROM_THE_PROXY)
    page = client.get(reverse("account_login"))
    assert bool(page.cookies["csrftoken"]["secure"]) is secure
    assert (page.get("Strict-Transport-Security") == "max-age=86400") is secure
    signed_in = client.post(reverse("account_login"), {"login": "ada@example.com", "password": PASSWORD})
    assert signed_in.status_code == 302
    assert bool(signed_in.cookies["sessionid"]["secure"]) is secure


def post_the_sign_in_form(headers: dict[str, str]):
    """The sign-in form posted from the https page, CSRF checks on, as a browser does it."""
    client = Client(enforce_csrf_checks=True, headers=headers)
    client.get(reverse("account_login"))
    return client.post(
        reverse("account_login"),
        {"login": "nobody@example.com", "password": "wrong", "csrfmiddlewaretoken": client.cookies["csrftoken"].value},
        headers={"Origin": ORIGIN},
    )


@pytest.mark.django_db
@pytest.mark.parametrize(("env", "status"), [(DIRECT, 403), (BEHIND_PROXY, 200)])
def test_a_form_posted_from_the_https_page_passes_the_csrf_check_behind_the_proxy(started_with, env, status):
    """Without the flag Django sees http and takes the https origin for another site's."""
    started_with(env)
    assert post_the_sign_in_form(FROM_THE_PROXY).status_code == status  # 200: the form, with its error


@pytest.mark.django_db
def test_the_public_urls_origin_passes_the_csrf_check_when_the_proxy_rewrites_the_host(started_with):
    started_with({**BEHIND_PROXY, "GNOSEM_PUBLIC_URL": ORIGIN})
    assert post_the_sign_in_form({**FROM_THE_PROXY, "Host": "127.0.0.1"}).status_code == 200


@pytest.mark.parametrize(("env", "address"), [(DIRECT, "127.0.0.1"), (BEHIND_PROXY, "203.0.113.7")])
def test_the_client_address_is_the_one_the_proxy_appended_never_one_the_client_sent(started_with, owner, env, address):
    started_with(env)
    client = Client(headers=FROM_THE_PROXY)
    client.force_login(owner)
    assert client.post(reverse("tokens"), {"name": "laptop", "scope": "read"}).status_code == 200
    assert ActivityEvent.objects.get(owner=owner, action=ActivityAction.TOKEN_CREATED).ip == address
