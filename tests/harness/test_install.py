"""The install compiled the Cython extension modules (the build path exists from day one)."""
import importlib.machinery


def test_cython_extension_is_compiled():
    import reactor_backend._build_probe as probe

    assert probe.compiled() is True
    assert probe.__file__.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))
