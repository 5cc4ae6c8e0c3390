/* SPDX-License-Identifier: MIT */
/*
 * demo_overload.c - part 5 of the demonstration: one server, offered loads from half its
 * capacity to three times it, and five ways to queue the requests in front of it.
 *
 * A server thread takes requests from a band_chan and spends SERVICE_US on each, whether
 * or not its client is still waiting (a naive server: late work is wasted work). A
 * generator offers requests at a steady rate on a fixed schedule (the same requests for
 * every queue discipline), each with a deadline of DEADLINE_MS, submitted with
 * band_chan_send_async(). A client gives up on a request that has not entered the channel
 * ENTER_MS after it arrived (op->w.deadline; that leaves a queue of SHALLOW requests the
 * time it takes to drain): a reaper thread cancels such sends (BAND_ETIMEDOUT), as an
 * event loop's timer would. Each offered load runs for a fixed time from an idle server.
 *
 * The queue disciplines:
 *   FIFO, queue of 32       - the channel as it is: senders queue until served or given up;
 *   FIFO, queue of 1024     - the same with a deep buffer: every request enters at once;
 *   deadline-aware, 32      - band_chan_opts.deadline_aware: a send predicted to miss its
 *                             deadline is refused at once, so nobody waits only to fail;
 *   deadline-aware + LIFO   - also lifo_after = LIFO_AFTER_MS on the queue of 32;
 *   adaptive LIFO, 1024     - lifo_after = LIFO_AFTER_MS on the deep buffer: while its
 *                             oldest request is older than that, the server takes the
 *                             newest first.
 * Adaptive LIFO reorders only what is inside the channel. With a queue of 32 that drains in
 * 16 ms it has little to reorder while the server keeps its pace; with 1024 it is what keeps
 * the server on fresh requests. Deadline-aware with and without LIFO also run once more
 * behind a server slowed to twice its planned service time, where the queue of 32 takes
 * longer to drain than the clients planned for.
 *
 * The first table is the goodput (requests served before their deadline within the offered
 * window, per second, as a share of capacity) at each offered load; the second is what
 * happened to every request at the highest load: served in time, served too late (wasted),
 * refused at once, given up while waiting to enter, with percentiles of how long clients
 * waited for a yes and for a no. A verdict line and a few lines on when LIFO helps follow,
 * each with the figures measured; a note says when even half the capacity was not served
 * in time (the server thread did not get a processor). Every request ends exactly once,
 * or the part fails. With a data directory it also writes overload.tsv there, one row per
 * discipline and load.
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

#define SERVICE_US    500 /* per request: capacity 2000 requests per second */
#define DEADLINE_MS   40
#define SHALLOW       32u   /* drains in 16 ms */
#define DEEP          1024u /* drains in 512 ms: far longer than any deadline */
#define SLACK_MS      4     /* for the service itself and for scheduling noise */
#define ENTER_MS      (DEADLINE_MS - SHALLOW * SERVICE_US / 1000 - SLACK_MS) /* 20 ms */
#define LIFO_AFTER_MS (DEADLINE_MS / 2)
#define NLOADS        5
#define NMODES        5
#define SLOW_LOAD_X10 20 /* the slowed server's offered load, of its planned capacity */

static const unsigned load_x10[NLOADS] = {5, 10, 15, 20, 30}; /* 0.5x .. 3x capacity */

struct mode {
    const char *name; /* in the tables */
    const char *key;  /* in overload.tsv */
    uint64_t queue;   /* the channel's capacity */
    int deadline_aware;
    int lifo;
};

static const struct mode modes[NMODES] = {
    {"FIFO, queue of 32", "fifo-32", SHALLOW, 0, 0},
    {"FIFO, queue of 1024", "fifo-1024", DEEP, 0, 0},
    {"deadline-aware, 32", "deadline-32", SHALLOW, 1, 0},
    {"deadline-aware + LIFO, 32", "deadline-lifo-32", SHALLOW, 1, 1},
    {"adaptive LIFO, 1024", "lifo-1024", DEEP, 0, 1},
};

enum { R_NEW, R_PENDING, R_QUEUED, R_REFUSED, R_TIMED_OUT };

struct request {
    band_chan_send_op op;
    struct request *self; /* the element: a pointer to this request */
    band_time arrival, deadline, answered, started, done;
    _Atomic int state;
    int late;
};

struct overload_run {
    band_chan *chan;
    struct request *req;
    size_t n;
    _Atomic size_t issued;
    atomic_int generator_done;
    band_time service; /* what the server spends on each request */
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
        r->started = band_now();
        spin_until(r->started + run->service);
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
    uint64_t lifo_taken;
    double goodput;         /* served in time per second of offered load, share of capacity */
    double ok_p50, ok_p99;  /* served in time: arrival to answer */
    double no_p50, no_p99;  /* refused or given up: arrival to that answer */
    double late_enter_p50;  /* served late: how long they waited to enter the channel */
    double late_inside_p50; /* ... and how long inside it, before the server took them */
};

/* One run at one steady load; returns 0, or -1 when a request did not end exactly once. */
static int run_mode(const struct mode *m, unsigned x10, band_time phase, band_time service,
                    struct overload_result *res)
{
    const uint64_t capacity = 1000000 / SERVICE_US; /* requests per second */
    const uint64_t per_s = capacity * x10 / 10;
    const size_t n = (size_t)(per_s * (uint64_t)phase / BAND_SEC);
    struct overload_run run;
    memset(&run, 0, sizeof(run));
    run.req = calloc(n + 1, sizeof(*run.req));
    if (run.req == NULL)
        return -1;
    run.n = n;
    run.service = service;
    band_chan_opts o;
    memset(&o, 0, sizeof(o));
    o.deadline_aware = m->deadline_aware;
    o.lifo_after = m->lifo ? LIFO_AFTER_MS * BAND_MSEC : 0;
    if (band_chan_create(&run.chan, sizeof(struct request *), m->queue, &o) != 0) {
        free(run.req);
        return -1;
    }
    pthread_t server, reaper;
    if (pthread_create(&server, NULL, server_main, &run) != 0 ||
        pthread_create(&reaper, NULL, reaper_main, &run) != 0)
        abort();

    /* A fixed schedule, so that every mode is offered exactly the same requests: a
     * generator that falls behind catches up instead of offering less. */
    band_time t = band_now();
    const band_time window_end = t + phase;
    const band_time gap = BAND_SEC / (band_time)per_s;
    for (size_t k = 0; k < n; k++, t += gap) {
        struct timespec ts = {(time_t)(t / BAND_SEC), (long)(t % BAND_SEC)};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
        struct request *r = &run.req[k];
        r->self = r;
        r->arrival = band_now(); /* a generator behind schedule does not age it */
        r->deadline = r->arrival + DEADLINE_MS * BAND_MSEC;
        band_waiter_init(&r->op.w, send_woken, r);
        r->op.w.deadline = r->arrival + ENTER_MS * BAND_MSEC; /* the client gives up */
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
    }
    atomic_store(&run.generator_done, 1);
    pthread_join(reaper, NULL);
    band_chan_close(run.chan);
    pthread_join(server, NULL);

    memset(res, 0, sizeof(*res));
    res->offered = n;
    band_time *ok = calloc(n + 1, sizeof(*ok)), *enter = calloc(n + 1, sizeof(*enter));
    band_time *inside = calloc(n + 1, sizeof(*inside)), *no = calloc(n + 1, sizeof(*no));
    size_t nok = 0, nlate = 0, nno = 0, in_window = 0;
    int bad = ok == NULL || enter == NULL || inside == NULL || no == NULL;
    for (size_t i = 0; i < n && !bad; i++) {
        struct request *r = &run.req[i];
        switch (atomic_load(&r->state)) {
        case R_QUEUED:
            if (r->done == 0) {
                bad = 1; /* accepted but never served: lost */
            } else if (r->late) {
                res->served_late++;
                enter[nlate] = r->answered - r->arrival;
                inside[nlate++] = r->started - r->answered;
            } else {
                res->served_in_time++;
                in_window += r->done <= window_end;
                ok[nok++] = r->done - r->arrival;
            }
            break;
        case R_REFUSED:
            res->refused++;
            no[nno++] = r->answered - r->arrival;
            break;
        case R_TIMED_OUT:
            res->timed_out++;
            no[nno++] = r->answered - r->arrival;
            break;
        default:
            bad = 1; /* never answered */
        }
    }
    if (res->served_in_time + res->served_late != run.served)
        bad = 1;
    res->goodput = (double)in_window * (double)BAND_SEC / (double)phase / (double)capacity;
    res->ok_p50 = pct_ms(ok, nok, 0.50);
    res->ok_p99 = pct_ms(ok, nok, 0.99);
    res->no_p50 = pct_ms(no, nno, 0.50);
    res->no_p99 = pct_ms(no, nno, 0.99);
    res->late_enter_p50 = pct_ms(enter, nlate, 0.50);
    res->late_inside_p50 = pct_ms(inside, nlate, 0.50);
    free(ok);
    free(enter);
    free(inside);
    free(no);
    band_chan_stats st;
    if (band_chan_get_stats(run.chan, &st) != 0 || st.sent != run.served ||
        st.refused_deadline != res->refused || band_chan_destroy(run.chan) != 0)
        bad = 1;
    res->lifo_taken = st.lifo_taken;
    free(run.req);
    return bad ? -1 : 0;
}

static void tsv_row(FILE *f, const char *key, unsigned x10, double service_ms,
                    const struct overload_result *r)
{
    fprintf(f, "%s\t%.1f\t%.1f\t%zu\t%zu\t%zu\t%zu\t%zu\t%.3f\t%.2f\t%.2f\t%.2f\t%" PRIu64 "\n",
            key, x10 / 10.0, service_ms, r->offered, r->served_in_time, r->served_late, r->refused,
            r->timed_out, r->goodput, r->ok_p50, r->ok_p99, r->no_p50, r->lifo_taken);
}

/* overload.tsv: one row per discipline and load, then the slowed server's rows. */
static int write_tsv(const char *dir, struct overload_result res[NMODES][NLOADS],
                     const struct overload_result slow[2], const int slow_modes[2])
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/overload.tsv", dir);
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        perror(path);
        return 1;
    }
    fprintf(f,
            "# band_demo part 5: planned capacity %d requests/s, deadline %d ms; goodput: "
            "served in time per second / planned capacity\n",
            1000000 / SERVICE_US, DEADLINE_MS);
    fprintf(f, "mode\tload\tservice_ms\toffered\tin_time\tlate\trefused\tgave_up\tgoodput\t"
               "ok_p50_ms\tok_p99_ms\tno_p50_ms\tlifo_taken\n");
    for (int m = 0; m < NMODES; m++)
        for (int l = 0; l < NLOADS; l++)
            tsv_row(f, modes[m].key, load_x10[l], SERVICE_US / 1000.0, &res[m][l]);
    for (int i = 0; i < 2; i++) {
        char key[64];
        snprintf(key, sizeof(key), "%s-slow", modes[slow_modes[i]].key);
        tsv_row(f, key, SLOW_LOAD_X10, 2 * SERVICE_US / 1000.0, &slow[i]);
    }
    return fclose(f) != 0;
}

int demo_overload(int quick, const char *data_dir)
{
    const band_time phase = (quick ? 80 : 250) * BAND_MSEC;
    const band_time service = SERVICE_US * BAND_USEC;
    static struct overload_result res[NMODES][NLOADS], slow[2];
    static const int slow_modes[2] = {2, 3}; /* deadline-aware, without and with LIFO */
    int failed = 0;
    for (int m = 0; m < NMODES; m++)
        for (int l = 0; l < NLOADS; l++)
            if (run_mode(&modes[m], load_x10[l], phase, service, &res[m][l]) != 0) {
                fprintf(stderr, "overload (%s, %.1fx): a request did not end exactly once\n",
                        modes[m].name, load_x10[l] / 10.0);
                failed = 1;
            }
    for (int i = 0; i < 2; i++)
        if (run_mode(&modes[slow_modes[i]], SLOW_LOAD_X10, phase, 2 * service, &slow[i]) != 0) {
            fprintf(stderr, "overload (%s, slow server): a request did not end exactly once\n",
                    modes[slow_modes[i]].name);
            failed = 1;
        }
    if (failed)
        return 1;

    printf("\noverload: one server of %d requests/s (%.1f ms each; it also finishes late work),"
           " deadline %d ms;\na client gives up when its request has not entered the queue "
           "after %d ms; each load runs %.0f ms\nfrom idle\n\n",
           1000000 / SERVICE_US, SERVICE_US / 1000.0, DEADLINE_MS, ENTER_MS,
           (double)phase / (double)BAND_MSEC);
    printf("goodput: requests served in time per second, as a share of capacity, by offered "
           "load\n");
    printf("%-26s", "queue discipline");
    for (int l = 0; l < NLOADS; l++)
        printf(" %6.1fx", load_x10[l] / 10.0);
    printf("\n");
    for (int m = 0; m < NMODES; m++) {
        printf("%-26s", modes[m].name);
        for (int l = 0; l < NLOADS; l++)
            printf(" %6.0f%%", 100.0 * res[m][l].goodput);
        printf("\n");
    }

    const int top = NLOADS - 1;
    printf("\nat %.1fx, what happened to each of %zu requests (last two rows: the server slowed "
           "to %.1f ms per\nrequest, offered %.1fx its planned capacity)\n",
           load_x10[top] / 10.0, res[0][top].offered, 2 * SERVICE_US / 1000.0,
           SLOW_LOAD_X10 / 10.0);
    printf("%-31s %7s %5s %7s %7s %14s %13s %9s\n", "queue discipline", "in time", "late",
           "refused", "gave up", "served p50/p99", "no p50/p99", "LIFO took");
    for (int m = 0; m < NMODES + 2; m++) {
        const struct overload_result *r = m < NMODES ? &res[m][top] : &slow[m - NMODES];
        const struct mode *md = m < NMODES ? &modes[m] : &modes[slow_modes[m - NMODES]];
        char name[40], okp[32], nop[32], lifo[16] = "-";
        snprintf(name, sizeof(name), "%s%s", md->name, m < NMODES ? "" : ", slow");
        snprintf(okp, sizeof(okp), "%.1f/%.1f ms", r->ok_p50, r->ok_p99);
        snprintf(nop, sizeof(nop), "%.1f/%.1f ms", r->no_p50, r->no_p99);
        if (md->lifo)
            snprintf(lifo, sizeof(lifo), "%" PRIu64, r->lifo_taken);
        printf("%-31s %7zu %5zu %7zu %7zu %14s %13s %9s\n", name, r->served_in_time, r->served_late,
               r->refused, r->timed_out, okp, nop, lifo);
    }
    printf("(in time: served before its deadline; late: served after it, wasted work; refused: "
           "answered at once,\n predicted to miss; gave up: waited %d ms to enter the queue; no: "
           "how long a client refused or\n giving up waited for that answer; LIFO took: served "
           "newest-first)\n",
           ENTER_MS);

    const struct overload_result *f32 = &res[0][top], *f1k = &res[1][top], *da = &res[2][top],
                                 *dal = &res[3][top], *l1k = &res[4][top];
    printf("verdict: goodput at %.1fx: FIFO %.0f%%, deep FIFO %.0f%%, deadline-aware %.0f%%, "
           "+ LIFO %.0f%%, deep LIFO %.0f%%\n",
           load_x10[top] / 10.0, 100.0 * f32->goodput, 100.0 * f1k->goodput, 100.0 * da->goodput,
           100.0 * dal->goodput, 100.0 * l1k->goodput);
    printf("a client told no waited %.1f ms for it under FIFO (p50), %.1f ms under "
           "deadline-aware\n",
           f32->no_p50, da->no_p50);
    printf("when LIFO helps: it reorders only the requests inside the channel.\n"
           "- Deep queue: all the waiting is inside; FIFO serves the oldest, after their "
           "deadline, LIFO the\n  newest (%zu in time against %zu; %" PRIu64
           " taken newest-first).\n"
           "- Queue of %u at full speed: deadline-aware admission bounds the wait to enter at "
           "%d ms and the\n  queue drains in %u ms, so FIFO order is already in time and the "
           "%d ms threshold is reached\n  only when the server stalls (LIFO took %" PRIu64
           "); then the oldest requests inside wait until the\n  overload ends (late: %zu with "
           "LIFO, %zu without; in time %zu against %zu).\n"
           "- Server slowed to %.1f ms: the %u inside take %u ms, a wait deadline-aware "
           "admission does not see;\n  LIFO keeps serving fresh ones (in time %zu against "
           "%zu, late %zu against %zu).\n",
           l1k->served_in_time, f1k->served_in_time, l1k->lifo_taken, SHALLOW, ENTER_MS,
           SHALLOW * SERVICE_US / 1000, LIFO_AFTER_MS, dal->lifo_taken, dal->served_late,
           da->served_late, dal->served_in_time, da->served_in_time, 2 * SERVICE_US / 1000.0,
           SHALLOW, 2 * SHALLOW * SERVICE_US / 1000, slow[1].served_in_time, slow[0].served_in_time,
           slow[1].served_late, slow[0].served_late);
    /* At half its capacity every discipline serves everything in time, unless the server
     * thread is kept off the processor: then the figures show the machine, not the queues. */
    double worst_half = 1.0;
    for (int m = 0; m < NMODES; m++)
        worst_half = res[m][0].goodput < worst_half ? res[m][0].goodput : worst_half;
    if (worst_half < 0.9 * (double)load_x10[0] / 10.0)
        printf("note: at %.1fx load only %.0f%% of capacity was served in time where %.0f%% was "
               "offered: the server\n  thread did not get a processor to itself (a busy "
               "machine), so these figures are not the queues'\n",
               load_x10[0] / 10.0, 100.0 * worst_half, 10.0 * load_x10[0]);
    if (data_dir != NULL)
        failed |= write_tsv(data_dir, res, slow, slow_modes);
    return failed;
}
