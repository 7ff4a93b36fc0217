"""manage.py rebuildgraph: extract the entities of every memory and note again (memories.graph.linking), with a
progress bar: after an upgrade that brought the graph, or one that changed the extraction rules.

Workers keep the graph current from then on (as they index, compress and update memories); this
can run while they do, and an interrupted run can simply be started again.
"""

from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from tqdm import tqdm

from accounts.users import describe_account, user_for_command
from memories.graph.linking import entities_prune, graph_rebuild


class Command(BaseCommand):
    help = "Extract the entities of every memory and note again and relink the graph (all users, or one with --user)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--user", help="Only this user's memories (username, e-mail or #ID).")

    def handle(self, *args: Any, user: str | None, **options: Any) -> None:
        owner = user_for_command(user) if user else None
        if owner is not None:
            self.stderr.write(f"Only the memories of {describe_account(owner)}.")
        with tqdm(desc="linking entities", unit="memory or note") as bar:

            def progress(done: int, total: int) -> None:
                bar.total = total
                bar.update(done - bar.n)

            relinked = graph_rebuild(owner_id=owner.pk if owner else None, progress=progress)
        pruned = entities_prune()
        self.stdout.write(
            f"{relinked} memories and notes relinked; {pruned} entities nothing mentions any more removed."
        )
