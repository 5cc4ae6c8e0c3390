/* SPDX-License-Identifier: MIT */
/*
 * etcd_hold - one holder of a libband-etcd budget, driven line by line from stdin, for
 * the shell tests (dist_tool, fence_stop, kill_holder, faketime).
 *
 *   etcd_hold -e ENDPOINTS -n NAME -c CAP -u UNITS [-t TTL_S] [-H HOLDER] [-w WAIT_S]
 *
 * Opens the budget (creating it with CAP), asks for UNITS (acquire_async: "pending" is
 * printed when the request queues) and prints the grant. Then reads commands: "release",
 * "check" (the fencing check of its own token), "stats" (its lease's deadline and
 * renewals), "quit". Every line it prints is flushed at once:
 *
 *   pending lease=HEX
 *   granted token=T lease=HEX id=ID units=U at=NS        (NS: CLOCK_REALTIME, ns)
 *   lost lease=HEX at=NS                                 (on_lost, from the client thread)
 *   released BAND_OK | check BAND_ESTALE | ...           (the band code's name)
 *   failed BAND_...                                      (the acquisition failed; exit 1)
 *
 * Exit status: 0 after quit or end of input, 1 when the acquisition failed, 2 bad usage.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <band/band.h>
#include <band/etcd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int woken;

static int64_t realtime_ns(void)
{
    struct timespec ts;
    (void)clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* One line on stdout, whole, at once (the client thread prints too). */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void say(const char *fmt, ...)
{
    va_list ap;
    flockfile(stdout);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fputc('\n', stdout);
    fflush(stdout);
    funlockfile(stdout);
}

static void on_lost(band_etcd *e, int64_t lease, void *data)
{
    (void)e;
    (void)data;
    say("lost lease=%" PRIx64 " at=%" PRId64, (uint64_t)lease, realtime_ns());
}

static void on_wake(band_waiter *w)
{
    (void)w;
    pthread_mutex_lock(&mu);
    woken = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

static int usage(void)
{
    fprintf(stderr, "usage: etcd_hold -e ENDPOINTS -n NAME -c CAP -u UNITS [-t TTL_S] "
                    "[-H HOLDER] [-w WAIT_S]\n");
    return 2;
}

int main(int argc, char **argv)
{
    const char *endpoints = NULL, *name = NULL, *holder = NULL;
    uint64_t cap = 0, units = 0;
    long ttl = 0, wait_s = 30;
    int c;
    while ((c = getopt(argc, argv, "e:n:c:u:t:H:w:")) != -1) {
        switch (c) {
        case 'e':
            endpoints = optarg;
            break;
        case 'n':
            name = optarg;
            break;
        case 'c':
            cap = strtoull(optarg, NULL, 10);
            break;
        case 'u':
            units = strtoull(optarg, NULL, 10);
            break;
        case 't':
            ttl = strtol(optarg, NULL, 10);
            break;
        case 'H':
            holder = optarg;
            break;
        case 'w':
            wait_s = strtol(optarg, NULL, 10);
            break;
        default:
            return usage();
        }
    }
    if (!endpoints || !name || units == 0 || optind != argc || ttl < 0 || wait_s <= 0)
        return usage();

    band_etcd_opts o = {0};
    o.lease_ttl = (band_time)ttl * BAND_SEC;
    o.holder = holder;
    o.on_lost = on_lost;
    band_etcd *e;
    int rc = band_etcd_create(&e, endpoints, &o);
    if (rc != 0) {
        say("failed %s", band_err_name(rc));
        return 1;
    }
    band_etcd_budget *b;
    rc = band_etcd_budget_create(&b, e, name, cap);
    if (rc != 0) {
        say("failed %s", band_err_name(rc));
        (void)band_etcd_destroy(e);
        return 1;
    }

    band_etcd_budget_acquire_op op;
    band_waiter_init(&op.w, on_wake, NULL);
    rc = band_etcd_budget_acquire_async(b, units, &op);
    if (rc == BAND_PENDING) {
        band_etcd_stats st;
        (void)band_etcd_get_stats(e, &st);
        say("pending lease=%" PRIx64, (uint64_t)st.lease);
        struct timespec until;
        (void)clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += wait_s;
        pthread_mutex_lock(&mu);
        while (!woken && pthread_cond_timedwait(&cv, &mu, &until) == 0)
            ;
        int done = woken;
        pthread_mutex_unlock(&mu);
        if (!done && band_waiter_cancel(&op.w, BAND_ETIMEDOUT) == 0) {
            rc = BAND_ETIMEDOUT;
        } else {
            pthread_mutex_lock(&mu);
            while (!woken)
                pthread_cond_wait(&cv, &mu);
            pthread_mutex_unlock(&mu);
            rc = band_waiter_status(&op.w);
        }
    }
    if (rc != 0) {
        say("failed %s", band_err_name(rc));
        (void)band_etcd_budget_destroy(b);
        (void)band_etcd_destroy(e);
        return 1;
    }
    band_etcd_grant g = op.grant;
    say("granted token=%" PRId64 " lease=%" PRIx64 " id=%s units=%" PRIu64 " at=%" PRId64, g.token,
        (uint64_t)g.lease, g.id, g.units, realtime_ns());

    char line[128];
    while (fgets(line, sizeof(line), stdin)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (strcmp(line, "release") == 0) {
            say("released %s", band_err_name(band_etcd_budget_release(b, &g)));
        } else if (strcmp(line, "check") == 0) {
            say("check %s", band_err_name(band_etcd_budget_check_token(b, g.token)));
        } else if (strcmp(line, "stats") == 0) {
            band_etcd_stats st;
            (void)band_etcd_get_stats(e, &st);
            say("stats lease=%" PRIx64 " keepalives=%" PRIu64 " lost=%" PRIu64
                " deadline_in_ms=%" PRId64,
                (uint64_t)st.lease, st.keepalives, st.leases_lost,
                (st.lease_deadline - band_now()) / BAND_MSEC);
        } else if (strcmp(line, "quit") == 0) {
            break;
        } else {
            say("unknown %s", line);
        }
    }
    (void)band_etcd_budget_destroy(b);
    (void)band_etcd_destroy(e);
    return 0;
}
