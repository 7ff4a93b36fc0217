from django.apps import AppConfig


class GnosemConfig(AppConfig):
    """The project as an app, so that its system checks are registered wherever Django starts."""

    name = "gnosem"

    def ready(self) -> None:
        from gnosem import checks  # noqa: F401  (registers the checks)
