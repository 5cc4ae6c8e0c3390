/* SPDX-License-Identifier: MIT */
/*
 * stress_broadcast.c - several senders and receivers on one broadcast, in both modes.
 *
 * Each message carries {sender, per-sender sequence, checksum}. Senders mix blocking sends
 * with short random deadlines, try_send and async sends that they cancel at random (a
 * cancelled or timed-out send was not sent, so the sender retries the same sequence).
 * Receivers mix blocking receives with short deadlines, try_recv and async receives that
 * they cancel at random, and run until BAND_ECLOSED. Workers never assert: they record the
 * first inconsistency and counts; the main thread checks after join.
 *
 *  - lossless: every fixed receiver gets every message exactly once, in per-sender order
 *    (the sequence of each sender arrives as 0, 1, 2, ... with no gap), with the checksum
 *    sums equal to what the senders sent. A churning receiver subscribes and unsubscribes
 *    over and over: within each subscription its per-sender sequences are contiguous.
 *  - lossy: receivers are slower than senders, so they lag; for each receiver
 *    received + lagged == sent exactly, per-sender sequences strictly increase, and the
 *    gaps it saw add up to exactly the lag counts it was told.
 *  - at quiescence the counters agree with the workers' counts and band__broadcast_check()
 *    holds.
 *
 * Bounded by iterations AND by a few seconds of wall time per scenario (CI: 2 cores, TSan
 * and ASan).
 */
#include "test.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "band/broadcast.h"

#include "prim/broadcast_internal.h"

#define NSEND     3
#define NRECV     3 /* fixed receivers; one more subscribes and unsubscribes over and over */
#define MAX_MSGS  20000
#define SAN_MSGS  8000
#define WALL_SECS 3

struct msg {
    uint64_t sender;
    uint64_t seq;
    uint64_t check;
};

static uint64_t checksum(uint64_t sender, uint64_t seq)
{
    uint64_t z = sender * UINT64_C(0x9E3779B97F4A7C15) ^ (seq + 0x1234);
    return test_rng_next(&z);
}

struct scenario {
    const char *name;
    int mode;
    uint64_t cap;
    band_broadcast *b;
    uint64_t max_msgs;
    band_time stop_at;
    atomic_int errors;
    pthread_mutex_t err_mu;
    char err[256];
};

struct sender {
    struct scenario *sc;
    int id;
    uint64_t rng;
    uint64_t sent; /* messages sent: sequences 0 .. sent-1 */
    uint64_t sum;  /* checksum sum of what was sent */
    uint64_t timeouts, eagain, async_pending, cancel_ok, cancel_late;
};

struct receiver {
    struct scenario *sc;
    int id;
    int churn; /* 1: subscribe/unsubscribe repeatedly */
    uint64_t rng;
    band_broadcast_rx rx;
    uint64_t next[NSEND]; /* next sequence expected from each sender */
    int seen[NSEND];      /* churn: a message from this sender arrived in this period */
    uint64_t received, lagged, lag_events, gaps, sum[NSEND], count[NSEND];
    uint64_t timeouts, cancel_ok, cancel_late, periods;
};

struct async_op {
    union {
        band_broadcast_send_op s;
        band_broadcast_recv_op r;
    } u;
    atomic_int woken;
};

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
static void
record_error(struct scenario *sc, const char *fmt, ...)
{
    if (atomic_fetch_add(&sc->errors, 1) == 0) {
        pthread_mutex_lock(&sc->err_mu);
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(sc->err, sizeof(sc->err), fmt, ap);
        va_end(ap);
        pthread_mutex_unlock(&sc->err_mu);
    }
}

static void async_wake(band_waiter *w)
{
    struct async_op *op = w->data;
    atomic_fetch_add_explicit(&op->woken, 1, memory_order_release);
}

static void wait_woken(struct async_op *op)
{
    while (atomic_load_explicit(&op->woken, memory_order_acquire) == 0)
        sched_yield();
}

/* ------------------------------------------------------------------------ senders */

/* Try to send @m once; 1 if it was sent. */
static int send_once(struct sender *s, const struct msg *m)
{
    struct scenario *sc = s->sc;
    uint64_t how = test_rng_range(&s->rng, 0, 9);
    int rc;
    if (how < 4) {
        band_time d = band_deadline_after((band_time)test_rng_range(&s->rng, 0, 500) * BAND_USEC);
        rc = band_broadcast_send(sc->b, m, d, NULL);
        if (rc == BAND_ETIMEDOUT) {
            s->timeouts++;
            return 0;
        }
    } else if (how < 7) {
        rc = band_broadcast_try_send(sc->b, m);
        if (rc == BAND_EAGAIN) {
            s->eagain++;
            sched_yield();
            return 0;
        }
    } else {
        struct async_op op;
        atomic_init(&op.woken, 0);
        band_waiter_init(&op.u.s.w, async_wake, &op);
        rc = band_broadcast_send_async(sc->b, m, &op.u.s);
        if (rc == BAND_PENDING) {
            s->async_pending++;
            for (uint64_t k = test_rng_range(&s->rng, 0, 3); k > 0; k--)
                sched_yield();
            int c = band_waiter_cancel(&op.u.s.w, BAND_ECANCELED);
            if (c == 0) {
                s->cancel_ok++;
                if (atomic_load(&op.woken) != 0)
                    record_error(sc, "send cancelled after its wake");
                return 0;
            }
            if (c != BAND_EALREADY)
                record_error(sc, "send cancel returned %d", c);
            s->cancel_late++;
            wait_woken(&op);
            if (atomic_load(&op.woken) != 1)
                record_error(sc, "send woken %d times", atomic_load(&op.woken));
            rc = band_waiter_status(&op.u.s.w);
        }
    }
    if (rc != 0) {
        record_error(sc, "sender %d: send returned %d", s->id, rc);
        return -1;
    }
    return 1;
}

static int sender_main(void *arg)
{
    struct sender *s = arg;
    struct scenario *sc = s->sc;
    while (s->sent < sc->max_msgs && band_now() < sc->stop_at && atomic_load(&sc->errors) == 0) {
        struct msg m = {(uint64_t)s->id, s->sent, checksum((uint64_t)s->id, s->sent)};
        int r = send_once(s, &m);
        if (r < 0)
            break;
        if (r == 1) {
            s->sent++;
            s->sum += m.check;
        }
        if (sc->mode == BAND_BROADCAST_LOSSY)
            sched_yield(); /* let the receivers run between laps */
    }
    return 0;
}

/* ------------------------------------------------------------------------ receivers */

/* Check and count one message. */
static void got_msg(struct receiver *r, const struct msg *m)
{
    struct scenario *sc = r->sc;
    if (m->sender >= NSEND || m->check != checksum(m->sender, m->seq)) {
        record_error(sc, "rx %d: corrupt message", r->id);
        return;
    }
    uint64_t s = m->sender;
    if (sc->mode == BAND_BROADCAST_LOSSLESS) {
        if (r->churn && !r->seen[s]) {
            if (m->seq < r->next[s])
                record_error(sc, "churn rx: sender %llu went back", (unsigned long long)s);
            r->seen[s] = 1;
        } else if (m->seq != r->next[s]) {
            record_error(sc, "rx %d: sender %llu: got %llu, expected %llu", r->id,
                         (unsigned long long)s, (unsigned long long)m->seq,
                         (unsigned long long)r->next[s]);
        }
    } else {
        if (m->seq < r->next[s])
            record_error(sc, "rx %d: sender %llu: %llu after %llu", r->id, (unsigned long long)s,
                         (unsigned long long)m->seq, (unsigned long long)r->next[s]);
        else
            r->gaps += m->seq - r->next[s];
    }
    r->next[s] = m->seq + 1;
    r->received++;
    r->count[s]++;
    r->sum[s] += m->check;
}

/* Receive once. Returns 0 (handled something or nothing yet), 1 on BAND_ECLOSED. */
static int recv_once(struct receiver *r)
{
    struct scenario *sc = r->sc;
    struct msg m;
    uint64_t how = test_rng_range(&r->rng, 0, 9);
    uint64_t missed = 0;
    int rc;
    if (how < 4) {
        band_time d = band_deadline_after((band_time)test_rng_range(&r->rng, 0, 500) * BAND_USEC);
        rc = band_broadcast_recv(&r->rx, &m, d, NULL);
        if (rc == BAND_ETIMEDOUT) {
            r->timeouts++;
            return 0;
        }
        if (rc == BAND_ELAGGED)
            missed = band_broadcast_rx_lagged(&r->rx);
    } else if (how < 7) {
        rc = band_broadcast_try_recv(&r->rx, &m);
        if (rc == BAND_EAGAIN) {
            sched_yield();
            return 0;
        }
        if (rc == BAND_ELAGGED)
            missed = band_broadcast_rx_lagged(&r->rx);
    } else {
        struct async_op op;
        atomic_init(&op.woken, 0);
        band_waiter_init(&op.u.r.w, async_wake, &op);
        rc = band_broadcast_recv_async(&r->rx, &m, &op.u.r);
        if (rc == BAND_ELAGGED)
            missed = op.u.r.lagged;
        if (rc == BAND_PENDING) {
            for (uint64_t k = test_rng_range(&r->rng, 0, 3); k > 0; k--)
                sched_yield();
            int c = band_waiter_cancel(&op.u.r.w, BAND_ECANCELED);
            if (c == 0) {
                r->cancel_ok++;
                return 0;
            }
            if (c != BAND_EALREADY)
                record_error(sc, "recv cancel returned %d", c);
            r->cancel_late++;
            wait_woken(&op);
            if (atomic_load(&op.woken) != 1)
                record_error(sc, "recv woken %d times", atomic_load(&op.woken));
            rc = band_waiter_status(&op.u.r.w);
            if (rc == BAND_ELAGGED)
                record_error(sc, "a queued receive lagged");
        }
    }
    switch (rc) {
    case 0:
        got_msg(r, &m);
        return 0;
    case BAND_ELAGGED:
        if (sc->mode != BAND_BROADCAST_LOSSY || missed == 0)
            record_error(sc, "rx %d: lag of %llu", r->id, (unsigned long long)missed);
        r->lagged += missed;
        r->lag_events++;
        return 0;
    case BAND_ECLOSED:
        return 1;
    default:
        record_error(sc, "rx %d: receive returned %d", r->id, rc);
        return 1;
    }
}

static int receiver_main(void *arg)
{
    struct receiver *r = arg;
    struct scenario *sc = r->sc;
    if (!r->churn) {
        /* Subscribed by the main thread before any send. */
        while (recv_once(r) == 0) {
            if (sc->mode == BAND_BROADCAST_LOSSY && test_rng_range(&r->rng, 0, 3) == 0)
                sched_yield(); /* slower than the senders: make them lap us */
        }
        return 0;
    }
    for (;;) {
        band_broadcast_rx_init(&r->rx);
        int rc = band_broadcast_subscribe(sc->b, &r->rx);
        if (rc == BAND_ECLOSED)
            return 0;
        if (rc != 0) {
            record_error(sc, "churn subscribe returned %d", rc);
            return 0;
        }
        r->periods++;
        memset(r->seen, 0, sizeof(r->seen));
        int closed = 0;
        for (uint64_t k = test_rng_range(&r->rng, 1, 64); k > 0 && !closed; k--)
            closed = recv_once(r);
        rc = band_broadcast_unsubscribe(&r->rx);
        if (rc != 0)
            record_error(sc, "churn unsubscribe returned %d", rc);
        if (closed)
            return 0;
    }
}

/* ------------------------------------------------------------------------ scenario */

static void run_scenario(const char *name, int mode, uint64_t cap, uint64_t seed)
{
    struct scenario sc;
    memset(&sc, 0, sizeof(sc));
    sc.name = name;
    sc.mode = mode;
    sc.cap = cap;
    atomic_init(&sc.errors, 0);
    pthread_mutex_init(&sc.err_mu, NULL);
    sc.max_msgs = test_under_sanitizer() ? SAN_MSGS : MAX_MSGS;
    assert_int_equal(band_broadcast_create(&sc.b, sizeof(struct msg), cap, mode), 0);

    int nrecv = NRECV + 1; /* the last one churns */
    struct sender *snd = calloc(NSEND, sizeof(*snd));
    struct receiver *rcv = calloc((size_t)nrecv, sizeof(*rcv));
    struct test_thread *ts = calloc(NSEND, sizeof(*ts));
    struct test_thread *tr = calloc((size_t)nrecv, sizeof(*tr));
    assert_non_null(snd);
    assert_non_null(rcv);
    assert_non_null(ts);
    assert_non_null(tr);

    for (int i = 0; i < nrecv; i++) {
        rcv[i].sc = &sc;
        rcv[i].id = i;
        rcv[i].churn = i >= NRECV;
        rcv[i].rng = seed * 1000 + 100 + (uint64_t)i;
        band_broadcast_rx_init(&rcv[i].rx);
        if (!rcv[i].churn)
            assert_int_equal(band_broadcast_subscribe(sc.b, &rcv[i].rx), 0);
    }
    band_time t0 = band_now();
    sc.stop_at = t0 + WALL_SECS * BAND_SEC;
    for (int i = 0; i < nrecv; i++)
        assert_int_equal(test_thread_start(&tr[i], receiver_main, &rcv[i]), 0);
    for (int i = 0; i < NSEND; i++) {
        snd[i].sc = &sc;
        snd[i].id = i;
        snd[i].rng = seed * 1000 + (uint64_t)i;
        assert_int_equal(test_thread_start(&ts[i], sender_main, &snd[i]), 0);
    }
    for (int i = 0; i < NSEND; i++)
        assert_int_equal(test_thread_join(&ts[i]), 0);
    assert_int_equal(band_broadcast_close(sc.b), 0);
    for (int i = 0; i < nrecv; i++)
        assert_int_equal(test_thread_join(&tr[i]), 0);
    band_time took = band_now() - t0;

    if (atomic_load(&sc.errors) != 0)
        fail_msg("%s: %s", name, sc.err);

    uint64_t total = 0;
    for (int s = 0; s < NSEND; s++)
        total += snd[s].sent;
    band_broadcast_stats st;
    assert_int_equal(band_broadcast_get_stats(sc.b, &st), 0);
    assert_int_equal(band__broadcast_check(sc.b), 0);
    assert_u64_equal(st.next_seq, total);
    assert_u64_equal(st.waiting_senders, 0);
    assert_u64_equal(st.waiting_receivers, 0);

    uint64_t received = 0, lagged = 0, lag_events = 0;
    for (int i = 0; i < nrecv; i++) {
        struct receiver *r = &rcv[i];
        received += r->received;
        lagged += r->lagged;
        lag_events += r->lag_events;
        if (r->churn)
            continue;
        if (mode == BAND_BROADCAST_LOSSLESS) {
            for (int s = 0; s < NSEND; s++) {
                assert_u64_equal(r->count[s], snd[s].sent); /* every message, once */
                assert_u64_equal(r->sum[s], snd[s].sum);
                assert_u64_equal(r->next[s], snd[s].sent);
            }
            assert_u64_equal(r->lagged, 0);
        } else {
            assert_u64_equal(r->received + r->lagged, total); /* exact */
            /* Missed messages: the gaps seen, plus each sender's last messages when they
             * were overwritten before the receiver got there. */
            uint64_t gaps = r->gaps;
            for (int s = 0; s < NSEND; s++)
                gaps += snd[s].sent - r->next[s];
            assert_u64_equal(gaps, r->lagged); /* the lag counts are exact */
        }
    }
    assert_u64_equal(st.received, received);
    assert_u64_equal(st.lagged, lagged);
    assert_u64_equal(st.lag_events, lag_events);
    uint64_t s_pending = 0, s_timeouts = 0, s_cancel = 0;
    for (int s = 0; s < NSEND; s++) {
        s_pending += snd[s].async_pending;
        s_cancel += snd[s].cancel_ok;
        s_timeouts += snd[s].timeouts;
    }
    assert_u64_equal(st.send_cancels, s_cancel);
    assert_true(st.send_timeouts <= s_timeouts);
    if (mode == BAND_BROADCAST_LOSSLESS)
        assert_u64_equal(st.retained, 0); /* every receiver drained or left */
    else
        assert_u64_equal(s_pending, 0); /* lossy sends never queue */

    for (int i = 0; i < nrecv; i++)
        if (!rcv[i].churn)
            assert_int_equal(band_broadcast_unsubscribe(&rcv[i].rx), 0);
    assert_int_equal(band_broadcast_destroy(sc.b), 0);

    uint64_t periods = nrecv > NRECV ? rcv[NRECV].periods : 0;
    printf("%s: %.2f s, %llu sent, %llu received, %llu lagged in %llu lags, "
           "%llu async sends queued (%llu cancelled), %llu churn periods\n",
           name, (double)took / 1e9, (unsigned long long)total, (unsigned long long)received,
           (unsigned long long)lagged, (unsigned long long)lag_events,
           (unsigned long long)s_pending, (unsigned long long)s_cancel,
           (unsigned long long)periods);
    free(snd);
    free(rcv);
    free(ts);
    free(tr);
    pthread_mutex_destroy(&sc.err_mu);
}

/* ------------------------------------------------------------------------ lossless try */

/*
 * Lossless, try calls only (the lock-free paths): NSEND senders spin on try_send, NRECV
 * receivers each spin on try_recv, two threads share one more receiver (their cursor CAS
 * races, and they drop their claims in either order), and a churning receiver subscribes
 * and unsubscribes (its claims on unread messages must be dropped exactly once, racing
 * the others). Every fixed receiver gets every message once, in per-sender order; the two
 * sharing threads together get every message once, each in per-sender order; at the end
 * nothing is retained, so no count was lost or dropped twice.
 */
#define TRY_SHARED 2

struct try_rx {
    struct scenario *sc;
    band_broadcast_rx *rx;
    int churn;
    int exact; /* sole reader of its receiver: sequences arrive with no gap */
    uint64_t rng;
    uint64_t next[NSEND], count[NSEND], sum[NSEND], periods;
};

static int try_sender(void *arg)
{
    struct sender *s = arg;
    struct scenario *sc = s->sc;
    while (s->sent < sc->max_msgs && band_now() < sc->stop_at && atomic_load(&sc->errors) == 0) {
        struct msg m = {(uint64_t)s->id, s->sent, checksum((uint64_t)s->id, s->sent)};
        int rc = band_broadcast_try_send(sc->b, &m);
        if (rc == BAND_EAGAIN) {
            s->eagain++;
            sched_yield();
            continue;
        }
        if (rc != 0) {
            record_error(sc, "try_send returned %d", rc);
            break;
        }
        s->sent++;
        s->sum += m.check;
    }
    return 0;
}

/* One try_recv; 1 on BAND_ECLOSED. */
static int try_one(struct try_rx *r, int in_order)
{
    struct msg m;
    int rc = band_broadcast_try_recv(r->rx, &m);
    if (rc == BAND_EAGAIN) {
        sched_yield();
        return 0;
    }
    if (rc == BAND_ECLOSED)
        return 1;
    if (rc != 0) {
        record_error(r->sc, "try_recv returned %d", rc);
        return 1;
    }
    if (m.sender >= NSEND || m.check != checksum(m.sender, m.seq)) {
        record_error(r->sc, "corrupt message");
        return 1;
    }
    uint64_t s = m.sender;
    if (in_order ? m.seq != r->next[s] : m.seq < r->next[s])
        record_error(r->sc, "sender %llu: got %llu, expected %llu", (unsigned long long)s,
                     (unsigned long long)m.seq, (unsigned long long)r->next[s]);
    r->next[s] = m.seq + 1;
    r->count[s]++;
    r->sum[s] += m.check;
    return 0;
}

static int try_receiver(void *arg)
{
    struct try_rx *r = arg;
    if (!r->churn) {
        while (try_one(r, r->exact) == 0)
            ;
        return 0;
    }
    for (;;) {
        band_broadcast_rx_init(r->rx);
        int rc = band_broadcast_subscribe(r->sc->b, r->rx);
        if (rc == BAND_ECLOSED)
            return 0;
        if (rc != 0) {
            record_error(r->sc, "churn subscribe returned %d", rc);
            return 0;
        }
        r->periods++;
        int closed = 0;
        for (uint64_t k = test_rng_range(&r->rng, 0, 16); k > 0 && !closed; k--)
            closed = try_one(r, 0);
        if (band_broadcast_unsubscribe(r->rx) != 0)
            record_error(r->sc, "churn unsubscribe failed");
        if (closed)
            return 0;
    }
}

static void test_stress_lossless_try(void **state)
{
    (void)state;
    static const uint64_t caps[] = {1, 4};
    for (size_t ci = 0; ci < 2; ci++) {
        struct scenario sc;
        memset(&sc, 0, sizeof(sc));
        sc.name = "lossless try";
        sc.mode = BAND_BROADCAST_LOSSLESS;
        sc.cap = caps[ci];
        atomic_init(&sc.errors, 0);
        pthread_mutex_init(&sc.err_mu, NULL);
        sc.max_msgs = test_under_sanitizer() ? SAN_MSGS / 2 : MAX_MSGS;
        assert_int_equal(
            band_broadcast_create(&sc.b, sizeof(struct msg), sc.cap, BAND_BROADCAST_LOSSLESS), 0);
        enum { NT = NRECV + TRY_SHARED + 1 };
        band_broadcast_rx rxs[NRECV + 2];
        struct try_rx tr[NT];
        struct test_thread th_r[NT], th_s[NSEND];
        struct sender snd[NSEND];
        memset(tr, 0, sizeof(tr));
        memset(snd, 0, sizeof(snd));
        for (int i = 0; i < NRECV + 2; i++) {
            band_broadcast_rx_init(&rxs[i]);
            if (i <= NRECV)
                assert_int_equal(band_broadcast_subscribe(sc.b, &rxs[i]), 0);
        }
        for (int i = 0; i < NT; i++) {
            tr[i].sc = &sc;
            tr[i].rng = 77 + (uint64_t)i;
            /* 0..NRECV-1 own a receiver; the next TRY_SHARED share rxs[NRECV]; last churns. */
            tr[i].rx = i < NRECV ? &rxs[i] : i < NRECV + TRY_SHARED ? &rxs[NRECV] : &rxs[NRECV + 1];
            tr[i].churn = i == NT - 1;
            tr[i].exact = i < NRECV; /* sharing threads: per-thread order only */
        }
        sc.stop_at = band_now() + WALL_SECS * BAND_SEC;
        for (int i = 0; i < NT; i++)
            assert_int_equal(test_thread_start(&th_r[i], try_receiver, &tr[i]), 0);
        for (int i = 0; i < NSEND; i++) {
            snd[i].sc = &sc;
            snd[i].id = i;
            assert_int_equal(test_thread_start(&th_s[i], try_sender, &snd[i]), 0);
        }
        for (int i = 0; i < NSEND; i++)
            assert_int_equal(test_thread_join(&th_s[i]), 0);
        assert_int_equal(band_broadcast_close(sc.b), 0);
        for (int i = 0; i < NT; i++)
            assert_int_equal(test_thread_join(&th_r[i]), 0);
        if (atomic_load(&sc.errors) != 0)
            fail_msg("lossless try cap %llu: %s", (unsigned long long)sc.cap, sc.err);
        uint64_t total = 0;
        for (int s = 0; s < NSEND; s++) {
            total += snd[s].sent;
            for (int i = 0; i < NRECV; i++) {
                assert_u64_equal(tr[i].count[s], snd[s].sent); /* every message, once */
                assert_u64_equal(tr[i].sum[s], snd[s].sum);
            }
            uint64_t c = 0, sum = 0;
            for (int i = NRECV; i < NRECV + TRY_SHARED; i++) {
                c += tr[i].count[s];
                sum += tr[i].sum[s];
            }
            assert_u64_equal(c, snd[s].sent); /* the shared receiver: once in all */
            assert_u64_equal(sum, snd[s].sum);
        }
        band_broadcast_stats st;
        assert_int_equal(band_broadcast_get_stats(sc.b, &st), 0);
        assert_int_equal(band__broadcast_check(sc.b), 0);
        assert_u64_equal(st.next_seq, total);
        assert_u64_equal(st.retained, 0);
        assert_u64_equal(st.receivers, NRECV + 1);
        for (int i = 0; i <= NRECV; i++)
            assert_int_equal(band_broadcast_unsubscribe(&rxs[i]), 0);
        assert_int_equal(band_broadcast_destroy(sc.b), 0);
        printf("lossless try cap %llu: %llu sent, %llu churn periods\n", (unsigned long long)sc.cap,
               (unsigned long long)total, (unsigned long long)tr[NT - 1].periods);
        pthread_mutex_destroy(&sc.err_mu);
    }
}

static void test_stress_lossless(void **state)
{
    (void)state;
    run_scenario("lossless cap 8", BAND_BROADCAST_LOSSLESS, 8, 1);
    run_scenario("lossless cap 1", BAND_BROADCAST_LOSSLESS, 1, 2);
}

static void test_stress_lossy(void **state)
{
    (void)state;
    run_scenario("lossy cap 4", BAND_BROADCAST_LOSSY, 4, 3);
    /* One slot: every lock-free send overwrites the message a lock-free receive may be
     * copying, so torn copies and inexact lags would show here first. */
    run_scenario("lossy cap 1", BAND_BROADCAST_LOSSY, 1, 4);
}

/*
 * Lossy ping-pong: the receiver waits with no deadline for message k, the sender sends it
 * (lock-free unless it sees the receive queued) only after message k - 1 was acknowledged,
 * after a random short pause, so that the send lands before, during and after the receive
 * queues. A lost wake leaves the receiver waiting: the sender notices after a bound and
 * closes the broadcast to release it. A one-slot ring, so a late delivery would also show
 * as a wrong message.
 */
struct pp_ctx {
    band_broadcast *b;
    band_broadcast_rx rx;
    atomic_uint_fast64_t acked;
};

static int pp_receiver(void *arg)
{
    struct pp_ctx *c = arg;
    for (uint64_t want = 1;; want++) {
        uint64_t v = 0;
        int rc = band_broadcast_recv(&c->rx, &v, BAND_FOREVER, NULL);
        if (rc != 0)
            return rc == BAND_ECLOSED ? 0 : rc;
        if (v != want)
            return -1000;
        atomic_store(&c->acked, v);
    }
}

static void test_stress_lossy_pingpong(void **state)
{
    (void)state;
    struct pp_ctx c;
    memset(&c, 0, sizeof(c));
    assert_int_equal(band_broadcast_create(&c.b, sizeof(uint64_t), 1, BAND_BROADCAST_LOSSY), 0);
    assert_int_equal(band_broadcast_subscribe(c.b, &c.rx), 0);
    atomic_init(&c.acked, 0);
    struct test_thread t;
    assert_int_equal(test_thread_start(&t, pp_receiver, &c), 0);
    uint64_t rng = 0x5eed;
    band_time until = band_now() + (band_time)WALL_SECS * BAND_SEC;
    uint64_t k = 0;
    int lost = 0;
    while (k < 20000 && band_now() < until) {
        uint64_t y = test_rng_range(&rng, 0, 2);
        while (y-- > 0)
            sched_yield();
        k++;
        assert_int_equal(band_broadcast_try_send(c.b, &k), 0);
        band_time bound = band_now() + 5 * BAND_SEC;
        while (atomic_load(&c.acked) != k && band_now() < bound)
            sched_yield();
        if (atomic_load(&c.acked) != k) {
            lost = 1;
            break;
        }
    }
    assert_int_equal(band_broadcast_close(c.b), 0);
    assert_int_equal(test_thread_join(&t), 0);
    printf("lossy ping-pong: %llu sends\n", (unsigned long long)k);
    assert_int_equal(lost, 0);
    band_broadcast_stats st;
    assert_int_equal(band_broadcast_get_stats(c.b, &st), 0);
    assert_u64_equal(st.received, k);
    assert_u64_equal(st.lagged, 0);
    assert_int_equal(band__broadcast_check(c.b), 0);
    assert_int_equal(band_broadcast_unsubscribe(&c.rx), 0);
    assert_int_equal(band_broadcast_destroy(c.b), 0);
}

/*
 * Lossless, one slot: two senders block (FOREVER) and so queue behind each other, while
 * the receiver only ever calls try_recv. Each read frees the slot; when a sender queued
 * just as the read was checking for queued senders, the read must still hand the slot
 * over (it rechecks after freeing it), or the senders wait forever while every later
 * try_recv answers "nothing yet". A stall (no message for 2 s) fails the test; the close
 * that ends it releases the senders.
 */
#define PP_MSGS     20000
#define PP_SAN_MSGS 4000

struct ll_pp {
    band_broadcast *b;
    uint64_t n;
    int id;
    int rc;
};

static int ll_pp_sender(void *arg)
{
    struct ll_pp *p = arg;
    for (uint64_t k = 0; k < p->n; k++) {
        struct msg m = {(uint64_t)p->id, k, checksum((uint64_t)p->id, k)};
        int rc = band_broadcast_send(p->b, &m, BAND_FOREVER, NULL);
        if (rc != 0) {
            p->rc = rc;
            return 0;
        }
    }
    return 0;
}

static void test_stress_lossless_pingpong(void **state)
{
    (void)state;
    struct ll_pp snd[2];
    band_broadcast *b = NULL;
    uint64_t n = test_under_sanitizer() ? PP_SAN_MSGS : PP_MSGS;
    assert_int_equal(band_broadcast_create(&b, sizeof(struct msg), 1, BAND_BROADCAST_LOSSLESS), 0);
    band_broadcast_rx rx;
    band_broadcast_rx_init(&rx);
    assert_int_equal(band_broadcast_subscribe(b, &rx), 0);
    struct test_thread t[2];
    for (int i = 0; i < 2; i++) {
        snd[i] = (struct ll_pp){.b = b, .n = n, .id = i};
        assert_int_equal(test_thread_start(&t[i], ll_pp_sender, &snd[i]), 0);
    }
    uint64_t next[2] = {0, 0}, got = 0, eagain = 0;
    band_time last = band_now();
    int stalled = 0, bad = 0;
    while (got < 2 * n && !stalled && !bad) {
        struct msg m;
        int rc = band_broadcast_try_recv(&rx, &m);
        if (rc == BAND_EAGAIN) {
            eagain++;
            if ((eagain & 63) == 0) {
                sched_yield();
                if (band_now() - last > 2 * BAND_SEC)
                    stalled = 1;
            }
            continue;
        }
        if (rc != 0 || m.sender > 1 || m.seq != next[m.sender] ||
            m.check != checksum(m.sender, m.seq)) {
            bad = 1;
            break;
        }
        next[m.sender]++;
        got++;
        last = band_now();
    }
    band_broadcast_stats st;
    assert_int_equal(band_broadcast_get_stats(b, &st), 0);
    assert_int_equal(band_broadcast_close(b), 0); /* releases stalled senders */
    for (int i = 0; i < 2; i++)
        assert_int_equal(test_thread_join(&t[i]), 0);
    if (stalled)
        fail_msg("stalled after %llu of %llu messages, %llu senders queued",
                 (unsigned long long)got, (unsigned long long)(2 * n),
                 (unsigned long long)st.waiting_senders);
    assert_false(bad);
    assert_int_equal(snd[0].rc, 0);
    assert_int_equal(snd[1].rc, 0);
    assert_u64_equal(next[0], n);
    assert_u64_equal(next[1], n);
    assert_int_equal(band__broadcast_check(b), 0);
    assert_int_equal(band_broadcast_get_stats(b, &st), 0);
    assert_u64_equal(st.retained, 0);
    printf("lossless ping-pong: %llu messages, %llu sends queued\n", (unsigned long long)got,
           (unsigned long long)st.send_queued);
    assert_int_equal(band_broadcast_unsubscribe(&rx), 0);
    assert_int_equal(band_broadcast_destroy(b), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stress_lossless),          cmocka_unit_test(test_stress_lossless_try),
        cmocka_unit_test(test_stress_lossless_pingpong), cmocka_unit_test(test_stress_lossy),
        cmocka_unit_test(test_stress_lossy_pingpong),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
