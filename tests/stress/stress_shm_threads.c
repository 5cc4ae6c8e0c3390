/* SPDX-License-Identifier: MIT */
/*
 * stress_shm_threads.c - threads of two processes on one shared bound, so that the
 * per-process cache word is contended by the threads that share it while the other
 * process keeps freezing it and taking its units.
 *
 * NPROC processes (forked before any thread starts) open one segment and run NTHREAD
 * threads each - more threads than cores, so some are preempted between an operation's
 * steps. Each thread loops over random operations with random weights:
 *   - try_acquire, and blocking acquire with a deadline of a millisecond or two;
 *   - the units are given back either by the same thread or put in the process's stash,
 *     from which any of its threads releases them later: the count is per process, so a
 *     release of units another thread acquired must succeed;
 *   - a release of more than the process can hold (above the capacity): always refused;
 *   - in the second process, large blocking acquisitions (most of the capacity), which
 *     queue and make the first process's releases go to the queue (its word frozen) and
 *     its idle cache be taken.
 * Every grant adds its units to a counter in shared memory and every release takes them
 * off first: the counter above the capacity means a unit was granted twice. Bounded by
 * iterations per thread and by wall time. At the end, with every thread joined: each
 * process's held() equals what its stash still holds (then 0 after releasing it), and the
 * segment has every unit back, no waiter and no debt.
 */
#define _GNU_SOURCE

#include "test.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "band/shm.h"

#define NPROC    2
#define NTHREAD  4
#define CAPACITY 16
#define ITERS    40000

struct shared {
    _Atomic long long in_use; /* units granted and not yet released, every process */
    atomic_int violation;     /* 0 or the line that found one */
    char msg[200];
    _Atomic unsigned long long ops[NPROC], grants[NPROC], refused[NPROC];
};

static struct shared *sh;
static band_time end_at;

#define VIOLATION(...)                                                                             \
    do {                                                                                           \
        int zero_ = 0;                                                                             \
        if (atomic_compare_exchange_strong(&sh->violation, &zero_, __LINE__))                      \
            snprintf(sh->msg, sizeof sh->msg, __VA_ARGS__);                                        \
    } while (0)

/* One process's units that any of its threads may release. */
struct stash {
    pthread_mutex_t mu;
    uint64_t units;
};

struct worker {
    band_shm *s;
    struct stash *stash;
    int proc;
    uint64_t seed;
};

static void granted(int proc, uint64_t n)
{
    long long now = atomic_fetch_add(&sh->in_use, (long long)n) + (long long)n;
    if (now > CAPACITY)
        VIOLATION("process %d: %lld units granted at once, capacity %d", proc, now, CAPACITY);
    atomic_fetch_add(&sh->grants[proc], 1);
}

static void give_back(const struct worker *w, uint64_t n)
{
    atomic_fetch_sub(&sh->in_use, (long long)n); /* before: the release may grant them */
    int rc = band_shm_release(w->s, 0, n);
    if (rc != 0)
        VIOLATION("process %d: release of %llu held units: %s", w->proc, (unsigned long long)n,
                  band_err_name(rc));
}

static int work(void *arg)
{
    struct worker *w = arg;
    for (int i = 0; i < ITERS && atomic_load(&sh->violation) == 0; i++) {
        if (i % 64 == 0 && band_now() >= end_at)
            break;
        atomic_fetch_add(&sh->ops[w->proc], 1);
        uint64_t pick = test_rng_range(&w->seed, 0, 99);
        uint64_t n = test_rng_range(&w->seed, 1, 4);
        int rc;
        if (w->proc == 1 && pick < 3) {
            n = test_rng_range(&w->seed, CAPACITY / 2, CAPACITY);
            rc = band_shm_acquire(w->s, 0, n, band_deadline_after(5 * BAND_MSEC), NULL);
        } else if (pick < 50) {
            rc = band_shm_try_acquire(w->s, 0, n);
        } else if (pick < 80) {
            rc = band_shm_acquire(w->s, 0, n, band_deadline_after(BAND_MSEC), NULL);
        } else if (pick < 97) {
            /* Release some of the stash, whoever acquired it. */
            pthread_mutex_lock(&w->stash->mu);
            uint64_t take = w->stash->units < n ? w->stash->units : n;
            w->stash->units -= take;
            pthread_mutex_unlock(&w->stash->mu);
            if (take != 0)
                give_back(w, take);
            continue;
        } else {
            rc = band_shm_release(w->s, 0, CAPACITY + n);
            if (rc != BAND_EOVERFLOW)
                VIOLATION("process %d: a release above the capacity answered %s", w->proc,
                          band_err_name(rc));
            atomic_fetch_add(&sh->refused[w->proc], 1);
            continue;
        }
        if (rc == BAND_EAGAIN || rc == BAND_ETIMEDOUT)
            continue;
        if (rc != 0) {
            VIOLATION("process %d: acquire of %llu: %s", w->proc, (unsigned long long)n,
                      band_err_name(rc));
            break;
        }
        granted(w->proc, n);
        if (test_rng_range(&w->seed, 0, 1) == 0) {
            if (test_rng_range(&w->seed, 0, 3) == 0)
                sched_yield();
            give_back(w, n);
        } else {
            pthread_mutex_lock(&w->stash->mu);
            w->stash->units += n;
            pthread_mutex_unlock(&w->stash->mu);
        }
    }
    return 0;
}

/* One process's part: its threads, then the check of its count. */
static int run_process(const char *name, int proc)
{
    band_shm *s = NULL;
    if (band_shm_open(&s, name, NULL) != 0)
        return 10;
    struct stash stash = {.units = 0};
    pthread_mutex_init(&stash.mu, NULL);
    struct worker w[NTHREAD];
    struct test_thread t[NTHREAD];
    for (int i = 0; i < NTHREAD; i++) {
        w[i] = (struct worker){s, &stash, proc, 0x5eed0000u + (uint64_t)(proc * NTHREAD + i)};
        if (test_thread_start(&t[i], work, &w[i]) != 0)
            return 11;
    }
    for (int i = 0; i < NTHREAD; i++)
        test_thread_join(&t[i]);
    if (band_shm_held(s, 0) != stash.units) {
        VIOLATION("process %d: held() says %llu, its threads hold %llu", proc,
                  (unsigned long long)band_shm_held(s, 0), (unsigned long long)stash.units);
        return 12;
    }
    if (stash.units != 0) {
        struct worker last = {s, &stash, proc, 0};
        give_back(&last, stash.units);
    }
    if (band_shm_held(s, 0) != 0)
        return 13;
    return band_shm_destroy(s) == 0 ? 0 : 14;
}

static void test_threads(void **state)
{
    (void)state;
    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(sh != MAP_FAILED);
    memset(sh, 0, sizeof *sh);
    char name[64];
    snprintf(name, sizeof name, "/band_stress_shm_threads_%d", (int)getpid());
    band_shm_bound b = {"conns", CAPACITY, BAND_SHM_UNITS};
    band_shm *s = NULL;
    assert_int_equal(band_shm_create(&s, name, &b, 1, NULL), 0);
    end_at = band_now() + (test_under_sanitizer() ? 4 : 3) * BAND_SEC;

    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0)
        _exit(run_process(name, 1));
    int rc = run_process(name, 0);
    int st = 0;
    assert_int_equal(waitpid(child, &st, 0), child);
    if (atomic_load(&sh->violation) != 0)
        fail_msg("line %d: %s", atomic_load(&sh->violation), sh->msg);
    assert_int_equal(rc, 0);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);

    band_shm_stats stats;
    assert_int_equal(band_shm_get_stats(s, &stats), 0);
    const band_shm_bound_stats *bs = &stats.bounds[0];
    assert_u64_equal(bs->available, CAPACITY);
    assert_u64_equal(bs->capacity, CAPACITY);
    assert_u64_equal(bs->in_use, 0);
    assert_u64_equal(bs->debt, 0);
    assert_u64_equal(bs->waiters, 0);
    assert_int_equal(atomic_load(&sh->in_use), 0);
    for (int p = 0; p < NPROC; p++) {
        printf("stress_shm_threads: process %d: %llu ops, %llu grants, %llu refused\n", p,
               (unsigned long long)atomic_load(&sh->ops[p]),
               (unsigned long long)atomic_load(&sh->grants[p]),
               (unsigned long long)atomic_load(&sh->refused[p]));
        /* Enough happened for the run to mean something. */
        assert_true(atomic_load(&sh->grants[p]) > 1000);
        assert_true(atomic_load(&sh->refused[p]) > 10);
    }
    assert_int_equal(band_shm_destroy(s), 0);
    (void)band_shm_unlink(name);
    munmap(sh, sizeof *sh);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
