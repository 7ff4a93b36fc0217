"""The scopes an OAuth client may ask for, and how they map onto a token's read / write rights."""

from accounts.models import TokenScope

READ = "memories:read"
WRITE = "memories:write"
OFFLINE_ACCESS = "offline_access"
# What a client gets when it names no scope, and what the 401 challenge suggests asking for.
MEMORY_SCOPES = (READ, WRITE)
SUPPORTED = (READ, WRITE, OFFLINE_ACCESS)


def token_scope(scopes: list[str] | str) -> str:
    """The TokenScope a grant of these OAuth scopes amounts to: write implies read."""
    granted = scopes.split() if isinstance(scopes, str) else scopes
    return TokenScope.WRITE if WRITE in granted else TokenScope.READ


def read_only(scopes: list[str]) -> list[str]:
    """The same scopes with write narrowed to read (the consent page's "Read only")."""
    narrowed = [READ if scope == WRITE else scope for scope in scopes]
    return list(dict.fromkeys(narrowed))
