"""The fast checksum encoder must give exactly the digest of the original per-piece encoder: checksums
stay equal across backends and with the committed reference results."""
import numpy as np
import pytest

from scenarios.base import RunningChecksum


def _values():
    rng = np.random.default_rng(0)
    frame = rng.integers(0, 255, size=(210, 160, 3), dtype=np.uint8)
    return [
        rng.random(4).astype(np.float32), 1.0, False, True, 0, -3, 2**70, 3.5,
        np.float64(2.5), np.float32(1.25), np.int64(7), np.bool_(True), np.bool_(False),
        frame, frame[:, ::2],                      # non-contiguous
        np.array(3.0), np.zeros((0, 3)), np.arange(6).reshape(2, 3).T,
        (rng.random(3), 0.5, True), [1, [2.0, (None, "x")]], {"b": 1, "a": (np.ones(2), b"raw")},
        "text", b"bytes", None, (), [],
    ]


def test_update_matches_reference_value_by_value():
    fast, ref = RunningChecksum(), RunningChecksum()
    for v in _values():
        fast.update(v)
        ref._update_reference(v)
        assert fast.hexdigest() == ref.hexdigest(), repr(v)[:80]


def test_update_many_is_update_of_each():
    vals = _values()
    many, one = RunningChecksum(), RunningChecksum()
    many.update_many(vals)
    for v in vals:
        one._update_reference(v)
    assert many.hexdigest() == one.hexdigest()


def test_a_changed_byte_changes_the_digest():
    a = np.zeros(100, dtype=np.uint8)
    b = a.copy()
    b[57] = 1
    x, y = RunningChecksum(), RunningChecksum()
    x.update((a, 1.0, False))
    y.update((b, 1.0, False))
    assert x.hexdigest() != y.hexdigest()


def test_unknown_type_is_refused():
    with pytest.raises(TypeError, match="cannot checksum a object"):
        RunningChecksum().update(object())
