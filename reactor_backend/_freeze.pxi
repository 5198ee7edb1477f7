# Included by _core.pyx (one compiled module: the core calls these without a Python frame).
#
# Value freezing: what readers of a port receive. A value set on a port reaches every reader as the same
# object, with every numpy array in it read-only and every list, dict and set in its read-only form
# (`reactor_backend.readonly`); a ``mutable`` input gets a private copy. Temporaries (a value nobody else
# references) are frozen in place instead of through a view, where reference counts show it exactly.

cdef extern from *:
    """
    /* the reference count, portable to free-threaded builds (no ob_refcnt field there) */
    static inline Py_ssize_t rb_refcnt(PyObject *op) { return Py_REFCNT(op); }
    /* free-threaded builds: the object's local reference count belongs to this thread, so no other
       thread can change it while this one reads; with the GIL every object qualifies */
    static inline int rb_owned_here(PyObject *op) {
    #ifdef Py_GIL_DISABLED
        return _Py_IsOwnedByCurrentThread(op);
    #else
        (void)op; return 1;
    #endif
    }
    """
    Py_ssize_t rb_refcnt(PyObject *op) nogil
    bint rb_owned_here(PyObject *op) nogil


cdef extern from "numpy/arrayobject.h":
    object _PyArray_View "PyArray_View" (cnp.ndarray arr, void* dtype, void* ptype)


cdef inline object _ro_array(object value):
    cdef object v
    if type(value) is _ndarray and cnp.PyArray_ISWRITEABLE(<cnp.ndarray> value):
        v = _PyArray_View(<cnp.ndarray> value, NULL, NULL)
        cnp.PyArray_CLEARFLAGS(<cnp.ndarray> v, cnp.NPY_ARRAY_WRITEABLE)
        return v
    return value


#: how deep ``_frozen`` follows tuples, lists and dicts inside a value (deeper: refused, likely a cycle)
cdef int _MAX_NESTING = 100


cdef object _frozen(object value, int depth, bint *copied):
    """What readers of a port see: ``value`` with every numpy array in it a read-only view and every
    list, dict and set a `ReadOnlyList` / `ReadOnlyDict` / `ReadOnlySet` copy (followed through tuples,
    lists and dicts), so that no reaction can modify in place what another reader sees: the same
    refusal in every placement. A value with nothing to freeze is returned as it is (no copy);
    ``copied[0]`` becomes True where a container was copied (its read-only form is a snapshot)."""
    cdef object t = type(value)
    if t is _ndarray:
        return _ro_array(value)
    if t is tuple:
        return _frozen_tuple(<tuple> value, depth, copied)
    if t is list or t is _ROList or t is dict or t is _RODict or t is set or t is _ROSet:
        if depth >= _MAX_NESTING:
            raise ValueError(f"a value sent through a port nests lists, dicts or tuples more than "
                             f"{_MAX_NESTING} deep (a cycle?): it cannot be made read-only for its readers")
        if t is list or t is _ROList:
            return _frozen_list(value, t is _ROList, depth, copied)
        if t is dict or t is _RODict:
            return _frozen_dict(value, t is _RODict, depth, copied)
        if t is _ROSet:
            return value
        copied[0] = True
        return _ROSet(value)
    return value


cdef inline bint _is_read_only(object x):
    """True for what ``_frozen`` returns as it is without looking inside: scalars first (a record's
    reward and done), then read-only arrays; False for a writable array or any container."""
    cdef object t = type(x)
    if t is float or t is int or t is bool or x is None:
        return True
    if t is _ndarray:
        return not cnp.PyArray_ISWRITEABLE(<cnp.ndarray> x)
    return not (t is tuple or t is list or t is dict or t is set or t is _ROList or t is _RODict or t is _ROSet)


cdef inline bint _items_read_only(tuple value):
    """True when every item of ``value`` is `_is_read_only` (an env step's frozen obs, reward, flag)."""
    cdef Py_ssize_t i
    for i in range(PyTuple_GET_SIZE(value)):
        if not _is_read_only(<object> PyTuple_GET_ITEM(value, i)):
            return False
    return True


cdef object _frozen_tuple(tuple value, int depth, bint *copied):
    cdef Py_ssize_t i, n = PyTuple_GET_SIZE(value)
    cdef object x, f
    cdef list items = None
    if _items_read_only(value):
        return value
    for i in range(n):
        x = <object> PyTuple_GET_ITEM(value, i)
        f = _frozen(x, depth + 1, copied)
        if f is not x:
            if items is None:
                items = list(value)
            items[i] = f
    return value if items is None else tuple(items)


cdef object _frozen_list(object value, bint already, int depth, bint *copied):
    cdef Py_ssize_t i
    cdef object x, f
    cdef list items = None
    for i in range(len(value)):
        x = (<list> value)[i]
        if _is_read_only(x):
            continue
        f = _frozen(x, depth + 1, copied)
        if f is not x:
            if items is None:
                items = list(value)
            items[i] = f
    if items is None and already:
        return value
    copied[0] = True
    return _ROList(value if items is None else items)


cdef object _frozen_dict(object value, bint already, int depth, bint *copied):
    cdef object k, x, f
    cdef dict items = None
    for k, x in (<dict> value).items():
        if _is_read_only(x):
            continue
        f = _frozen(x, depth + 1, copied)
        if f is not x:
            if items is None:
                items = dict(value)
            items[k] = f
    if items is None and already:
        return value
    copied[0] = True
    return _RODict(value if items is None else items)


def _refs_seen(x):
    return Py_REFCNT(x)


# ``port.set(np.array(...))``: an array that only the call itself references (a temporary) reaches
# ``set`` with this reference count; nobody else can see it, so it is made read-only in place instead
# of through a view. Calibrated with Python code calling a compiled function, as a reaction calls
# ``set``; off (-1) where a variable's value looks the same (an interpreter passing borrowed references).
# Free-threaded builds split the count into a local part (changed only by the thread that owns the
# object) and an atomic shared part; ``Py_REFCNT`` sums them. The sum is exact for an object this thread
# owns (nothing else writes its local part during the read), and a count of ``_TEMP_REFS`` then means no
# other holder exists, in any thread. For an object another thread owns the two loads could straddle a
# reference moving between the parts, so such an object is never frozen in place (it gets a view).
_probe = {"seen": _refs_seen}
exec("def temp():\n    return seen(object())\n"
     "def local():\n    o = object()\n    return seen(o)\n", _probe)
cdef Py_ssize_t _TEMP_REFS = _probe["temp"]()
if _TEMP_REFS >= _probe["local"]():
    _TEMP_REFS = -1
del _probe


cdef inline Py_ssize_t _item_refs(tuple t, Py_ssize_t i):
    """The reference count of ``t[i]`` as `Port.set` sees it (borrowed: the loop adds none)."""
    return rb_refcnt(<PyObject *> PyTuple_GET_ITEM(t, i))


# ``port.set((obs, reward, done))`` with a temporary tuple whose array only the tuple references (an env
# step's fresh observation): nobody else can see that array either, so it too is made read-only in place
# instead of the tuple being rebuilt around a view. Calibrated with an element only a tuple holds.
cdef Py_ssize_t _ITEM_ONLY_REFS = _item_refs((object(),), 0)


cdef inline void _freeze_owned_items(tuple value):
    """Clear the write flag, in place, of every array that only ``value`` references (and, without a
    GIL, that this thread owns: see ``_TEMP_REFS``)."""
    cdef Py_ssize_t i
    cdef PyObject *p
    for i in range(PyTuple_GET_SIZE(value)):
        p = PyTuple_GET_ITEM(value, i)
        if <object> p.ob_type is _ndarray and rb_refcnt(p) == _ITEM_ONLY_REFS and rb_owned_here(p):
            cnp.PyArray_CLEARFLAGS(<cnp.ndarray> p, cnp.NPY_ARRAY_WRITEABLE)


cdef object _private_copy(object value):
    """What a mutable input receives: its own copy (numpy arrays: a writable copy of the data)."""
    if value is None or type(value) in (int, float, bool, str, bytes):
        return value
    if type(value) is _ndarray:
        return (<cnp.ndarray> value).copy()
    return _deepcopy(value)
