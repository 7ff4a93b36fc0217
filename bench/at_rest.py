"""What a copy of the database gives away: distinctive phrases planted through the product, then
searched for in a plain `pg_dump` of the whole database (bench/planted.py).

    .venv/bin/python bench/at_rest.py

Prints, per place, how many phrases were planted and how many the dump holds, and the tables that
hold them. Runs on the embedded PostgreSQL under var/at_rest (or DATABASE_URL), the planting user
made afresh each run.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.environment import setup_django

setup_django("at_rest", tasks_immediate=True)

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402

from bench.planted import database_dump, found_in, phrases_found, plant  # noqa: E402

USERNAME = "at-rest"


def main() -> None:
    call_command("migrate", interactive=False, verbosity=0)
    users = get_user_model()
    users.objects.filter(username=USERNAME).delete()
    planted = plant(users.objects.create_user(USERNAME, f"{USERNAME}@example.com"))
    dump = database_dump()
    found = found_in(dump, planted)
    print(f"pg_dump of the whole database: {len(dump) / 1e6:.1f} MB\n")
    print(f"{'place':<22}{'planted':>8}{'in dump':>9}  tables holding them")
    for place, words in planted.items():
        where = ", ".join(f"{table} ({count})" for table, count in sorted(found[place].items())) or "-"
        print(f"{place:<22}{len(words):>8}{phrases_found(dump, words):>9}  {where}")
    everything = [word for words in planted.values() for word in words]
    print(f"{'all':<22}{len(everything):>8}{phrases_found(dump, everything):>9}")


if __name__ == "__main__":
    main()
