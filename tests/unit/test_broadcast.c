/* SPDX-License-Identifier: MIT */
/*
 * test_broadcast.c - band_broadcast (broadcast.h): argument checks, subscription rules,
 * lossless hold-back with FIFO senders, lossy lag counts, async operations and both cancel
 * outcomes, close with queued messages and waiting senders and receivers, deadlines,
 * blocking calls, wakes that call back into the broadcast, and the counters.
 *
 * Every test checks band__broadcast_check() as it goes. Elements are uint64_t values.
 */
#include "test.h"

#include <string.h>

#include "band/broadcast.h"

/* Defined in src/broadcast.c (test hook; 0 when the invariants hold). */
#include "prim/broadcast_internal.h"
#include "prim/sync_internal.h"

#define LOSSY    BAND_BROADCAST_LOSSY
#define LOSSLESS BAND_BROADCAST_LOSSLESS
#define CHECK(b) assert_int_equal(band__broadcast_check(b), 0)

struct fixture {
    struct wake_log log;
    struct wake_rec rec[8];
    band_broadcast_recv_op rop[8];
    band_broadcast_send_op sop[8];
    uint64_t out[8];
    uint64_t val[8];
};

/* The waiter of an op must call wake_rec_fn with a wake_rec as data: every op here uses
 * the recorder's waiter fields through band_waiter_init(&op->w, wake_rec_fn, rec). */
static void init_rop(struct fixture *f, int i)
{
    band_waiter_init(&f->rop[i].w, wake_rec_fn, &f->rec[i]);
    f->out[i] = 0xdead;
}

static void init_sop(struct fixture *f, int i, uint64_t v)
{
    band_waiter_init(&f->sop[i].w, wake_rec_fn, &f->rec[i]);
    f->val[i] = v;
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    if (f == NULL)
        return -1;
    wake_log_init(&f->log);
    for (int i = 0; i < 8; i++)
        wake_rec_init(&f->rec[i], i, &f->log);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    free(*state);
    return 0;
}

static band_broadcast *mk(int mode, uint64_t cap)
{
    band_broadcast *b = NULL;
    assert_int_equal(band_broadcast_create(&b, sizeof(uint64_t), cap, mode), 0);
    assert_non_null(b);
    CHECK(b);
    return b;
}

static band_broadcast_stats stats_of(const band_broadcast *b)
{
    band_broadcast_stats st;
    memset(&st, 0xee, sizeof(st));
    assert_int_equal(band_broadcast_get_stats(b, &st), 0);
    return st;
}

static void send_val(band_broadcast *b, uint64_t v)
{
    assert_int_equal(band_broadcast_try_send(b, &v), 0);
    CHECK(b);
}

static void expect_val(band_broadcast_rx *rx, uint64_t v)
{
    uint64_t got = 0xdead;
    assert_int_equal(band_broadcast_try_recv(rx, &got), 0);
    assert_u64_equal(got, v);
}

static void expect_rc(band_broadcast_rx *rx, int rc)
{
    uint64_t got = 0xdead;
    assert_int_equal(band_broadcast_try_recv(rx, &got), rc);
    assert_u64_equal(got, 0xdead); /* nothing copied */
}

static void destroy(band_broadcast *b, band_broadcast_rx *rxs, int n)
{
    for (int i = 0; i < n; i++)
        assert_int_equal(band_broadcast_unsubscribe(&rxs[i]), 0);
    assert_int_equal(band_broadcast_destroy(b), 0);
}

/* ---------------------------------------------------------------------------------- */
/* create, arguments, subscription                                                     */

static void test_create_args(void **state)
{
    (void)state;
    band_broadcast *b = (band_broadcast *)(uintptr_t)0x1234;
    assert_int_equal(band_broadcast_create(NULL, 8, 4, LOSSY), BAND_EINVAL);
    assert_int_equal(band_broadcast_create(&b, 0, 4, LOSSY), BAND_EINVAL);
    assert_int_equal(band_broadcast_create(&b, 8, 0, LOSSY), BAND_EINVAL);
    assert_int_equal(band_broadcast_create(&b, 8, 0, LOSSLESS), BAND_EINVAL);
    assert_int_equal(band_broadcast_create(&b, 8, 4, 0), BAND_EINVAL);
    assert_int_equal(band_broadcast_create(&b, 8, 4, 3), BAND_EINVAL);
    assert_int_equal(band_broadcast_create(&b, 8, BAND_BROADCAST_MAX_CAPACITY + 1, LOSSLESS),
                     BAND_EINVAL);
    assert_int_equal(band_broadcast_create(&b, SIZE_MAX / 2, 4, LOSSY), BAND_EINVAL);
    assert_ptr_equal(b, (band_broadcast *)(uintptr_t)0x1234); /* unchanged on failure */

    assert_int_equal(band_broadcast_create(&b, 3, 1, LOSSLESS), 0);
    band_broadcast_stats st = stats_of(b);
    assert_int_equal(st.mode, LOSSLESS);
    assert_int_equal(st.closed, 0);
    assert_u64_equal(st.elem_size, 3);
    assert_u64_equal(st.capacity, 1);
    assert_u64_equal(st.oldest_seq, 0);
    assert_u64_equal(st.next_seq, 0);
    assert_u64_equal(st.retained, 0);
    assert_u64_equal(st.receivers, 0);
    assert_u64_equal(st.waiting_senders, 0);
    assert_u64_equal(st.waiting_receivers, 0);
    assert_u64_equal(st.sent_unheard + st.overwritten + st.received + st.lag_events + st.lagged +
                         st.try_send_refusals + st.send_queued + st.send_timeouts +
                         st.send_cancels + st.send_closed_fails + st.send_wait_ns_total +
                         st.send_wait_ns_max + st.recv_queued + st.recv_timeouts + st.recv_cancels +
                         st.recv_closed_fails,
                     0);
    assert_int_equal(band_broadcast_destroy(b), 0);
    assert_int_equal(band_broadcast_destroy(NULL), 0);
}

static void test_null_args(void **state)
{
    struct fixture *f = *state;
    band_broadcast *b = mk(LOSSLESS, 2);
    band_broadcast_rx rx = {0}, idle = {0};
    uint64_t v = 1;
    assert_int_equal(band_broadcast_subscribe(NULL, &rx), BAND_EINVAL);
    assert_int_equal(band_broadcast_subscribe(b, NULL), BAND_EINVAL);
    assert_int_equal(band_broadcast_subscribe(b, &rx), 0);
    assert_int_equal(band_broadcast_unsubscribe(NULL), BAND_EINVAL);
    assert_int_equal(band_broadcast_unsubscribe(&idle), BAND_EINVAL);
    assert_int_equal(band_broadcast_try_send(NULL, &v), BAND_EINVAL);
    assert_int_equal(band_broadcast_try_send(b, NULL), BAND_EINVAL);
    assert_int_equal(band_broadcast_send(NULL, &v, BAND_FOREVER, NULL), BAND_EINVAL);
    assert_int_equal(band_broadcast_send(b, NULL, BAND_FOREVER, NULL), BAND_EINVAL);
    init_sop(f, 0, 1);
    assert_int_equal(band_broadcast_send_async(NULL, &v, &f->sop[0]), BAND_EINVAL);
    assert_int_equal(band_broadcast_send_async(b, &v, NULL), BAND_EINVAL);
    assert_int_equal(band_broadcast_send_async(b, NULL, &f->sop[0]), BAND_EINVAL);
    band_waiter_init(&f->sop[1].w, NULL, NULL); /* no wake function */
    assert_int_equal(band_broadcast_send_async(b, &v, &f->sop[1]), BAND_EINVAL);
    assert_int_equal(band_broadcast_try_recv(NULL, &v), BAND_EINVAL);
    assert_int_equal(band_broadcast_try_recv(&rx, NULL), BAND_EINVAL);
    assert_int_equal(band_broadcast_try_recv(&idle, &v), BAND_EINVAL);
    assert_int_equal(band_broadcast_recv(NULL, &v, 0, NULL), BAND_EINVAL);
    assert_int_equal(band_broadcast_recv(&idle, &v, BAND_FOREVER, NULL), BAND_EINVAL);
    init_rop(f, 0);
    assert_int_equal(band_broadcast_recv_async(NULL, &v, &f->rop[0]), BAND_EINVAL);
    assert_int_equal(band_broadcast_recv_async(&rx, &v, NULL), BAND_EINVAL);
    assert_int_equal(band_broadcast_recv_async(&rx, NULL, &f->rop[0]), BAND_EINVAL);
    assert_int_equal(band_broadcast_recv_async(&idle, &v, &f->rop[0]), BAND_EINVAL);
    assert_int_equal(band_waiter_is_pending(&f->rop[0].w), 0);
    assert_int_equal(band_broadcast_close(NULL), BAND_EINVAL);
    assert_int_equal(band_broadcast_is_closed(NULL), 0);
    band_broadcast_stats st;
    assert_int_equal(band_broadcast_get_stats(NULL, &st), BAND_EINVAL);
    assert_int_equal(band_broadcast_get_stats(b, NULL), BAND_EINVAL);
    assert_u64_equal(band_broadcast_rx_lagged(NULL), 0);
    assert_u64_equal(band_broadcast_rx_lagged(&idle), 0);
    assert_u64_equal(band_broadcast_rx_backlog(NULL), 0);
    assert_u64_equal(band_broadcast_rx_backlog(&idle), 0);
    band_broadcast_rx_init(NULL); /* harmless */
    CHECK(b);
    destroy(b, &rx, 1);
}

static void test_subscribe_rules(void **state)
{
    (void)state;
    band_broadcast *b = mk(LOSSLESS, 4), *b2 = mk(LOSSY, 4);
    band_broadcast_rx rx;
    band_broadcast_rx_init(&rx);
    assert_int_equal(band_broadcast_subscribe(b, &rx), 0);
    assert_int_equal(band_broadcast_subscribe(b, &rx), BAND_EINVAL);  /* twice */
    assert_int_equal(band_broadcast_subscribe(b2, &rx), BAND_EINVAL); /* elsewhere */
    assert_u64_equal(stats_of(b).receivers, 1);
    assert_u64_equal(stats_of(b2).receivers, 0);
    assert_int_equal(band_broadcast_destroy(b), BAND_EBUSY); /* subscribed receiver */
    assert_int_equal(band_broadcast_unsubscribe(&rx), 0);
    assert_int_equal(band_broadcast_unsubscribe(&rx), BAND_EINVAL);
    expect_rc(&rx, BAND_EINVAL);
    assert_int_equal(band_broadcast_subscribe(b2, &rx), 0); /* may move elsewhere */
    CHECK(b);
    CHECK(b2);
    destroy(b2, &rx, 1);
    assert_int_equal(band_broadcast_destroy(b), 0);
}

/* A receiver starts at the next message; a resubscribed one too. */
static void test_subscribe_starts_at_next(void **state)
{
    (void)state;
    for (int mode = LOSSY; mode <= LOSSLESS; mode++) {
        band_broadcast *b = mk(mode, 4);
        band_broadcast_rx a = {0}, late = {0};
        assert_int_equal(band_broadcast_subscribe(b, &a), 0);
        send_val(b, 10);
        send_val(b, 11);
        assert_int_equal(band_broadcast_subscribe(b, &late), 0);
        assert_u64_equal(band_broadcast_rx_backlog(&late), 0);
        assert_u64_equal(band_broadcast_rx_backlog(&a), 2);
        send_val(b, 12);
        expect_val(&late, 12);
        expect_rc(&late, BAND_EAGAIN);
        expect_val(&a, 10);
        expect_val(&a, 11);
        expect_val(&a, 12);
        expect_rc(&a, BAND_EAGAIN);
        /* Resubscribe: nothing from before. */
        assert_int_equal(band_broadcast_unsubscribe(&late), 0);
        send_val(b, 13);
        assert_int_equal(band_broadcast_subscribe(b, &late), 0);
        send_val(b, 14);
        expect_val(&late, 14);
        expect_val(&a, 13);
        expect_val(&a, 14);
        CHECK(b);
        assert_int_equal(band_broadcast_unsubscribe(&a), 0);
        assert_int_equal(band_broadcast_unsubscribe(&late), 0);
        assert_int_equal(band_broadcast_destroy(b), 0);
    }
}

/* ---------------------------------------------------------------------------------- */
/* lossless                                                                            */

static void test_lossless_every_receiver_every_message(void **state)
{
    (void)state;
    band_broadcast *b = mk(LOSSLESS, 3);
    band_broadcast_rx rx[3];
    for (int i = 0; i < 3; i++) {
        band_broadcast_rx_init(&rx[i]);
        assert_int_equal(band_broadcast_subscribe(b, &rx[i]), 0);
    }
    for (uint64_t v = 0; v < 3; v++)
        send_val(b, 100 + v);
    for (int i = 0; i < 3; i++) {
        for (uint64_t v = 0; v < 3; v++)
            expect_val(&rx[i], 100 + v);
        expect_rc(&rx[i], BAND_EAGAIN);
        CHECK(b);
    }
    band_broadcast_stats st = stats_of(b);
    assert_u64_equal(st.next_seq, 3);
    assert_u64_equal(st.oldest_seq, 3); /* everyone read everything: nothing retained */
    assert_u64_equal(st.retained, 0);
    assert_u64_equal(st.received, 9);
    assert_u64_equal(st.lagged, 0);
    destroy(b, rx, 3);
}

/* Decision: with nobody subscribed a lossless send completes and the message is dropped. */
static void test_lossless_no_receivers_never_blocks(void **state)
{
    (void)state;
    band_broadcast *b = mk(LOSSLESS, 2);
    for (uint64_t v = 0; v < 5; v++)
        send_val(b, v);
    uint64_t v = 5;
    assert_int_equal(band_broadcast_send(b, &v, 0, NULL), 0); /* past deadline: no wait needed */
    band_broadcast_stats st = stats_of(b);
    assert_u64_equal(st.next_seq, 6);
    assert_u64_equal(st.retained, 0);
    assert_u64_equal(st.sent_unheard, 6);
    assert_u64_equal(st.try_send_refusals, 0);
    band_broadcast_rx rx = {0};
    assert_int_equal(band_broadcast_subscribe(b, &rx), 0);
    expect_rc(&rx, BAND_EAGAIN); /* nothing replayed */
    destroy(b, &rx, 1);
}

/* The slowest receiver holds back senders; try and past-deadline sends refuse. */
static void test_lossless_slowest_holds_back(void **state)
{
    (void)state;
    band_broadcast *b = mk(LOSSLESS, 2);
    band_broadcast_rx slow = {0}, fast = {0};
    assert_int_equal(band_broadcast_subscribe(b, &slow), 0);
    assert_int_equal(band_broadcast_subscribe(b, &fast), 0);
    send_val(b, 1);
    send_val(b, 2);
    uint64_t v = 3;
    assert_int_equal(band_broadcast_try_send(b, &v), BAND_EAGAIN);
    assert_int_equal(band_broadcast_send(b, &v, 0, NULL), BAND_ETIMEDOUT);
    assert_int_equal(band_broadcast_send(b, &v, band_now() - 1, NULL), BAND_ETIMEDOUT);
    expect_val(&fast, 1);
    expect_val(&fast, 2);
    assert_int_equal(band_broadcast_try_send(b, &v), BAND_EAGAIN); /* slow holds both */
    assert_u64_equal(band_broadcast_rx_backlog(&slow), 2);
    expect_val(&slow, 1);
    CHECK(b);
    assert_u64_equal(stats_of(b).oldest_seq, 1);
    assert_int_equal(band_broadcast_try_send(b, &v), 0);
    assert_int_equal(band_broadcast_try_send(b, &v), BAND_EAGAIN);
    band_broadcast_stats st = stats_of(b);
    assert_u64_equal(st.try_send_refusals, 3);
    assert_u64_equal(st.send_queued, 0); /* past deadlines never queue */
    assert_u64_equal(st.send_timeouts, 0);
    assert_u64_equal(st.retained, 2);
    expect_val(&slow, 2);
    expect_val(&slow, 3);
    expect_val(&fast, 3);
    CHECK(b);
    assert_int_equal(band_broadcast_unsubscribe(&slow), 0);
    assert_int_equal(band_broadcast_unsubscribe(&fast), 0);
    assert_int_equal(band_broadcast_destroy(b), 0);
}

/* Waiting senders are granted in arrival order; try_send never barges past them. */
static void test_lossless_fifo_senders(void **state)
{
    struct fixture *f = *state;
    band_broadcast *b = mk(LOSSLESS, 1);
    band_broadcast_rx rx = {0};
    assert_int_equal(band_broadcast_subscribe(b, &rx), 0);
    send_val(b, 0);
    for (int i = 0; i < 4; i++) {
        init_sop(f, i, 10 + (uint64_t)i);
        assert_int_equal(band_broadcast_send_async(b, &f->val[i], &f->sop[i]), BAND_PENDING);
        assert_int_equal(band_waiter_status(&f->sop[i].w), BAND_PENDING);
    }
    /* Submitting a pending op again is refused and leaves it queued. */
    assert_int_equal(band_broadcast_send_async(b, &f->val[0], &f->sop[0]), BAND_EINVAL);
    assert_int_equal(band_waiter_is_pending(&f->sop[0].w), 1);
    band_broadcast_stats st = stats_of(b);
    assert_u64_equal(st.waiting_senders, 4);
    assert_u64_equal(st.send_queued, 4);
    CHECK(b);

    expect_val(&rx, 0); /* frees the slot: sender 0 gets it, on this thread */
    assert_int_equal(atomic_load(&f->rec[0].count), 1);
    assert_int_equal(atomic_load(&f->rec[0].status), 0);
    assert_int_equal(atomic_load(&f->rec[0].pending_in), 0);
    assert_true(pthread_equal(f->rec[0].thread, pthread_self()));
    assert_int_equal(atomic_load(&f->rec[1].count), 0);
    uint64_t v = 99;
    assert_int_equal(band_broadcast_try_send(b, &v), BAND_EAGAIN); /* no barging */
    for (int i = 0; i < 4; i++) {
        expect_val(&rx, 10 + (uint64_t)i);
        CHECK(b);
    }
    expect_rc(&rx, BAND_EAGAIN);
    const int order[4] = {0, 1, 2, 3};
    assert_int_equal(atomic_load(&f->log.len), 4);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(f->log.ids[i], order[i]);
        assert_int_equal(f->log.statuses[i], 0);
        assert_int_equal(atomic_load(&f->rec[i].count), 1); /* exactly once */
        assert_int_equal(band_waiter_cancel(&f->sop[i].w, BAND_ECANCELED), BAND_EALREADY);
    }
    st = stats_of(b);
    assert_u64_equal(st.waiting_senders, 0);
    assert_u64_equal(st.send_cancels, 0);
    assert_true(st.send_wait_ns_max <= st.send_wait_ns_total);
    destroy(b, &rx, 1);
}

/* Unsubscribing the slowest receiver releases what it held, and queued senders go. */
static void test_lossless_unsubscribe_releases_senders(void **state)
{
    struct fixture *f = *state;
    band_broadcast *b = mk(LOSSLESS, 2);
    band_broadcast_rx slow = {0}, fast = {0};
    assert_int_equal(band_broadcast_subscribe(b, &slow), 0);
    assert_int_equal(band_broadcast_subscribe(b, &fast), 0);
    send_val(b, 1);
    send_val(b, 2);
    for (int i = 0; i < 3; i++) {
        init_sop(f, i, 3 + (uint64_t)i);
        assert_int_equal(band_broadcast_send_async(b, &f->val[i], &f->sop[i]), BAND_PENDING);
    }
    expect_val(&fast, 1);
    expect_val(&fast, 2);
    assert_int_equal(atomic_load(&f->log.len), 0); /* slow still holds both slots */
    assert_int_equal(band_broadcast_unsubscribe(&slow), 0);
    /* Two slots free: senders 0 and 1 go, in order; 2 waits for fast. */
    assert_int_equal(atomic_load(&f->log.len), 2);
    assert_int_equal(f->log.ids[0], 0);
    assert_int_equal(f->log.ids[1], 1);
    assert_int_equal(atomic_load(&f->rec[2].count), 0);
    CHECK(b);
    expect_val(&fast, 3);
    assert_int_equal(atomic_load(&f->rec[2].count), 1);
    expect_val(&fast, 4);
    expect_val(&fast, 5);
    expect_rc(&fast, BAND_EAGAIN);
    /* The last receiver leaving with unread messages lets everything go. */
    send_val(b, 6);
    send_val(b, 7);
    init_sop(f, 3, 8);
    assert_int_equal(band_broadcast_send_async(b, &f->val[3], &f->sop[3]), BAND_PENDING);
    assert_int_equal(band_broadcast_unsubscribe(&fast), 0);
    assert_int_equal(atomic_load(&f->rec[3].count), 1);
    assert_int_equal(atomic_load(&f->rec[3].status), 0);
    band_broadcast_stats st = stats_of(b);
    assert_u64_equal(st.retained, 0);
    assert_u64_equal(st.sent_unheard, 1); /* the one sent after the last left */
    CHECK(b);
    assert_int_equal(band_broadcast_destroy(b), 0);
}

/* ---------------------------------------------------------------------------------- */
/* lossy                                                                               */

static void test_lossy_lag_exact(void **state)
{
    (void)state;
    band_broadcast *b = mk(LOSSY, 4);
    band_broadcast_rx lag = {0}, keep = {0};
    assert_int_equal(band_broadcast_subscribe(b, &lag), 0);
    assert_int_equal(band_broadcast_subscribe(b, &keep), 0);
    for (uint64_t v = 0; v < 10; v++) {
        uint64_t x = v;
        assert_int_equal(band_broadcast_send(b, &x, 0, NULL), 0); /* never waits */
        expect_val(&keep, v);
    }
    assert_u64_equal(band_broadcast_rx_backlog(&lag), 10);
    band_broadcast_stats st = stats_of(b);
    assert_u64_equal(st.oldest_seq, 6);
    assert_u64_equal(st.retained, 4);
    assert_u64_equal(st.overwritten, 6);
    assert_u64_equal(band_broadcast_rx_lagged(&lag), 0);
    expect_rc(&lag, BAND_ELAGGED);
    assert_u64_equal(band_broadcast_rx_lagged(&lag), 6);
    assert_u64_equal(band_broadcast_rx_backlog(&lag), 4);
    for (uint64_t v = 6; v < 10; v++)
        expect_val(&lag, v); /* continues from the oldest retained */
    expect_rc(&lag, BAND_EAGAIN);
    expect_rc(&keep, BAND_EAGAIN);
    /* A second lag is reported with its own count. */
    for (uint64_t v = 10; v < 15; v++)
        send_val(b, v);
    expect_rc(&lag, BAND_ELAGGED);
    assert_u64_equal(band_broadcast_rx_lagged(&lag), 1);
    expect_val(&lag, 11);
    st = stats_of(b);
    assert_u64_equal(st.lag_events, 2);
    assert_u64_equal(st.lagged, 7);
    assert_u64_equal(st.received, 10 + 4 + 1);
    assert_u64_equal(band_broadcast_rx_lagged(&keep), 0);
    CHECK(b);
    assert_int_equal(band_broadcast_unsubscribe(&keep), 0);
    assert_int_equal(band_broadcast_unsubscribe(&lag), 0);
    assert_int_equal(band_broadcast_destroy(b), 0);
}

/* A lagging async receive answers at once (no wake) with the count in the op. */
static void test_lossy_async_lag_and_send(void **state)
{
    struct fixture *f = *state;
    band_broadcast *b = mk(LOSSY, 2);
    band_broadcast_rx rx = {0};
    assert_int_equal(band_broadcast_subscribe(b, &rx), 0);
    for (uint64_t v = 0; v < 5; v++) {
        init_sop(f, 0, v);
        assert_int_equal(band_broadcast_send_async(b, &f->val[0], &f->sop[0]), 0);
        assert_int_equal(band_waiter_status(&f->sop[0].w), 0);
    }
    init_rop(f, 1);
    assert_int_equal(band_broadcast_recv_async(&rx, &f->out[1], &f->rop[1]), BAND_ELAGGED);
    assert_u64_equal(f->rop[1].lagged, 3);
    assert_int_equal(band_waiter_status(&f->rop[1].w), BAND_ELAGGED);
    assert_u64_equal(f->out[1], 0xdead);
    assert_int_equal(band_broadcast_recv_async(&rx, &f->out[1], &f->rop[1]), 0);
    assert_u64_equal(f->rop[1].lagged, 0);
    assert_u64_equal(f->out[1], 3);
    assert_int_equal(band_broadcast_recv(&rx, &f->out[1], BAND_FOREVER, NULL), 0);
    assert_u64_equal(f->out[1], 4);
    assert_int_equal(atomic_load(&f->log.len), 0); /* nothing queued, nothing woken */
    assert_int_equal(band_broadcast_recv(&rx, &f->out[1], 0, NULL), BAND_ETIMEDOUT);
    destroy(b, &rx, 1);
}

/* ---------------------------------------------------------------------------------- */
/* async receive, cancel                                                               */

static void test_async_recv_completed_by_send(void **state)
{
    struct fixture *f = *state;
    for (int mode = LOSSY; mode <= LOSSLESS; mode++) {
        wake_log_init(&f->log);
        band_broadcast *b = mk(mode, 2);
        band_broadcast_rx r1 = {0}, r2 = {0};
        assert_int_equal(band_broadcast_subscribe(b, &r1), 0);
        assert_int_equal(band_broadcast_subscribe(b, &r2), 0);
        wake_rec_init(&f->rec[0], 0, &f->log);
        wake_rec_init(&f->rec[1], 1, &f->log);
        init_rop(f, 0);
        init_rop(f, 1);
        assert_int_equal(band_broadcast_recv_async(&r1, &f->out[0], &f->rop[0]), BAND_PENDING);
        assert_int_equal(band_broadcast_recv_async(&r2, &f->out[1], &f->rop[1]), BAND_PENDING);
        assert_u64_equal(stats_of(b).waiting_receivers, 2);
        CHECK(b);
        send_val(b, 42);
        for (int i = 0; i < 2; i++) {
            assert_int_equal(atomic_load(&f->rec[i].count), 1);
            assert_int_equal(atomic_load(&f->rec[i].status), 0);
            assert_true(pthread_equal(f->rec[i].thread, pthread_self()));
            assert_u64_equal(f->out[i], 42);
            assert_int_equal(band_waiter_cancel(&f->rop[i].w, BAND_ECANCELED), BAND_EALREADY);
        }
        assert_int_equal(f->log.ids[0], 0); /* FIFO among waiting receivers */
        assert_int_equal(f->log.ids[1], 1);
        expect_rc(&r1, BAND_EAGAIN); /* consumed by the async op */
        band_broadcast_stats st = stats_of(b);
        assert_u64_equal(st.waiting_receivers, 0);
        assert_u64_equal(st.recv_queued, 2);
        assert_u64_equal(st.received, 2);
        if (mode == LOSSLESS)
            assert_u64_equal(st.retained, 0); /* both read it at once */
        CHECK(b);
        assert_int_equal(band_broadcast_unsubscribe(&r1), 0);
        assert_int_equal(band_broadcast_unsubscribe(&r2), 0);
        assert_int_equal(band_broadcast_destroy(b), 0);
    }
}

/* Two receives queued on one shared receiver get one message each, in order. */
static void test_shared_receiver(void **state)
{
    struct fixture *f = *state;
    band_broadcast *b = mk(LOSSLESS, 2);
    band_broadcast_rx rx = {0};
    assert_int_equal(band_broadcast_subscribe(b, &rx), 0);
    init_rop(f, 0);
    init_rop(f, 1);
    assert_int_equal(band_broadcast_recv_async(&rx, &f->out[0], &f->rop[0]), BAND_PENDING);
    assert_int_equal(band_broadcast_recv_async(&rx, &f->out[1], &f->rop[1]), BAND_PENDING);
    send_val(b, 7);
    assert_int_equal(atomic_load(&f->rec[0].count), 1);
    assert_int_equal(atomic_load(&f->rec[1].count), 0);
    assert_u64_equal(f->out[0], 7);
    send_val(b, 8);
    assert_int_equal(atomic_load(&f->rec[1].count), 1);
    assert_u64_equal(f->out[1], 8);
    assert_u64_equal(stats_of(b).retained, 0);
    destroy(b, &rx, 1);
}

static void test_cancel_recv(void **state)
{
    struct fixture *f = *state;
    band_broadcast *b = mk(LOSSLESS, 2);
    band_broadcast_rx rx = {0};
    assert_int_equal(band_broadcast_subscribe(b, &rx), 0);
    init_rop(f, 0);
    init_rop(f, 1);
    assert_int_equal(band_broadcast_recv_async(&rx, &f->out[0], &f->rop[0]), BAND_PENDING);
    assert_int_equal(band_broadcast_recv_async(&rx, &f->out[1], &f->rop[1]), BAND_PENDING);
    assert_int_equal(band_waiter_cancel(&f->rop[0].w, BAND_ECANCELED), 0);
    assert_int_equal(band_waiter_status(&f->rop[0].w), BAND_ECANCELED);
    assert_int_equal(band_waiter_cancel(&f->rop[0].w, BAND_ECANCELED), BAND_EINVAL);
    assert_int_equal(band_waiter_cancel(&f->rop[1].w, BAND_ETIMEDOUT), 0);
    CHECK(b);
    send_val(b, 5);
    assert_int_equal(atomic_load(&f->log.len), 0); /* no wake after a successful cancel */
    assert_u64_equal(f->out[0], 0xdead);
    expect_val(&rx, 5); /* the cursor did not move */
    band_broadcast_stats st = stats_of(b);
    assert_u64_equal(st.recv_cancels, 1);
    assert_u64_equal(st.recv_timeouts, 1);
    assert_u64_equal(st.waiting_receivers, 0);
    /* The op can be resubmitted after a cancel. */
    assert_int_equal(band_broadcast_recv_async(&rx, &f->out[0], &f->rop[0]), BAND_PENDING);
    send_val(b, 6);
    assert_int_equal(atomic_load(&f->rec[0].count), 1);
    assert_u64_equal(f->out[0], 6);
    destroy(b, &rx, 1);
}

static void test_cancel_send(void **state)
{
    struct fixture *f = *state;
    band_broadcast *b = mk(LOSSLESS, 1);
    band_broadcast_rx rx = {0};
    assert_int_equal(band_broadcast_subscribe(b, &rx), 0);
    send_val(b, 1);
    for (int i = 0; i < 3; i++) {
        init_sop(f, i, 10 + (uint64_t)i);
        assert_int_equal(band_broadcast_send_async(b, &f->val[i], &f->sop[i]), BAND_PENDING);
    }
    /* Cancel the head and the tail: only 11 is ever sent. */
    assert_int_equal(band_waiter_cancel(&f->sop[0].w, BAND_ECANCELED), 0);
    assert_int_equal(band_waiter_cancel(&f->sop[2].w, BAND_ETIMEDOUT), 0);
    assert_int_equal(band_waiter_status(&f->sop[2].w), BAND_ETIMEDOUT);
    CHECK(b);
    expect_val(&rx, 1);
    assert_int_equal(atomic_load(&f->rec[1].count), 1);
    assert_int_equal(atomic_load(&f->rec[0].count), 0);
    assert_int_equal(atomic_load(&f->rec[2].count), 0);
    assert_int_equal(band_waiter_cancel(&f->sop[1].w, BAND_ECANCELED), BAND_EALREADY);
    expect_val(&rx, 11);
    expect_rc(&rx, BAND_EAGAIN);
    band_broadcast_stats st = stats_of(b);
    assert_u64_equal(st.send_cancels, 1);
    assert_u64_equal(st.send_timeouts, 1);
    assert_u64_equal(st.next_seq, 2);
    destroy(b, &rx, 1);
}

/* Unsubscribing ends the receiver's queued receives with BAND_ECLOSED. */
static void test_unsubscribe_ends_queued_recv(void **state)
{
    struct fixture *f = *state;
    band_broadcast *b = mk(LOSSY, 2);
    band_broadcast_rx rx = {0}, other = {0};
    assert_int_equal(band_broadcast_subscribe(b, &rx), 0);
    assert_int_equal(band_broadcast_subscribe(b, &other), 0);
    init_rop(f, 0);
    init_rop(f, 1);
    assert_int_equal(band_broadcast_recv_async(&rx, &f->out[0], &f->rop[0]), BAND_PENDING);
    assert_int_equal(band_broadcast_recv_async(&other, &f->out[1], &f->rop[1]), BAND_PENDING);
    assert_int_equal(band_broadcast_unsubscribe(&rx), 0);
    assert_int_equal(atomic_load(&f->rec[0].count), 1);
    assert_int_equal(atomic_load(&f->rec[0].status), BAND_ECLOSED);
    assert_int_equal(atomic_load(&f->rec[1].count), 0);
    assert_u64_equal(stats_of(b).recv_closed_fails, 1);
    CHECK(b);
    assert_int_equal(band_broadcast_destroy(b), BAND_EBUSY); /* other is subscribed */
    send_val(b, 3);
    assert_int_equal(atomic_load(&f->rec[1].count), 1);
    assert_u64_equal(f->out[0], 0xdead);
    destroy(b, &other, 1);
}

/* ---------------------------------------------------------------------------------- */
/* close                                                                               */

static void test_close(void **state)
{
    struct fixture *f = *state;
    band_broadcast *b = mk(LOSSLESS, 2);
    band_broadcast_rx slow = {0}, idle = {0}, late = {0};
    assert_int_equal(band_broadcast_subscribe(b, &slow), 0);
    assert_int_equal(band_broadcast_subscribe(b, &idle), 0);
    send_val(b, 1);
    send_val(b, 2);
    expect_val(&idle, 1);
    expect_val(&idle, 2);
    init_rop(f, 0); /* idle waits for more */
    assert_int_equal(band_broadcast_recv_async(&idle, &f->out[0], &f->rop[0]), BAND_PENDING);
    init_sop(f, 1, 3); /* a sender waits for slow */
    assert_int_equal(band_broadcast_send_async(b, &f->val[1], &f->sop[1]), BAND_PENDING);
    assert_int_equal(band_broadcast_close(b), 0);
    assert_int_equal(band_broadcast_is_closed(b), 1);
    assert_int_equal(atomic_load(&f->rec[0].count), 1);
    assert_int_equal(atomic_load(&f->rec[0].status), BAND_ECLOSED);
    assert_int_equal(atomic_load(&f->rec[1].count), 1);
    assert_int_equal(atomic_load(&f->rec[1].status), BAND_ECLOSED);
    assert_true(pthread_equal(f->rec[1].thread, pthread_self()));
    CHECK(b);
    /* Everything sent can still be received; the refused element was never sent. */
    expect_val(&slow, 1);
    expect_val(&slow, 2);
    expect_rc(&slow, BAND_ECLOSED);
    expect_rc(&idle, BAND_ECLOSED);
    uint64_t v = 4;
    assert_int_equal(band_broadcast_try_send(b, &v), BAND_ECLOSED);
    assert_int_equal(band_broadcast_send(b, &v, BAND_FOREVER, NULL), BAND_ECLOSED);
    init_sop(f, 2, 5);
    assert_int_equal(band_broadcast_send_async(b, &f->val[2], &f->sop[2]), BAND_ECLOSED);
    assert_int_equal(band_waiter_status(&f->sop[2].w), BAND_ECLOSED);
    init_rop(f, 3);
    assert_int_equal(band_broadcast_recv_async(&slow, &f->out[3], &f->rop[3]), BAND_ECLOSED);
    assert_int_equal(band_broadcast_recv(&slow, &v, BAND_FOREVER, NULL), BAND_ECLOSED);
    assert_int_equal(band_broadcast_subscribe(b, &late), BAND_ECLOSED);
    assert_int_equal(band_broadcast_unsubscribe(&late), BAND_EINVAL);
    assert_int_equal(band_broadcast_close(b), 0); /* twice is harmless */
    band_broadcast_stats st = stats_of(b);
    assert_int_equal(st.closed, 1);
    assert_u64_equal(st.send_closed_fails, 1);
    assert_u64_equal(st.recv_closed_fails, 1);
    assert_u64_equal(st.next_seq, 2);
    assert_int_equal(atomic_load(&f->log.len), 2);
    assert_int_equal(band_broadcast_unsubscribe(&slow), 0);
    assert_int_equal(band_broadcast_unsubscribe(&idle), 0);
    assert_int_equal(band_broadcast_destroy(b), 0);
}

/* After close a lossy receiver still lags, then drains, then sees BAND_ECLOSED. */
static void test_close_lossy_lagged(void **state)
{
    (void)state;
    band_broadcast *b = mk(LOSSY, 2);
    band_broadcast_rx rx = {0};
    assert_int_equal(band_broadcast_subscribe(b, &rx), 0);
    for (uint64_t v = 0; v < 5; v++)
        send_val(b, v);
    assert_int_equal(band_broadcast_close(b), 0);
    expect_rc(&rx, BAND_ELAGGED);
    assert_u64_equal(band_broadcast_rx_lagged(&rx), 3);
    expect_val(&rx, 3);
    expect_val(&rx, 4);
    expect_rc(&rx, BAND_ECLOSED);
    destroy(b, &rx, 1);
}

/* ---------------------------------------------------------------------------------- */
/* wakes that call back into the broadcast                                             */

struct reentry {
    band_broadcast *b;
    band_broadcast_rx *rx;
    uint64_t buf;
};

/* Inside a receive's wake: send another message and read it back. */
static void hook_send_and_recv(struct wake_rec *r)
{
    struct reentry *re = r->ctx;
    uint64_t v = 77;
    r->hook_rc = band_broadcast_try_send(re->b, &v);
    if (r->hook_rc == 0)
        r->hook_rc = band_broadcast_try_recv(re->rx, &re->buf);
    r->hook_u64 = re->buf;
}

/* Inside a send's wake: read the stats (no lock is held). */
static void hook_read_stats(struct wake_rec *r)
{
    struct reentry *re = r->ctx;
    band_broadcast_stats st;
    r->hook_rc = band_broadcast_get_stats(re->b, &st);
    r->hook_u64 = st.waiting_senders;
}

static void test_wake_reenters(void **state)
{
    struct fixture *f = *state;
    band_broadcast *b = mk(LOSSLESS, 1);
    band_broadcast_rx rx = {0};
    assert_int_equal(band_broadcast_subscribe(b, &rx), 0);
    struct reentry re = {b, &rx, 0};
    init_rop(f, 0);
    f->rec[0].hook = hook_send_and_recv;
    f->rec[0].ctx = &re;
    assert_int_equal(band_broadcast_recv_async(&rx, &f->out[0], &f->rop[0]), BAND_PENDING);
    send_val(b, 5); /* completes the op; its wake sends 77 and receives it */
    assert_int_equal(atomic_load(&f->rec[0].count), 1);
    assert_u64_equal(f->out[0], 5);
    assert_int_equal(f->rec[0].hook_rc, 0);
    assert_u64_equal(f->rec[0].hook_u64, 77);

    /* A sender's wake runs with no lock held: it may read the broadcast. */
    send_val(b, 6);
    init_sop(f, 1, 8);
    f->rec[1].hook = hook_read_stats;
    f->rec[1].ctx = &re;
    assert_int_equal(band_broadcast_send_async(b, &f->val[1], &f->sop[1]), BAND_PENDING);
    expect_val(&rx, 6);
    assert_int_equal(atomic_load(&f->rec[1].count), 1);
    assert_int_equal(f->rec[1].hook_rc, 0);
    assert_u64_equal(f->rec[1].hook_u64, 0);
    expect_val(&rx, 8);
    CHECK(b);
    destroy(b, &rx, 1);
}

/* ---------------------------------------------------------------------------------- */
/* blocking calls and deadlines                                                        */

struct blocking_arg {
    band_broadcast *b;
    band_broadcast_rx *rx;
    uint64_t v;
    band_time deadline;
};

static int blocking_send(void *p)
{
    struct blocking_arg *a = p;
    return band_broadcast_send(a->b, &a->v, a->deadline, NULL);
}

static int blocking_recv(void *p)
{
    struct blocking_arg *a = p;
    return band_broadcast_recv(a->rx, &a->v, a->deadline, NULL);
}

static bool cond_waiting_senders(void *p)
{
    band_broadcast_stats st;
    return band_broadcast_get_stats(p, &st) == 0 && st.waiting_senders == 1;
}

static bool cond_waiting_receivers(void *p)
{
    band_broadcast_stats st;
    return band_broadcast_get_stats(p, &st) == 0 && st.waiting_receivers == 1;
}

static void test_blocking_send_and_recv(void **state)
{
    (void)state;
    band_broadcast *b = mk(LOSSLESS, 1);
    band_broadcast_rx rx = {0};
    assert_int_equal(band_broadcast_subscribe(b, &rx), 0);
    send_val(b, 1);

    struct blocking_arg sa = {b, NULL, 2, BAND_FOREVER};
    struct test_thread t;
    assert_int_equal(test_thread_start(&t, blocking_send, &sa), 0);
    assert_true(test_wait_until(cond_waiting_senders, b, 10 * BAND_SEC));
    expect_val(&rx, 1); /* makes room: the blocked sender's message goes in */
    assert_int_equal(test_thread_join(&t), 0);
    expect_val(&rx, 2);

    struct blocking_arg ra = {b, &rx, 0, BAND_FOREVER};
    assert_int_equal(test_thread_start(&t, blocking_recv, &ra), 0);
    assert_true(test_wait_until(cond_waiting_receivers, b, 10 * BAND_SEC));
    send_val(b, 3);
    assert_int_equal(test_thread_join(&t), 0);
    assert_u64_equal(ra.v, 3);
    band_broadcast_stats st = stats_of(b);
    assert_u64_equal(st.send_queued, 1);
    assert_u64_equal(st.recv_queued, 1);
    assert_u64_equal(st.send_timeouts + st.recv_timeouts, 0);
    destroy(b, &rx, 1);
}

static void test_deadlines(void **state)
{
    (void)state;
    band_broadcast *b = mk(LOSSLESS, 1);
    band_broadcast_rx rx = {0};
    assert_int_equal(band_broadcast_subscribe(b, &rx), 0);
    uint64_t v = 0;
    /* Past deadlines: do not wait, and do not queue. */
    assert_int_equal(band_broadcast_recv(&rx, &v, 0, NULL), BAND_ETIMEDOUT);
    assert_int_equal(band_broadcast_recv(&rx, &v, INT64_MIN, NULL), BAND_ETIMEDOUT);
    send_val(b, 1);
    assert_int_equal(band_broadcast_send(b, &v, band_now(), NULL), BAND_ETIMEDOUT);
    band_broadcast_stats st = stats_of(b);
    assert_u64_equal(st.recv_queued + st.send_queued, 0);
    /* But if it need not wait, a past deadline still succeeds. */
    assert_int_equal(band_broadcast_recv(&rx, &v, 0, NULL), 0);
    assert_u64_equal(v, 1);
    /* Short real deadlines: queue, time out, counted. */
    band_time t0 = band_now();
    assert_int_equal(band_broadcast_recv(&rx, &v, band_deadline_after(20 * BAND_MSEC), NULL),
                     BAND_ETIMEDOUT);
    assert_true(band_now() - t0 >= 20 * BAND_MSEC);
    send_val(b, 2);
    assert_int_equal(band_broadcast_send(b, &v, band_deadline_after(20 * BAND_MSEC), NULL),
                     BAND_ETIMEDOUT);
    st = stats_of(b);
    assert_u64_equal(st.recv_timeouts, 1);
    assert_u64_equal(st.send_timeouts, 1);
    assert_u64_equal(st.recv_queued, 1);
    assert_u64_equal(st.send_queued, 1);
    assert_u64_equal(st.waiting_senders + st.waiting_receivers, 0);
    expect_val(&rx, 2); /* the timed-out element was not sent */
    expect_rc(&rx, BAND_EAGAIN);
    CHECK(b);
    destroy(b, &rx, 1);
}

/* A blocked receiver is woken by close; a blocked sender too. */
static void test_close_wakes_blocked(void **state)
{
    (void)state;
    band_broadcast *b = mk(LOSSLESS, 1);
    band_broadcast_rx rx = {0};
    assert_int_equal(band_broadcast_subscribe(b, &rx), 0);
    struct blocking_arg ra = {b, &rx, 0, BAND_FOREVER};
    struct test_thread t;
    assert_int_equal(test_thread_start(&t, blocking_recv, &ra), 0);
    assert_true(test_wait_until(cond_waiting_receivers, b, 10 * BAND_SEC));
    send_val(b, 9);
    assert_int_equal(test_thread_join(&t), 0);
    assert_u64_equal(ra.v, 9);
    send_val(b, 10); /* full now */
    struct blocking_arg sa = {b, NULL, 11, BAND_FOREVER};
    assert_int_equal(test_thread_start(&t, blocking_send, &sa), 0);
    assert_true(test_wait_until(cond_waiting_senders, b, 10 * BAND_SEC));
    assert_int_equal(band_broadcast_close(b), 0);
    assert_int_equal(test_thread_join(&t), BAND_ECLOSED);
    expect_val(&rx, 10);
    expect_rc(&rx, BAND_ECLOSED);
    destroy(b, &rx, 1);
}

/* ---------------------------------------------------------------------------------- */
/* try_send/try_recv (and a send with room) take no lock while nothing is queued      */

struct nolock_arg {
    band_broadcast_rx *lossy, *lossless;
    atomic_int done;
    band_broadcast *b;
    int rc[9];
    uint64_t out[4];
    band_broadcast *lb; /* lossless, capacity 2, *lossless subscribed */
    int lrc[10];
    uint64_t lout[5];
};

static int nolock_thread(void *p)
{
    struct nolock_arg *a = p;
    a->rc[0] = band_broadcast_try_recv(a->lossy, &a->out[0]); /* ELAGGED: 1 of 3 lost */
    a->rc[1] = band_broadcast_try_recv(a->lossy, &a->out[0]);
    a->rc[2] = band_broadcast_try_recv(a->lossy, &a->out[1]);
    a->rc[3] = band_broadcast_try_recv(a->lossy, &a->out[2]); /* read everything */
    a->rc[4] = band_broadcast_try_recv(a->lossless, &a->out[2]);
    a->rc[5] = band_broadcast_rx_lagged(a->lossy) == 1 ? 0 : -1;
    uint64_t v = 4;
    a->rc[6] = band_broadcast_try_send(a->b, &v); /* lossy sends never take the lock */
    a->rc[7] = band_broadcast_send(a->b, &v, BAND_FOREVER, NULL);
    a->rc[8] = band_broadcast_try_recv(a->lossy, &a->out[3]);
    /* Lossless: sends with room, a refusal when full, receives that free slots. */
    uint64_t x = 10;
    a->lrc[0] = band_broadcast_try_send(a->lb, &x);
    x = 11;
    a->lrc[1] = band_broadcast_send(a->lb, &x, BAND_FOREVER, NULL);
    x = 12;
    a->lrc[2] = band_broadcast_try_send(a->lb, &x); /* EAGAIN: full */
    a->lrc[3] = band_broadcast_try_recv(a->lossless, &a->lout[0]);
    a->lrc[4] = band_broadcast_try_send(a->lb, &x); /* the read made room */
    a->lrc[5] = band_broadcast_try_recv(a->lossless, &a->lout[1]);
    a->lrc[6] = band_broadcast_try_recv(a->lossless, &a->lout[2]);
    a->lrc[7] = band_broadcast_try_recv(a->lossless, &a->lout[3]); /* EAGAIN: read all */
    x = 13;
    a->lrc[8] = band_broadcast_try_send(a->lb, &x);
    a->lrc[9] = band_broadcast_recv(a->lossless, &a->lout[4], BAND_FOREVER, NULL);
    atomic_store(&a->done, 1);
    return 0;
}

static bool nolock_done(void *p)
{
    return atomic_load(&((struct nolock_arg *)p)->done) != 0;
}

/* Another thread holds both broadcasts' internal locks while a worker sends and receives
 * (lossy and lossless, nothing queued); with the lock on those paths the worker blocks
 * until the lock is released and the wait fails. */
static void test_try_calls_take_no_lock(void **state)
{
    (void)state;
    band_broadcast *lossy = NULL, *lossless = NULL;
    assert_int_equal(band_broadcast_create(&lossy, sizeof(uint64_t), 2, BAND_BROADCAST_LOSSY), 0);
    assert_int_equal(band_broadcast_create(&lossless, sizeof(uint64_t), 2, BAND_BROADCAST_LOSSLESS),
                     0);
    band_broadcast_rx r1 = {0}, r2 = {0};
    assert_int_equal(band_broadcast_subscribe(lossy, &r1), 0);
    assert_int_equal(band_broadcast_subscribe(lossless, &r2), 0);
    for (uint64_t v = 1; v <= 3; v++)
        assert_int_equal(band_broadcast_try_send(lossy, &v), 0);
    struct nolock_arg a = {&r1, &r2, 0, lossy, {0}, {0}, lossless, {0}, {0}};
    assert_int_equal(pthread_mutex_lock(band__broadcast_lock(lossy)), 0);
    assert_int_equal(pthread_mutex_lock(band__broadcast_lock(lossless)), 0);
    struct test_thread t;
    assert_int_equal(test_thread_start(&t, nolock_thread, &a), 0);
    bool done = test_wait_until(nolock_done, &a, 10 * BAND_SEC);
    assert_int_equal(pthread_mutex_unlock(band__broadcast_lock(lossless)), 0);
    assert_int_equal(pthread_mutex_unlock(band__broadcast_lock(lossy)), 0);
    assert_int_equal(test_thread_join(&t), 0);
    assert_true(done);
    const int want[9] = {BAND_ELAGGED, 0, 0, BAND_EAGAIN, BAND_EAGAIN, 0, 0, 0, 0};
    for (int i = 0; i < 9; i++)
        assert_int_equal(a.rc[i], want[i]);
    assert_u64_equal(a.out[0], 2);
    assert_u64_equal(a.out[1], 3);
    assert_u64_equal(a.out[3], 4);
    const int lwant[10] = {0, 0, BAND_EAGAIN, 0, 0, 0, 0, BAND_EAGAIN, 0, 0};
    for (int i = 0; i < 10; i++)
        assert_int_equal(a.lrc[i], lwant[i]);
    const uint64_t lvals[5] = {10, 11, 12, 0, 13};
    for (int i = 0; i < 5; i++)
        if (i != 3)
            assert_u64_equal(a.lout[i], lvals[i]);
    assert_int_equal(band__broadcast_check(lossless), 0);
    band_broadcast_stats lst;
    assert_int_equal(band_broadcast_get_stats(lossless, &lst), 0);
    assert_u64_equal(lst.next_seq, 4);
    assert_u64_equal(lst.retained, 0);
    assert_u64_equal(lst.received, 4);
    assert_u64_equal(lst.try_send_refusals, 1);
    band_broadcast_stats st;
    assert_int_equal(band_broadcast_get_stats(lossy, &st), 0);
    assert_u64_equal(st.received, 3);
    assert_u64_equal(st.next_seq, 5);
    assert_u64_equal(st.lag_events, 1);
    assert_u64_equal(st.lagged, 1);
    assert_int_equal(band__broadcast_check(lossy), 0);
    assert_int_equal(band_broadcast_unsubscribe(&r1), 0);
    assert_int_equal(band_broadcast_unsubscribe(&r2), 0);
    assert_int_equal(band_broadcast_destroy(lossy), 0);
    assert_int_equal(band_broadcast_destroy(lossless), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_create_args, setup, teardown),
        cmocka_unit_test_setup_teardown(test_null_args, setup, teardown),
        cmocka_unit_test_setup_teardown(test_subscribe_rules, setup, teardown),
        cmocka_unit_test_setup_teardown(test_try_calls_take_no_lock, setup, teardown),
        cmocka_unit_test_setup_teardown(test_subscribe_starts_at_next, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lossless_every_receiver_every_message, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_lossless_no_receivers_never_blocks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lossless_slowest_holds_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lossless_fifo_senders, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lossless_unsubscribe_releases_senders, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_lossy_lag_exact, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lossy_async_lag_and_send, setup, teardown),
        cmocka_unit_test_setup_teardown(test_async_recv_completed_by_send, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shared_receiver, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_recv, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_send, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unsubscribe_ends_queued_recv, setup, teardown),
        cmocka_unit_test_setup_teardown(test_close, setup, teardown),
        cmocka_unit_test_setup_teardown(test_close_lossy_lagged, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wake_reenters, setup, teardown),
        cmocka_unit_test_setup_teardown(test_blocking_send_and_recv, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deadlines, setup, teardown),
        cmocka_unit_test_setup_teardown(test_close_wakes_blocked, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
