/* SPDX-License-Identifier: MIT */
/*
 * stress_fd.c - one owner thread drives a band_fd_queue through an epoll loop while other
 * threads hold and release permits, send and receive on the same semaphore and channel.
 *
 * The owner keeps a pool of ops busy: acquisitions, sends and receives with deadlines
 * that are infinite, already passed, or a few hundred microseconds away, and band_fd_queue_at()
 * operations due a few hundred microseconds ahead, some of them under cancellation tokens
 * that another thread requests at random (the owner replaces a requested token once no op
 * uses it); it cancels ops at random (sometimes twice), reaps in batches of random size
 * (so partial batches and re-signalling happen all the time), and now and then closes
 * the queue with ops still pending, reaps what is left, destroys it and starts a new one
 * (so close races with wakes on the other threads, and destroy with their last steps).
 *
 * Checked (by the owner, which is the test's main thread, after the workers joined):
 *  - every submission is reported exactly once by reap, also after a close, and destroy
 *    refuses a queue that still owns ops and frees one that owns none;
 *  - a status of BAND_ECANCELED comes only from a cancel that returned 0, a requested
 *    token, or close, and a cancel that returned 0 always ends in BAND_ECANCELED;
 *  - BAND_ETIMEDOUT is never reported before its deadline, nor a due time before it came
 *    (band_now() after the reap is at or past it);
 *  - every token's hooks are gone at the end (it can be destroyed);
 *  - every element whose send was reported 0 is received exactly once (by the owner, the
 *    consumer thread, or the final drain), and no element whose send failed ever is;
 *  - at quiescence every permit is back: available == the initial count, no waiter left.
 *
 * Bounded by iterations and by wall time (about 2 s; CI has 2 cores, and this runs under
 * TSan and ASan too).
 */
#include "fd_test_util.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#define PERMITS   6
#define CHAN_CAP  8
#define POOL      48
#define MAX_SEQ   (1u << 18) /* per sender: the iteration bound of the senders */
#define MAX_ITERS 400000
#define WALL_NS   (2 * BAND_SEC)

#define TOKENS 3

enum { K_ACQ, K_SEND, K_RECV, K_AT };
enum { FROM_OWNER = 0, FROM_PRODUCER = 1 };

struct elem {
    uint32_t who, pad;
    uint64_t seq;
};

/* Per element: 0 unknown, 1 sent (must arrive once), 2 refused (must never arrive). */
struct ledger {
    _Atomic unsigned char *sent[2];
    _Atomic unsigned char *received[2];
};

struct sop {
    band_fd_queue_op op;
    band_waiter w;               /* acquisitions */
    struct band_chan_send_op so; /* sends */
    struct band_chan_recv_op ro; /* receives */
    int tok;                     /* index of its token, or -1 */
    int kind;
    uint64_t n;
    band_time deadline;
    int owned;     /* a queue owns it */
    int cancel_ok; /* a cancel returned 0 for this submission */
    struct elem sbuf, rbuf;
};

struct world {
    band_sem *sem;
    band_chan *ch;
    struct ledger led;
    atomic_int stop;
    char fail[256]; /* first failure seen by the owner */
    char wfail[256];
    atomic_int wfailed; /* first failure seen by a worker (claimed once) */
    uint64_t submitted, reported, cancels0, timeouts, destroys, reaps;
    uint64_t owner_seq;
    pthread_mutex_t mu;       /* tok[] against the requesting thread */
    band_cancel *tok[TOKENS]; /* replaced by the owner once requested and unused */
    unsigned refs[TOKENS];    /* owner only: ops bound under tok[i] */
    uint64_t token_cancels, tokens_made, due, due_cancels;
    atomic_uint_fast64_t requests;
};

static void wfail(struct world *w, const char *msg, uint64_t a)
{
    if (atomic_exchange(&w->wfailed, 1) == 0)
        snprintf(w->wfail, sizeof(w->wfail), "%s (%llu)", msg, (unsigned long long)a);
}

#define FAIL(w, ...)                                                                               \
    do {                                                                                           \
        if ((w)->fail[0] == '\0')                                                                  \
            snprintf((w)->fail, sizeof((w)->fail), __VA_ARGS__);                                   \
    } while (0)

static void mark_received(struct world *w, const struct elem *e, int worker)
{
    if (e->who > 1 || e->seq >= MAX_SEQ) {
        if (worker)
            wfail(w, "garbage element", e->seq);
        else
            FAIL(w, "garbage element who=%u seq=%llu", e->who, (unsigned long long)e->seq);
        return;
    }
    unsigned char before = atomic_fetch_add(&w->led.received[e->who][e->seq], 1);
    unsigned char st = atomic_load(&w->led.sent[e->who][e->seq]);
    if (before != 0 || st == 2) {
        if (worker)
            wfail(w, "element received twice or after a refused send", e->seq);
        else
            FAIL(w, "element %u/%llu received twice or after a refused send", e->who,
                 (unsigned long long)e->seq);
    }
}

/* ---------------------------------------------------------------------------------- */
/* Worker threads                                                                      */

static int holder_main(void *arg)
{
    struct world *w = arg;
    uint64_t rng = (uint64_t)(uintptr_t)&rng;
    while (!atomic_load(&w->stop)) {
        uint64_t k = test_rng_range(&rng, 1, 2);
        int rc = band_sem_acquire(w->sem, k, band_deadline_after(300 * BAND_USEC), NULL);
        if (rc == 0) {
            for (int i = 0; i < (int)test_rng_range(&rng, 0, 50); i++)
                sched_yield();
            if (band_sem_release(w->sem, k) != 0)
                wfail(w, "holder release failed", k);
        } else if (rc != BAND_ETIMEDOUT) {
            wfail(w, "holder acquire failed", (uint64_t)-rc);
        }
    }
    return 0;
}

static int producer_main(void *arg)
{
    struct world *w = arg;
    for (uint64_t seq = 0; seq < MAX_SEQ && !atomic_load(&w->stop); seq++) {
        struct elem e = {FROM_PRODUCER, 0, seq};
        /* Marked sent before the send: a receiver may take it before send returns. */
        atomic_store(&w->led.sent[FROM_PRODUCER][seq], 1);
        int rc = band_chan_send(w->ch, &e, 1, band_deadline_after(500 * BAND_USEC), NULL);
        if (rc != 0) {
            atomic_store(&w->led.sent[FROM_PRODUCER][seq], 2);
            if (atomic_load(&w->led.received[FROM_PRODUCER][seq]) != 0)
                wfail(w, "refused element was received", seq);
            if (rc != BAND_ETIMEDOUT)
                wfail(w, "producer send failed", (uint64_t)-rc);
        }
    }
    return 0;
}

static int consumer_main(void *arg)
{
    struct world *w = arg;
    while (!atomic_load(&w->stop)) {
        struct elem e;
        int rc = band_chan_recv(w->ch, &e, NULL, band_deadline_after(500 * BAND_USEC), NULL);
        if (rc == 0)
            mark_received(w, &e, 1);
        else if (rc != BAND_ETIMEDOUT)
            wfail(w, "consumer recv failed", (uint64_t)-rc);
    }
    return 0;
}

/* ---------------------------------------------------------------------------------- */
/* The owner                                                                           */

/* One report of @s with status @st; @by_close allows a cancel nobody asked for. */
static void account(struct world *w, struct sop *s, int st, int by_close)
{
    if (!s->owned) {
        FAIL(w, "op reported while no queue owned it (kind %d, status %d)", s->kind, st);
        return;
    }
    s->owned = 0;
    w->reported++;
    if (s->cancel_ok && st != BAND_ECANCELED)
        FAIL(w, "cancel returned 0 but the op ended with %d", st);
    int by_token = s->tok >= 0 && band_cancel_is_requested(w->tok[s->tok]);
    if (st == BAND_ECANCELED && !s->cancel_ok && !by_close) {
        if (!by_token)
            FAIL(w, "BAND_ECANCELED without a successful cancel or a requested token");
        w->token_cancels++;
    }
    if (s->tok >= 0)
        w->refs[s->tok]--;
    if (st == BAND_ETIMEDOUT) {
        w->timeouts++;
        if (s->deadline == BAND_FOREVER || band_now() < s->deadline)
            FAIL(w, "BAND_ETIMEDOUT before the deadline (kind %d)", s->kind);
    }
    if (st != 0 && st != BAND_ETIMEDOUT && st != BAND_ECANCELED)
        FAIL(w, "unexpected status %d (kind %d)", st, s->kind);
    switch (s->kind) {
    case K_ACQ:
        if (st == 0 && band_sem_release(w->sem, s->n) != 0) /* the owner's permits */
            FAIL(w, "permit release failed");
        break;
    case K_AT:
        if (st == BAND_ETIMEDOUT)
            FAIL(w, "a due time reported BAND_ETIMEDOUT");
        if (st == 0) {
            w->due++;
            if (band_now() < s->deadline)
                FAIL(w, "a due time reported before it came");
        } else {
            w->due_cancels++;
        }
        break;
    case K_SEND:
        if (st == 0) {
            atomic_store(&w->led.sent[FROM_OWNER][s->sbuf.seq], 1);
        } else {
            atomic_store(&w->led.sent[FROM_OWNER][s->sbuf.seq], 2);
            if (atomic_load(&w->led.received[FROM_OWNER][s->sbuf.seq]) != 0)
                FAIL(w, "owner's refused element %llu was received",
                     (unsigned long long)s->sbuf.seq);
        }
        break;
    case K_RECV:
        if (st == 0) {
            if (s->ro.bytes != 1)
                FAIL(w, "received bytes %llu, want 1", (unsigned long long)s->ro.bytes);
            mark_received(w, &s->rbuf, 0);
        }
        break;
    }
}

static void submit_one(struct world *w, band_fd_queue *q, struct sop *s, uint64_t *rng)
{
    uint64_t r = test_rng_range(rng, 0, 99);
    band_time deadline =
        r < 40   ? BAND_FOREVER
        : r < 50 ? band_now() - 1
                 : band_deadline_after((band_time)test_rng_range(rng, 0, 400) * BAND_USEC);
    s->deadline = deadline;
    s->cancel_ok = 0;
    int kind = (int)test_rng_range(rng, 0, 3);
    if (kind == K_SEND && w->owner_seq >= MAX_SEQ)
        kind = K_ACQ;
    s->kind = kind;
    s->tok = (int)test_rng_range(rng, 0, TOKENS * 2 - 1) - TOKENS; /* half of them: none */
    if (s->tok < 0)
        s->tok = -1;
    band_cancel *tok = s->tok >= 0 ? w->tok[s->tok] : NULL;
    int rc;
    switch (kind) {
    case K_ACQ:
        s->n = test_rng_range(rng, 1, 3);
        rc = fdt_acquire_tok(q, &s->op, &s->w, w->sem, s->n, deadline, tok);
        break;
    case K_SEND:
        s->sbuf = (struct elem){FROM_OWNER, 0, w->owner_seq++};
        /* Marked sent before the submission: a receiver may take it at once. */
        atomic_store(&w->led.sent[FROM_OWNER][s->sbuf.seq], 1);
        rc = band_fd_queue_bind(q, &s->op, &s->so.w, deadline, tok);
        if (rc == 0)
            rc = band_fd_queue_start(&s->op, band_chan_send_async(w->ch, &s->sbuf, 1, &s->so));
        break;
    case K_RECV:
        rc = band_fd_queue_bind(q, &s->op, &s->ro.w, deadline, tok);
        if (rc == 0)
            rc = band_fd_queue_start(&s->op, band_chan_recv_async(w->ch, &s->rbuf, &s->ro));
        break;
    default:
        s->deadline = band_deadline_after((band_time)test_rng_range(rng, 0, 400) * BAND_USEC);
        rc = band_fd_queue_at(q, &s->op, s->deadline, tok);
        break;
    }
    if (rc != 0) {
        FAIL(w, "submit kind %d failed: %d", kind, rc);
        return;
    }
    s->owned = 1;
    if (s->tok >= 0)
        w->refs[s->tok]++;
    w->submitted++;
}

/* A requested token no op uses any more is destroyed and replaced by a fresh one. */
static void renew_tokens(struct world *w)
{
    for (int k = 0; k < TOKENS; k++) {
        if (w->refs[k] != 0 || !band_cancel_is_requested(w->tok[k]))
            continue;
        pthread_mutex_lock(&w->mu);
        if (band_cancel_destroy(w->tok[k]) != 0 || band_cancel_create(&w->tok[k], NULL) != 0)
            FAIL(w, "could not replace a requested token");
        pthread_mutex_unlock(&w->mu);
        w->tokens_made++;
    }
}

static int requester_main(void *arg)
{
    struct world *w = arg;
    uint64_t rng = 0x7e57;
    while (!atomic_load(&w->stop)) {
        struct timespec ts = {0, (long)test_rng_range(&rng, 100, 800) * 1000L};
        nanosleep(&ts, NULL);
        pthread_mutex_lock(&w->mu);
        if (band_cancel_request(w->tok[test_rng_range(&rng, 0, TOKENS - 1)]) == 0)
            atomic_fetch_add(&w->requests, 1);
        pthread_mutex_unlock(&w->mu);
    }
    return 0;
}

/* Close @q with ops pending (racing with the workers' wakes), reap what is left (wakes
 * that won the race still arrive through the eventfd), then destroy it. */
static void close_queue(struct world *w, band_fd_queue *q, int ep)
{
    if (band_fd_queue_count(q) > 0 && band_fd_queue_destroy(q) != BAND_EBUSY)
        FAIL(w, "destroy of a queue that owns ops did not refuse");
    if (band_fd_queue_close(q) != 0 || band_fd_queue_is_closed(q) != 1)
        FAIL(w, "close failed");
    band_fd_queue_op *got[16];
    band_time until = band_deadline_after(5 * BAND_SEC);
    while (band_fd_queue_count(q) > 0 && band_now() < until) {
        struct epoll_event ev;
        (void)epoll_wait(ep, &ev, 1, 1);
        size_t n = band_fd_queue_reap(q, got, 16);
        for (size_t i = 0; i < n; i++)
            account(w, (struct sop *)got[i]->data, got[i]->status, 1);
    }
    if (band_fd_queue_count(q) != 0)
        FAIL(w, "%zu ops still owned 5 s after close", band_fd_queue_count(q));
    else if (band_fd_queue_destroy(q) != 0)
        FAIL(w, "destroy of an empty queue failed");
    close(ep);
    w->destroys++;
}

static void run_owner(struct world *w, struct sop *pool)
{
    uint64_t rng = UINT64_C(0x5eed);
    band_fd_queue *q = NULL;
    int ep = -1;
    band_fd_queue_op *got[16];
    band_time end = band_deadline_after(WALL_NS);
    for (unsigned it = 0; it < MAX_ITERS && band_now() < end && w->fail[0] == '\0'; it++) {
        if (q == NULL) {
            if (band_fd_queue_create(&q) != 0) {
                FAIL(w, "band_fd_queue_create failed");
                break;
            }
            ep = fdt_epoll_open(q, (int)(it & 1)); /* level and edge triggered in turn */
            if (ep < 0) {
                FAIL(w, "epoll setup failed");
                break;
            }
        }
        /* Keep the pool busy. */
        for (int k = 0; k < 4; k++) {
            struct sop *s = &pool[test_rng_range(&rng, 0, POOL - 1)];
            if (!s->owned)
                submit_one(w, q, s, &rng);
        }
        /* Cancel something now and then, sometimes twice. */
        if (test_rng_range(&rng, 0, 9) < 3) {
            struct sop *s = &pool[test_rng_range(&rng, 0, POOL - 1)];
            if (s->owned) {
                int rc = band_fd_queue_cancel(&s->op);
                if (rc == 0) {
                    if (s->cancel_ok)
                        FAIL(w, "second cancel returned 0");
                    s->cancel_ok = 1;
                    w->cancels0++;
                } else if (rc != BAND_EALREADY) {
                    FAIL(w, "cancel of an owned op returned %d", rc);
                }
            } else if (band_fd_queue_cancel(&s->op) != BAND_EINVAL) {
                FAIL(w, "cancel of an idle op did not return BAND_EINVAL");
            }
        }
        /* Wait a little in the loop, then reap a batch of random size. */
        int ms = band_fd_queue_timeout_ms(q);
        if (ms < 0 || ms > 1)
            ms = 1;
        struct epoll_event ev;
        (void)epoll_wait(ep, &ev, 1, test_rng_range(&rng, 0, 3) == 0 ? ms : 0);
        size_t max = (size_t)test_rng_range(&rng, 1, 16);
        size_t n = band_fd_queue_reap(q, got, max);
        w->reaps++;
        for (size_t i = 0; i < n; i++)
            account(w, (struct sop *)got[i]->data, got[i]->status, 0);
        renew_tokens(w);
        /* Now and then: close with ops pending, racing with the workers' wakes. */
        if (test_rng_range(&rng, 0, 999) == 0) {
            close_queue(w, q, ep);
            q = NULL;
            ep = -1;
        }
    }
    if (q != NULL)
        close_queue(w, q, ep);
}

static void test_stress_fd(void **state)
{
    (void)state;
    struct world *w = calloc(1, sizeof(*w));
    struct sop *pool = calloc(POOL, sizeof(*pool));
    assert_non_null(w);
    assert_non_null(pool);
    for (int i = 0; i < 2; i++) {
        w->led.sent[i] = calloc(MAX_SEQ, 1);
        w->led.received[i] = calloc(MAX_SEQ, 1);
        assert_non_null(w->led.sent[i]);
        assert_non_null(w->led.received[i]);
    }
    assert_int_equal(band_sem_create(&w->sem, PERMITS, NULL), 0);
    assert_int_equal(band_chan_create(&w->ch, sizeof(struct elem), CHAN_CAP, NULL), 0);
    assert_int_equal(pthread_mutex_init(&w->mu, NULL), 0);
    for (int k = 0; k < TOKENS; k++)
        assert_int_equal(band_cancel_create(&w->tok[k], NULL), 0);
    atomic_init(&w->requests, 0);
    for (int i = 0; i < POOL; i++)
        band_fd_queue_op_init(&pool[i].op, &pool[i]);

    struct test_thread th[5];
    assert_int_equal(test_thread_start(&th[0], holder_main, w), 0);
    assert_int_equal(test_thread_start(&th[1], holder_main, w), 0);
    assert_int_equal(test_thread_start(&th[2], producer_main, w), 0);
    assert_int_equal(test_thread_start(&th[3], consumer_main, w), 0);
    assert_int_equal(test_thread_start(&th[4], requester_main, w), 0);

    band_time t0 = band_now();
    run_owner(w, pool);
    atomic_store(&w->stop, 1);
    for (int i = 0; i < 5; i++)
        assert_int_equal(test_thread_join(&th[i]), 0);
    band_time took = band_now() - t0;

    /* Drain what is still queued in the channel. */
    struct elem e;
    while (band_chan_try_recv(w->ch, &e, NULL) == 0)
        mark_received(w, &e, 0);

    print_message("stress_fd: %llu submissions, %llu reports, %llu reaps, %llu cancels, "
                  "%llu timeouts, %llu destroys, %llu owner sends, %llu due, %llu token "
                  "cancels (%llu requests, %llu tokens replaced), %.2f s\n",
                  (unsigned long long)w->submitted, (unsigned long long)w->reported,
                  (unsigned long long)w->reaps, (unsigned long long)w->cancels0,
                  (unsigned long long)w->timeouts, (unsigned long long)w->destroys,
                  (unsigned long long)w->owner_seq, (unsigned long long)w->due,
                  (unsigned long long)w->token_cancels,
                  (unsigned long long)atomic_load(&w->requests), (unsigned long long)w->tokens_made,
                  (double)took / 1e9);
    if (w->fail[0] != '\0')
        fail_msg("owner: %s", w->fail);
    if (atomic_load(&w->wfailed))
        fail_msg("worker: %s", w->wfail);

    assert_u64_equal(w->reported, w->submitted);
    for (int i = 0; i < POOL; i++)
        assert_int_equal(pool[i].owned, 0);
    for (int who = 0; who < 2; who++) {
        for (uint32_t seq = 0; seq < MAX_SEQ; seq++) {
            unsigned char st = atomic_load(&w->led.sent[who][seq]);
            unsigned char rc = atomic_load(&w->led.received[who][seq]);
            if ((st == 1 && rc != 1) || (st != 1 && rc != 0))
                fail_msg("element %d/%u: sent state %u, received %u times", who, seq, st, rc);
        }
    }
    band_sem_stats st;
    assert_int_equal(band_sem_get_stats(w->sem, &st), 0);
    assert_u64_equal(st.available, PERMITS);
    assert_u64_equal(st.waiters, 0);
    assert_u64_equal(st.debt, 0);
    assert_true(w->submitted > 1000);
    assert_true(w->timeouts > 0);
    assert_true(w->cancels0 > 0);
    assert_true(w->destroys > 1);
    assert_true(w->due > 0 && w->due_cancels > 0);
    assert_true(w->token_cancels > 0 && w->tokens_made > 0);
    for (int k = 0; k < TOKENS; k++) {
        assert_int_equal(w->refs[k], 0);
        assert_int_equal(band_cancel_destroy(w->tok[k]), 0); /* every hook was removed */
    }
    pthread_mutex_destroy(&w->mu);

    band_chan_close(w->ch);
    assert_int_equal(band_chan_destroy(w->ch), 0);
    assert_int_equal(band_sem_destroy(w->sem), 0);
    for (int i = 0; i < 2; i++) {
        free(w->led.sent[i]);
        free(w->led.received[i]);
    }
    free(pool);
    free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stress_fd),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
