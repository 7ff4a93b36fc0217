"""The entity graph: entities read from memories and notes, linked, explored and drawn."""
