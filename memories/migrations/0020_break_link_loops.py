"""Break any loop of `superseded_by` or `duplicate_of` links already stored: its memories were hidden
from search, lists, counts and session_start, and could not be deleted. No change of schema.

A loop of corrections is broken at its newest memory (by creation time, then id), which becomes
current again: a correction is normally newer than what it corrects, so the newest is the likeliest
to be the one meant to stand, and every other memory of the loop stays superseded along the chain
to it. A loop of near-duplicate links is broken at its oldest memory, which becomes the group's
original: the worker links a restatement to an older memory, so that link is the one out of place.
"""

from django.db import migrations


def loops(links: dict[int, int]) -> list[list[int]]:
    """The loops of a graph where each node has at most one successor (`links`)."""
    found, done = [], set()
    for start in links:
        path, on_path = [], {}
        current = start
        while current in links and current not in done and current not in on_path:
            on_path[current] = len(path)
            path.append(current)
            current = links[current]
        if current in on_path:
            found.append(path[on_path[current] :])
        done.update(path)
    return found


def break_link_loops(apps, schema_editor) -> None:
    memory_model = apps.get_model("memories", "Memory")
    # A loop of corrections is broken at its newest memory, a loop of near-duplicates at its oldest.
    for link, pick in (("superseded_by", max), ("duplicate_of", min)):
        rows = memory_model.objects.filter(**{f"{link}__isnull": False}).values_list("id", f"{link}_id", "created_at")
        links, created = {}, {}
        for memory_id, target_id, created_at in rows.iterator(chunk_size=10_000):
            links[memory_id] = target_id
            created[memory_id] = created_at
        breaks = [pick(loop, key=lambda memory_id: (created[memory_id], memory_id)) for loop in loops(links)]
        memory_model.objects.filter(pk__in=breaks).update(**{link: None})


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0019_quota_counts_everything_stored"),
    ]

    operations = [
        migrations.RunPython(break_link_loops, migrations.RunPython.noop),
    ]
