"""Hygiene: near-duplicates found, linked, merged or kept apart, and the one check that links
never loop."""
