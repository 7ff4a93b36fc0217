"""MCP over Streamable HTTP at /mcp: protocol framing, the memory tools, and the view."""
