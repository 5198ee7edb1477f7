"""The fast checksum encoder gives exactly the documented digest (`scenarios.checksum.RunningChecksum`'s byte
layout), so checksums stay equal across backends and with the committed reference results.

The expected bytes are written out here value by value with hashlib, struct and zlib, not by another encoder:
a change of the layout, or of the fast paths for one type, fails the test that names that value."""
import hashlib
import struct
import zlib

import numpy as np
import pytest

from scenarios import _checksum
from scenarios.checksum import RunningChecksum, encode_python


def _array(a: np.ndarray) -> bytes:
    c = np.ascontiguousarray(a)
    return f"{c.dtype.str}{c.shape}".encode() + struct.pack("<I", zlib.crc32(c.tobytes()))


def _i(n: int) -> bytes:
    return b"i" + n.to_bytes(16, "little", signed=True)


def _f(x: float) -> bytes:
    return b"f" + struct.pack("<d", x)


def _cases() -> list[tuple[str, object, bytes]]:
    """(label, value, its bytes by the documented layout)."""
    rng = np.random.default_rng(0)
    frame = rng.integers(0, 255, size=(210, 160, 3), dtype=np.uint8)
    vec = rng.random(4).astype(np.float32)
    three = rng.random(3)
    ones = np.ones(2)
    t = np.arange(6).reshape(2, 3).T
    return [
        ("float32 array", vec, vec.dtype.str.encode() + b"(4,)" + struct.pack("<I", zlib.crc32(vec.tobytes()))),
        ("float", 1.0, b"f" + b"\x00\x00\x00\x00\x00\x00\xf0\x3f"),
        ("False", False, b"?0"),
        ("True", True, b"?1"),
        ("0", 0, b"i" + bytes(16)),
        ("-3", -3, b"i" + b"\xfd" + b"\xff" * 15),
        ("2**70", 2**70, b"i" + bytes(8) + b"\x40" + bytes(7)),
        ("3.5", 3.5, _f(3.5)),
        ("np.float64", np.float64(2.5), _f(2.5)),
        ("np.float32", np.float32(1.25), _f(1.25)),
        ("np.int64", np.int64(7), _i(7)),
        ("np.bool_ True", np.bool_(True), b"?1"),
        ("np.bool_ False", np.bool_(False), b"?0"),
        ("frame", frame, b"|u1(210, 160, 3)" + struct.pack("<I", zlib.crc32(frame.tobytes()))),
        ("strided frame", frame[:, ::2], b"|u1(210, 80, 3)" + struct.pack("<I", zlib.crc32(frame[:, ::2].tobytes()))),
        # a 0-d array is encoded as its 1-element C-order copy (numpy's ascontiguousarray): shape (1,)
        ("0-d array", np.array(3.0), b"<f8(1,)" + struct.pack("<I", zlib.crc32(np.array(3.0).tobytes()))),
        ("empty array", np.zeros((0, 3)), b"<f8(0, 3)" + struct.pack("<I", zlib.crc32(b""))),
        ("transposed", t, _array(t)),
        ("tuple", (three, 0.5, True), b"(3" + _array(three) + _f(0.5) + b"?1"),
        ("nested list", [1, [2.0, (None, "x")]], b"(2" + _i(1) + b"(2" + _f(2.0) + b"(2" + b"N" + b"s1:x"),
        ("dict", {"b": 1, "a": (ones, b"raw")}, b"{2" + b"s1:a" + b"(2" + _array(ones) + b"s3:raw" + b"s1:b" + _i(1)),
        ("str", "text", b"s4:text"),
        ("utf-8 str", "é", b"s2:\xc3\xa9"),
        ("bytes", b"bytes", b"s5:bytes"),
        ("None", None, b"N"),
        ("empty tuple", (), b"(0"),
        ("empty list", [], b"(0"),
    ]


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def test_each_value_hashes_to_its_documented_bytes():
    for label, value, expected in _cases():
        fast = RunningChecksum()
        fast.update(value)
        assert fast.hexdigest() == _digest(expected), label


def test_a_stream_of_values_is_the_digest_of_their_concatenated_bytes():
    cases = _cases()
    one, many = RunningChecksum(), RunningChecksum()
    for _, value, _ in cases:
        one.update(value)
    many.update_many([value for _, value, _ in cases])
    expected = _digest(b"".join(data for _, _, data in cases))
    assert one.hexdigest() == expected and many.hexdigest() == expected


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


def test_the_python_encoder_gives_the_documented_bytes_too():
    """The compiled encoder passes subclasses and rare types to the Python one: both must hold the layout."""
    for label, value, expected in _cases():
        assert encode_python([value]) == expected, label


def _random_value(rng: np.random.Generator, depth: int = 0) -> object:
    kind = int(rng.integers(0, 14 if depth < 3 else 10))
    if kind == 0:
        shape = tuple(int(n) for n in rng.integers(0, 4, size=int(rng.integers(0, 4))))
        dtype = rng.choice(["<f4", ">f4", "<f8", "|u1", "<i8", ">i2", "|b1", "<c8"])
        arr = np.asarray(rng.random(shape) * 100).astype(dtype)
        return arr[::2] if arr.ndim and rng.random() < 0.3 else arr  # strided now and then
    if kind == 1:
        return float(rng.normal() * 10 ** int(rng.integers(-5, 300)))
    if kind == 2:
        return bool(rng.integers(2))
    if kind == 3:  # ints across the int64 boundary and up to the 128-bit limit
        return int(rng.integers(-2**62, 2**62)) * int(rng.choice([1, 3, 2**40, 2**64 + 1]))
    if kind == 4:
        return None
    if kind == 5:
        return "".join(rng.choice(list("aé€😀 \x00")) for _ in range(int(rng.integers(0, 6))))
    if kind == 6:
        return bytes(rng.integers(0, 256, size=int(rng.integers(0, 6)), dtype=np.uint8))
    if kind == 7:  # numpy scalars and a bool_ (subclasses: the Python encoder's part)
        return rng.choice([np.float32(1.5), np.int16(-4), np.bool_(True), np.float64(-0.0), np.uint64(2**63)])
    if kind == 8:
        return float(rng.choice([0.0, -0.0, np.inf, -np.inf, 1e-310]))
    if kind == 9:
        return np.array(float(rng.random()))  # 0-d
    if kind == 10:
        return tuple(_random_value(rng, depth + 1) for _ in range(int(rng.integers(0, 4))))
    if kind == 11:
        return [_random_value(rng, depth + 1) for _ in range(int(rng.integers(0, 4)))]
    if kind == 12:
        return {str(i): _random_value(rng, depth + 1) for i in range(int(rng.integers(0, 3)))}
    return (np.zeros(3, dtype=np.float32), float(rng.random()), bool(rng.integers(2)))  # an env step


def test_the_compiled_encoder_equals_the_python_encoder_on_random_values():
    rng = np.random.default_rng(7)
    for _ in range(500):
        values = [_random_value(rng) for _ in range(int(rng.integers(1, 8)))]
        assert _checksum.encode_many(values) == encode_python(values), values


def test_the_array_header_cache_follows_every_dtype_and_shape():
    """The compiled encoder caches array headers by dtype object and shape: a change of either, or more
    distinct (dtype, shape) pairs than it caches, must still give each array its own header."""
    arrays = [np.zeros(shape, dtype=dtype) for dtype in ("<f4", ">f4", "<f8", "|u1", "<i2") for shape in
              ((3,), (1, 3), (3, 1), (2, 2), (0,))]
    for order in (arrays, arrays[::-1], arrays * 3):
        assert _checksum.encode_many(order) == encode_python(order)


def test_digests_computed_by_the_producers_give_the_checksum_of_the_values():
    """A worker's `digest` folded by the server equals the server encoding every value itself: the checksum's
    value does not depend on which process encoded a result."""
    from scenarios.checksum import digest

    rng = np.random.default_rng(3)
    results = [(rng.integers(0, 255, (210, 160, 3), dtype=np.uint8), float(i), i % 2 == 0) for i in range(4)]
    at_server, at_producers = RunningChecksum(), RunningChecksum()
    at_server.update_many([x for r in results for x in r])
    at_producers.update_digests([digest(*r) for r in results])
    assert at_producers.hexdigest() == at_server.hexdigest()
    changed = [(results[0][0].copy(), *results[0][1:])] + results[1:]
    changed[0][0][5, 5, 1] ^= 1
    other = RunningChecksum()
    other.update_digests([digest(*r) for r in changed])
    assert other.hexdigest() != at_server.hexdigest()


def test_a_gym_server_folds_worker_digests_and_plain_triples_to_one_checksum():
    """EnvWorker sends its encoding with its result; a vectorizer hands the server plain triples: one value."""
    from scenarios import make_scenario
    from scenarios.configs import GymConfig

    scenario = make_scenario(GymConfig(num_envs=3), 0)
    workers = [scenario.make_worker(i) for i in range(3)]
    with_digest, plain = scenario.make_server(), scenario.make_server()
    try:
        for _ in range(40):
            results = [w.step(None) for w in workers]
            assert all(len(r) == 4 for r in results)
            with_digest.gather(results)
            plain.gather([r[:3] for r in results])
    finally:
        for w in workers:
            w.close()
    assert with_digest.checksum() == plain.checksum()


def test_the_compiled_join_gives_the_bytes_of_every_kind_of_piece_in_order():
    """`_checksum.join` (what `update_digests` folds) copies contiguous arrays from their data and hands every
    other bytes-like piece to ``memoryview``: the bytes of ``b"".join`` over each piece's bytes, whatever mix."""
    from scenarios.checksum import digest

    shared = np.frombuffer(bytearray(digest(np.ones(4, np.float32), 1.0, True).tobytes()), dtype=np.uint8)
    shared.flags.writeable = False                       # a read-only view over memory it does not own
    strided = np.arange(20, dtype=np.uint8)[::3]         # not C-contiguous
    wide = np.arange(3, dtype=np.int32)                  # more than one byte per item
    pieces = [digest(np.zeros(4, np.float32), 0.5, False), shared, strided, wide, b"ab", bytearray(b"cd"),
              memoryview(b"ef"), np.empty(0, np.uint8)]
    want = b"".join(bytes(memoryview(p)) if not isinstance(p, np.ndarray) else p.tobytes() for p in pieces)
    assert _checksum.join(pieces) == want
    assert _checksum.join([]) == b""
    with pytest.raises(TypeError):
        _checksum.join([1.5])


def test_results_carrying_their_encoding_and_plain_ones_fold_to_the_checksum_of_their_values():
    """`RunningChecksum.update_attached` (the env server's gather): a result of ``width`` items contributes its last
    item, the encoding its producer computed; any other result (a vectorizer's plain tuple, one with a numpy scalar
    that the Python encoder handles) is encoded at the server; in one batch, in order, the checksum of the values."""
    from reactor_backend.readonly import ReadOnlyList
    from scenarios.checksum import digest

    rng = np.random.default_rng(5)
    values = [(rng.normal(size=4).astype(np.float32), float(i), i % 3 == 0) for i in range(6)]
    values[4] = (values[4][0], np.float64(2.5), False)            # a numpy scalar: the Python encoder's
    results = [(*values[0], digest(*values[0])),                   # carries its encoding
               values[1],                                          # plain triple
               ReadOnlyList([*values[2], digest(*values[2])]),    # a read-only list of four
               (*values[3], digest(*values[3])),
               values[4],
               list(values[5])]                                    # a plain list of three
    want, got = RunningChecksum(), RunningChecksum()
    want.update_many([x for v in values for x in v])
    got.update_attached(results, 4)
    assert got.hexdigest() == want.hexdigest()
    # the attached encoding is what is folded (not the values beside it): a wrong one changes the checksum
    wrong = RunningChecksum()
    wrong.update_attached([(*values[0], digest(*values[1]))] + results[1:], 4)
    assert wrong.hexdigest() != want.hexdigest()
    with pytest.raises(ValueError, match="width"):
        RunningChecksum().update_attached(results, 0)
