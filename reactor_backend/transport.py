"""Shared-memory slots that carry port values between worker processes.

Why: a value that crosses processes must not go through a pipe (a syscall and a copy on each
side, plus pickling). Each exported port (a source port that some other process reads) owns one
*slot*, written once per tag by its owner however many processes and ports read it (a broadcast
is written once): a fixed 128-byte header in a shared header table plus a data segment in
``/dev/shm``.

* numpy arrays (plain dtype, at most 8 dimensions) are copied once into the data segment; the
  reader gets a read-only view over it (``copy=True`` readers get their own array). The view is
  valid until the writer writes this slot again (the next tag at which it sends). A writer may
  instead build its value in the slot itself (``SlotWriter.lend``, behind ``Port.lend``): writing
  that array then copies nothing (zero-copy output).
* Other values are pickled with protocol 5; out-of-band buffers (numpy arrays inside dicts,
  tuples...) are copied straight into the segment after the pickle stream, not into it.
* Flat records, a tuple or list of at most 16 fields that are numpy arrays, floats, ints, bools
  or None (an environment step's ``(obs, reward, done)``), are laid out once: a descriptor in the
  segment, then 8 bytes per scalar, then each array (one under 64 bytes packed at 16 bytes after the
  last field, so that a small record fills one cache line; a larger one on a line of its own). While
  the field types, dtypes and shapes stay the same, a write stores the scalars and copies the arrays
  into place and a read builds the record from the bytes (arrays as views or copies, as for a bare
  array), both in the compiled ``_codec.RecordCodec``: no pickling per value. An int beyond 64 bits
  pickles the value.
* A bare float, int or bool (exactly those types: an agent's action) is a record of one field
  that is the value itself: 8 bytes, no pickle (pickling and unpickling a number costs far more
  than copying its 8 bytes, per value, and marl rounds send one per agent).
* ``None`` costs only the header.
* A slot grows when a larger value arrives: the writer creates a new segment (generation g+1),
  publishes the generation and capacity in the header and unlinks the old name; a reader maps the
  new segment the first time it sees the new generation. Old mappings stay valid while views on
  them are alive.

Synchronization is not done here: the executor's progress words order every write before every
read (the seq_cst store that publishes a position also publishes the header and data). Presence is
the header's ``round``: the writer stamps the executor's round number, the reader compares it with
the current one, so nothing has to be reset per tag.

The hot path is a value of the same layout as last time (an array of the same dtype and shape, a
record of the same fields, None: every round of a benchmark, every step of an environment): the
writer copies the data and stamps only the round; the header's ``layout`` counter, bumped whenever
anything else in the header changes, tells the reader that its cached decoder is still right, so
it skips decoding the header. That path is compiled (``_codec.SlotHotWriter`` / ``SlotHotReader``
are a slot's ``write``, ``round`` and ``read``); the Python here runs when a layout changes.

Every segment is named ``rb-<pid>-<run>-...`` (``pid`` of the process that called ``run``) so
that the parent, or a harness that killed everything, can remove leftovers by prefix
(``reactor_backend.cleanup_after(pid)``, in ``segments.py``, which owns the naming).
"""
from __future__ import annotations

import glob
import mmap
import os
import pickle
import struct
from typing import Any

import numpy as np

from reactor_backend._codec import BARE, LIST, SCALAR_BYTES, TUPLE, RecordCodec, SlotHotReader, SlotHotWriter
from reactor_backend.readonly import ReadOnlyList

SHM_DIR = "/dev/shm"
HEADER_SIZE = 128
MAX_NDIM = 8
KIND_NONE = 0
KIND_ARRAY = 1
KIND_PICKLE = 2
KIND_RECORD = 3
MAX_RECORD = 16
_REC_TAGS = {float: "f", int: "i", bool: "b"}
_NONE_KEY = ("n",)
_RECORD_KEY = ("r",)  # the header describes the layout of the writer's current codec
_INITIAL_CAPACITY = 4096
_ALIGN = 64
#: a record's scalars and its arrays smaller than a cache line are packed at this alignment (numpy's largest dtype
#: alignment), so that an environment step's record (reward, done, a small observation, its checksum encoding) fills
#: one cache line, not one per field: a reader on another core then fetches one line per record
_PACK = 16

# round, layout, gen, capacity, kind, ndim, nbytes, dtype, shape[8]
_HDR = struct.Struct("<qqqqiiq16s8q")
_ROUND = struct.Struct("<q")
_PKL_HEAD = struct.Struct("<qq")  # pickle-stream length, number of out-of-band buffers
_Q = struct.Struct("<q")
assert _HDR.size <= HEADER_SIZE


def shm_path(name: str) -> str:
    return os.path.join(SHM_DIR, name)


def create_segment(name: str, size: int) -> mmap.mmap:
    """Create ``/dev/shm/<name>`` of ``size`` bytes (fails if it exists) and map it shared."""
    fd = os.open(shm_path(name), os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
    try:
        os.ftruncate(fd, max(size, 1))
        return mmap.mmap(fd, max(size, 1), mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    finally:
        os.close(fd)


def open_segment(name: str) -> mmap.mmap:
    """Map an existing ``/dev/shm/<name>`` shared, read-write, at its full size."""
    fd = os.open(shm_path(name), os.O_RDWR)
    try:
        return mmap.mmap(fd, os.fstat(fd).st_size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    finally:
        os.close(fd)


def unlink_segment(name: str) -> None:
    try:
        os.unlink(shm_path(name))
    except FileNotFoundError:
        pass


def unlink_prefix(prefix: str) -> list[str]:
    """Remove every ``/dev/shm/<prefix>*`` segment; returns the names removed."""
    removed = []
    for path in glob.glob(shm_path(glob.escape(prefix) + "*")):
        try:
            os.unlink(path)
            removed.append(os.path.basename(path))
        except FileNotFoundError:
            pass
    return removed


def _aligned(n: int, align: int = _ALIGN) -> int:
    return (n + align - 1) // align * align


def _plain_dtype(dtype: np.dtype) -> bool:
    return dtype.fields is None and not dtype.hasobject and dtype.subdtype is None and len(dtype.str) <= 16


class SlotTable:
    """The header table: ``n`` slot headers in one segment ``<prefix>hdr`` (created by the parent).

    A table object also remembers the data segments this process mapped, per slot.
    """

    def __init__(self, prefix: str, n: int, create: bool) -> None:
        self.prefix = prefix
        self.n = n
        name = prefix + "hdr"
        self.mm = create_segment(name, max(n, 1) * HEADER_SIZE) if create else open_segment(name)
        self.mv = memoryview(self.mm)

    def writer(self, index: int, initial_capacity: int = _INITIAL_CAPACITY) -> "SlotWriter":
        return SlotWriter(self, index, initial_capacity)

    def reader(self, index: int, copy: bool = False) -> "SlotReader":
        return SlotReader(self, index, copy)

    def data_name(self, index: int, gen: int) -> str:
        return f"{self.prefix}s{index}-g{gen}"


class SlotWriter:
    """The single writing end of a slot (lives in the process that owns the source port).

    ``write(value, round_)`` publishes ``value`` as the slot's value for ``round_`` (one copy for
    arrays): the compiled ``SlotHotWriter.write`` while the layout stays, ``_write_slow`` otherwise."""

    def __init__(self, table: SlotTable, index: int, initial_capacity: int = _INITIAL_CAPACITY) -> None:
        self.table = table
        self.index = index
        self.off = index * HEADER_SIZE
        self.gen = -1
        self.capacity = 0
        self.mm: mmap.mmap | None = None
        self.buf: memoryview | None = None
        self._initial = initial_capacity
        self.layout = 0
        #: what the slot's header describes now, for the fast paths: ("a", dtype, shape) for an array,
        #: a record signature, _NONE_KEY, or None (a pickle: never fast); valid while gen == _cur_gen
        self._cur: Any = None
        self._cur_gen = -1
        self._dst: np.ndarray | None = None  # the array's view over the segment
        self._rec: RecordCodec | None = None  # the current record layout's compiled writer
        self._hot = SlotHotWriter(table.mm, self.off, self._write_slow)
        self.write = self._hot.write  # the compiled hot path; it calls _write_slow for the rest

    def _ensure(self, nbytes: int) -> None:
        if nbytes <= self.capacity and self.mm is not None:
            return
        cap = max(nbytes, 2 * self.capacity, self._initial)
        cap = (cap + mmap.PAGESIZE - 1) // mmap.PAGESIZE * mmap.PAGESIZE
        gen = self.gen + 1
        mm = create_segment(self.table.data_name(self.index, gen), cap)
        if self.gen >= 0:
            unlink_segment(self.table.data_name(self.index, self.gen))
        self._cur = None  # views on the old mapping are dropped, never released
        self._hot.clear()
        self.mm, self.buf, self.gen, self.capacity = mm, memoryview(mm), gen, cap

    def lend(self, shape: int | tuple[int, ...], dtype: Any) -> np.ndarray:
        """The slot's own data area as a writable array of ``shape`` and ``dtype`` (zero-copy output):
        the writer builds its next value in it, and ``write`` of that array (or a view of all of it)
        copies nothing. The same array while the slot keeps this layout, holding the last value
        written; readers see what is in it, so write it only where a new value would be written
        (after every reader of the last one is done: the executor's next tag). Laying it out does not
        publish a value: the header keeps its round."""
        dtype = np.dtype(dtype)
        shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(n) for n in shape)
        key = ("a", dtype, shape)
        if key == self._cur and self.gen == self._cur_gen:
            return self._dst if self._dst is not None else np.empty(shape, dtype)
        if len(shape) > MAX_NDIM or not _plain_dtype(dtype):
            raise ValueError(f"a slot lends only plain-dtype arrays of at most {MAX_NDIM} dimensions, "
                             f"not {dtype} {shape}")
        (round_,) = _ROUND.unpack_from(self.table.mm, self.off)
        like = np.empty(shape, dtype)
        if like.nbytes == 0:  # no data area: a private empty array (writing it copies nothing either)
            self._write_array(like, key, round_)
            return like
        self._write_array(like, key, round_, lend=True)
        return self._dst  # type: ignore[return-value]

    def _write_slow(self, value: Any, round_: int) -> None:
        """``write`` when the compiled path did not take ``value`` (a new layout, a strided array,
        a pickled value); re-arms the compiled path for the layout it lays out."""
        t = type(value)
        if t is np.ndarray:
            key = ("a", value.dtype, value.shape)
            if key == self._cur and self.gen == self._cur_gen:
                # same layout as the last array: copy the data, stamp the round, done
                if value.size:
                    np.copyto(self._dst, value, casting="no")
                _ROUND.pack_into(self.table.mm, self.off, round_)
                return
            if value.ndim <= MAX_NDIM and _plain_dtype(value.dtype):
                self._write_array(value, key, round_)
                return
        elif t is tuple or t is list or t is ReadOnlyList or t in _REC_TAGS:
            if self._cur is _RECORD_KEY and self.gen == self._cur_gen:
                done = self._rec.write(value)  # type: ignore[union-attr]
                if done == 1:  # same record layout as last time: stored field by field
                    _ROUND.pack_into(self.table.mm, self.off, round_)
                    return
                if done == -1:
                    self._write_pickle(value, round_)
                    return
            if t in _REC_TAGS:  # a bare float, int or bool: a record of one unwrapped field
                container, fields = BARE, [(_REC_TAGS[t],)]
            else:
                container, fields = (TUPLE if t is tuple else LIST), _record_fields(value)
            if fields is not None:
                self._record_layout(container, fields, round_)
                if self._rec.write(value) == 1:  # type: ignore[union-attr]
                    _ROUND.pack_into(self.table.mm, self.off, round_)
                    return
        elif value is None:
            if self._cur is _NONE_KEY and self.gen == self._cur_gen:
                _ROUND.pack_into(self.table.mm, self.off, round_)
                return
            self._header(round_, KIND_NONE, 0, 0, b"", ())
            self._cur, self._cur_gen = _NONE_KEY, self.gen
            self._hot.lay_none()
            return
        self._write_pickle(value, round_)

    def _write_array(self, value: np.ndarray, key: tuple, round_: int, lend: bool = False) -> None:
        """Lay out ``value``'s dtype and shape and copy it in (``lend``: lay out only)."""
        nbytes = value.nbytes
        if nbytes:
            self._ensure(nbytes)
            self._dst = np.frombuffer(self.buf, dtype=value.dtype, count=value.size).reshape(value.shape)
            if not lend:
                np.copyto(self._dst, value, casting="no")
        else:
            self._dst = None
        self._header(round_, KIND_ARRAY, value.ndim, nbytes, value.dtype.str.encode(), value.shape)
        self._cur, self._cur_gen = key, self.gen
        self._hot.lay_array(value, self._dst if nbytes else None)

    def _record_layout(self, container: int, fields: list[tuple], round_: int) -> None:
        """Lay out a flat record (see ``_record_fields``; ``container``: ``LIST``, ``TUPLE`` or
        ``BARE``, one scalar that is the value itself) in the segment: a pickled descriptor, then, from a
        cache line, 8 bytes per scalar, then each array: one smaller than a cache line packed after the last
        field (`_PACK`), a larger one on a cache line of its own. The header's layout counter changes, so readers
        decode the descriptor once, then read the data directly."""
        # scalars first (8 bytes each, None takes none), then each array
        scalar_pos = 0
        pos = _aligned(SCALAR_BYTES * sum(f[0] in ("f", "i", "b") for f in fields), _PACK)
        offsets = []
        for f in fields:
            if f[0] == "a":
                if f[3] >= _ALIGN:
                    pos = _aligned(pos)
                offsets.append(pos)
                pos = _aligned(pos + f[3], _PACK)
            else:
                offsets.append(scalar_pos)
                scalar_pos += SCALAR_BYTES if f[0] != "n" else 0
        # offsets are relative to the data area, which starts after the descriptor
        desc = pickle.dumps((container, fields, offsets), protocol=5)
        base = _aligned(8 + len(desc))
        self._ensure(base + pos)
        buf = self.buf
        _Q.pack_into(buf, 0, len(desc))
        buf[8:8 + len(desc)] = desc
        self._rec = RecordCodec(buf, container, fields, [base + off for off in offsets])
        self._header(round_, KIND_RECORD, 0, base + pos, b"", ())
        self._cur, self._cur_gen = _RECORD_KEY, self.gen
        self._hot.lay_record(self._rec)

    def _write_pickle(self, value: Any, round_: int) -> None:
        raws: list[memoryview] = []

        def out_of_band(b: pickle.PickleBuffer) -> bool:
            try:
                raws.append(b.raw())
                return False
            except BufferError:  # non-contiguous: let pickle serialize it in-band
                return True

        stream = pickle.dumps(value, protocol=5, buffer_callback=out_of_band)
        head = _PKL_HEAD.size + 8 * len(raws)
        pos = _aligned(head + len(stream))
        total = pos + sum(_aligned(r.nbytes) for r in raws)
        self._ensure(total)
        buf = self.buf
        _PKL_HEAD.pack_into(buf, 0, len(stream), len(raws))
        for i, r in enumerate(raws):
            _Q.pack_into(buf, _PKL_HEAD.size + 8 * i, r.nbytes)
        buf[head:head + len(stream)] = stream
        for r in raws:
            buf[pos:pos + r.nbytes] = r
            pos += _aligned(r.nbytes)
        self._header(round_, KIND_PICKLE, 0, total, b"", ())

    def _header(self, round_: int, kind: int, ndim: int, nbytes: int, dtype: bytes, shape: tuple) -> None:
        shp = tuple(shape) + (0,) * (MAX_NDIM - len(shape))
        self.layout += 1
        self._cur = None
        self._hot.clear()
        _HDR.pack_into(self.table.mm, self.off, round_, self.layout, self.gen, self.capacity, kind, ndim, nbytes,
                       dtype, *shp)

    def close(self) -> None:
        hot = getattr(self, "_hot", None)  # None: __init__ failed before it (this runs as __del__ too)
        if hot is not None:
            hot.clear()
        self._cur = self._dst = self._rec = None
        self.buf = None
        self.mm = None  # the mapping closes when the last view on it is gone

    # An end and its compiled half reference each other (the hot path calls back into the slow one),
    # so an end nobody closed is freed by the garbage collector, whose tp_clear may release the
    # memoryview before the array views that export from it (BufferError, printed as "ignored").
    # A finalizer runs before that clearing and drops the views first.
    __del__ = close


class SlotReader:
    """A reading end of a slot (one per reading process; fans out locally by reference).

    ``round()``: the round the slot's value was written for. ``read()``: the slot's current value,
    a read-only array view (or a copy), a record (tuple or list) of those and scalars, or the
    unpickled value. Both are the compiled ``SlotHotReader``'s; ``_read_slow`` decodes a new layout."""

    def __init__(self, table: SlotTable, index: int, copy: bool = False) -> None:
        self.table = table
        self.index = index
        self.off = index * HEADER_SIZE
        self.copy = copy
        self.gen = -1
        self.mm: mmap.mmap | None = None
        self.view: memoryview | None = None
        self._arr: np.ndarray | None = None
        self._hot = SlotHotReader(table.mm, self.off, copy, self._read_slow)
        self.round = self._hot.round  # the compiled hot path
        self.read = self._hot.read    # the compiled hot path; it calls _read_slow for a new layout

    def _map(self, gen: int) -> memoryview:
        if gen != self.gen:
            self.mm = open_segment(self.table.data_name(self.index, gen))
            self.view = memoryview(self.mm).toreadonly()
            self.gen = gen
        return self.view  # type: ignore[return-value]

    def _read_slow(self) -> Any:
        """``read`` when the header's layout is not the one decoded last: decode it (and re-arm the
        compiled path for it), or unpickle the value."""
        (_round, layout, gen, _cap, kind, ndim, nbytes, dtype, *shape) = _HDR.unpack_from(self.table.mm, self.off)
        hot = self._hot
        hot.clear()
        if kind == KIND_NONE:
            hot.set_none(layout)
        elif kind == KIND_ARRAY:
            dt = np.dtype(dtype.rstrip(b"\0").decode())
            self._arr = _array_over(self._map(gen) if nbytes else None, dt, tuple(shape[:ndim]), 0)
            hot.set_array(self._arr, layout)
        elif kind == KIND_RECORD:
            view = self._map(gen)
            (n,) = _Q.unpack_from(view, 0)
            container, fields, offsets = pickle.loads(view[8:8 + n])
            base = _aligned(8 + n)
            hot.set_record(RecordCodec(view, container, fields, [base + off for off in offsets], self.copy), layout)
        else:
            return self._read_pickle(self._map(gen))
        return hot.read()

    def _read_pickle(self, view: memoryview) -> Any:
        n_stream, n_buf = _PKL_HEAD.unpack_from(view, 0)
        head = _PKL_HEAD.size + 8 * n_buf
        pos = _aligned(head + n_stream)
        bufs = []
        for i in range(n_buf):
            size = _Q.unpack_from(view, _PKL_HEAD.size + 8 * i)[0]
            b = view[pos:pos + size]
            bufs.append(bytearray(b) if self.copy else b)
            pos += _aligned(size)
        return pickle.loads(view[head:head + n_stream], buffers=bufs)

    def close(self) -> None:
        hot = getattr(self, "_hot", None)
        if hot is not None:
            hot.clear()
        self._arr = None
        self.view = None
        self.mm = None

    __del__ = close  # as SlotWriter's: views dropped before the garbage collector clears the cycle


def _array_over(view: memoryview | None, dtype: np.dtype, shape: tuple, offset: int) -> np.ndarray:
    """A read-only array of ``dtype``/``shape`` over ``view`` at ``offset`` (an empty one: no view)."""
    size = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if view is None or size == 0 or dtype.itemsize == 0:
        arr = np.empty(shape, dtype=dtype)
        arr.flags.writeable = False
        return arr
    return np.frombuffer(view, dtype=dtype, count=size, offset=offset).reshape(shape)


def _record_fields(value: tuple | list) -> list[tuple] | None:
    """The field list of a flat record, the layout ``RecordCodec`` stores: a tuple or list of at
    most ``MAX_RECORD`` fields, each a plain-dtype numpy array (``("a", dtype, shape, nbytes)``), a
    float, an int, a bool (``("f",)``, ``("i",)``, ``("b",)``) or None (``("n",)``): what an
    environment step returns. None when ``value`` is anything else (it is then pickled)."""
    if not value or len(value) > MAX_RECORD:
        return None
    fields: list[tuple] = []
    for x in value:
        t = type(x)
        if t is np.ndarray:
            if x.ndim > MAX_NDIM or not _plain_dtype(x.dtype):
                return None
            fields.append(("a", x.dtype.str, x.shape, x.nbytes))
        elif x is None:
            fields.append(_NONE_KEY)
        else:
            tag = _REC_TAGS.get(t)
            if tag is None:
                return None
            fields.append((tag,))
    return fields
