/* SPDX-License-Identifier: MIT */
/*
 * shm_held_steal.c - band_shm_held() stays exact while another process takes this
 * handle's idle units, and when that process is killed in the middle of taking them.
 *
 * The parent keeps one unit in use and one idle in its cache. A child's try-acquire of
 * the rest of the bound takes the idle unit from the parent's cache: it empties the cache
 * word and then lowers the parent's held units, one logged store each. The testing build's
 * crash countdown kills the child at each of its logged stores in turn, and at each point
 * the parent, without reclaiming anything first, must read exactly the one unit it uses;
 * after the reclaim, the whole bound must balance.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "band/shm.h"
#include "shm/shm_internal.h"

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        fprintf(stderr, "shm_held_steal: " __VA_ARGS__);                                           \
        fputc('\n', stderr);                                                                       \
        exit(1);                                                                                   \
    } while (0)

#define CAP 5

static const band_shm_bound bound = {"conns", CAP, BAND_SHM_UNITS};

/* One round with a death at the child's k-th logged store: 1 when it was killed. */
static int round_at(long k)
{
    band_shm *s;
    if (band_shm_create(&s, NULL, &bound, 1, NULL) != 0)
        FAIL("create");
    /* Two taken, one given back: it stays in this handle's cache, idle. */
    if (band_shm_try_acquire(s, 0, 2) != 0 || band_shm_release(s, 0, 1) != 0)
        FAIL("k=%ld: setup", k);
    if (band_shm_held(s, 0) != 1 || band_shm_available(s, 0) != CAP - 1)
        FAIL("k=%ld: before: held %llu available %llu", k, (unsigned long long)band_shm_held(s, 0),
             (unsigned long long)band_shm_available(s, 0));
    pid_t child = fork();
    if (child < 0)
        FAIL("fork");
    if (child == 0) {
        band_shm *t;
        if (band_shm_open_fd(&t, band_shm_fd(s), NULL) != 0)
            _exit(30);
        band__shm_crash_countdown = k;
        int rc = band_shm_try_acquire(t, 0, CAP - 1); /* the pool's 3 and the idle one */
        band__shm_crash_countdown = 0;
        if (rc != 0)
            _exit(31);
        if (band_shm_held(t, 0) != CAP - 1 || band_shm_release(t, 0, CAP - 1) != 0)
            _exit(32);
        (void)band_shm_close(t);
        _exit(0);
    }
    int st;
    if (waitpid(child, &st, 0) != child)
        FAIL("waitpid");
    int killed = WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL;
    if (!killed && !(WIFEXITED(st) && WEXITSTATUS(st) == 0))
        FAIL("k=%ld: the child failed with %d", k, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    /* Nothing has taken the lock since the death: the child's transaction may be open. */
    uint64_t held = band_shm_held(s, 0);
    if (held != 1)
        FAIL("k=%ld: %s child: held %llu, 1 in use", k, killed ? "a killed" : "a finished",
             (unsigned long long)held);
    unsigned dead = 0;
    if (band_shm_reclaim(s, &dead) != 0)
        FAIL("k=%ld: reclaim", k);
    band_shm_stats stats;
    if (band_shm_get_stats(s, &stats) != 0)
        FAIL("k=%ld: stats", k);
    const band_shm_bound_stats *bs = &stats.bounds[0];
    if (band_shm_held(s, 0) != 1 || bs->in_use != 1 || bs->available != CAP - 1 || bs->debt != 0 ||
        stats.handles != 1)
        FAIL("k=%ld: after reclaim: held %llu in use %llu available %llu debt %llu handles %u", k,
             (unsigned long long)band_shm_held(s, 0), (unsigned long long)bs->in_use,
             (unsigned long long)bs->available, (unsigned long long)bs->debt, stats.handles);
    if (band_shm_release(s, 0, 1) != 0 || band_shm_held(s, 0) != 0)
        FAIL("k=%ld: the last release", k);
    (void)band_shm_destroy(s);
    return killed;
}

int main(void)
{
    long k = 1;
    while (round_at(k))
        k++;
    /* The steal alone is two stores and a commit; the grant adds its own. */
    if (k < 4)
        FAIL("only %ld death points: the countdown did not reach the steal", k - 1);
    printf("shm_held_steal: %ld death points, held exact at each\n", k - 1);
    return 0;
}
