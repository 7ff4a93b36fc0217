"""gnosem.checks: rules about well-formed settings that are wrong, reported as system checks with
ids, and every way of starting Gnosem refuses to start on one."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.core.checks import run_checks

BAD_ENVIRONMENT = {"GNOSEM_LLM_BASE_URL": "http://127.0.0.1:11434/v1"}  # without GNOSEM_LLM_MODEL: gnosem.E001


def gnosem_problems() -> list[tuple[str, str]]:
    """(id, message) of each problem the project's own checks find."""
    return [(problem.id, problem.msg) for problem in run_checks() if (problem.id or "").startswith("gnosem.")]


def test_the_defaults_pass_every_check():
    assert gnosem_problems() == []


def test_a_retired_search_variable_is_named_in_a_warning(monkeypatch):
    monkeypatch.setenv("GNOSEM_CONTEXT_WEIGHT", "0.3")
    assert gnosem_problems() == [
        (
            "gnosem.W001",
            "GNOSEM_CONTEXT_WEIGHT is set but no longer read: the learned fusion weighs the scores of a "
            "memory's sequence neighbours itself.",
        )
    ]


@pytest.mark.parametrize(
    ("overrides", "expected_id", "named"),
    [
        ({"GNOSEM_LLM_BASE_URL": "http://127.0.0.1:11434/v1"}, "gnosem.E001", "GNOSEM_LLM_MODEL is not"),
        ({"GNOSEM_LLM_MODEL": "llama3.1:8b"}, "gnosem.E001", "GNOSEM_LLM_BASE_URL is not"),
        ({"SECRET_KEY": "s" * 31}, "gnosem.E002", "SECRET_KEY is 31 characters long"),
        ({"GNOSEM_TOKEN_SECRET": "too-short"}, "gnosem.E002", "GNOSEM_TOKEN_SECRET is 9 characters long"),
        ({"EMAIL_USE_TLS": True, "EMAIL_USE_SSL": True}, "gnosem.E003", "EMAIL_USE_TLS and EMAIL_USE_SSL"),
        ({"GNOSEM_PUBLIC_URL": "https://example.com/gnosem"}, "gnosem.E004", "is not an origin"),
        ({"GNOSEM_PUBLIC_URL": "https://example.com?x=1"}, "gnosem.E004", "is not an origin"),
        ({"GNOSEM_PUBLIC_URL": "https://"}, "gnosem.E004", "is not an origin"),
    ],
)
def test_each_rule_fires_on_its_bad_setting_naming_it(settings, overrides, expected_id, named):
    for name, value in overrides.items():
        setattr(settings, name, value)
    [(problem_id, message)] = gnosem_problems()
    assert problem_id == expected_id
    assert named in message


@pytest.mark.parametrize(
    "settings_pair",
    [
        {"GNOSEM_LLM_BASE_URL": "http://127.0.0.1:11434/v1", "GNOSEM_LLM_MODEL": "llama3.1:8b"},
        {"SECRET_KEY": "s" * 32, "GNOSEM_TOKEN_SECRET": "t" * 32},
        {"EMAIL_USE_TLS": False, "EMAIL_USE_SSL": True},
        {"GNOSEM_PUBLIC_URL": "https://memory.example.com"},
        {"GNOSEM_PUBLIC_URL": "http://127.0.0.1:8000"},
    ],
)
def test_the_rules_accept_what_is_right(settings, settings_pair):
    for name, value in settings_pair.items():
        setattr(settings, name, value)
    assert gnosem_problems() == []


def start(argv: list[str], *, env: dict[str, str], data_dir: Path) -> subprocess.CompletedProcess:
    """Run `argv` from the repository as an operator would: only the given GNOSEM_* variables."""
    clean_env = {key: value for key, value in os.environ.items() if not key.startswith(("GNOSEM_", "REDIS_URL"))}
    clean_env.pop("DATABASE_URL", None)
    return subprocess.run(
        argv,
        cwd=settings.BASE_DIR,
        env={**clean_env, "GNOSEM_DATA_DIR": str(data_dir), **env},
        capture_output=True,
        text=True,
        timeout=120,  # a command that did start would run until then, and fail the test
    )


@pytest.mark.parametrize("command", [["serve", "--port", "0"], ["run_huey"]])
def test_the_commands_that_start_gnosem_refuse_to_on_an_error(tmp_path, command):
    result = start([sys.executable, "manage.py", *command], env=BAD_ENVIRONMENT, data_dir=tmp_path)
    assert result.returncode != 0
    assert "gnosem.E001" in result.stderr
    assert not (tmp_path / "postgres").exists()  # stopped before touching the database


GUNICORN = [sys.executable, "-m", "gunicorn", "gnosem.wsgi:application", "-c", "gnosem/gunicorn_conf.py"]


def test_gunicorn_refuses_to_load_the_application_on_an_error(tmp_path):
    result = start([*GUNICORN, "--check-config"], env=BAD_ENVIRONMENT, data_dir=tmp_path)
    assert result.returncode != 0
    assert "gnosem.E001" in result.stderr


def test_gunicorn_loads_the_application_on_the_defaults(tmp_path):
    result = start([*GUNICORN, "--check-config"], env={}, data_dir=tmp_path)
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / "postgres").exists()
