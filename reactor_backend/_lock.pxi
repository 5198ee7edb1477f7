# Included by _core.pyx (one compiled module: the core calls these without a Python frame).
#
# The core's lock: taken only where ``core.locking`` is set (the threads executor on a free-threaded
# interpreter), around the few stores a reaction makes into the core's shared structures during a level
# (mark present, trigger a reaction, queue an event, request a stop).

cdef extern from *:
    """
    #include <sched.h>
    /* the core's lock (free-threaded builds): its critical sections are a few stores into the core's
       arrays, far shorter than a PyThread lock's own cost, so a spin lock (docs/reactor.md, "Threads and
       free-threaded Python"); a waiter that spins long yields its core to a preempted holder */
    static inline void rb_core_lock(int *l) {
        int n = 0;
        while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE)) {
            while (__atomic_load_n(l, __ATOMIC_RELAXED)) {
                if (++n < 64) {
    #if defined(__x86_64__) || defined(__i386__)
                    __builtin_ia32_pause();
    #elif defined(__aarch64__)
                    __asm__ __volatile__("yield");
    #endif
                } else { sched_yield(); n = 0; }
            }
        }
    }
    static inline void rb_core_unlock(int *l) { __atomic_store_n(l, 0, __ATOMIC_RELEASE); }
    """
    void rb_core_lock(int *l) nogil
    void rb_core_unlock(int *l) nogil
