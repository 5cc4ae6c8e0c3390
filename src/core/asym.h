/*
 * asym.h - asymmetric memory barriers (internal).
 *
 * A lock-free fast path that must not miss a waiter (publish, then check for waiters)
 * and a slow path that must not miss the fast path (announce the waiter, then check
 * again) need a StoreLoad barrier on both sides: Dekker's pattern. The fast side runs
 * millions of times a second, the slow side only when a thread is about to sleep, so the
 * cost is moved: the fast side gets a compiler barrier only (band__asym_light) and the
 * slow side makes every running thread of the process execute a full barrier
 * (band__asym_heavy: membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED), Linux 4.14+). Either the
 * light side's load sees the heavy side's store, or the heavy side's load sees the light
 * side's store.
 *
 * Where membarrier is unavailable (an old kernel, a seccomp filter) both sides fall back
 * to seq_cst fences, which is what the fast path paid before. The choice is made once, at
 * the first use, and never changes.
 */
#ifndef BAND_CORE_ASYM_H
#define BAND_CORE_ASYM_H

#include <stdatomic.h>

/* 1 when membarrier works in this process; set once by band__asym_init(). */
extern int band__asym_ok;

/* Decide (once, thread-safe) whether membarrier can be used. */
void band__asym_init(void);

/* The fast side: between a publishing store and the load that checks for waiters. */
static inline void band__asym_light(void)
{
    if (__builtin_expect(band__asym_ok, 1))
        atomic_signal_fence(memory_order_seq_cst);
    else
        atomic_thread_fence(memory_order_seq_cst);
}

/* The slow side: between announcing a waiter and looking at the shared state again. */
void band__asym_heavy(void);

#endif /* BAND_CORE_ASYM_H */
