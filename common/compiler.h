/*
 * common/compiler.h - compiler helpers shared by every component (internal).
 */
#ifndef PTZ_COMMON_COMPILER_H
#define PTZ_COMMON_COMPILER_H

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define PT_INTERNAL __attribute__((visibility("hidden")))
#define PT_NOINLINE __attribute__((noinline))
#define PT_COLD __attribute__((cold, noinline))
#define PT_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define PT_MIN(a, b) ((a) < (b) ? (a) : (b))
#define PT_MAX(a, b) ((a) > (b) ? (a) : (b))

/*
 * PT_TESTPOINT(label) - marks an observable side effect (lttng-ust's
 * test points). With -Ddebug_yield=true it yields the CPU there, which
 * widens race windows in the stress tests; otherwise it compiles away.
 */
#ifdef PT_DEBUG_YIELD
#include <sched.h> /* sched_yield */
#define PT_TESTPOINT(label) ((void)(label), (void)sched_yield())
#else
#define PT_TESTPOINT(label) ((void)0)
#endif

/*
 * PT_TSAN_RELEASE / PT_TSAN_ACQUIRE - tell ThreadSanitizer about a
 * happens-before edge it cannot see. liburcu 0.13 publishes through
 * rcu_assign_pointer (cmm_smp_wmb + a plain store) and subscribes through
 * rcu_dereference (a volatile load): real ordering, but invisible to TSan
 * (liburcu gains annotations only in 0.15). We annotate our own publish and
 * subscribe sites instead of suppressing our frames. No-ops elsewhere.
 */
#if defined(__SANITIZE_THREAD__)
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#define PT_TSAN_RELEASE(p) __tsan_release((void *)(p))
#define PT_TSAN_ACQUIRE(p) __tsan_acquire((void *)(p))
#else
#define PT_TSAN_RELEASE(p) ((void)0)
#define PT_TSAN_ACQUIRE(p) ((void)0)
#endif

#endif /* PTZ_COMMON_COMPILER_H */
