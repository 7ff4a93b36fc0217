"""Sealed values: AES-256-GCM with a header naming the key version, and HKDF for subkeys.

A sealed value is `b"\\x01"` (the format), the key version (4 bytes, big-endian), a random 12-byte
nonce, then the ciphertext with its 16-byte tag. The associated data is the header followed by
the caller's context, so neither the version nor the context can be changed without the value
failing to open.
"""

import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

FORMAT = b"\x01"
HEADER_BYTES = 5
NONCE_BYTES = 12
TAG_BYTES = 16
KEY_BYTES = 32


class Unreadable(Exception):
    """A sealed value that cannot be opened: not in the format, sealed under a key version that
    does not exist, or failing authentication. The message says which, never a key."""


def seal(key: bytes, version: int, plaintext: bytes, context: bytes) -> bytes:
    """`plaintext` sealed under `key` (of key version `version`), bound to `context`."""
    header = FORMAT + version.to_bytes(4, "big")
    nonce = os.urandom(NONCE_BYTES)
    return header + nonce + AESGCM(key).encrypt(nonce, plaintext, header + context)


def sealed_version(blob: bytes) -> int:
    """The key version a sealed value names in its header."""
    if len(blob) < HEADER_BYTES + NONCE_BYTES + TAG_BYTES:
        raise Unreadable(f"not a sealed value: {len(blob)} bytes is too short")
    if blob[:1] != FORMAT:
        raise Unreadable(f"not a sealed value: unknown format {blob[0]:#04x}")
    return int.from_bytes(blob[1:HEADER_BYTES], "big")


def open_sealed(key: bytes, blob: bytes, context: bytes) -> bytes:
    """The plaintext of a value sealed under `key` with `context`."""
    sealed_version(blob)
    header = blob[:HEADER_BYTES]
    nonce, ciphertext = blob[HEADER_BYTES : HEADER_BYTES + NONCE_BYTES], blob[HEADER_BYTES + NONCE_BYTES :]
    try:
        return AESGCM(key).decrypt(nonce, ciphertext, header + context)
    except InvalidTag:
        raise Unreadable("the sealed value failed authentication: another key or context, or altered") from None


def derive_key(key: bytes, info: bytes) -> bytes:
    """A 32-byte subkey of `key` for one use, named by `info` (HKDF-SHA256)."""
    return HKDF(algorithm=hashes.SHA256(), length=KEY_BYTES, salt=None, info=info).derive(key)
