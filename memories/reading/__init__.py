"""What assistants read besides search results: session_start, memory_count and token budgets."""
