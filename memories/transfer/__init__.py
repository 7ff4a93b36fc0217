"""Export and import of everything an owner has."""
