import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from gnosem.env import (
    env_bool,
    env_choice,
    env_float,
    env_int,
    env_list,
    env_rate_limit,
    env_str,
    env_url,
    persistent_secret,
)

VAR = "GNOSEM_TEST_SETTING"


@pytest.fixture(autouse=True)
def unset(monkeypatch):
    monkeypatch.delenv(VAR, raising=False)
    monkeypatch.delenv(f"{VAR}_FILE", raising=False)


def test_unset_and_empty_variables_give_the_default(monkeypatch):
    assert env_int(VAR, 7) == 7
    monkeypatch.setenv(VAR, "")
    assert env_int(VAR, 7) == 7
    assert env_str(VAR, "fallback") == "fallback"
    assert env_bool(VAR, True) is True
    assert env_list(VAR, ["a"]) == ["a"]
    assert env_url(VAR, ("redis",)) is None


def test_env_int_reads_whole_numbers_within_bounds(monkeypatch):
    monkeypatch.setenv(VAR, " 12 ")
    assert env_int(VAR, 0, minimum=1, maximum=64) == 12


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("abc", "is not a whole number"),
        ("1.5", "is not a whole number"),
        ("0", "below the minimum of 1"),
        ("65", "above the maximum of 64"),
    ],
)
def test_env_int_names_the_variable_when_the_value_is_wrong(monkeypatch, value, message):
    monkeypatch.setenv(VAR, value)
    with pytest.raises(ImproperlyConfigured, match=message) as caught:
        env_int(VAR, 2, minimum=1, maximum=64)
    assert VAR in str(caught.value)


def test_env_float_reads_numbers_and_refuses_others(monkeypatch):
    monkeypatch.setenv(VAR, "0.25")
    assert env_float(VAR, 1.0, minimum=0.0) == 0.25
    monkeypatch.setenv(VAR, "-1")
    with pytest.raises(ImproperlyConfigured, match=f"{VAR}=-1.0 is below the minimum"):
        env_float(VAR, 1.0, minimum=0.0)
    monkeypatch.setenv(VAR, "lots")
    with pytest.raises(ImproperlyConfigured, match=VAR):
        env_float(VAR, 1.0)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("1", True),
        ("true", True),
        ("YES", True),
        ("On", True),
        ("0", False),
        ("false", False),
        ("no", False),
        ("OFF", False),
    ],
)
def test_env_bool_reads_the_usual_spellings(monkeypatch, value, expected):
    monkeypatch.setenv(VAR, value)
    assert env_bool(VAR, not expected) is expected


def test_env_bool_names_the_variable_and_the_allowed_values(monkeypatch):
    monkeypatch.setenv(VAR, "maybe")
    with pytest.raises(ImproperlyConfigured, match=f"{VAR}='maybe' is not a boolean; use one of true/false"):
        env_bool(VAR, False)


def test_env_url_accepts_only_the_given_schemes(monkeypatch):
    monkeypatch.setenv(VAR, "redis://127.0.0.1:6379/0")
    assert env_url(VAR, ("redis", "rediss")) == "redis://127.0.0.1:6379/0"
    for wrong in ("http://127.0.0.1:6379", "127.0.0.1:6379", "redis:/oops"):
        monkeypatch.setenv(VAR, wrong)
        with pytest.raises(ImproperlyConfigured, match=f"{VAR}=.* is not a URL starting with redis://, rediss://"):
            env_url(VAR, ("redis", "rediss"))


def test_env_list_splits_on_commas_and_drops_blanks(monkeypatch):
    monkeypatch.setenv(VAR, " a.example.com, ,b.example.com ,")
    assert env_list(VAR, []) == ["a.example.com", "b.example.com"]


def test_a_file_variable_supplies_the_value(monkeypatch, tmp_path):
    secret_file = tmp_path / "secret"
    secret_file.write_text("from-a-file\n")
    monkeypatch.setenv(VAR, "from-the-environment")
    monkeypatch.setenv(f"{VAR}_FILE", str(secret_file))
    assert env_str(VAR) == "from-a-file"


def test_an_unreadable_file_variable_names_the_variable(monkeypatch, tmp_path):
    monkeypatch.setenv(f"{VAR}_FILE", str(tmp_path / "missing"))
    with pytest.raises(ImproperlyConfigured, match=f"{VAR}_FILE=.*cannot be read"):
        env_str(VAR)


def test_persistent_secret_is_generated_once_and_kept_private(tmp_path):
    first = persistent_secret(VAR, tmp_path)
    second = persistent_secret(VAR, tmp_path)
    assert first == second
    assert len(first) >= 32
    path = tmp_path / "secrets" / VAR.lower()
    assert path.read_text().strip() == first
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) & 0o077 == 0
    assert list(path.parent.iterdir()) == [path]  # no temporary file left behind


def test_persistent_secrets_differ_by_name(tmp_path):
    assert persistent_secret("SECRET_KEY", tmp_path) != persistent_secret("GNOSEM_TOKEN_SECRET", tmp_path)


def test_a_persistent_secret_from_the_environment_is_used_as_is(monkeypatch, tmp_path):
    monkeypatch.setenv(VAR, "s" * 32)
    assert persistent_secret(VAR, tmp_path) == "s" * 32
    assert not (tmp_path / "secrets").exists()


def manage(*args: str, env: dict[str, str], data_dir: Path) -> subprocess.CompletedProcess:
    clean_env = {key: value for key, value in os.environ.items() if not key.startswith(("GNOSEM_", "REDIS_URL"))}
    clean_env.pop("DATABASE_URL", None)
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=settings.BASE_DIR,
        env={**clean_env, "GNOSEM_DATA_DIR": str(data_dir), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("GNOSEM_WORKERS", "abc"),
        ("GNOSEM_WORKERS", "0"),
        ("DEBUG", "perhaps"),
        ("REDIS_URL", "http://127.0.0.1:6379"),
        ("DATABASE_URL", "mysql://db/gnosem"),
        ("GNOSEM_TOKEN_SECRET", "too-short"),
        ("GNOSEM_LLM_BASE_URL", "http://127.0.0.1:11434/v1"),  # without GNOSEM_LLM_MODEL
        ("GNOSEM_LLM_TIMEOUT_SECONDS", "soon"),
        ("GNOSEM_EMAIL_VERIFICATION", "sometimes"),
        ("GNOSEM_IMPORT_MAX_BYTES", "12"),
        ("GNOSEM_LOGIN_FAILED_RATE_LIMIT", "five per minute"),
    ],
)
def test_a_malformed_setting_stops_start_up_naming_the_variable(tmp_path, variable, value):
    result = manage("check", env={variable: value}, data_dir=tmp_path)
    assert result.returncode != 0
    assert variable in result.stderr


def test_check_passes_on_embedded_defaults_without_starting_the_database(tmp_path):
    result = manage("check", env={}, data_dir=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "no issues" in result.stdout
    assert not (tmp_path / "postgres").exists()


def test_env_choice_accepts_only_its_choices(monkeypatch):
    assert env_choice(VAR, "optional", ("none", "optional")) == "optional"
    monkeypatch.setenv(VAR, "none")
    assert env_choice(VAR, "optional", ("none", "optional")) == "none"
    monkeypatch.setenv(VAR, "sometimes")
    with pytest.raises(ImproperlyConfigured, match="GNOSEM_TEST_SETTING='sometimes' is not one of none, optional"):
        env_choice(VAR, "optional", ("none", "optional"))


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, "django.core.cache.backends.db.DatabaseCache django.core.mail.backends.console.EmailBackend"),
        (
            {"REDIS_URL": "redis://127.0.0.1:6379/3", "EMAIL_HOST": "smtp.example.com"},
            "gnosem.cache.ResilientRedisCache django.core.mail.backends.smtp.EmailBackend",
        ),
    ],
)
def test_the_shared_cache_and_the_mail_backend_follow_the_environment(tmp_path, env, expected):
    """Every web process must count sign-in failures in one place: never a per-process cache."""
    code = "from django.conf import settings as s; print(s.CACHES['default']['BACKEND'], s.EMAIL_BACKEND)"
    result = manage("shell", "-c", code, env=env, data_dir=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == expected  # after the shell's own banner


def test_env_rate_limit_reads_allauths_form(monkeypatch):
    assert env_rate_limit(VAR, "10/m/ip") == "10/m/ip"
    monkeypatch.setenv(VAR, "20/m/ip, 3/10m/key,100/d")
    assert env_rate_limit(VAR, "10/m/ip") == "20/m/ip, 3/10m/key,100/d"
    monkeypatch.setenv(VAR, "20/minute")
    with pytest.raises(ImproperlyConfigured, match="is not a rate limit like 10/m/ip,5/5m/key"):
        env_rate_limit(VAR, "10/m/ip")


def test_env_rate_limit_refuses_a_subject_the_caller_cannot_count_by(monkeypatch):
    """Client registration is anonymous: it counts per address only."""
    monkeypatch.setenv(VAR, "20/h,5/m/ip")
    assert env_rate_limit(VAR, "20/h/ip", per=("ip",)) == "20/h,5/m/ip"
    monkeypatch.setenv(VAR, "20/h/ip,5/m/key")
    with pytest.raises(ImproperlyConfigured, match=r"like 10/m/ip,100/d/ip \(count / period .* / per ip\)"):
        env_rate_limit(VAR, "20/h/ip", per=("ip",))
