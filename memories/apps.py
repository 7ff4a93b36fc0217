from django.apps import AppConfig

from memories.indexing import queue


class MemoriesConfig(AppConfig):
    name = "memories"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from memories import receivers, tasks  # noqa: F401  (connects the receivers, registers the huey tasks)
        from memories.encryption import checks  # noqa: F401  (registers the master key's system check)

        # Services send work through memories.indexing.queue, which cannot import the tasks: they call the services.
        queue.connect(
            embed=tasks.embed_memories_task,
            compress=tasks.compress_memory_task,
            index_note=tasks.index_note_task,
            rekey=tasks.rotate_space_key_task,
            imports=tasks.import_file_task,
        )
