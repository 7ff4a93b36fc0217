r"""One paragraph through a real model, end to end, when the environment names one.

    GNOSEM_LLM_BASE_URL=http://127.0.0.1:11434/v1 GNOSEM_LLM_MODEL=llama3.1:8b \
        .venv/bin/python -m pytest tests/memories/compression/test_compression_real_model.py

Skipped otherwise (the rest of the suite never depends on a configured model).
"""

import os
import re

import pytest

from memories import services
from memories.models import CompressionStatus
from tests.memories.conftest import RAW

BASE_URL = os.environ.get("GNOSEM_LLM_BASE_URL")
MODEL = os.environ.get("GNOSEM_LLM_MODEL")
# Facts of RAW any faithful compression keeps, compared without case, spaces or underscores.
FACTS = ["billing", "PostgreSQL 16", "5433", "PgBouncer", "transaction", "Priya", "400"]

pytestmark = pytest.mark.skipif(
    not (BASE_URL and MODEL), reason="set GNOSEM_LLM_BASE_URL and GNOSEM_LLM_MODEL to run against a real model"
)


def normalised(text: str) -> str:
    return re.sub(r"[\s_]+", "", text).lower()


def test_a_real_model_compresses_a_paragraph_and_the_guard_keeps_it(
    owner, settings, django_capture_on_commit_callbacks
):
    settings.GNOSEM_LLM_BASE_URL = BASE_URL
    settings.GNOSEM_LLM_MODEL = MODEL
    settings.GNOSEM_LLM_API_KEY = os.environ.get("GNOSEM_LLM_API_KEY")
    with django_capture_on_commit_callbacks(execute=True):
        memory = services.memory_write(owner=owner, content=RAW)
    memory.refresh_from_db()

    assert memory.compression_status == CompressionStatus.COMPRESSED, memory.compression_error
    line = memory.content_optimized
    assert "\n" not in line and len(line.encode()) < len(RAW.encode())
    assert all(re.fullmatch(r"[A-Z][A-Z0-9_]*=\S.*", pair) for pair in line.split("|")), line
    missing = [fact for fact in FACTS if normalised(fact) not in normalised(line)]
    assert not missing, f"{line!r} lost {missing}"
