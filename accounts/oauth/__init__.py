"""OAuth 2.1 for MCP clients: Gnosem as authorization server (django-oauth-toolkit underneath) and
as resource server. A grant becomes a connection, an ApiToken row of its own (accounts.oauth.connections)."""
