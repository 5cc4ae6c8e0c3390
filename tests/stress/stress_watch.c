/* SPDX-License-Identifier: MIT */
/*
 * stress_watch.c - threads on one watch, and oneshot ping-pong rounds with racing drops and
 * cancels.
 *
 * Watch: one sender sends versions 1, 2, ... (the value carries its version and a check
 * word) until an iteration count or a wall time is reached, then closes. Six receivers
 * wait in different ways - blocking with short random deadlines, async with cancels that
 * race the sends, polling, rx_read mixed with waits that never time out - and a reader
 * copies the value with band_watch_read(). Checked after join: every receiver saw strictly
 * increasing versions, each value matched its version and was never torn, and every
 * receiver observed the final version before BAND_ECLOSED; every queued async wait ended
 * exactly once (PENDING == wakes + successful cancels); the counters agree.
 *
 * Oneshot: each round, the main thread creates a oneshot for token r; a sender sends it
 * (or gives up), a receiver takes it in one of five ways (blocking with a short deadline,
 * blocking forever, async with a self-cancel, polling, drop-then-take), and an interferer
 * races a receiver_drop or a cancel of the receiver's op. After the round the main thread
 * takes any value left in the oneshot and checks that the token had exactly one owner:
 * the receiver, the leftover, or (send refused) the sender - never two, never none.
 *
 * Bounded by iterations AND wall time (about 2 s per scenario; the CI machine has 2 cores
 * and runs this under TSan and ASan too). Workers never assert; they record the first
 * inconsistency, and the main thread asserts after join.
 */
#include "test.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "band/oneshot.h"
#include "band/watch.h"

#define CHK(v) ((v)*UINT64_C(0x9E3779B97F4A7C15) ^ UINT64_C(0x5bd1e995))

struct errbox {
    atomic_int errors;
    pthread_mutex_t mu;
    char first[512];
};

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
static void
record_error(struct errbox *e, const char *fmt, ...)
{
    if (atomic_fetch_add(&e->errors, 1) == 0) {
        pthread_mutex_lock(&e->mu);
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->first, sizeof(e->first), fmt, ap);
        va_end(ap);
        pthread_mutex_unlock(&e->mu);
    }
}

static band_time scenario_seconds(void)
{
    return (band_time)2 * BAND_SEC;
}

static void yield_some(uint64_t *rng, uint64_t max)
{
    uint64_t k = test_rng_range(rng, 0, max);
    while (k-- > 0)
        sched_yield();
}

/* An async op with a mutex/cond so its owner can wait for the wake or a cancel. */
struct aop {
    band_watch_recv_op op; /* first */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int woken, wakes, status;
};

static void aop_wake(band_waiter *w)
{
    struct aop *a = (struct aop *)(void *)w;
    int st = band_waiter_status(w);
    pthread_mutex_lock(&a->mu);
    a->status = st;
    a->wakes++;
    a->woken = 1;
    pthread_cond_signal(&a->cv);
    pthread_mutex_unlock(&a->mu);
}

/* ====================================================================================== */
/* watch                                                                                  */

#define NRX       6
#define MAX_SENDS 400000

struct wval {
    uint64_t v, chk;
};

struct wrx {
    struct wscenario *sc;
    int mode;
    uint64_t rng;
    band_watch_rx rx;
    struct aop aop;
    uint64_t last;
    uint64_t got, timeouts, pending, at_once, wakes, cancel_ok, cancel_already, reads;
};

struct wscenario {
    band_watch *w;
    band_time stop_at;
    uint64_t final_version; /* written by the sender before close */
    struct errbox err;
    struct wrx rxs[NRX];
    uint64_t reader_reads;
};

/* A received value @val (version from the wait @ver, or 0 when unknown) for @r. */
static void check_value(struct wrx *r, const struct wval *val, uint64_t ver)
{
    if (val->chk != CHK(val->v))
        record_error(&r->sc->err, "rx %d: torn value %llu", r->mode, (unsigned long long)val->v);
    if (ver != 0 && ver != val->v)
        record_error(&r->sc->err, "rx %d: version %llu carries value %llu", r->mode,
                     (unsigned long long)ver, (unsigned long long)val->v);
    if (val->v <= r->last)
        record_error(&r->sc->err, "rx %d: version went from %llu to %llu", r->mode,
                     (unsigned long long)r->last, (unsigned long long)val->v);
    if (band_watch_rx_seen(&r->rx) != val->v)
        record_error(&r->sc->err, "rx %d: cursor at %llu after receiving %llu", r->mode,
                     (unsigned long long)band_watch_rx_seen(&r->rx), (unsigned long long)val->v);
    r->last = val->v;
    r->got++;
}

/* Returns 1 when the watch reported BAND_ECLOSED. */
static int rx_blocking(struct wrx *r, band_time deadline)
{
    struct wval val;
    int rc = band_watch_recv(&r->rx, &val, deadline, NULL);
    if (rc == 0)
        check_value(r, &val, 0);
    else if (rc == BAND_ETIMEDOUT)
        r->timeouts++;
    else if (rc == BAND_ECLOSED)
        return 1;
    else
        record_error(&r->sc->err, "rx %d: recv returned %d", r->mode, rc);
    return 0;
}

static int rx_async(struct wrx *r)
{
    struct aop *a = &r->aop;
    struct wval val;
    pthread_mutex_lock(&a->mu);
    a->woken = a->wakes = 0;
    a->status = 12345;
    pthread_mutex_unlock(&a->mu);
    int rc = band_watch_recv_async(&r->rx, &val, &a->op);
    if (rc == 0) {
        r->at_once++;
        check_value(r, &val, a->op.version);
        return 0;
    }
    if (rc == BAND_ECLOSED)
        return 1;
    if (rc != BAND_PENDING) {
        record_error(&r->sc->err, "rx %d: recv_async returned %d", r->mode, rc);
        return 1;
    }
    r->pending++;
    yield_some(&r->rng, 3);
    if (test_rng_range(&r->rng, 0, 1) == 0) {
        rc = band_waiter_cancel(&a->op.w, BAND_ECANCELED);
        if (rc == 0) {
            r->cancel_ok++;
            pthread_mutex_lock(&a->mu);
            int woken = a->woken;
            pthread_mutex_unlock(&a->mu);
            if (woken)
                record_error(&r->sc->err, "rx %d: woken and cancelled", r->mode);
            return 0;
        }
        if (rc != BAND_EALREADY)
            record_error(&r->sc->err, "rx %d: cancel returned %d", r->mode, rc);
        r->cancel_already++;
    }
    pthread_mutex_lock(&a->mu);
    while (!a->woken)
        pthread_cond_wait(&a->cv, &a->mu);
    int st = a->status, wakes = a->wakes;
    pthread_mutex_unlock(&a->mu);
    r->wakes++;
    if (wakes != 1)
        record_error(&r->sc->err, "rx %d: %d wakes for one wait", r->mode, wakes);
    if (st == 0) {
        check_value(r, &val, a->op.version);
        return 0;
    }
    if (st == BAND_ECLOSED)
        return 1;
    record_error(&r->sc->err, "rx %d: wake status %d", r->mode, st);
    return 1;
}

static int rx_poll(struct wrx *r)
{
    struct wval val;
    int rc = band_watch_try_recv(&r->rx, &val);
    if (rc == 0)
        check_value(r, &val, 0);
    else if (rc == BAND_ECLOSED)
        return 1;
    else if (rc == BAND_EAGAIN)
        sched_yield();
    else
        record_error(&r->sc->err, "rx %d: try_recv returned %d", r->mode, rc);
    return 0;
}

/* rx_read (marks the current version seen, changed or not), then a wait that never
 * times out: it must end with a newer version or BAND_ECLOSED. */
static int rx_read_then_wait(struct wrx *r)
{
    struct wval val;
    uint64_t ver = 0;
    if (test_rng_range(&r->rng, 0, 3) == 0) {
        int rc = band_watch_rx_read(&r->rx, &val, &ver);
        if (rc != 0 || ver != val.v || val.chk != CHK(val.v) || val.v < r->last)
            record_error(&r->sc->err, "rx_read: rc %d version %llu value %llu last %llu", rc,
                         (unsigned long long)ver, (unsigned long long)val.v,
                         (unsigned long long)r->last);
        r->last = val.v;
        r->reads++;
    }
    return rx_blocking(r, BAND_FOREVER);
}

static int watch_receiver(void *arg)
{
    struct wrx *r = arg;
    for (;;) {
        int closed;
        switch (r->mode) {
        case 0:
        case 1:
            closed = rx_blocking(
                r, band_deadline_after((band_time)test_rng_range(&r->rng, 0, 300) * BAND_USEC));
            break;
        case 2:
        case 3:
            closed = rx_async(r);
            break;
        case 4:
            closed = rx_poll(r);
            break;
        default:
            closed = rx_read_then_wait(r);
            break;
        }
        if (closed)
            return 0;
    }
}

static int watch_sender(void *arg)
{
    struct wscenario *sc = arg;
    uint64_t i;
    for (i = 1; i <= MAX_SENDS; i++) {
        if ((i & 63) == 0 && band_now() >= sc->stop_at)
            break;
        struct wval v = {i, CHK(i)};
        int rc = band_watch_send(sc->w, &v);
        if (rc != 0) {
            record_error(&sc->err, "send %llu returned %d", (unsigned long long)i, rc);
            break;
        }
        if ((i & 15) == 0)
            sched_yield(); /* let receivers run on 2 cores */
    }
    sc->final_version = i - 1;
    /* Close while receivers wait (bounded), so close's wake-every-waiter path runs too. */
    band_time until = band_deadline_after(50 * BAND_MSEC);
    band_watch_stats st;
    while (band_watch_get_stats(sc->w, &st) == 0 && st.waiters < 2 && band_now() < until)
        sched_yield();
    int rc = band_watch_close(sc->w);
    if (rc != 0)
        record_error(&sc->err, "close returned %d", rc);
    return 0;
}

static int watch_reader(void *arg)
{
    struct wscenario *sc = arg;
    uint64_t prev = 0;
    while (!band_watch_is_closed(sc->w)) {
        struct wval v;
        uint64_t ver;
        if (band_watch_read(sc->w, &v, &ver) != 0 || v.v != ver || v.chk != CHK(v.v) || ver < prev)
            record_error(&sc->err, "read: version %llu value %llu prev %llu",
                         (unsigned long long)ver, (unsigned long long)v.v,
                         (unsigned long long)prev);
        prev = ver;
        sc->reader_reads++;
        sched_yield();
    }
    return 0;
}

static void test_stress_watch(void **state)
{
    (void)state;
    struct wscenario *sc = calloc(1, sizeof(*sc));
    assert_non_null(sc);
    atomic_init(&sc->err.errors, 0);
    pthread_mutex_init(&sc->err.mu, NULL);
    struct wval init = {0, CHK(0)};
    assert_int_equal(band_watch_create(&sc->w, sizeof(struct wval), &init), 0);
    for (int i = 0; i < NRX; i++) {
        struct wrx *r = &sc->rxs[i];
        r->sc = sc;
        r->mode = i;
        r->rng = 0x5eed0000u + (uint64_t)i;
        assert_int_equal(band_watch_rx_init(&r->rx, sc->w), 0);
        band_waiter_init(&r->aop.op.w, aop_wake, r);
        pthread_mutex_init(&r->aop.mu, NULL);
        pthread_cond_init(&r->aop.cv, NULL);
    }

    struct test_thread th[NRX + 2];
    band_time t0 = band_now();
    sc->stop_at = t0 + scenario_seconds();
    for (int i = 0; i < NRX; i++)
        assert_int_equal(test_thread_start(&th[i], watch_receiver, &sc->rxs[i]), 0);
    assert_int_equal(test_thread_start(&th[NRX], watch_reader, sc), 0);
    assert_int_equal(test_thread_start(&th[NRX + 1], watch_sender, sc), 0);
    for (int i = 0; i < NRX + 2; i++)
        test_thread_join(&th[i]);
    band_time elapsed = band_now() - t0;

    band_watch_stats st;
    assert_int_equal(band_watch_get_stats(sc->w, &st), 0);
    uint64_t pending = 0, wakes = 0, cancel_ok = 0, got = 0, at_once = 0;
    for (int i = 0; i < NRX; i++) {
        struct wrx *r = &sc->rxs[i];
        pending += r->pending;
        wakes += r->wakes;
        cancel_ok += r->cancel_ok;
        got += r->got;
        at_once += r->at_once;
    }
    print_message("watch: %.2f s, %llu versions, %llu changes received (%llu async at once), "
                  "async pending %llu = wakes %llu + cancels %llu; reader %llu reads; "
                  "stats queued %llu delivered %llu timeouts %llu cancels %llu closed %llu\n",
                  (double)elapsed / 1e9, (unsigned long long)sc->final_version,
                  (unsigned long long)got, (unsigned long long)at_once, (unsigned long long)pending,
                  (unsigned long long)wakes, (unsigned long long)cancel_ok,
                  (unsigned long long)sc->reader_reads, (unsigned long long)st.queued,
                  (unsigned long long)st.delivered, (unsigned long long)st.timeouts,
                  (unsigned long long)st.cancels, (unsigned long long)st.closed_fails);
    int errors = atomic_load(&sc->err.errors);
    if (errors != 0)
        print_error("watch: %d error(s), first: %s\n", errors, sc->err.first);
    uint64_t lasts[NRX];
    for (int i = 0; i < NRX; i++) {
        lasts[i] = sc->rxs[i].last;
        pthread_mutex_destroy(&sc->rxs[i].aop.mu);
        pthread_cond_destroy(&sc->rxs[i].aop.cv);
    }
    uint64_t final_version = sc->final_version;
    int destroy_rc = band_watch_destroy(sc->w);
    pthread_mutex_destroy(&sc->err.mu);
    free(sc);

    assert_int_equal(errors, 0);
    assert_int_equal(destroy_rc, 0);
    assert_true(final_version > 0);
    /* The last version is always observed, by every receiver, before BAND_ECLOSED. */
    for (int i = 0; i < NRX; i++)
        assert_u64_equal(lasts[i], final_version);
    /* Exactly once: each queued async wait ended by one wake or one successful cancel. */
    assert_u64_equal(pending, wakes + cancel_ok);
    assert_u64_equal(st.version, final_version);
    assert_u64_equal(st.sends, final_version);
    assert_u64_equal(st.waiters, 0);
    assert_int_equal(st.closed, 1);
    assert_u64_equal(st.cancels, cancel_ok);
    /* Every queued wait ended once: by a send, a close, a timeout or a cancel. */
    assert_true(st.queued >= pending);
    assert_u64_equal(st.delivered, got); /* rx_read marks are not deliveries */
}

/* ====================================================================================== */
/* oneshot ping-pong                                                                      */

#define MAX_ROUNDS 100000

struct oop {
    struct band_oneshot_recv_op op; /* first */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int woken, wakes, status, cancelled;
};

static void oop_wake(band_waiter *w)
{
    struct oop *a = (struct oop *)(void *)w;
    int st = band_waiter_status(w);
    pthread_mutex_lock(&a->mu);
    a->status = st;
    a->wakes++;
    a->woken = 1;
    pthread_cond_signal(&a->cv);
    pthread_mutex_unlock(&a->mu);
}

enum { S_SENT, S_REFUSED, S_DROPPED };

struct oscenario {
    pthread_barrier_t start, end;
    atomic_int stop;
    band_oneshot *o;  /* this round's; written by main between the barriers */
    uint64_t token;   /* this round's value */
    int s_result;     /* the sender's outcome */
    int r_got;        /* the receiver took the token */
    uint64_t r_value; /* what it took */
    struct oop op;    /* the receiver's async op; the interferer may cancel it */
    atomic_int armed; /* 1 while op may be pending (the interferer may cancel) */
    struct errbox err;
    uint64_t rng_s, rng_r, rng_x;
    uint64_t sent, refused, dropped, r_mode[5], pend, wakes, cancel_r, cancel_x, x_drops;
    uint64_t timeouts, closed, canceled;
};

static int os_sender(void *arg)
{
    struct oscenario *sc = arg;
    for (;;) {
        pthread_barrier_wait(&sc->start);
        if (atomic_load(&sc->stop))
            return 0;
        yield_some(&sc->rng_s, 2);
        if (test_rng_range(&sc->rng_s, 0, 4) == 0) {
            int rc = band_oneshot_close(sc->o);
            if (rc != 0)
                record_error(&sc->err, "close returned %d", rc);
            sc->s_result = S_DROPPED;
        } else {
            uint64_t v = sc->token;
            int rc = band_oneshot_send(sc->o, &v);
            if (rc == 0) {
                sc->s_result = S_SENT;
            } else if (rc == BAND_ECLOSED) {
                sc->s_result = S_REFUSED; /* the token stays with the sender */
            } else {
                record_error(&sc->err, "send returned %d", rc);
                sc->s_result = S_DROPPED;
            }
            if (test_rng_range(&sc->rng_s, 0, 1) == 0)
                (void)band_oneshot_close(sc->o); /* done: the value stays after a send */
        }
        pthread_barrier_wait(&sc->end);
    }
}

static void r_result(struct oscenario *sc, int rc, uint64_t v)
{
    if (rc == 0) {
        sc->r_got = 1;
        sc->r_value = v;
    } else if (rc == BAND_ETIMEDOUT) {
        sc->timeouts++;
    } else if (rc == BAND_ECLOSED) {
        sc->closed++;
    } else if (rc == BAND_ECANCELED) {
        sc->canceled++;
    } else if (rc != BAND_EAGAIN) {
        record_error(&sc->err, "receive returned %d", rc);
    }
}

static void r_async(struct oscenario *sc)
{
    struct oop *a = &sc->op;
    uint64_t v = 0;
    pthread_mutex_lock(&a->mu);
    a->woken = a->wakes = a->cancelled = 0;
    a->status = 12345;
    pthread_mutex_unlock(&a->mu);
    atomic_store(&sc->armed, 1);
    int rc = band_oneshot_recv_async(sc->o, &v, &a->op);
    if (rc != BAND_PENDING) {
        atomic_store(&sc->armed, 0);
        r_result(sc, rc, v);
        return;
    }
    sc->pend++;
    yield_some(&sc->rng_r, 3);
    if (test_rng_range(&sc->rng_r, 0, 1) == 0) {
        rc = band_waiter_cancel(&a->op.w, BAND_ECANCELED);
        if (rc == 0) {
            sc->cancel_r++;
            pthread_mutex_lock(&a->mu);
            a->cancelled = 1;
            pthread_mutex_unlock(&a->mu);
        } else if (rc != BAND_EALREADY && rc != BAND_EINVAL) {
            record_error(&sc->err, "receiver's cancel returned %d", rc);
        }
    }
    pthread_mutex_lock(&a->mu);
    while (!a->woken && !a->cancelled)
        pthread_cond_wait(&a->cv, &a->mu);
    int woken = a->woken, wakes = a->wakes, cancelled = a->cancelled, st = a->status;
    pthread_mutex_unlock(&a->mu);
    atomic_store(&sc->armed, 0);
    if (woken && cancelled)
        record_error(&sc->err, "op woken and cancelled");
    if (woken) {
        sc->wakes++;
        if (wakes != 1)
            record_error(&sc->err, "%d wakes for one receive", wakes);
        r_result(sc, st, v);
    }
}

static int os_receiver(void *arg)
{
    struct oscenario *sc = arg;
    for (;;) {
        pthread_barrier_wait(&sc->start);
        if (atomic_load(&sc->stop))
            return 0;
        sc->r_got = 0;
        sc->r_value = 0;
        uint64_t v = 0;
        int mode = (int)test_rng_range(&sc->rng_r, 0, 4);
        sc->r_mode[mode]++;
        int rc = BAND_EAGAIN;
        switch (mode) {
        case 0: {
            band_time us = (band_time)test_rng_range(&sc->rng_r, 0, 100);
            rc = band_oneshot_recv(sc->o, &v, band_deadline_after(us * BAND_USEC), NULL);
            r_result(sc, rc, v);
            break;
        }
        case 1:
            /* The sender always sends or closes, so this always ends. */
            rc = band_oneshot_recv(sc->o, &v, BAND_FOREVER, NULL);
            r_result(sc, rc, v);
            break;
        case 2:
            r_async(sc);
            break;
        case 3:
            for (int k = 0; k < 50 && rc == BAND_EAGAIN; k++) {
                rc = band_oneshot_try_recv(sc->o, &v);
                if (rc == BAND_EAGAIN)
                    sched_yield();
            }
            r_result(sc, rc, v);
            break;
        default:
            yield_some(&sc->rng_r, 2);
            (void)band_oneshot_receiver_drop(sc->o);
            rc = band_oneshot_try_recv(sc->o, &v);
            r_result(sc, rc, v);
            break;
        }
        pthread_barrier_wait(&sc->end);
    }
}

/* Races the receiver: drops it, or cancels its async op, at a random moment. */
static int os_interferer(void *arg)
{
    struct oscenario *sc = arg;
    for (;;) {
        pthread_barrier_wait(&sc->start);
        if (atomic_load(&sc->stop))
            return 0;
        uint64_t what = test_rng_range(&sc->rng_x, 0, 3);
        yield_some(&sc->rng_x, 3);
        if (what == 0) {
            (void)band_oneshot_receiver_drop(sc->o);
            sc->x_drops++;
        } else if (what == 1 && atomic_load(&sc->armed)) {
            struct oop *a = &sc->op;
            int rc = band_waiter_cancel(&a->op.w, BAND_ECANCELED);
            if (rc == 0) {
                sc->cancel_x++;
                pthread_mutex_lock(&a->mu);
                a->cancelled = 1;
                pthread_cond_signal(&a->cv);
                pthread_mutex_unlock(&a->mu);
            } else if (rc != BAND_EALREADY && rc != BAND_EINVAL) {
                record_error(&sc->err, "interferer's cancel returned %d", rc);
            }
        }
        pthread_barrier_wait(&sc->end);
    }
}

static void test_stress_oneshot(void **state)
{
    (void)state;
    struct oscenario *sc = calloc(1, sizeof(*sc));
    assert_non_null(sc);
    atomic_init(&sc->err.errors, 0);
    pthread_mutex_init(&sc->err.mu, NULL);
    atomic_init(&sc->stop, 0);
    atomic_init(&sc->armed, 0);
    pthread_barrier_init(&sc->start, NULL, 4);
    pthread_barrier_init(&sc->end, NULL, 4);
    band_waiter_init(&sc->op.op.w, oop_wake, sc);
    pthread_mutex_init(&sc->op.mu, NULL);
    pthread_cond_init(&sc->op.cv, NULL);
    sc->rng_s = 11;
    sc->rng_r = 22;
    sc->rng_x = 33;

    struct test_thread th[3];
    assert_int_equal(test_thread_start(&th[0], os_sender, sc), 0);
    assert_int_equal(test_thread_start(&th[1], os_receiver, sc), 0);
    assert_int_equal(test_thread_start(&th[2], os_interferer, sc), 0);

    band_time t0 = band_now();
    band_time stop_at = t0 + scenario_seconds();
    uint64_t rounds = 0, owned_by_rx = 0, leftovers = 0, kept = 0;
    for (uint64_t r = 1; r <= MAX_ROUNDS; r++) {
        if ((r & 31) == 0 && band_now() >= stop_at)
            break;
        if (band_oneshot_create(&sc->o, sizeof(uint64_t)) != 0) {
            record_error(&sc->err, "create failed");
            break;
        }
        sc->token = r;
        pthread_barrier_wait(&sc->start);
        pthread_barrier_wait(&sc->end);
        rounds++;

        /* Who owns token r? Exactly one party when it was sent; only the sender when the
         * send was refused; nobody when the sender gave up. */
        uint64_t v = 0;
        int rc = band_oneshot_try_recv(sc->o, &v);
        int left = rc == 0;
        if (rc != 0 && rc != BAND_EALREADY && rc != BAND_ECLOSED)
            record_error(&sc->err, "round %llu: leftover try_recv returned %d",
                         (unsigned long long)r, rc);
        if (left && v != r)
            record_error(&sc->err, "round %llu: leftover %llu", (unsigned long long)r,
                         (unsigned long long)v);
        if (sc->r_got && sc->r_value != r)
            record_error(&sc->err, "round %llu: receiver got %llu", (unsigned long long)r,
                         (unsigned long long)sc->r_value);
        int owners = sc->r_got + left;
        switch (sc->s_result) {
        case S_SENT:
            sc->sent++;
            if (owners != 1)
                record_error(&sc->err, "round %llu: sent token has %d owners",
                             (unsigned long long)r, owners);
            break;
        case S_REFUSED:
            sc->refused++;
            kept++;
            if (owners != 0)
                record_error(&sc->err, "round %llu: refused token also has %d owners",
                             (unsigned long long)r, owners);
            break;
        default:
            sc->dropped++;
            if (owners != 0 || rc != BAND_ECLOSED)
                record_error(&sc->err, "round %llu: dropped sender, %d owners, rc %d",
                             (unsigned long long)r, owners, rc);
            break;
        }
        owned_by_rx += (uint64_t)sc->r_got;
        leftovers += (uint64_t)left;
        rc = band_oneshot_destroy(sc->o);
        if (rc != 0)
            record_error(&sc->err, "round %llu: destroy returned %d", (unsigned long long)r, rc);
        sc->o = NULL;
        if (atomic_load(&sc->err.errors) != 0)
            break;
    }
    atomic_store(&sc->stop, 1);
    pthread_barrier_wait(&sc->start);
    for (int i = 0; i < 3; i++)
        test_thread_join(&th[i]);
    band_time elapsed = band_now() - t0;

    print_message("oneshot: %.2f s, %llu rounds; sent %llu (receiver %llu, leftover %llu), "
                  "refused %llu, sender dropped %llu; receive modes %llu/%llu/%llu/%llu/%llu; "
                  "async pending %llu = wakes %llu + cancels %llu (own) + %llu (interferer); "
                  "receiver drops by interferer %llu; timeouts %llu closed %llu canceled %llu\n",
                  (double)elapsed / 1e9, (unsigned long long)rounds, (unsigned long long)sc->sent,
                  (unsigned long long)owned_by_rx, (unsigned long long)leftovers,
                  (unsigned long long)sc->refused, (unsigned long long)sc->dropped,
                  (unsigned long long)sc->r_mode[0], (unsigned long long)sc->r_mode[1],
                  (unsigned long long)sc->r_mode[2], (unsigned long long)sc->r_mode[3],
                  (unsigned long long)sc->r_mode[4], (unsigned long long)sc->pend,
                  (unsigned long long)sc->wakes, (unsigned long long)sc->cancel_r,
                  (unsigned long long)sc->cancel_x, (unsigned long long)sc->x_drops,
                  (unsigned long long)sc->timeouts, (unsigned long long)sc->closed,
                  (unsigned long long)sc->canceled);
    int errors = atomic_load(&sc->err.errors);
    if (errors != 0)
        print_error("oneshot: %d error(s), first: %s\n", errors, sc->err.first);
    uint64_t pend = sc->pend, wakes = sc->wakes, cancels = sc->cancel_r + sc->cancel_x;
    uint64_t sent = sc->sent, refused = sc->refused;
    pthread_barrier_destroy(&sc->start);
    pthread_barrier_destroy(&sc->end);
    pthread_mutex_destroy(&sc->op.mu);
    pthread_cond_destroy(&sc->op.cv);
    pthread_mutex_destroy(&sc->err.mu);
    free(sc);

    assert_int_equal(errors, 0);
    assert_true(rounds > 0);
    assert_u64_equal(pend, wakes + cancels);
    assert_u64_equal(sent, owned_by_rx + leftovers);
    assert_u64_equal(refused, kept);
}

/* ---------------------------------------------------------------------------------- */
/* watch: several senders, lock-free readers                                           */

/*
 * Three senders and five receivers (8 threads on a 2-core machine) on a watch of a 68-byte
 * value whose words all carry the same tag, so that a torn copy (words from two sends) is
 * visible. Pollers use try_recv, rx_read and read; waiters block with short deadlines.
 * Checked: no copy is ever torn, each cursor's versions strictly increase, after close
 * every receiver reaches the last version before BAND_ECLOSED, and the version equals the
 * number of accepted sends.
 */
#define MS_WORDS 17
struct msval {
    uint32_t w[MS_WORDS];
};

struct ms_ctx {
    band_watch *w;
    struct errbox *err;
    band_time until;
    atomic_int senders_left;
    atomic_uint_fast64_t accepted;
};

struct ms_thread {
    struct ms_ctx *c;
    int id;
    uint64_t rng;
};

static int ms_torn(const struct msval *v)
{
    for (int i = 1; i < MS_WORDS; i++)
        if (v->w[i] != v->w[0])
            return 1;
    return 0;
}

static int ms_sender(void *arg)
{
    struct ms_thread *t = arg;
    struct ms_ctx *c = t->c;
    for (uint32_t k = 1; k < 20000 && band_now() < c->until; k++) {
        struct msval v;
        for (int i = 0; i < MS_WORDS; i++)
            v.w[i] = ((uint32_t)t->id << 24) | k;
        int rc = band_watch_send(c->w, &v);
        if (rc != 0) {
            record_error(c->err, "sender %d: send returned %d", t->id, rc);
            break;
        }
        atomic_fetch_add(&c->accepted, 1);
        if ((k & 63) == 0)
            yield_some(&t->rng, 2);
    }
    if (atomic_fetch_sub(&c->senders_left, 1) == 1)
        band_watch_close(c->w);
    return 0;
}

static int ms_receiver(void *arg)
{
    struct ms_thread *t = arg;
    struct ms_ctx *c = t->c;
    band_watch_rx rx;
    band_watch_rx_init(&rx, c->w);
    uint64_t last = band_watch_rx_seen(&rx);
    for (;;) {
        struct msval v;
        memset(&v, 0, sizeof(v));
        int rc;
        uint64_t ver = 0;
        switch ((t->id + (int)test_rng_range(&t->rng, 0, 7)) % 4) {
        case 0:
        case 1:
            rc = band_watch_try_recv(&rx, &v);
            break;
        case 2:
            rc = band_watch_recv(&rx, &v, band_deadline_after(200 * BAND_USEC), NULL);
            break;
        default:
            rc = band_watch_read(c->w, &v, &ver);
            if (rc == 0 && ms_torn(&v))
                record_error(c->err, "rx %d: band_watch_read copy torn", t->id);
            rc = BAND_EAGAIN;
            break;
        }
        if (rc == 0) {
            uint64_t seen = band_watch_rx_seen(&rx);
            if (ms_torn(&v))
                record_error(c->err, "rx %d: torn value at version %llu", t->id,
                             (unsigned long long)seen);
            if (seen <= last)
                record_error(c->err, "rx %d: version %llu after %llu", t->id,
                             (unsigned long long)seen, (unsigned long long)last);
            last = seen;
        } else if (rc == BAND_ECLOSED) {
            break;
        } else if (rc != BAND_EAGAIN && rc != BAND_ETIMEDOUT) {
            record_error(c->err, "rx %d: unexpected %d", t->id, rc);
            break;
        }
    }
    if (last != band_watch_version(c->w))
        record_error(c->err, "rx %d: closed at version %llu, last is %llu", t->id,
                     (unsigned long long)last, (unsigned long long)band_watch_version(c->w));
    return 0;
}

static void test_stress_watch_senders(void **state)
{
    (void)state;
    struct errbox err;
    memset(&err, 0, sizeof(err));
    pthread_mutex_init(&err.mu, NULL);
    struct ms_ctx c;
    memset(&c, 0, sizeof(c));
    struct msval init;
    memset(&init, 0, sizeof(init));
    assert_int_equal(band_watch_create(&c.w, sizeof(struct msval), &init), 0);
    c.err = &err;
    c.until = band_now() + scenario_seconds();
    atomic_init(&c.senders_left, 3);
    atomic_init(&c.accepted, 0);
    struct ms_thread th[8];
    struct test_thread t[8];
    for (int i = 0; i < 8; i++) {
        th[i].c = &c;
        th[i].id = i;
        th[i].rng = UINT64_C(0x5eed1000) + (uint64_t)i;
    }
    for (int i = 0; i < 8; i++)
        assert_int_equal(test_thread_start(&t[i], i < 3 ? ms_sender : ms_receiver, &th[i]), 0);
    for (int i = 0; i < 8; i++)
        assert_int_equal(test_thread_join(&t[i]), 0);
    if (atomic_load(&err.errors) != 0)
        fail_msg("%d errors, first: %s", atomic_load(&err.errors), err.first);
    band_watch_stats st;
    assert_int_equal(band_watch_get_stats(c.w, &st), 0);
    assert_u64_equal(st.version, atomic_load(&c.accepted));
    assert_u64_equal(st.sends, atomic_load(&c.accepted));
    assert_u64_equal(st.waiters, 0);
    assert_int_equal(st.closed, 1);
    struct msval v;
    assert_int_equal(band_watch_read(c.w, &v, NULL), 0);
    assert_int_equal(ms_torn(&v), 0);
    assert_int_equal(band_watch_destroy(c.w), 0);
    pthread_mutex_destroy(&err.mu);
}

/* ---------------------------------------------------------------------------------- */
/* oneshot: racing senders and racing receivers on the lock-free paths                 */

/*
 * Each round two senders race to send their token, a poller spins on try_recv and a
 * blocking receiver waits forever (with 4 workers and the main thread on a 2-core
 * machine). Checked per round: exactly one send returned 0, the other BAND_EALREADY;
 * exactly one receiver got the value, the winner's token; the other got BAND_EALREADY or
 * BAND_EBUSY (it found the receive of the first one queued), never the value twice.
 */
struct race_ctx {
    pthread_barrier_t go, done;
    band_oneshot *o;
    atomic_int stop;
    int send_rc[2], recv_rc[2];
    uint64_t got[2];
};

struct race_thread {
    struct race_ctx *c;
    int id;
};

static int race_worker(void *arg)
{
    struct race_thread *t = arg;
    struct race_ctx *c = t->c;
    for (;;) {
        pthread_barrier_wait(&c->go);
        if (atomic_load(&c->stop))
            return 0;
        if (t->id < 2) {
            uint64_t v = UINT64_C(1000) + (uint64_t)t->id;
            c->send_rc[t->id] = band_oneshot_send(c->o, &v);
        } else if (t->id == 2) {
            int rc;
            uint64_t out = 0;
            while ((rc = band_oneshot_try_recv(c->o, &out)) == BAND_EAGAIN)
                sched_yield();
            c->recv_rc[0] = rc;
            c->got[0] = out;
        } else {
            uint64_t out = 0;
            c->recv_rc[1] = band_oneshot_recv(c->o, &out, BAND_FOREVER, NULL);
            c->got[1] = out;
        }
        pthread_barrier_wait(&c->done);
    }
}

static void test_stress_oneshot_races(void **state)
{
    (void)state;
    struct race_ctx c;
    memset(&c, 0, sizeof(c));
    assert_int_equal(pthread_barrier_init(&c.go, NULL, 5), 0);
    assert_int_equal(pthread_barrier_init(&c.done, NULL, 5), 0);
    struct race_thread th[4];
    struct test_thread t[4];
    for (int i = 0; i < 4; i++) {
        th[i].c = &c;
        th[i].id = i;
        assert_int_equal(test_thread_start(&t[i], race_worker, &th[i]), 0);
    }
    band_time until = band_now() + scenario_seconds();
    long rounds = 0, queued_first = 0, bad = 0;
    char first[256] = "";
    for (; rounds < 50000 && band_now() < until; rounds++) {
        assert_int_equal(band_oneshot_create(&c.o, sizeof(uint64_t)), 0);
        c.got[0] = c.got[1] = 0;
        pthread_barrier_wait(&c.go);
        pthread_barrier_wait(&c.done);
        int winner = c.send_rc[0] == 0 ? 0 : 1;
        int ok = (c.send_rc[winner] == 0 && c.send_rc[1 - winner] == BAND_EALREADY);
        int taker = c.recv_rc[0] == 0 ? 0 : 1;
        int other = c.recv_rc[1 - taker];
        ok = ok && c.recv_rc[taker] == 0 && c.got[taker] == UINT64_C(1000) + (uint64_t)winner &&
             (other == BAND_EALREADY || other == BAND_EBUSY);
        queued_first += other == BAND_EBUSY;
        band_oneshot_stats st;
        assert_int_equal(band_oneshot_get_stats(c.o, &st), 0);
        ok = ok && st.sent == 1 && st.received == 1 && st.holds_value == 0 && st.waiting == 0 &&
             st.refused == 1;
        if (!ok && bad++ == 0)
            snprintf(first, sizeof(first), "round %ld: sends %d %d, receives %d %d, got %llu %llu",
                     rounds, c.send_rc[0], c.send_rc[1], c.recv_rc[0], c.recv_rc[1],
                     (unsigned long long)c.got[0], (unsigned long long)c.got[1]);
        assert_int_equal(band_oneshot_destroy(c.o), 0);
    }
    atomic_store(&c.stop, 1);
    pthread_barrier_wait(&c.go);
    for (int i = 0; i < 4; i++)
        assert_int_equal(test_thread_join(&t[i]), 0);
    pthread_barrier_destroy(&c.go);
    pthread_barrier_destroy(&c.done);
    printf("oneshot races: %ld rounds, the blocking receive queued first in %ld\n", rounds,
           queued_first);
    if (bad != 0)
        fail_msg("%ld bad rounds, first: %s", bad, first);
}

/* ---------------------------------------------------------------------------------- */
/* watch: a lock-free send must wake a receiver that is just queuing                   */

/*
 * Ping-pong: the receiver waits with no deadline for version k + 1, the sender sends it
 * (lock-free unless it sees the receiver queued) only after the receiver acknowledged k,
 * after a random short pause so that the send lands before, during and after the
 * receiver queues. A lost wake leaves the receiver waiting: the sender notices after a
 * bound, counts it and closes the watch to release it.
 */
struct pp_ctx {
    band_watch *w;
    band_watch_rx rx; /* initialised before the receiver starts */
    atomic_uint_fast64_t acked;
    atomic_int lost;
};

static int pp_receiver(void *arg)
{
    struct pp_ctx *c = arg;
    for (;;) {
        uint64_t v = 0;
        int rc = band_watch_recv(&c->rx, &v, BAND_FOREVER, NULL);
        if (rc != 0)
            return rc == BAND_ECLOSED ? 0 : rc;
        if (v != band_watch_rx_seen(&c->rx))
            return -1000;
        atomic_store(&c->acked, v);
    }
}

static void test_stress_watch_pingpong(void **state)
{
    (void)state;
    struct pp_ctx c;
    uint64_t zero = 0;
    assert_int_equal(band_watch_create(&c.w, sizeof(uint64_t), &zero), 0);
    atomic_init(&c.acked, 0);
    atomic_init(&c.lost, 0);
    assert_int_equal(band_watch_rx_init(&c.rx, c.w), 0);
    struct test_thread t;
    assert_int_equal(test_thread_start(&t, pp_receiver, &c), 0);
    uint64_t rng = 0x9e37;
    band_time until = band_now() + scenario_seconds();
    uint64_t k = 0;
    while (k < 20000 && band_now() < until) {
        yield_some(&rng, 2);
        k++;
        assert_int_equal(band_watch_send(c.w, &k), 0);
        band_time bound = band_now() + 5 * BAND_SEC;
        while (atomic_load(&c.acked) != k && band_now() < bound)
            sched_yield();
        if (atomic_load(&c.acked) != k) {
            atomic_store(&c.lost, 1);
            break;
        }
    }
    assert_int_equal(band_watch_close(c.w), 0);
    assert_int_equal(test_thread_join(&t), 0);
    printf("watch ping-pong: %llu sends\n", (unsigned long long)k);
    assert_int_equal(atomic_load(&c.lost), 0);
    assert_int_equal(band_watch_destroy(c.w), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stress_watch),          cmocka_unit_test(test_stress_watch_senders),
        cmocka_unit_test(test_stress_watch_pingpong), cmocka_unit_test(test_stress_oneshot),
        cmocka_unit_test(test_stress_oneshot_races),
    };
    return cmocka_run_group_tests_name("stress_watch", tests, NULL, NULL);
}
