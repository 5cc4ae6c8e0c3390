/* SPDX-License-Identifier: MIT */
/*
 * demo_overload.c - part 4 of the demonstration: offered load ramps to three times
 * capacity in front of one server.
 *
 * A server thread takes requests from a band_chan of 32 and spends SERVICE_US on each,
 * whether or not its client is still waiting (a naive server: late work is wasted work).
 * A generator offers requests at 0.5x, 1x, 2x and 3x the server's capacity on a fixed
 * schedule (the same requests for every mode). Each request has a deadline of DEADLINE_MS
 * and is submitted with band_chan_send_async(); its send must complete QUEUE x SERVICE_US
 * before that (the time the channel's own queue takes to drain). A reaper thread cancels
 * queued sends whose deadline has passed (BAND_ETIMEDOUT), as an event loop's timer would.
 *
 * The same load runs three times:
 *   FIFO            - the channel as it is: senders queue until served or timed out;
 *   deadline-aware  - band_chan_opts.deadline_aware: a send predicted to miss its deadline
 *                     is refused at once, so nobody waits only to fail;
 *   + adaptive LIFO - also lifo_after = DEADLINE/2: while the queue is stale the server
 *                     takes the newest request first.
 * and the table shows what happened to every request: served in time, served too late
 * (wasted), refused at once, timed out while queued, with percentiles of how long clients
 * waited for their answer. Every request ends exactly once, or the part fails.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include "demo_parts.h"

#include <band/band.h>

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SERVICE_US  500 /* per request: capacity 2000 requests per second */
#define DEADLINE_MS 40
#define QUEUE       32

enum { R_NEW, R_PENDING, R_QUEUED, R_REFUSED, R_TIMED_OUT };

struct request {
    band_chan_send_op op;
    struct request *self; /* the element: a pointer to this request */
    band_time arrival, deadline, answered, done;
    _Atomic int state;
    int late;
};

struct overload_run {
    band_chan *chan;
    struct request *req;
    size_t n;
    _Atomic size_t issued;
    atomic_int generator_done;
    uint64_t served, late;
};

static void spin_until(band_time t)
{
    while (band_now() < t) {
    }
}

/* The send was accepted into the channel (or failed by close): record when. */
static void send_woken(band_waiter *w)
{
    struct request *r = w->data;
    r->answered = band_now();
    atomic_store_explicit(&r->state, band_waiter_status(w) == 0 ? R_QUEUED : R_TIMED_OUT,
                          memory_order_release);
}

static void *server_main(void *arg)
{
    struct overload_run *run = arg;
    struct request *r;
    while (band_chan_recv(run->chan, &r, NULL, BAND_FOREVER, NULL) == 0) {
        spin_until(band_now() + SERVICE_US * BAND_USEC);
        r->done = band_now();
        r->late = r->done > r->deadline;
        run->served++;
        run->late += (uint64_t)r->late;
    }
    return NULL;
}

/* Cancels queued sends whose deadline has passed, every 200 us. */
static void *reaper_main(void *arg)
{
    struct overload_run *run = arg;
    for (;;) {
        int last = atomic_load(&run->generator_done);
        size_t issued = atomic_load(&run->issued);
        int pending = 0;
        band_time now = band_now();
        for (size_t i = 0; i < issued; i++) {
            struct request *r = &run->req[i];
            if (atomic_load_explicit(&r->state, memory_order_acquire) != R_PENDING)
                continue;
            pending = 1;
            if (now >= r->op.w.deadline && band_waiter_cancel(&r->op.w, BAND_ETIMEDOUT) == 0) {
                r->answered = band_now();
                atomic_store(&r->state, R_TIMED_OUT);
            }
        }
        if (last && !pending)
            return NULL;
        struct timespec ts = {0, 200 * 1000};
        nanosleep(&ts, NULL);
    }
}

static int cmp_time(const void *a, const void *b)
{
    band_time x = *(const band_time *)a, y = *(const band_time *)b;
    return (x > y) - (x < y);
}

static double pct_ms(band_time *v, size_t n, double p)
{
    if (n == 0)
        return 0.0;
    qsort(v, n, sizeof(*v), cmp_time);
    size_t i = (size_t)(p * (double)(n - 1) + 0.5);
    return (double)v[i] / (double)BAND_MSEC;
}

struct overload_result {
    size_t offered, served_in_time, served_late, refused, timed_out;
    double ok_p50, ok_p99, fail_p50, fail_p99;
};

/* One run of the ramp; returns 0, or -1 when a request did not end exactly once. */
static int run_mode(int deadline_aware, int lifo, band_time phase, struct overload_result *res)
{
    static const unsigned factors_x2[] = {1, 2, 4, 6}; /* 0.5x, 1x, 2x, 3x */
    const uint64_t capacity = 1000000 / SERVICE_US;    /* requests per second */
    size_t n = 0;
    for (size_t i = 0; i < 4; i++)
        n += (size_t)(capacity * factors_x2[i] / 2 * (uint64_t)phase / BAND_SEC) + 16;
    struct overload_run run;
    memset(&run, 0, sizeof(run));
    run.req = calloc(n, sizeof(*run.req));
    if (run.req == NULL)
        return -1;
    run.n = n;
    band_chan_opts o;
    memset(&o, 0, sizeof(o));
    o.deadline_aware = deadline_aware;
    o.lifo_after = lifo ? DEADLINE_MS * BAND_MSEC / 2 : 0;
    if (band_chan_create(&run.chan, sizeof(struct request *), QUEUE, &o) != 0)
        return -1;
    pthread_t server, reaper;
    pthread_create(&server, NULL, server_main, &run);
    pthread_create(&reaper, NULL, reaper_main, &run);

    /* A fixed schedule, so that every mode is offered exactly the same requests: a
     * generator that falls behind catches up instead of offering less. */
    size_t k = 0;
    band_time t = band_now();
    for (size_t ph = 0; ph < 4; ph++) {
        uint64_t per_s = capacity * factors_x2[ph] / 2;
        size_t count = (size_t)(per_s * (uint64_t)phase / BAND_SEC);
        band_time gap = BAND_SEC / (band_time)per_s;
        for (size_t j = 0; j < count && k < n; j++, t += gap) {
            struct timespec ts = {(time_t)(t / BAND_SEC), (long)(t % BAND_SEC)};
            clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
            struct request *r = &run.req[k];
            r->self = r;
            r->arrival = band_now(); /* a generator behind schedule does not age it */
            r->deadline = r->arrival + DEADLINE_MS * BAND_MSEC;
            band_waiter_init(&r->op.w, send_woken, r);
            /* The send must complete early enough for the queue inside the channel. */
            r->op.w.deadline = r->deadline - QUEUE * SERVICE_US * BAND_USEC;
            atomic_store(&r->state, R_PENDING);
            atomic_store(&run.issued, k + 1); /* the reaper may look at it from now on */
            int rc = band_chan_send_async(run.chan, &r->self, 0, &r->op);
            if (rc == 0) {
                r->answered = band_now();
                atomic_store(&r->state, R_QUEUED);
            } else if (rc != BAND_PENDING) {
                r->answered = band_now();
                atomic_store(&r->state, rc == BAND_ETIMEDOUT ? R_REFUSED : R_TIMED_OUT);
            }
            k++;
        }
    }
    atomic_store(&run.generator_done, 1);
    pthread_join(reaper, NULL);
    band_chan_close(run.chan);
    pthread_join(server, NULL);

    memset(res, 0, sizeof(*res));
    res->offered = k;
    band_time *ok = calloc(k + 1, sizeof(*ok)), *fail = calloc(k + 1, sizeof(*fail));
    size_t nok = 0, nfail = 0;
    int bad = ok == NULL || fail == NULL;
    for (size_t i = 0; i < k && !bad; i++) {
        struct request *r = &run.req[i];
        switch (atomic_load(&r->state)) {
        case R_QUEUED:
            if (r->done == 0) {
                bad = 1; /* accepted but never served: lost */
            } else if (r->late) {
                res->served_late++;
            } else {
                res->served_in_time++;
                ok[nok++] = r->done - r->arrival;
            }
            break;
        case R_REFUSED:
            res->refused++;
            fail[nfail++] = r->answered - r->arrival;
            break;
        case R_TIMED_OUT:
            res->timed_out++;
            fail[nfail++] = r->answered - r->arrival;
            break;
        default:
            bad = 1; /* never answered */
        }
    }
    if (res->served_in_time + res->served_late != run.served)
        bad = 1;
    res->ok_p50 = pct_ms(ok, nok, 0.50);
    res->ok_p99 = pct_ms(ok, nok, 0.99);
    res->fail_p50 = pct_ms(fail, nfail, 0.50);
    res->fail_p99 = pct_ms(fail, nfail, 0.99);
    free(ok);
    free(fail);
    band_chan_stats st;
    if (band_chan_get_stats(run.chan, &st) != 0 || st.sent != run.served ||
        st.refused_deadline != res->refused || band_chan_destroy(run.chan) != 0)
        bad = 1;
    free(run.req);
    return bad ? -1 : 0;
}

int demo_overload(int quick)
{
    band_time phase = (quick ? 100 : 300) * BAND_MSEC;
    static const char *const names[3] = {"FIFO", "deadline-aware", "deadline-aware + LIFO"};
    struct overload_result res[3];
    int failed = 0;
    for (int m = 0; m < 3; m++) {
        if (run_mode(m >= 1, m == 2, phase, &res[m]) != 0) {
            fprintf(stderr, "overload (%s): a request did not end exactly once\n", names[m]);
            failed = 1;
        }
    }
    printf("\noverload: one server of %d requests/s behind a channel of %d; offered load "
           "ramps 0.5x, 1x, 2x, 3x\n(%.0f ms each); deadline %d ms per request\n\n",
           1000000 / SERVICE_US, QUEUE, (double)phase / (double)BAND_MSEC, DEADLINE_MS);
    printf("%-22s %7s %8s %7s %8s %9s %15s %17s\n", "queue discipline", "offered", "in time",
           "late", "refused", "timed out", "served p50/p99", "refusals p50/p99");
    for (int m = 0; m < 3 && !failed; m++) {
        char okp[32], failp[32];
        snprintf(okp, sizeof(okp), "%.1f/%.1f ms", res[m].ok_p50, res[m].ok_p99);
        snprintf(failp, sizeof(failp), "%.1f/%.1f ms", res[m].fail_p50, res[m].fail_p99);
        printf("%-22s %7zu %8zu %7zu %8zu %9zu %15s %17s\n", names[m], res[m].offered,
               res[m].served_in_time, res[m].served_late, res[m].refused, res[m].timed_out, okp,
               failp);
    }
    printf("(in time: served before its deadline; late: served after it, wasted work; "
           "refused: answered at once,\n predicted to miss; timed out: waited in the queue "
           "until its deadline)\n");
    return failed;
}
