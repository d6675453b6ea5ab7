"""Generated names: `metadata.generateName` plus five characters, as the API server's
SimpleNameGenerator makes them (from its alphabet of consonants and digits that spell no words).

The suffix is a hash of the prefix, the namespace and the store's resource version rather than a
random draw, so `simulate` gives the same names on every run; a name already taken is drawn again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Container

# utilrand's alphanums: no vowels, no 0/1/3 (confusable).
ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
SUFFIX_LENGTH = 5
# The API server cuts the prefix so the name stays within 63 characters (maxGeneratedNameLength).
MAX_GENERATED_NAME_LENGTH = 63 - SUFFIX_LENGTH


def encode_hash(digest: bytes, length: int) -> str:
    number = int.from_bytes(digest, "big")
    chars = []
    for _ in range(length):
        number, index = divmod(number, len(ALPHABET))
        chars.append(ALPHABET[index])
    return "".join(chars)


def generate_name(prefix: str, namespace: str, seed: int, taken: Container[str]) -> str:
    """prefix + a five-character suffix not in `taken`."""
    prefix = prefix[:MAX_GENERATED_NAME_LENGTH]
    attempt = 0
    while True:
        digest = hashlib.sha256(f"{namespace}/{prefix}/{seed}/{attempt}".encode()).digest()
        name = prefix + encode_hash(digest, SUFFIX_LENGTH)
        if name not in taken:
            return name
        attempt += 1
