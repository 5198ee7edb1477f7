# cython: language_level=3
"""Smallest compiled module: proves the Cython build path works (imported by tests)."""


def compiled() -> bool:
    """True: this function came from a compiled extension module."""
    return True
