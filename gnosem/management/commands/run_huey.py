"""`manage.py run_huey`: huey's consumer, at GNOSEM_WORKER_NICENESS.

Set on the process's threads before the consumer starts one of its own, so that every thread it
starts (workers, the scheduler, the embedding model's own) inherits it: on a machine shared with
web processes, embedding takes the cores only when requests leave them idle. This app comes
before huey's in INSTALLED_APPS, so this command stands in for huey's own.
"""

import os
from typing import Any

from django.conf import settings
from huey.contrib.djhuey.management.commands.run_huey import Command as HueyConsumerCommand


class Command(HueyConsumerCommand):
    def handle(self, *args: Any, **options: Any) -> None:
        set_process_niceness(settings.GNOSEM_WORKER_NICENESS)
        super().handle(*args, **options)


def set_process_niceness(niceness: int) -> None:
    """Every thread of this process at `niceness`: on Linux a niceness is a thread's (libraries
    may have started threads while Django loaded), elsewhere the process's."""
    if not os.path.isdir("/proc/self/task"):
        os.setpriority(os.PRIO_PROCESS, 0, niceness)
        return
    for thread_id in os.listdir("/proc/self/task"):
        os.setpriority(os.PRIO_PROCESS, int(thread_id), niceness)
