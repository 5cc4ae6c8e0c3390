/* SPDX-License-Identifier: MIT */
/*
 * internal.h - small helpers shared by every band source file (never installed).
 */
#ifndef BAND_CORE_INTERNAL_H
#define BAND_CORE_INTERNAL_H

#include <sched.h>
#include <stddef.h>
#include <stdint.h>

#include "band/core.h"
#include "band/error.h"

/* The struct that embeds @ptr as its member @member. */
#define band__container_of(ptr, type, member)                                                      \
    ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

#if defined(__GNUC__) || defined(__clang__)
#define band__likely(x)   __builtin_expect(!!(x), 1)
#define band__unlikely(x) __builtin_expect(!!(x), 0)
#else
#define band__likely(x)   (x)
#define band__unlikely(x) (x)
#endif

/* A cache line, so that hot atomics do not share one with lock-protected fields. */
#define BAND__CACHELINE 64

static inline uint64_t band__min_u64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

/* A hint to the CPU that this thread is spinning on a shared location. */
static inline void band__cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

/* One step of waiting for a short critical section another thread holds (a writer's claim
 * bit): pause, and every 128 steps give the processor away, so that a holder preempted on
 * this core gets to run. *@spins counts the steps; start it at 0. */
static inline void band__backoff(unsigned *spins)
{
    if (++*spins < 128) {
        band__cpu_relax();
    } else {
        *spins = 0;
        (void)sched_yield();
    }
}

#endif /* BAND_CORE_INTERNAL_H */
