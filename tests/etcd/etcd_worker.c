/* SPDX-License-Identifier: MIT */
/*
 * etcd_worker - random operations on one libband-etcd budget, every grant and release
 * logged, for the conservation and kill_leader tests (etcd_check reads the logs).
 *
 *   etcd_worker -e ENDPOINTS -n NAME -s SEED -o OPS -l LOG [-T SECONDS] [-c CAP]
 *               [-C MIN:MAX] [-m MAX_UNITS]
 *
 * Each operation is one of: release a held grant; acquire (blocking, a 300 ms deadline,
 * only while holding nothing, so that processes waiting hold nothing and the holders
 * always end); try_acquire; acquire_async then, when it queues, a cancel after 0 to 30
 * ms (a grant that wins the race is kept); set_capacity (2 %, between MIN and MAX). At
 * most 3 grants are held at once, of 1 to MAX_UNITS units. It stops after OPS operations
 * or SECONDS or at SIGTERM, then releases what it holds.
 *
 * Log lines (one per event, written when the grant is released):
 *   G <id> <token> <units> <t0> <t1>   a grant: held from t0 (after the grant was returned)
 *                                      to t1 (before its release was sent), CLOCK_MONOTONIC ns
 *   R <id> <band code name>            the release's answer
 *   S <capacity> <band code name>      a capacity change
 *   W <band code name>                 a queued request withdrawn (cancelled, timed out):
 *                                      the cluster may have granted it a moment before
 * stdout gets one summary line. Exit status: 0, 1 on an answer no operation may give
 * (BAND_EINVAL, BAND_ECLOSED, ...), 2 bad usage.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <band/band.h>
#include <band/etcd.h>

#define HELD_MAX 3

struct held {
    band_etcd_grant g;
    int64_t t0;
};

struct worker {
    band_etcd_budget *b;
    FILE *log;
    uint64_t rng;
    uint64_t cap_min, cap_max, max_units;
    struct held held[HELD_MAX];
    int nheld;
    /* outcome counts */
    uint64_t ops, grants, releases, stale, refused, timeouts, cancels, unavail, caps, other;
};

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
    (void)sig;
    stop = 1;
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int woken;

static int64_t mono_ns(void)
{
    struct timespec ts;
    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* xorshift64*: reproducible from the seed. */
static uint64_t rnd(struct worker *w, uint64_t n)
{
    w->rng ^= w->rng >> 12;
    w->rng ^= w->rng << 25;
    w->rng ^= w->rng >> 27;
    return ((w->rng * UINT64_C(2685821657736338717)) >> 11) % n;
}

static void on_wake(band_waiter *wt)
{
    (void)wt;
    pthread_mutex_lock(&mu);
    woken = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

/* Wait for the wake until @until_ns (CLOCK_MONOTONIC; INT64_MAX: no bound). 1 if woken. */
static int wait_wake(int64_t until_ns)
{
    pthread_mutex_lock(&mu);
    while (!woken && mono_ns() < until_ns) {
        pthread_mutex_unlock(&mu);
        struct timespec d = {0, 1000000};
        nanosleep(&d, NULL);
        pthread_mutex_lock(&mu);
    }
    int r = woken;
    pthread_mutex_unlock(&mu);
    return r;
}

static void count_failure(struct worker *w, int rc)
{
    switch (rc) {
    case BAND_EAGAIN:
        w->refused++;
        break;
    case BAND_ETIMEDOUT:
        w->timeouts++;
        fprintf(w->log, "W %s\n", band_err_name(rc));
        break;
    case BAND_ECANCELED:
        w->cancels++;
        fprintf(w->log, "W %s\n", band_err_name(rc));
        break;
    case BAND_ESTALE:
        w->stale++;
        break;
    case BAND_EUNAVAIL:
        w->unavail++;
        break;
    default:
        fprintf(stderr, "etcd_worker: unexpected %s\n", band_err_name(rc));
        w->other++;
    }
}

static void keep(struct worker *w, const band_etcd_grant *g)
{
    w->held[w->nheld].g = *g;
    w->held[w->nheld].t0 = mono_ns();
    w->nheld++;
    w->grants++;
}

static void release_at(struct worker *w, int i)
{
    struct held h = w->held[i];
    w->held[i] = w->held[--w->nheld];
    int64_t t1 = mono_ns();
    int rc = band_etcd_budget_release(w->b, &h.g);
    fprintf(w->log, "G %s %" PRId64 " %" PRIu64 " %" PRId64 " %" PRId64 "\nR %s %s\n", h.g.id,
            h.g.token, h.g.units, h.t0, t1, h.g.id, band_err_name(rc));
    if (rc == 0)
        w->releases++;
    else
        count_failure(w, rc);
}

static void op_async(struct worker *w, uint64_t units)
{
    band_etcd_budget_acquire_op op;
    band_waiter_init(&op.w, on_wake, NULL);
    pthread_mutex_lock(&mu);
    woken = 0;
    pthread_mutex_unlock(&mu);
    int rc = band_etcd_budget_acquire_async(w->b, units, &op);
    if (rc == BAND_PENDING) {
        int64_t until = mono_ns() + (int64_t)rnd(w, 31) * 1000000;
        if (!wait_wake(until) && band_waiter_cancel(&op.w, BAND_ECANCELED) == 0) {
            rc = BAND_ECANCELED;
        } else {
            (void)wait_wake(INT64_MAX);
            rc = band_waiter_status(&op.w);
        }
    }
    if (rc == 0)
        keep(w, &op.grant);
    else
        count_failure(w, rc);
}

static void one_op(struct worker *w)
{
    uint64_t r = rnd(w, 100);
    uint64_t units = 1 + rnd(w, w->max_units);
    band_etcd_grant g;
    int rc;
    if (w->nheld > 0 && (r < 40 || w->nheld == HELD_MAX)) {
        release_at(w, (int)rnd(w, (uint64_t)w->nheld));
    } else if (r < 55) {
        if (w->nheld == 0)
            rc = band_etcd_budget_acquire(w->b, units, &g, band_deadline_after(300 * BAND_MSEC),
                                          NULL);
        else
            rc = band_etcd_budget_try_acquire(w->b, units, &g);
        if (rc == 0)
            keep(w, &g);
        else
            count_failure(w, rc);
    } else if (r < 75) {
        rc = band_etcd_budget_try_acquire(w->b, units, &g);
        if (rc == 0)
            keep(w, &g);
        else
            count_failure(w, rc);
    } else if (r < 98) {
        op_async(w, units);
    } else {
        uint64_t cap = w->cap_min + rnd(w, w->cap_max - w->cap_min + 1);
        rc = band_etcd_budget_set_capacity(w->b, cap);
        fprintf(w->log, "S %" PRIu64 " %s\n", cap, band_err_name(rc));
        if (rc == 0)
            w->caps++;
        else
            count_failure(w, rc);
    }
    w->ops++;
}

static int usage(void)
{
    fprintf(stderr, "usage: etcd_worker -e ENDPOINTS -n NAME -s SEED -o OPS -l LOG "
                    "[-T SECONDS] [-c CAP] [-C MIN:MAX] [-m MAX_UNITS]\n");
    return 2;
}

int main(int argc, char **argv)
{
    const char *endpoints = NULL, *name = NULL, *logpath = NULL;
    uint64_t seed = 1, ops = 0, cap = 12;
    long seconds = 60;
    struct worker w = {0};
    w.cap_min = 8;
    w.cap_max = 16;
    w.max_units = 6;
    int c;
    while ((c = getopt(argc, argv, "e:n:s:o:l:T:c:C:m:")) != -1) {
        switch (c) {
        case 'e':
            endpoints = optarg;
            break;
        case 'n':
            name = optarg;
            break;
        case 's':
            seed = strtoull(optarg, NULL, 10);
            break;
        case 'o':
            ops = strtoull(optarg, NULL, 10);
            break;
        case 'l':
            logpath = optarg;
            break;
        case 'T':
            seconds = strtol(optarg, NULL, 10);
            break;
        case 'c':
            cap = strtoull(optarg, NULL, 10);
            break;
        case 'C':
            if (sscanf(optarg, "%" SCNu64 ":%" SCNu64, &w.cap_min, &w.cap_max) != 2)
                return usage();
            break;
        case 'm':
            w.max_units = strtoull(optarg, NULL, 10);
            break;
        default:
            return usage();
        }
    }
    if (!endpoints || !name || !logpath || ops == 0 || seconds <= 0 || optind != argc ||
        w.cap_min == 0 || w.cap_max < w.cap_min || w.max_units == 0 || w.max_units > w.cap_min)
        return usage();
    w.rng = seed * UINT64_C(0x9E3779B97F4A7C15) + 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);
    w.log = fopen(logpath, "w");
    if (!w.log) {
        perror(logpath);
        return 2;
    }

    band_etcd *e;
    int rc = band_etcd_create(&e, endpoints, NULL);
    if (rc == 0) {
        rc = band_etcd_budget_create(&w.b, e, name, cap);
        if (rc != 0)
            (void)band_etcd_destroy(e);
    }
    if (rc != 0) {
        fprintf(stderr, "etcd_worker: open %s: %s\n", name, band_err_name(rc));
        fclose(w.log);
        return 1;
    }
    int64_t end = mono_ns() + (int64_t)seconds * 1000000000;
    while (w.ops < ops && mono_ns() < end && !stop)
        one_op(&w);
    while (w.nheld > 0)
        release_at(&w, w.nheld - 1);
    (void)band_etcd_budget_destroy(w.b);
    (void)band_etcd_destroy(e);
    if (fclose(w.log) != 0) {
        perror(logpath);
        return 1;
    }
    printf("worker %" PRIu64 ": ops %" PRIu64 " grants %" PRIu64 " releases %" PRIu64
           " refused %" PRIu64 " timeouts %" PRIu64 " cancels %" PRIu64 " stale %" PRIu64
           " unavail %" PRIu64 " capacity changes %" PRIu64 " other %" PRIu64 "\n",
           seed, w.ops, w.grants, w.releases, w.refused, w.timeouts, w.cancels, w.stale, w.unavail,
           w.caps, w.other);
    return w.other == 0 ? 0 : 1;
}
