# The one definition of the runtime's waiting primitives: futex wait/wake, sequentially consistent atomics,
# ``pause`` and the monotonic clock, for the processes executor's barrier (``_sync.pyx``, words in shared
# memory between processes) and the threads executor's crew (``_crew.pyx``, words within one process).
#
# ``include "_futex.pxi"`` pastes this text into each module: the functions are ``static inline`` C,
# compiled into each extension where it calls them (no call across modules, no runtime cost). A module
# must include it once, and must not define these names itself.
#
# Futexes: ``rb_futex_wait``/``rb_futex_wake`` work on a word any process may map (``FUTEX_WAIT``);
# ``rb_futex_wait_private``/``rb_futex_wake_private`` only within one process (``FUTEX_*_PRIVATE``: the
# kernel skips the shared-mapping lookup). A wait returns 0 when woken, else ``errno`` (``EAGAIN``: the
# word no longer held ``val``; ``ETIMEDOUT``; ``EINTR``).
from libc.stdint cimport int32_t, int64_t

cdef extern from *:
    """
    #include <stdint.h>
    #include <errno.h>
    #include <limits.h>
    #include <sched.h>
    #include <time.h>
    #include <unistd.h>
    #include <sys/syscall.h>
    #include <linux/futex.h>

    static inline int rb_futex_wait_op(int op, int32_t *addr, int32_t val, long long timeout_ns) {
        struct timespec ts;
        ts.tv_sec = (time_t)(timeout_ns / 1000000000LL);
        ts.tv_nsec = (long)(timeout_ns % 1000000000LL);
        long r = syscall(SYS_futex, addr, op, val, &ts, NULL, 0);
        return r == 0 ? 0 : errno;
    }
    static inline int rb_futex_wait(int32_t *addr, int32_t val, long long timeout_ns) {
        return rb_futex_wait_op(FUTEX_WAIT, addr, val, timeout_ns);
    }
    static inline int rb_futex_wait_private(int32_t *addr, int32_t val, long long timeout_ns) {
        return rb_futex_wait_op(FUTEX_WAIT_PRIVATE, addr, val, timeout_ns);
    }
    static inline int rb_futex_wake(int32_t *addr) {
        return (int)syscall(SYS_futex, addr, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
    }
    static inline int rb_futex_wake_private(int32_t *addr) {
        return (int)syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
    }
    static inline int32_t rb_load32(int32_t *p) { return __atomic_load_n(p, __ATOMIC_SEQ_CST); }
    static inline void rb_store32(int32_t *p, int32_t v) { __atomic_store_n(p, v, __ATOMIC_SEQ_CST); }
    static inline int32_t rb_add32(int32_t *p, int32_t v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
    static inline int rb_cas32(int32_t *p, int32_t expected, int32_t desired) {
        return __atomic_compare_exchange_n(p, &expected, desired, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    }
    static inline int64_t rb_load64(int64_t *p) { return __atomic_load_n(p, __ATOMIC_SEQ_CST); }
    static inline void rb_store64(int64_t *p, int64_t v) { __atomic_store_n(p, v, __ATOMIC_SEQ_CST); }
    static inline int64_t rb_add64(int64_t *p, int64_t v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
    static inline void rb_store64_rel(int64_t *p, int64_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
    static inline int64_t rb_load64_acq(int64_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
    static inline void rb_pause(void) {
    #if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
    #elif defined(__aarch64__)
        __asm__ __volatile__("yield");
    #endif
    }
    static inline long long rb_now_ns(void) {
        struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);
        return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
    }
    /* this thread's CPU time: a system call on Linux (no vDSO path): read it sparingly */
    static inline long long rb_thread_cpu_ns(void) {
        struct timespec ts; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
    }
    """
    int rb_futex_wait(int32_t *addr, int32_t val, long long timeout_ns) nogil
    int rb_futex_wait_private(int32_t *addr, int32_t val, long long timeout_ns) nogil
    int rb_futex_wake(int32_t *addr) nogil
    int rb_futex_wake_private(int32_t *addr) nogil
    int32_t rb_load32(int32_t *p) nogil
    void rb_store32(int32_t *p, int32_t v) nogil
    int32_t rb_add32(int32_t *p, int32_t v) nogil
    bint rb_cas32(int32_t *p, int32_t expected, int32_t desired) nogil
    int64_t rb_load64(int64_t *p) nogil
    void rb_store64(int64_t *p, int64_t v) nogil
    int64_t rb_add64(int64_t *p, int64_t v) nogil
    void rb_store64_rel(int64_t *p, int64_t v) nogil
    int64_t rb_load64_acq(int64_t *p) nogil
    void rb_pause() nogil
    long long rb_now_ns() nogil
    long long rb_thread_cpu_ns() nogil
    int sched_yield() nogil
