"""manage.py rebuildgraph: extract the entities of every memory and note again (memories.graph.linking), with a
progress bar: after an upgrade that brought the graph, or one that changed the extraction rules.

Workers keep the graph current from then on (as they index, compress and update memories); this
can run while they do, and an interrupted run can simply be started again.
"""

from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from tqdm import tqdm

from accounts.reach import reach_of
from accounts.users import describe_account, user_for_command
from memories.graph.linking import entities_prune, graph_rebuild


class Command(BaseCommand):
    help = (
        "Extract the entities of every memory and note again and relink the graph "
        "(all spaces, or those of one user with --user)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--user", help="Only the spaces this user belongs to (username, e-mail or #ID).")

    def handle(self, *args: Any, user: str | None, **options: Any) -> None:
        owner = user_for_command(user) if user else None
        if owner is not None:
            self.stderr.write(f"Only the spaces of {describe_account(owner)}.")
        with tqdm(desc="linking entities", unit="memory or note") as bar:

            def progress(done: int, total: int) -> None:
                bar.total = total
                bar.update(done - bar.n)

            relinked = graph_rebuild(space_ids=reach_of(owner).space_ids if owner else None, progress=progress)
        pruned = entities_prune()
        self.stdout.write(
            f"{relinked} memories and notes relinked; {pruned} entities nothing mentions any more removed."
        )
