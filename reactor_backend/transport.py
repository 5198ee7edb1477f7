"""Shared-memory slots that carry port values between worker processes.

Why: a value that crosses processes must not go through a pipe (a syscall and a copy on each
side, plus pickling). Each cross-process connection (precisely: each source port and reading
process, so a broadcast is written once per process) owns one *slot*: a fixed 128-byte header
in a shared header table plus a data segment in ``/dev/shm``.

* numpy arrays (plain dtype, at most 8 dimensions) are copied once into the data segment; the
  reader gets a read-only view over it (``copy=True`` readers get their own array). The view is
  valid until the writer writes this slot again (the next tag at which it sends).
* Other values are pickled with protocol 5; out-of-band buffers (numpy arrays inside dicts,
  tuples...) are copied straight into the segment after the pickle stream, not into it.
* ``None`` costs only the header.
* A slot grows when a larger value arrives: the writer creates a new segment (generation g+1),
  publishes the generation and capacity in the header and unlinks the old name; a reader maps the
  new segment the first time it sees the new generation. Old mappings stay valid while views on
  them are alive.

Synchronization is not done here: the executor's progress words order every write before every
read (the seq_cst store that publishes a position also publishes the header and data). Presence is
the header's ``round``: the writer stamps the executor's round number, the reader compares it with
the current one, so nothing has to be reset per tag.

The hot path is an array of the same dtype and shape as last time (every round of a benchmark, every
observation of an environment): the writer copies the data and stamps only the round; the header's
``layout`` counter, bumped whenever anything else in the header changes, tells the reader that its
cached array over the segment is still right, so it skips decoding the header.

Every segment is named ``rb-<pid>-<run>-...`` (``pid`` of the process that called ``run``) so
that the parent, or a harness that killed everything, can remove leftovers by prefix
(:func:`unlink_prefix`).
"""
from __future__ import annotations

import glob
import mmap
import os
import pickle
import struct
from typing import Any

import numpy as np

SHM_DIR = "/dev/shm"
HEADER_SIZE = 128
MAX_NDIM = 8
KIND_NONE = 0
KIND_ARRAY = 1
KIND_PICKLE = 2
_INITIAL_CAPACITY = 4096
_ALIGN = 64

# round, layout, gen, capacity, kind, ndim, nbytes, dtype, shape[8]
_HDR = struct.Struct("<qqqqiiq16s8q")
_ROUND = struct.Struct("<q")
_ROUND_LAYOUT = struct.Struct("<qq")
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


def _aligned(n: int) -> int:
    return (n + _ALIGN - 1) // _ALIGN * _ALIGN


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

    def slot_round(self, index: int) -> int:
        """Round stamp of the slot's latest value (presence: equals the current round)."""
        return _ROUND.unpack_from(self.mm, index * HEADER_SIZE)[0]

    def writer(self, index: int, initial_capacity: int = _INITIAL_CAPACITY) -> "SlotWriter":
        return SlotWriter(self, index, initial_capacity)

    def reader(self, index: int, copy: bool = False) -> "SlotReader":
        return SlotReader(self, index, copy)

    def data_name(self, index: int, gen: int) -> str:
        return f"{self.prefix}s{index}-g{gen}"


class SlotWriter:
    """The single writing end of a slot (lives in the process that owns the source port)."""

    def __init__(self, table: SlotTable, index: int, initial_capacity: int = _INITIAL_CAPACITY) -> None:
        self.table = table
        self.index = index
        self.off = index * HEADER_SIZE
        self.gen = -1
        self.capacity = 0
        self.mm: mmap.mmap | None = None
        self.buf: memoryview | None = None
        self._initial = initial_capacity
        self._dst: np.ndarray | None = None
        self._dst_key: tuple | None = None
        self._dst_gen = -1
        self._hdr_key: tuple | None = None
        self._hdr_dtype = b""
        self._hdr_shape: tuple = ()
        self.layout = 0
        self._fast_key: tuple | None = None  # (dtype, shape) of the last array header written
        self._fast_gen = -1

    def _ensure(self, nbytes: int) -> None:
        if nbytes <= self.capacity and self.mm is not None:
            return
        cap = max(nbytes, 2 * self.capacity, self._initial)
        cap = (cap + mmap.PAGESIZE - 1) // mmap.PAGESIZE * mmap.PAGESIZE
        gen = self.gen + 1
        mm = create_segment(self.table.data_name(self.index, gen), cap)
        if self.gen >= 0:
            unlink_segment(self.table.data_name(self.index, self.gen))
        self._dst = self._dst_key = None  # views on the old mapping are dropped, never released
        self.mm, self.buf, self.gen, self.capacity = mm, memoryview(mm), gen, cap

    def write(self, value: Any, round_: int) -> None:
        """Publish ``value`` as the slot's value for ``round_`` (one copy for arrays)."""
        if type(value) is np.ndarray:
            key = (value.dtype, value.shape)
            if key == self._fast_key and self.gen == self._fast_gen:
                # same layout as the last array: copy the data, stamp the round, done
                if value.size:
                    np.copyto(self._dst, value, casting="no")
                _ROUND.pack_into(self.table.mm, self.off, round_)
                return
        if value is None:
            self._header(round_, KIND_NONE, 0, 0, b"", ())
            return
        if type(value) is np.ndarray and value.ndim <= MAX_NDIM and _plain_dtype(value.dtype):
            nbytes = value.nbytes
            key = (value.dtype, value.shape)
            if nbytes:
                self._ensure(nbytes)
                if key != self._dst_key or self.gen != self._dst_gen:
                    self._dst = np.frombuffer(self.buf, dtype=value.dtype, count=value.size).reshape(value.shape)
                    self._dst_key, self._dst_gen = key, self.gen
                np.copyto(self._dst, value, casting="no")
            if key != self._hdr_key:
                self._hdr_key = key
                self._hdr_dtype = value.dtype.str.encode()
                self._hdr_shape = tuple(value.shape) + (0,) * (MAX_NDIM - value.ndim)
            self.layout += 1
            _HDR.pack_into(self.table.mm, self.off, round_, self.layout, self.gen, self.capacity, KIND_ARRAY,
                           value.ndim, nbytes, self._hdr_dtype, *self._hdr_shape)
            self._fast_key, self._fast_gen = key, self.gen
            return
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
        self._fast_key = None
        _HDR.pack_into(self.table.mm, self.off, round_, self.layout, self.gen, self.capacity, kind, ndim, nbytes,
                       dtype, *shp)

    def close(self) -> None:
        self._dst = self._dst_key = None
        self.buf = None
        self.mm = None  # the mapping closes when the last view on it is gone


class SlotReader:
    """A reading end of a slot (one per reading process; fans out locally by reference)."""

    def __init__(self, table: SlotTable, index: int, copy: bool = False) -> None:
        self.table = table
        self.index = index
        self.off = index * HEADER_SIZE
        self.copy = copy
        self.gen = -1
        self.mm: mmap.mmap | None = None
        self.view: memoryview | None = None
        self._arr_key: tuple | None = None
        self._arr: np.ndarray | None = None
        self._layout = -1  # the header layout that ``_arr`` was built for

    def round(self) -> int:
        return _ROUND.unpack_from(self.table.mm, self.off)[0]

    def _map(self, gen: int) -> memoryview:
        if gen != self.gen:
            self.mm = open_segment(self.table.data_name(self.index, gen))
            self.view = memoryview(self.mm).toreadonly()
            self.gen = gen
        return self.view  # type: ignore[return-value]

    def read(self) -> Any:
        """The slot's current value: a read-only array view (or a copy), or the unpickled value."""
        if _ROUND_LAYOUT.unpack_from(self.table.mm, self.off)[1] == self._layout:
            arr = self._arr  # same array layout as the last read: skip decoding the header
            return arr.copy() if self.copy else arr.view()  # type: ignore[union-attr]
        (_round, layout, gen, _cap, kind, ndim, nbytes, dtype, *shape) = _HDR.unpack_from(self.table.mm, self.off)
        self._layout = -1
        if kind == KIND_NONE:
            return None
        view = self._map(gen)
        if kind == KIND_ARRAY:
            key = (gen, dtype, ndim, *shape)
            if key != self._arr_key:
                dt = np.dtype(dtype.rstrip(b"\0").decode())
                shp = tuple(shape[:ndim])
                if nbytes == 0:
                    arr = np.empty(shp, dtype=dt)
                    arr.flags.writeable = False
                    self._arr = arr
                else:
                    self._arr = np.frombuffer(view, dtype=dt, count=nbytes // dt.itemsize).reshape(shp)
                self._arr_key = key
            self._layout = layout
            arr = self._arr
            return arr.copy() if self.copy else arr.view()
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
        self._arr = self._arr_key = None
        self.view = None
        self.mm = None
