"""How the command line reads a number: whole or finite, and bounded below (every command's options)."""

import math


def whole(text):
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"must be a whole number, not {text!r}") from None


def number(text):
    """A finite number: nan and inf are refused (nan compares false to every bound, inf has no end)."""
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"must be a number, not {text!r}") from None
    if not math.isfinite(value):
        raise ValueError(f"must be a finite number, not {text!r}")
    return value


def positive(kind):
    """`kind` (a reader: int, float, whole, number) of a value that must be greater than 0."""
    def read(text):
        value = kind(text)
        if value <= 0:
            raise ValueError(f"must be greater than 0, not {text}")
        return value
    read.__name__ = kind.__name__             # argparse names the reader in its message ("invalid int value")
    return read


def non_negative(kind):
    def read(text):
        value = kind(text)
        if value < 0:
            raise ValueError(f"must be 0 or more, not {text}")
        return value
    return read
