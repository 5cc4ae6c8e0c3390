/*
 * asym.c - asymmetric barriers: membarrier where the kernel allows it (see asym.h).
 */
#define _GNU_SOURCE /* syscall() */

#include "core/asym.h"

#include <pthread.h>
#include <stdlib.h>

#if defined(__linux__)
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

int band__asym_ok;

static pthread_once_t asym_once = PTHREAD_ONCE_INIT;

#if defined(__linux__) && defined(SYS_membarrier) && !defined(BAND_NO_MEMBARRIER)
#define BAND_ASYM_MEMBARRIER 1
static int asym_register(void)
{
    long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0);
    return cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0 &&
           syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0) == 0;
}

/* A forked child has a new address space whose registration is not guaranteed: register
 * it again while the child still has one thread, or fall back to fences. */
static void asym_atfork_child(void)
{
    if (band__asym_ok && !asym_register())
        band__asym_ok = 0;
}
#endif

static void asym_probe(void)
{
    int ok = 0;
    /* BAND_NO_MEMBARRIER=1 forces the fence fallback (the tests run both ways). */
    const char *off = getenv("BAND_NO_MEMBARRIER"); // NOLINT(concurrency-mt-unsafe): once
    if (off != NULL && off[0] == '1') {
        band__asym_ok = 0;
        return;
    }
#if defined(BAND_ASYM_MEMBARRIER)
    ok = asym_register() && pthread_atfork(NULL, NULL, asym_atfork_child) == 0;
#endif
    /* Published before any caller of band__asym_init() returns (pthread_once). */
    band__asym_ok = ok;
}

void band__asym_init(void)
{
    (void)pthread_once(&asym_once, asym_probe);
}

/* After a successful registration the expedited command cannot fail (it has no error
 * of its own besides an unregistered process); the fence below is for the fallback. */
void band__asym_heavy(void)
{
#if defined(BAND_ASYM_MEMBARRIER)
    if (band__asym_ok && syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0) == 0)
        return;
#endif
    atomic_thread_fence(memory_order_seq_cst);
}
