"""memories.encryption.checks: a malformed master key stops every start, and a master key that
does not open the database's data stops the commands that name the database."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core.checks import run_checks
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.db import connection

import memories.encryption.checks  # noqa: F401  (registers the check, as the app's start-up does)
from memories.encryption.master import verify_master_key
from tests.encryption.conftest import NEW_MASTER, configured


def manage(*args: str, data_dir: Path, **variables: str) -> subprocess.CompletedProcess:
    """`manage.py` as an operator runs it, with only the given GNOSEM_* variables and DATABASE_URL."""
    environment = {key: value for key, value in os.environ.items() if not key.startswith("GNOSEM_")}
    environment.pop("DATABASE_URL", None)
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=django_settings.BASE_DIR,
        env={**environment, "GNOSEM_DATA_DIR": str(data_dir), **variables},
        capture_output=True,
        text=True,
        timeout=120,
    )


def master_key_problems(**kwargs) -> list[tuple[str, str]]:
    return [(problem.id, problem.msg) for problem in run_checks(**kwargs) if problem.id.startswith("memories.E00")]


def test_a_well_formed_key_passes(db, old_master):
    assert master_key_problems() == []
    assert master_key_problems(databases=["default"]) == []


def test_a_malformed_key_fails_the_check_naming_its_variable(settings):
    settings.GNOSEM_PREVIOUS_MASTER_KEY = "short"
    [(problem_id, message)] = master_key_problems()
    assert problem_id == "memories.E001"
    assert message.startswith("GNOSEM_PREVIOUS_MASTER_KEY (or GNOSEM_PREVIOUS_MASTER_KEY_FILE)")


def test_check_with_the_database_refuses_another_master_key(db, settings, old_master):
    verify_master_key()
    settings.GNOSEM_MASTER_KEY = configured(NEW_MASTER)
    assert master_key_problems() == []  # without a database named, nothing to compare with
    with pytest.raises(SystemCheckError, match=r"memories\.E002.*does not match the master key"):
        call_command("check", databases=["default"])


def test_check_with_the_database_passes_before_migrate_made_the_table(db, old_master):
    """migrate runs the checks before it creates the table."""
    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE memories_masterkeycheck")  # taken back with the test's transaction
    assert master_key_problems(databases=["default"]) == []


def test_check_with_a_database_that_cannot_be_reached_leaves_the_complaint_to_what_needs_it(tmp_path):
    result = manage("check", "--database", "default", data_dir=tmp_path, DATABASE_URL="postgres://127.0.0.1:1/gnosem")
    assert result.returncode == 0, result.stderr


def test_manage_py_refuses_to_start_on_a_malformed_master_key_naming_it(tmp_path):
    result = manage("check", data_dir=tmp_path, GNOSEM_MASTER_KEY="c2hvcnQ=")
    assert result.returncode != 0
    assert "memories.E001" in result.stderr
    assert "GNOSEM_MASTER_KEY (or GNOSEM_MASTER_KEY_FILE) holds 5 bytes, not 32" in result.stderr
    assert not (tmp_path / "postgres").exists()
