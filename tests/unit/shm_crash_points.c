/* SPDX-License-Identifier: MIT */
/*
 * shm_crash_points.c - a death at every point of every transaction of a fixed script.
 *
 * Random kills rarely land between two stores of one transaction. This test makes them
 * land there on purpose: the testing build's crash countdown (band__shm_crash_countdown)
 * SIGKILLs the process at its k-th logged store or commit. For k = 1, 2, ... a child runs
 * the same script - tries, blocking and multi-bound acquisitions, a release that grants a
 * waiter in another process, drain, grow, reduce, an asynchronous wait and its cancel -
 * and dies at point k, until a k that the script outlives. After every death the parent
 * recovers the segment and checks it exactly: every unit back, no waiter left behind, one
 * handle (its own), and the waiter in the third process granted its units whole, once.
 * A second script kills a process in the middle of taking another handle's idle units.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "band/shm.h"
#include "shm/shm_internal.h"

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        fprintf(stderr, "shm_crash_points: " __VA_ARGS__);                                         \
        fputc('\n', stderr);                                                                       \
        exit(1);                                                                                   \
    } while (0)

static const band_shm_bound bounds[2] = {
    {"conns", 5, BAND_SHM_UNITS},
    {"memory", 100, BAND_SHM_BYTES},
};

static void on_wake(band_waiter *w)
{
    (void)w;
}

/* The script; returns 0 when it ran to the end, and never returns when killed. */
static int script(band_shm *s)
{
    if (band_shm_release(s, 0, 1) != 0) /* 3 held: the waiter (5) still does not fit */
        return 10;
    band_shm_req r;
    band_shm_req_init(&r, NULL, NULL);
    band_shm_req_add(&r, 1, 30);
    band_shm_req_add(&r, 0, 0);
    int arc = band_shm_admit(s, &r, band_deadline_after(BAND_SEC), NULL);
    if (arc != 0) {
        fprintf(stderr, "admit: %s\n", band_err_name(arc));
        return 11;
    }
    if (band_shm_drain(s, 1, 5) != 5)
        return 12;
    if (band_shm_grow(s, 1, 10) != 0 || band_shm_reduce(s, 1, 10) != 0)
        return 13;
    if (band_shm_release_req(s, &r) != 0 || band_shm_release(s, 1, 5) != 0)
        return 14;
    if (band_shm_try_acquire(s, 1, 20) != 0 || band_shm_release(s, 1, 20) != 0)
        return 15;
    if (band_shm_release(s, 0, 2) != 0) /* all 5 free: the waiter is granted here */
        return 16;
    band_waiter w;
    band_waiter_init(&w, on_wake, NULL);
    int rc = band_shm_acquire_async(s, 0, 1, &w);
    if (rc == BAND_PENDING && band_waiter_cancel(&w, BAND_ECANCELED) != 0)
        return 17;
    if (rc == 0 && band_shm_release(s, 0, 1) != 0)
        return 18;
    return 0;
}

static pid_t spawn_waiter(band_shm *s)
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    band_shm *t;
    if (band_shm_open_fd(&t, band_shm_fd(s), NULL) != 0)
        _exit(20);
    int rc = band_shm_acquire(t, 0, 5, band_deadline_after(10 * BAND_SEC), NULL);
    if (rc != 0)
        _exit(21);
    if (band_shm_held(t, 0) != 5)
        _exit(22);
    if (band_shm_release(t, 0, 5) != 0)
        _exit(23);
    (void)band_shm_destroy(t);
    _exit(0);
}

static void wait_queued(band_shm *s, uint64_t n)
{
    for (int i = 0; i < 5000; i++) {
        band_shm_stats st;
        if (band_shm_get_stats(s, &st) == 0 && st.waiters == n)
            return;
        usleep(1000);
    }
    FAIL("the waiter never queued");
}

/* Wait for the child that ran a script to death point @k: 1 when the countdown killed
 * it, 0 when it ran to the end; any other end fails the test. */
static int wait_script(pid_t child, const char *script, long k)
{
    int st;
    if (waitpid(child, &st, 0) != child)
        FAIL("waitpid");
    int killed = WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL;
    if (!killed && !(WIFEXITED(st) && WEXITSTATUS(st) == 0))
        FAIL("%sk=%ld: the script failed with %d", script, k, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    return killed;
}

/* One round with a death at point @k: 1 when the child was killed, 0 when it finished. */
static int round_at(band_shm *s, long k)
{
    int go[2], ready[2];
    if (pipe(go) != 0 || pipe(ready) != 0)
        FAIL("pipe");
    pid_t child = fork();
    if (child == 0) {
        band_shm *t;
        char c = 0;
        if (band_shm_open_fd(&t, band_shm_fd(s), NULL) != 0)
            _exit(30);
        if (band_shm_try_acquire(t, 0, 3) != 0)
            _exit(31);
        if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) != 1)
            _exit(32);
        band__shm_crash_countdown = k;
        int rc = script(t);
        band__shm_crash_countdown = 0;
        (void)band_shm_destroy(t);
        _exit(rc);
    }
    char c = 0;
    if (read(ready[0], &c, 1) != 1)
        FAIL("k=%ld: the child did not start", k);
    pid_t waiter = spawn_waiter(s);
    wait_queued(s, 1);
    if (write(go[1], &c, 1) != 1)
        FAIL("write");
    int killed = wait_script(child, "", k);
    unsigned dead = 0;
    if (band_shm_reclaim(s, &dead) != 0)
        FAIL("k=%ld: reclaim", k);
    int wst;
    if (waitpid(waiter, &wst, 0) != waiter || !WIFEXITED(wst) || WEXITSTATUS(wst) != 0)
        FAIL("k=%ld: the waiter in the third process ended with %d", k,
             WIFEXITED(wst) ? WEXITSTATUS(wst) : -1);
    (void)band_shm_reclaim(s, &dead);

    band_shm_stats stats;
    if (band_shm_get_stats(s, &stats) != 0)
        FAIL("k=%ld: stats", k);
    if (stats.handles != 1 || stats.waiters != 0)
        FAIL("k=%ld: %u handles and %u waiters left", k, stats.handles, stats.waiters);
    for (int b = 0; b < 2; b++) {
        const band_shm_bound_stats *bs = &stats.bounds[b];
        if (bs->in_use != 0 || bs->debt != 0 || bs->available != bs->capacity || bs->waiters != 0 ||
            bs->waiting_units != 0)
            FAIL("k=%ld bound %d: capacity %llu available %llu debt %llu in use %llu "
                 "waiters %llu",
                 k, b, (unsigned long long)bs->capacity, (unsigned long long)bs->available,
                 (unsigned long long)bs->debt, (unsigned long long)bs->in_use,
                 (unsigned long long)bs->waiters);
    }
    /* A death between grow and reduce leaves the capacity grown: put it back. */
    uint64_t cap = stats.bounds[1].capacity;
    if (cap > 100 && band_shm_reduce(s, 1, cap - 100) != 0)
        FAIL("k=%ld: reduce back", k);
    if (cap < 100 && band_shm_grow(s, 1, 100 - cap) != 0)
        FAIL("k=%ld: grow back", k);
    close(go[0]);
    close(go[1]);
    close(ready[0]);
    close(ready[1]);
    return killed;
}

#define STEAL_CAP 5

static const band_shm_bound steal_bound = {"conns", STEAL_CAP, BAND_SHM_UNITS};

/* The second script: band_shm_held() stays exact while another process takes this
 * handle's idle units, and when that process dies in the middle of taking them. The
 * parent keeps one unit in use and one idle in its cache; a child's try-acquire of the
 * rest of the bound takes the idle one, emptying the cache word and then lowering the
 * parent's held units, one logged store each. At each death point the parent, before
 * anything reclaims, must read exactly the one unit it uses; after the reclaim the bound
 * must balance. One round with a death at the child's k-th logged store: 1 when it was
 * killed. */
static int steal_round_at(long k)
{
    band_shm *s;
    if (band_shm_create(&s, NULL, &steal_bound, 1, NULL) != 0)
        FAIL("create");
    /* Two taken, one given back: it stays in this handle's cache, idle. */
    if (band_shm_try_acquire(s, 0, 2) != 0 || band_shm_release(s, 0, 1) != 0)
        FAIL("steal k=%ld: setup", k);
    if (band_shm_held(s, 0) != 1 || band_shm_available(s, 0) != STEAL_CAP - 1)
        FAIL("steal k=%ld: before: held %llu available %llu", k,
             (unsigned long long)band_shm_held(s, 0), (unsigned long long)band_shm_available(s, 0));
    pid_t child = fork();
    if (child < 0)
        FAIL("fork");
    if (child == 0) {
        band_shm *t;
        if (band_shm_open_fd(&t, band_shm_fd(s), NULL) != 0)
            _exit(30);
        band__shm_crash_countdown = k;
        int rc = band_shm_try_acquire(t, 0, STEAL_CAP - 1); /* the pool's 3 and the idle one */
        band__shm_crash_countdown = 0;
        if (rc != 0)
            _exit(31);
        if (band_shm_held(t, 0) != STEAL_CAP - 1 || band_shm_release(t, 0, STEAL_CAP - 1) != 0)
            _exit(32);
        (void)band_shm_close(t);
        _exit(0);
    }
    int killed = wait_script(child, "steal ", k);
    /* Nothing has taken the lock since the death: the child's transaction may be open. */
    uint64_t held = band_shm_held(s, 0);
    if (held != 1)
        FAIL("steal k=%ld: %s child: held %llu, 1 in use", k, killed ? "a killed" : "a finished",
             (unsigned long long)held);
    unsigned dead = 0;
    if (band_shm_reclaim(s, &dead) != 0)
        FAIL("steal k=%ld: reclaim", k);
    band_shm_stats stats;
    if (band_shm_get_stats(s, &stats) != 0)
        FAIL("steal k=%ld: stats", k);
    const band_shm_bound_stats *bs = &stats.bounds[0];
    if (band_shm_held(s, 0) != 1 || bs->in_use != 1 || bs->available != STEAL_CAP - 1 ||
        bs->debt != 0 || stats.handles != 1)
        FAIL(
            "steal k=%ld: after reclaim: held %llu in use %llu available %llu debt %llu handles %u",
            k, (unsigned long long)band_shm_held(s, 0), (unsigned long long)bs->in_use,
            (unsigned long long)bs->available, (unsigned long long)bs->debt, stats.handles);
    if (band_shm_release(s, 0, 1) != 0 || band_shm_held(s, 0) != 0)
        FAIL("steal k=%ld: the last release", k);
    (void)band_shm_destroy(s);
    return killed;
}

int main(void)
{
    band_shm *s;
    if (band_shm_create(&s, NULL, bounds, 2, NULL) != 0)
        FAIL("create");
    long k = 1;
    while (round_at(s, k))
        k++;
    band_shm_stats st;
    if (band_shm_get_stats(s, &st) != 0)
        FAIL("stats");
    /* The script makes dozens of logged stores; each was a death point once. */
    if (k < 20)
        FAIL("only %ld death points: the countdown did not reach the transactions", k);
    printf("shm_crash_points: %ld death points, %llu lock recoveries, %llu dead handles, "
           "%llu dead waiters\n",
           k - 1, (unsigned long long)st.recoveries, (unsigned long long)st.dead_handles,
           (unsigned long long)st.dead_waiters);
    (void)band_shm_destroy(s);

    long j = 1;
    while (steal_round_at(j))
        j++;
    /* The steal alone is two stores and a commit; the grant adds its own. */
    if (j < 4)
        FAIL("only %ld death points in the steal: the countdown did not reach it", j - 1);
    printf("shm_crash_points: %ld death points in a steal from a cache, held exact at each\n",
           j - 1);
    return 0;
}
