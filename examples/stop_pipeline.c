/* SPDX-License-Identifier: MIT */
/*
 * stop_pipeline.c - Ctrl-C stops a three-stage thread pipeline, and nothing is lost.
 *
 * A producer feeds a worker through one bounded channel, the worker feeds a sink through
 * another. Every blocking call of every stage takes the same cancellation token, and the
 * SIGINT handler requests it (band_cancel_request() is async-signal-safe). Each stage
 * then returns from whatever it is blocked in with BAND_ECANCELED, holding nothing: an
 * item a stage could not pass on stays in its hands and is counted. A requested token
 * means "do not wait", so a call that can complete at once still does; each stage also
 * looks at the token once per item, so that none keeps going while it never has to wait. At the end
 * the program checks the books: every item produced was consumed by the sink, is still in a
 * channel, or was in a stage's hands when it stopped. Exactly once, none lost.
 *
 *   stop_pipeline            run until Ctrl-C
 *   stop_pipeline --self     send itself SIGINT after 200 ms (what `make check` runs)
 */
#define _POSIX_C_SOURCE 200809L
#include <band/band.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static band_cancel *stop; /* requested by SIGINT */

static void on_sigint(int sig)
{
    (void)sig;
    (void)band_cancel_request(stop); /* async-signal-safe */
}

struct stage {
    band_chan *in, *out; /* NULL at the ends of the pipeline */
    uint64_t done;       /* items this stage finished (produced, passed on, consumed) */
    uint64_t held;       /* 1 when it stopped with an item in hands */
    uint64_t sum;        /* the sink's checksum of what it consumed */
};

static void *producer(void *arg)
{
    struct stage *st = arg;
    for (uint64_t next = 1; !band_cancel_is_requested(stop); next++) {
        int rc = band_chan_send(st->out, &next, 0, BAND_FOREVER, stop);
        if (rc != 0) {
            st->held = 1; /* the item the channel refused is still ours */
            return NULL;
        }
        st->done = next;
    }
    return NULL;
}

static void *worker(void *arg)
{
    struct stage *st = arg;
    while (!band_cancel_is_requested(stop)) {
        uint64_t item;
        if (band_chan_recv(st->in, &item, NULL, BAND_FOREVER, stop) != 0)
            return NULL;
        struct timespec work = {0, 20 * 1000}; /* the slow stage */
        nanosleep(&work, NULL);
        if (band_chan_send(st->out, &item, 0, BAND_FOREVER, stop) != 0) {
            st->held = 1;
            st->sum = item; /* remembered, so the books can name it */
            return NULL;
        }
        st->done++;
    }
    return NULL;
}

static void *sink(void *arg)
{
    struct stage *st = arg;
    uint64_t item;
    while (!band_cancel_is_requested(stop) &&
           band_chan_recv(st->in, &item, NULL, BAND_FOREVER, stop) == 0) {
        st->done++;
        st->sum += item;
    }
    return NULL;
}

static void *self_interrupt(void *arg)
{
    (void)arg;
    struct timespec t = {0, 200 * 1000 * 1000};
    nanosleep(&t, NULL);
    kill(getpid(), SIGINT); /* delivered to whichever thread the kernel picks */
    return NULL;
}

/* Receive what is left in @c; adds the items' sum to *@sum and returns their count. */
static uint64_t drain(band_chan *c, uint64_t *sum)
{
    uint64_t n = 0, item;
    while (band_chan_try_recv(c, &item, NULL) == 0) {
        n++;
        *sum += item;
    }
    return n;
}

int main(int argc, char **argv)
{
    int self = argc > 1 && strcmp(argv[1], "--self") == 0;
    band_chan *a, *b;
    if (band_cancel_create(&stop, NULL) != 0 || band_chan_create(&a, sizeof(uint64_t), 64, NULL) ||
        band_chan_create(&b, sizeof(uint64_t), 64, NULL))
        return 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);

    struct stage p = {.out = a}, w = {.in = a, .out = b}, s = {.in = b};
    pthread_t tp, tw, ts, ti;
    pthread_create(&tp, NULL, producer, &p);
    pthread_create(&tw, NULL, worker, &w);
    pthread_create(&ts, NULL, sink, &s);
    if (self)
        pthread_create(&ti, NULL, self_interrupt, NULL);
    else
        fprintf(stderr, "running; press Ctrl-C to stop\n");
    pthread_join(tp, NULL);
    pthread_join(tw, NULL);
    pthread_join(ts, NULL);
    if (self)
        pthread_join(ti, NULL);

    /* The books: 1 + 2 + ... + produced, item by item. */
    uint64_t in_a_sum = 0, in_b_sum = 0;
    uint64_t in_a = drain(a, &in_a_sum), in_b = drain(b, &in_b_sum);
    uint64_t produced = p.done;
    uint64_t accounted = s.done + in_a + in_b + w.held;
    uint64_t want_sum = produced * (produced + 1) / 2;
    uint64_t got_sum = s.sum + in_a_sum + in_b_sum + (w.held ? w.sum : 0);
    printf("stopped by SIGINT: produced %llu, consumed %llu, still queued %llu + %llu, "
           "in a stage's hands %llu (plus the producer's next item: %llu)\n",
           (unsigned long long)produced, (unsigned long long)s.done, (unsigned long long)in_a,
           (unsigned long long)in_b, (unsigned long long)w.held, (unsigned long long)p.held);
    int ok = accounted == produced && got_sum == want_sum && band_cancel_is_requested(stop);
    printf("%s: every item exactly once\n", ok ? "OK" : "LOST OR DUPLICATED");
    band_chan_close(a);
    band_chan_close(b);
    band_chan_destroy(a);
    band_chan_destroy(b);
    band_cancel_destroy(stop);
    return ok ? 0 : 1;
}
