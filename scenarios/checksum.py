"""The checksum every server keeps: an order-sensitive BLAKE2b over a fixed byte encoding of every value it
receives (`RunningChecksum`), equal across backends for equal config and seed.

The encoding is defined here once (`_encode`, the table in `RunningChecksum`'s docstring); `scenarios._checksum`
is its compiled fast path and hands every value it does not encode itself back to `_encode`.

Where the encoding is computed is free: a worker may encode its own result where it produced it (`digest`, the
costly part: a CRC-32 over every byte of an Atari frame) and send the encoding with the result, and the server
folds the encodings in bank order (`RunningChecksum.update_digests`). BLAKE2b is a stream, so the checksum is
the same bytes, the same value, whichever process encoded each result; only the server's share of the round
shrinks (under the processes executor the server's process is on every round's critical path).
"""
from __future__ import annotations

import hashlib
import struct
import zlib
from typing import Any, Sequence

import numpy as np

from scenarios import _checksum


class RunningChecksum:
    """Incremental, order-sensitive hash of values (arrays, numbers, tuples) received by a server.

    Arrays are folded through CRC-32 of their bytes plus dtype and shape, and every piece feeds a BLAKE2b
    state, so the digest is cheap per round yet covers every byte.

    The digest is BLAKE2b (16-byte digest) of the concatenated encodings of every value in order; the
    encoding of one value (the definition of every checksum in the results, so it never changes):

    ===================================  ====================================================================
    value                                bytes
    ===================================  ====================================================================
    ``np.ndarray``                       ``f"{dtype.str}{shape}"`` (e.g. ``|u1(210, 160, 3)``), then the
                                         CRC-32 of its C-order bytes as ``<I`` (of ``b""`` when empty); a
                                         0-d array counts as shape ``(1,)``
    ``bool``, ``np.bool_``               ``?1`` or ``?0``
    ``int``, ``np.integer``              ``i`` + 16 bytes little-endian two's complement
    ``float``, ``np.floating``           ``f`` + the float64 as ``<d``
    ``tuple``, ``list``                  ``(`` + the length in decimal, then each item
    ``dict``                             ``{`` + the length in decimal, then for each key in sorted order
                                         ``str(key)`` then its value
    ``str`` (UTF-8), ``bytes``           ``s`` + the byte length in decimal + ``:`` + the bytes
    ``None``                             ``N``
    ===================================  ====================================================================

    Why the encoder looks the way it does: the server's checksum runs on the critical path of every round in
    the process that also gathers, and a generic ``isinstance`` chain per value costs a sizeable share of a
    cheap env step. ``update`` therefore encodes values with the compiled encoder (`scenarios._checksum`:
    exact-type checks, C packing, one buffer), which hands
    subclasses (numpy scalars, ``np.bool_``), dicts and rare types to the Python encoder below (`_encode`:
    one dictionary lookup per exact type, then ordered ``isinstance`` checks), and feeds BLAKE2b once per
    call (a stream: the digest does not depend on how the bytes are split).
    ``tests/scenarios/test_checksum_encoder.py`` checks both encoders against hashlib over the layout above,
    written out byte by byte.
    """

    def __init__(self) -> None:
        self._h = hashlib.blake2b(digest_size=16)

    def update(self, value: Any) -> None:
        """Fold ``value`` into the digest.

        Args:
            value: an array, number, bool, str, bytes, None, or a tuple, list or dict of these.

        Raises:
            TypeError: for any other type.
        """
        self._h.update(_checksum.encode(value))

    def update_many(self, values: Sequence[Any]) -> None:
        """``update`` each of ``values`` in order (one BLAKE2b call for all of them).

        Args:
            values: the values, in the order they were received.
        """
        self._h.update(_checksum.encode_many(values))

    def update_digests(self, digests: Sequence[Any]) -> None:
        """Fold encodings that `digest` computed elsewhere, in order: the same as ``update_many`` of the values
        they encode (one BLAKE2b call for all of them).

        Args:
            digests: `digest` results (any bytes-like objects), in the order their values were received.
        """
        self._h.update(_checksum.join(digests))

    def update_attached(self, results: Sequence[Sequence[Any]], width: int) -> None:
        """Fold ``results`` in order, each by its encoding: a result of ``width`` items carries it as its last item
        (`digest` of the items before it, computed where the result was produced), any other result is the values
        themselves and is encoded here (a vectorizer's plain tuple). The same value as ``update_many`` of each
        result's values, in one BLAKE2b call; the scan runs compiled (a server gathers a bank on every round's
        critical path).

        Args:
            results: the results, in the order they were received.
            width: the item count of a result that carries its encoding.
        """
        self._h.update(_checksum.join_attached(results, width))

    def hexdigest(self) -> str:
        """The digest of everything folded in so far, as 32 hex digits."""
        return self._h.hexdigest()


def digest(*values: Any) -> np.ndarray:
    """The checksum encoding of ``values`` (``update_many(values)``'s bytes) as a read-only uint8 array: computed
    by the role that produced the values, sent with them, and folded by the server with
    `RunningChecksum.update_digests` (a small fixed-size array travels beside the result, never pickled).

    Args:
        values: the values, in the order the server would fold them.
    """
    return np.frombuffer(_checksum.encode_many(values), dtype=np.uint8)


_crc32 = zlib.crc32
_pack_d = struct.Struct("<d").pack
_pack_I = struct.Struct("<I").pack
_ARRAY_HEADERS: dict[tuple, bytes] = {}


def _enc_array(value: np.ndarray, out: list) -> None:
    arr = value if value.flags.c_contiguous and value.ndim else np.ascontiguousarray(value)
    key = (arr.dtype, arr.shape)
    head = _ARRAY_HEADERS.get(key)
    if head is None:
        if len(_ARRAY_HEADERS) > 4096:
            _ARRAY_HEADERS.clear()
        head = _ARRAY_HEADERS[key] = f"{arr.dtype.str}{arr.shape}".encode()
    out.append(head)
    out.append(_pack_I(_crc32(arr.data if arr.size else b"")))


def _enc_bool(value: bool, out: list) -> None:
    out.append(b"?1" if value else b"?0")


def _enc_int(value: int, out: list) -> None:
    out.append(b"i" + int(value).to_bytes(16, "little", signed=True))


def _enc_float(value: float, out: list) -> None:
    out.append(b"f" + _pack_d(value))


def _enc_seq(value: tuple | list, out: list) -> None:
    out.append(b"(%d" % len(value))
    get = _ENCODERS.get
    for item in value:
        f = get(type(item))
        if f is None:
            _encode(item, out)
        else:
            f(item, out)


def _enc_none(value: None, out: list) -> None:
    out.append(b"N")


def _enc_str(value: str, out: list) -> None:
    data = value.encode()
    out.append(b"s%d:" % len(data) + data)


def _enc_bytes(value: bytes, out: list) -> None:
    out.append(b"s%d:" % len(value) + value)


def _enc_dict(value: dict, out: list) -> None:
    out.append(b"{%d" % len(value))
    for key in sorted(value):
        _encode(str(key), out)
        _encode(value[key], out)


_ENCODERS = {np.ndarray: _enc_array, bool: _enc_bool, int: _enc_int, float: _enc_float, tuple: _enc_seq,
             list: _enc_seq, type(None): _enc_none, str: _enc_str, bytes: _enc_bytes, dict: _enc_dict}


def _encode(value: Any, out: list) -> None:
    """Append the checksum's byte pieces for ``value`` (the layout in `RunningChecksum`'s docstring)."""
    f = _ENCODERS.get(type(value))
    if f is not None:
        f(value, out)
    elif isinstance(value, np.ndarray):
        _enc_array(value, out)
    elif isinstance(value, (bool, np.bool_)):
        _enc_bool(value, out)
    elif isinstance(value, (int, np.integer)):
        _enc_int(value, out)
    elif isinstance(value, (float, np.floating)):
        out.append(b"f" + _pack_d(float(value)))
    elif isinstance(value, (tuple, list)):
        _enc_seq(value, out)
    elif isinstance(value, dict):
        _enc_dict(value, out)
    elif isinstance(value, str):
        _enc_str(value, out)
    elif isinstance(value, bytes):
        _enc_bytes(value, out)
    else:
        raise TypeError(f"cannot checksum a {type(value).__name__}")


def encode_python(values: Sequence[Any]) -> bytes:
    """The checksum bytes of ``values`` by the Python encoder alone (the reference the tests hold the compiled
    encoder to).

    Args:
        values: the values to encode, in order.
    """
    out: list[bytes] = []
    for v in values:
        _encode(v, out)
    return b"".join(out)


_checksum.set_fallback(_encode)

