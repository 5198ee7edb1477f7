# Included by _core.pyx (one compiled module: the core calls these without a Python frame).
#
# Reactions as the scheduler sees them: one `Reaction` per reaction of a reactor instance (filled in by
# the assembly phase) and the per-reactor context (`ReactorCtx`) that says which of its reactions runs.

@cython.final
cdef class ReactorCtx:
    """Per-reactor runtime context: which of its reactions is running (for effect checks)."""
    cdef public int current
    cdef public object reactor
    cdef public tuple reactions      # the reactor's Reactions by local index (set by the assembly)

    def __init__(self, reactor=None):
        self.current = -1
        self.reactor = reactor
        self.reactions = ()


@cython.final
cdef class Reaction:
    """One reaction of one reactor, as the scheduler sees it (filled in by the assembly phase)."""
    cdef public object fn            # bound method: the body
    cdef public object handler       # bound method: the deadline handler, or None
    cdef public object reactor
    cdef public str name
    cdef public str full_name
    cdef public int level
    cdef public int index            # global order: (level, inherited deadline, reactor preorder, local index)
    cdef public int priority         # LF's single-threaded order: (inherited deadline, level, preorder, local)
    cdef public int64_t inherited_deadline  # min of its own and every downstream reaction's deadline, or -1
    cdef int key                     # the ready queue's key: index, or priority under the inline executor
    cdef public int local_index      # position among its reactor's reactions (declaration order)
    cdef public int64_t deadline     # ns, or -1
    cdef public ReactorCtx ctx
    cdef public bint local           # False: placed on another process; never triggered here
    cdef public tuple triggers       # flattened trigger objects (Port/Action/Timer/SpecialTrigger)
    cdef public tuple sources        # flattened source ports
    cdef public tuple effects        # flattened effect ports / actions
    cdef public ModeState mode       # the mode it belongs to (None: always active)
    cdef public dict transitions     # target ModeState -> "reset" | "history" (declared effects)
    cdef uint64_t epoch

    def __init__(self, fn, handler, reactor, str name, int local_index, int64_t deadline, ReactorCtx ctx):
        self.fn = fn
        self.handler = handler
        self.reactor = reactor
        self.name = name
        self.full_name = name
        self.local_index = local_index
        self.deadline = deadline
        self.ctx = ctx
        self.level = 0
        self.index = 0
        self.priority = 0
        self.inherited_deadline = -1
        self.key = 0
        self.local = True
        self.triggers = ()
        self.sources = ()
        self.effects = ()
        self.mode = None
        self.transitions = None
        self.epoch = 0

    def __repr__(self):
        return f"<Reaction {self.full_name} level={self.level}>"
