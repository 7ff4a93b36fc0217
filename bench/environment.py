"""Django set-up shared by the benchmarks: tasks in-process or not, no network, and a data folder
of their own per embedding model (search reads the vectors of the model a folder's memories were
indexed with, so runs with different GNOSEM_EMBEDDING_MODEL values must not share one)."""

import logging
import os
import re
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent


def setup_django(folder: str | None, *, tasks_immediate: bool = False) -> None:
    """Point Django at var/<folder>[-<model>] (unless GNOSEM_DATA_DIR is set; `folder` None keeps
    the product's default) and set it up. `tasks_immediate`: queued tasks run as their
    transaction commits, in this process."""
    if folder is not None:
        model = os.environ.get("GNOSEM_EMBEDDING_MODEL", "default")
        suffix = "" if model == "default" else "-" + re.sub(r"[^A-Za-z0-9.]+", "-", model).strip("-")
        os.environ.setdefault("GNOSEM_DATA_DIR", str(BASE_DIR / "var" / f"{folder}{suffix}"))
        os.environ.setdefault("GNOSEM_QUEUE_NAME", f"gnosem-{folder}")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gnosem.settings")
    os.environ["HF_HUB_OFFLINE"] = "1"
    if tasks_immediate:
        os.environ["GNOSEM_TASKS_IMMEDIATE"] = "1"

    import django

    django.setup()
    logging.getLogger("huey").setLevel(logging.WARNING)  # one line per indexing task otherwise
