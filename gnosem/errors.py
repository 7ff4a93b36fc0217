"""Errors a caller can cause, shared by the apps; each interface (MCP, REST, pages, commands) maps them
to its own shape once."""


class GnosemError(Exception):
    """Base of the domain's errors; the message says what was wrong and what to do."""


class ValidationError(GnosemError):
    """An argument is malformed or out of range."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class NotFound(GnosemError):
    """No such object for this owner (another owner's object is reported the same way)."""


class PermissionDenied(GnosemError):
    """The credential does not allow this operation (a read token calling a write tool)."""


class QuotaExceeded(GnosemError):
    """The write would take the owner past a limit of their quota (memories.limits.quotas); the message
    states the limit and the usage."""
