"""Damaged copies of file contents, for tests that bad bytes only ever raise the format's
own error."""
import random


def mangled(data: bytes, count: int, seed: int, max_flips: int = 3):
    """``count`` copies of ``data``, each with 1..max_flips random bytes replaced and, one
    time in three, cut short."""
    rng = random.Random(seed)
    for _ in range(count):
        raw = bytearray(data)
        for _ in range(rng.randint(1, max_flips)):
            raw[rng.randrange(len(raw))] = rng.randrange(256)
        if rng.random() < 0.3:
            raw = raw[:rng.randrange(len(raw))]
        yield bytes(raw)
