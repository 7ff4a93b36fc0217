"""The REST API under /api/v1/: the same services as MCP behind DRF views, with API tokens."""
