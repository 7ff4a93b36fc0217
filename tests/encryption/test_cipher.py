"""memories.encryption.cipher: AES-256-GCM sealed values that name their key version and open only
under the key and context they were sealed with."""

import os

import pytest

from memories.encryption.cipher import Unreadable, open_sealed, seal, sealed_version

KEY = os.urandom(32)


def test_a_sealed_value_opens_to_its_plaintext_and_names_its_version():
    blob = seal(KEY, 7, b"the staging database moved", b"row 1")
    assert blob[:5] == b"\x01\x00\x00\x00\x07"
    assert sealed_version(blob) == 7
    assert open_sealed(KEY, blob, b"row 1") == b"the staging database moved"


def test_the_same_plaintext_sealed_twice_differs_by_its_nonce():
    first, second = seal(KEY, 1, b"same", b"ctx"), seal(KEY, 1, b"same", b"ctx")
    assert first[5:17] != second[5:17]
    assert first != second


@pytest.mark.parametrize("position", [0, 4, 5, 16, 17, -1])
def test_a_changed_byte_anywhere_makes_it_unreadable(position):
    blob = bytearray(seal(KEY, 1, b"plaintext", b"ctx"))
    blob[position] ^= 0x01
    with pytest.raises(Unreadable):
        open_sealed(KEY, bytes(blob), b"ctx")


def test_another_context_or_key_cannot_open_it():
    blob = seal(KEY, 1, b"plaintext", b"space 1|row 1")
    with pytest.raises(Unreadable, match="failed authentication"):
        open_sealed(KEY, blob, b"space 2|row 1")
    with pytest.raises(Unreadable, match="failed authentication"):
        open_sealed(os.urandom(32), blob, b"space 1|row 1")


@pytest.mark.parametrize("length", [0, 5, 32])
def test_a_truncated_value_is_unreadable_and_says_so(length):
    blob = seal(KEY, 1, b"plaintext", b"ctx")[:length]
    with pytest.raises(Unreadable, match="too short"):
        sealed_version(blob)
    with pytest.raises(Unreadable, match="too short"):
        open_sealed(KEY, blob, b"ctx")


def test_an_unknown_format_is_unreadable_and_no_key_is_named():
    blob = b"\x02" + seal(KEY, 1, b"plaintext", b"ctx")[1:]
    with pytest.raises(Unreadable, match="unknown format 0x02") as raised:
        open_sealed(KEY, blob, b"ctx")
    assert KEY.hex() not in str(raised.value)
