"""Encryption at rest, by envelope: each space's texts are sealed under that space's data keys
(keys), which are stored wrapped by one master key (master) that never enters the database.
AES-256-GCM and HKDF-SHA256 come from `cryptography` (cipher)."""
