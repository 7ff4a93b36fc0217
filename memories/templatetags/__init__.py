"""Template tags: what the pages of other apps may show of memories without importing them."""
