/* SPDX-License-Identifier: MIT */
/*
 * test_chan.c - the bounded channel (chan.h): argument checks and their order, the
 * deterministic full-queue test (capacity one: the second try_send is refused with
 * BAND_EAGAIN, the element stays with the caller, the first is not lost), FIFO hand-off of
 * freed room to the oldest waiting sender (a newcomer cannot take it), head-of-line
 * blocking under a byte bound, direct hand-off to waiting receivers, reservations, close
 * with queued, pending and reserved elements, byte bounds, drop policies, sender counting,
 * recv_many, blocking calls and deadlines, cancel, wakes that call back in, destroy with a
 * drop function, counters, and an exactly-once accounting run with counted payloads.
 *
 * Asynchronous operations use a recorder: a band_chan_send_op (or band_chan_reserve_op) /
 * band_chan_recv_op with a wake_rec (test.h) as its wake target, so the shared wake log
 * records the order and the status of every wake.
 */
#include "test.h"

#include <sys/wait.h>
#include <unistd.h>

#include <string.h>

#include "band/chan.h"
#include "band/histo.h"

#define MAXP BAND_MAX_UNITS

/* ---------------------------------------------------------------------------------- */
/* recorders and fixture                                                               */

/* An asynchronous send (or reservation) whose wake lands in a wake_rec. Both op types
 * begin with their waiter, so op.w and rsv.w are the same waiter. */
struct sop {
    union {
        band_chan_send_op op;     /* for send_async() */
        band_chan_reserve_op rsv; /* for reserve_async() */
    };
    struct wake_rec rec;
    uint64_t val;   /* the element send_async() sends */
    uint64_t bytes; /* what the next submission declares */
};

/* An asynchronous receive whose wake lands in a wake_rec. */
struct rop {
    band_chan_recv_op op; /* first */
    struct wake_rec rec;
    uint64_t out;
};

#define OUT_SENTINEL UINT64_C(0xdeadbeefdeadbeef)

static void sop_init(struct sop *s, int id, struct wake_log *log, uint64_t val, uint64_t bytes)
{
    wake_rec_init(&s->rec, id, log);
    s->rec.ctx = s;
    s->val = val;
    s->bytes = bytes;
    band_waiter_init(&s->op.w, wake_rec_fn, &s->rec);
}

static void rop_init(struct rop *r, int id, struct wake_log *log)
{
    wake_rec_init(&r->rec, id, log);
    r->rec.ctx = r;
    r->out = OUT_SENTINEL;
    r->op.bytes = 12345;
    band_waiter_init(&r->op.w, wake_rec_fn, &r->rec);
}

/* Submit @s as a send of s->val declaring s->bytes. */
static int send_async(band_chan *c, struct sop *s)
{
    return band_chan_send_async(c, &s->val, s->bytes, &s->op);
}

/* Submit @s as a reservation of s->bytes; on success s->rsv.slot holds it. */
static int reserve_async(band_chan *c, struct sop *s)
{
    return band_chan_reserve_async(c, s->bytes, &s->rsv);
}

/* Submit @r as a receive into r->out. */
static int recv_async(band_chan *c, struct rop *r)
{
    return band_chan_recv_async(c, &r->out, &r->op);
}

#define NOPS 8

struct drop_log {
    int calls;
    void *ctx_seen;
    uint64_t elems[32];
};

struct fixture {
    band_chan *c; /* closed and destroyed by teardown when not NULL */
    struct wake_log log;
    struct sop s[NOPS]; /* ids 0..7 */
    struct rop r[NOPS]; /* ids 10..17 */
    struct drop_log drops;
    band_chan_slot slot; /* released by teardown if a failed test left it held */
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    if (f == NULL)
        return -1;
    wake_log_init(&f->log);
    for (int i = 0; i < NOPS; i++) {
        sop_init(&f->s[i], i, &f->log, 100 + (uint64_t)i, 1);
        rop_init(&f->r[i], 10 + i, &f->log);
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    int rc = 0;
    if (f->slot.chan != NULL)
        band_chan_slot_release(&f->slot);
    if (f->c != NULL) {
        band_chan_close(f->c);
        rc = band_chan_destroy(f->c);
    }
    free(f);
    return rc == 0 ? 0 : -1;
}

/* A waiting channel of uint64_t elements, owned by the fixture. */
static band_chan *mk(struct fixture *f, uint64_t capacity, uint64_t byte_capacity)
{
    band_chan_opts o = {.byte_capacity = byte_capacity};
    assert_null(f->c);
    assert_int_equal(band_chan_create(&f->c, sizeof(uint64_t), capacity, &o), 0);
    assert_non_null(f->c);
    return f->c;
}

static void record_drop(void *elem, void *ctx)
{
    struct drop_log *d = ctx;
    uint64_t v;
    memcpy(&v, elem, sizeof(v));
    if (d->calls < (int)TEST_COUNTOF(d->elems))
        d->elems[d->calls] = v;
    d->ctx_seen = ctx;
    d->calls++;
}

/* A channel with options (elem_size uint64_t, drop recorded into f->drops). */
static band_chan *mk_opts(struct fixture *f, uint64_t capacity, uint64_t byte_capacity,
                          int overflow, uint64_t senders)
{
    band_chan_opts o;
    memset(&o, 0, sizeof(o));
    o.byte_capacity = byte_capacity;
    o.overflow = overflow;
    o.drop = record_drop;
    o.drop_ctx = &f->drops;
    o.senders = senders;
    assert_null(f->c);
    assert_int_equal(band_chan_create(&f->c, sizeof(uint64_t), capacity, &o), 0);
    assert_non_null(f->c);
    return f->c;
}

static band_chan_stats stats_of(const band_chan *c)
{
    band_chan_stats st;
    memset(&st, 0xee, sizeof(st));
    assert_int_equal(band_chan_get_stats(c, &st), 0);
    return st;
}

static int try_send_u64(band_chan *c, uint64_t v, uint64_t bytes)
{
    return band_chan_try_send(c, &v, bytes);
}

/* Receive one element now; it must be @want with @want_bytes. */
static void expect_recv(band_chan *c, uint64_t want, uint64_t want_bytes)
{
    uint64_t v = OUT_SENTINEL, b = 777;
    assert_int_equal(band_chan_try_recv(c, &v, &b), 0);
    assert_u64_equal(v, want);
    assert_u64_equal(b, want_bytes);
}

static int try_recv_rc(band_chan *c)
{
    uint64_t v = OUT_SENTINEL;
    return band_chan_try_recv(c, &v, NULL);
}

/* The wake log holds exactly @n entries with the ids in @ids. */
static void assert_log(struct wake_log *log, const int *ids, unsigned n)
{
    assert_int_equal(atomic_load(&log->len), n);
    for (unsigned i = 0; i < n; i++)
        assert_int_equal(log->ids[i], ids[i]);
}

static int wakes(const struct wake_rec *r)
{
    return atomic_load(&((struct wake_rec *)r)->count);
}

/* ---------------------------------------------------------------------------------- */
/* create, destroy, names, argument checks                                             */

static void test_create_args(void **state)
{
    (void)state;
    band_chan *c = (band_chan *)(uintptr_t)0x1234;
    assert_int_equal(band_chan_create(NULL, 8, 1, NULL), BAND_EINVAL);
    assert_int_equal(band_chan_create(&c, 0, 1, NULL), BAND_EINVAL);
    assert_int_equal(band_chan_create(&c, 8, 0, NULL), BAND_EINVAL);
    assert_int_equal(band_chan_create(&c, 8, MAXP + 1, NULL), BAND_EINVAL);
    assert_int_equal(band_chan_create(&c, 8, UINT64_MAX, NULL), BAND_EINVAL);
    assert_ptr_equal(c, (band_chan *)(uintptr_t)0x1234); /* unchanged on failure */

    band_chan_opts o;
    memset(&o, 0, sizeof(o));
    assert_int_equal(band_chan_create(NULL, 4, 2, &o), BAND_EINVAL);
    assert_int_equal(band_chan_create(&c, 0, 2, &o), BAND_EINVAL); /* elem_size 0 */
    assert_int_equal(band_chan_create(&c, 4, 0, &o), BAND_EINVAL); /* capacity 0 */
    o.overflow = 3;
    assert_int_equal(band_chan_create(&c, 4, 2, &o), BAND_EINVAL);
    o.overflow = -1;
    assert_int_equal(band_chan_create(&c, 4, 2, &o), BAND_EINVAL);
    o.overflow = BAND_CHAN_WAIT;
    o.byte_capacity = MAXP + 1;
    assert_int_equal(band_chan_create(&c, 4, 2, &o), BAND_EINVAL);
    o.byte_capacity = 0;
    o.deadline_aware = 2;
    assert_int_equal(band_chan_create(&c, 4, 2, &o), BAND_EINVAL);
    o.deadline_aware = 0;
    o.lifo_after = -1;
    assert_int_equal(band_chan_create(&c, 4, 2, &o), BAND_EINVAL);
    o.lifo_after = 0;
    assert_ptr_equal(c, (band_chan *)(uintptr_t)0x1234);

    /* The ring is allocated up front: a ring larger than memory is BAND_ENOMEM (its size
     * overflows size_t here, so no sanitizer sees an absurd malloc). */
    assert_int_equal(band_chan_create(&c, 64, MAXP, &o), BAND_ENOMEM);
    assert_int_equal(band_chan_create(&c, 64, MAXP, NULL), BAND_ENOMEM);
    assert_ptr_equal(c, (band_chan *)(uintptr_t)0x1234);
    o.byte_capacity = MAXP;
    assert_int_equal(band_chan_create(&c, 4, 3, &o), 0);
    band_chan_stats st = stats_of(c);
    assert_u64_equal(st.capacity, 3);
    assert_u64_equal(st.byte_capacity, MAXP);
    assert_int_equal(band_chan_destroy(c), 0);

    /* NULL options are the zero-initialised ones: no byte bound, waiting, FIFO. */
    assert_int_equal(band_chan_create(&c, 4, 5, NULL), 0);
    st = stats_of(c);
    assert_u64_equal(st.capacity, 5);
    assert_u64_equal(st.byte_capacity, 0);
    assert_int_equal(band_chan_destroy(c), 0);

    for (int pol = BAND_CHAN_WAIT; pol <= BAND_CHAN_DROP_NEWEST; pol++) {
        o.overflow = pol;
        o.byte_capacity = 0;
        assert_int_equal(band_chan_create(&c, 4, 1, &o), 0);
        assert_int_equal(band_chan_destroy(c), 0);
    }
    assert_int_equal(band_chan_destroy(NULL), 0);
}

static void test_fresh_stats(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk(f, 7, 99);
    band_chan_stats st = stats_of(c);
    assert_string_equal(st.name, "");
    assert_int_equal(st.closed, 0);
    assert_u64_equal(st.capacity, 7);
    assert_u64_equal(st.byte_capacity, 99);
    assert_u64_equal(st.len, 0);
    assert_u64_equal(st.bytes, 0);
    assert_u64_equal(st.reserved, 0);
    assert_u64_equal(st.reserved_bytes, 0);
    assert_u64_equal(st.senders, 0);
    assert_u64_equal(st.waiting_senders, 0);
    assert_u64_equal(st.waiting_receivers, 0);
    assert_u64_equal(st.sent, 0);
    assert_u64_equal(st.received, 0);
    assert_u64_equal(st.refused_full, 0);
    assert_u64_equal(st.refused_closed, 0);
    assert_u64_equal(st.refused_too_big, 0);
    assert_u64_equal(st.dropped, 0);
    assert_u64_equal(st.send_wait_ns, 0);
    assert_u64_equal(st.send_wait_ns_max, 0);
}

static void test_set_name(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk(f, 1, 0);
    char name[BAND_NAME_MAX + 1];
    assert_int_equal(band_chan_set_name(c, "jobs"), 0);
    assert_string_equal(stats_of(c).name, "jobs");
    memset(name, 'a', BAND_NAME_MAX - 1);
    name[BAND_NAME_MAX - 1] = '\0';
    assert_int_equal(band_chan_set_name(c, name), 0);
    assert_string_equal(stats_of(c).name, name);
    memset(name, 'b', BAND_NAME_MAX);
    name[BAND_NAME_MAX] = '\0';
    assert_int_equal(band_chan_set_name(c, name), BAND_EINVAL);
    assert_int_equal((unsigned char)stats_of(c).name[0], 'a'); /* unchanged */
    assert_int_equal(band_chan_set_name(c, NULL), 0);
    assert_string_equal(stats_of(c).name, "");
    assert_int_equal(band_chan_set_name(NULL, "x"), BAND_EINVAL);
}

static void test_null_args(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk(f, 2, 0);
    uint64_t v = 1, out = 0, b = 0;
    size_t n = 99;
    int dropped_out = 0;
    band_chan_slot slot = BAND_CHAN_SLOT_INIT;
    band_chan_stats st;

    assert_int_equal(band_chan_try_send(NULL, &v, 1), BAND_EINVAL);
    assert_int_equal(band_chan_try_send(c, NULL, 1), BAND_EINVAL);
    assert_int_equal(band_chan_send(NULL, &v, 1, BAND_FOREVER, NULL), BAND_EINVAL);
    assert_int_equal(band_chan_send(c, NULL, 1, BAND_FOREVER, NULL), BAND_EINVAL);
    assert_int_equal(send_async(NULL, &f->s[0]), BAND_EINVAL);
    assert_int_equal(band_chan_send_async(c, &v, 1, NULL), BAND_EINVAL);
    assert_int_equal(band_chan_send_async(c, NULL, 1, &f->s[0].op), BAND_EINVAL);
    assert_int_equal(band_waiter_is_pending(&f->s[0].op.w), 0);
    assert_int_equal(band_chan_offer(NULL, &v, 1, &out, &b, &dropped_out), BAND_EINVAL);
    assert_int_equal(band_chan_try_reserve(NULL, 1, &slot), BAND_EINVAL);
    assert_int_equal(band_chan_try_reserve(c, 1, NULL), BAND_EINVAL);
    assert_int_equal(band_chan_reserve(NULL, 1, &slot, BAND_FOREVER, NULL), BAND_EINVAL);
    assert_int_equal(band_chan_reserve(c, 1, NULL, BAND_FOREVER, NULL), BAND_EINVAL);
    assert_int_equal(reserve_async(NULL, &f->s[0]), BAND_EINVAL);
    assert_int_equal(band_chan_reserve_async(c, 1, NULL), BAND_EINVAL);
    assert_ptr_equal(slot.chan, NULL);
    assert_int_equal(band_chan_slot_send(NULL, &v), BAND_EINVAL);
    assert_int_equal(band_chan_slot_send(&slot, &v), BAND_EINVAL); /* empty slot */
    assert_int_equal(band_chan_slot_release(NULL), BAND_EINVAL);
    assert_int_equal(band_chan_slot_release(&slot), 0); /* empty: nothing to do */
    assert_int_equal(band_chan_try_recv(NULL, &out, &b), BAND_EINVAL);
    assert_int_equal(band_chan_try_recv(c, NULL, &b), BAND_EINVAL);
    assert_int_equal(band_chan_recv(NULL, &out, &b, BAND_FOREVER, NULL), BAND_EINVAL);
    assert_int_equal(band_chan_recv(c, NULL, &b, BAND_FOREVER, NULL), BAND_EINVAL);
    assert_int_equal(recv_async(NULL, &f->r[0]), BAND_EINVAL);
    assert_int_equal(band_chan_recv_async(c, &out, NULL), BAND_EINVAL);
    assert_int_equal(band_chan_recv_async(c, NULL, &f->r[0].op), BAND_EINVAL);
    assert_int_equal(band_waiter_is_pending(&f->r[0].op.w), 0);
    assert_int_equal(band_chan_is_closed(NULL), 0);
    assert_int_equal(band_chan_recv_many(NULL, 1, &out, NULL, &n, BAND_FOREVER, NULL), BAND_EINVAL);
    assert_int_equal(band_chan_recv_many(c, 1, NULL, NULL, &n, BAND_FOREVER, NULL), BAND_EINVAL);
    assert_int_equal(band_chan_recv_many(c, 1, &out, NULL, NULL, BAND_FOREVER, NULL), BAND_EINVAL);
    assert_int_equal(band_chan_close(NULL), BAND_EINVAL);
    assert_int_equal(band_chan_sender_join(NULL), BAND_EINVAL);
    assert_int_equal(band_chan_sender_leave(NULL), BAND_EINVAL);
    assert_int_equal(band_chan_get_stats(NULL, &st), BAND_EINVAL);
    assert_int_equal(band_chan_get_stats(c, NULL), BAND_EINVAL);

    /* None of that changed anything. */
    st = stats_of(c);
    assert_u64_equal(st.len, 0);
    assert_u64_equal(st.sent, 0);
    assert_u64_equal(st.reserved, 0);
    assert_u64_equal(st.refused_full + st.refused_closed + st.refused_too_big, 0);
    assert_int_equal(st.closed, 0);
    assert_int_equal(atomic_load(&f->log.len), 0);
}

/* EINVAL comes before E2BIG, which comes before ECLOSED, which comes before EAGAIN. */
static void test_check_order(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk(f, 1, 10);
    band_chan_slot slot = BAND_CHAN_SLOT_INIT;
    assert_int_equal(try_send_u64(c, 1, 1), 0); /* now full */

    assert_int_equal(band_chan_try_send(c, NULL, 11), BAND_EINVAL);
    assert_int_equal(try_send_u64(c, 2, 11), BAND_E2BIG);
    assert_int_equal(try_send_u64(c, 2, 1), BAND_EAGAIN);
    band_chan_stats st = stats_of(c);
    assert_u64_equal(st.refused_too_big, 1);
    assert_u64_equal(st.refused_full, 1);
    assert_u64_equal(st.refused_closed, 0);

    assert_int_equal(band_chan_close(c), 0);
    assert_int_equal(band_chan_try_send(c, NULL, 11), BAND_EINVAL);
    assert_int_equal(try_send_u64(c, 2, 11), BAND_E2BIG);
    assert_int_equal(try_send_u64(c, 2, 1), BAND_ECLOSED);
    assert_int_equal(band_chan_send(c, &f->s[0].val, 11, BAND_FOREVER, NULL), BAND_E2BIG);
    assert_int_equal(band_chan_send(c, &f->s[0].val, 1, BAND_FOREVER, NULL), BAND_ECLOSED);
    f->s[0].bytes = 11;
    assert_int_equal(send_async(c, &f->s[0]), BAND_E2BIG);
    f->s[0].bytes = 1;
    assert_int_equal(send_async(c, &f->s[0]), BAND_ECLOSED);
    assert_int_equal(band_chan_try_reserve(c, 11, &slot), BAND_E2BIG);
    assert_int_equal(band_chan_try_reserve(c, 1, &slot), BAND_ECLOSED);
    assert_int_equal(band_chan_reserve(c, 11, &slot, BAND_FOREVER, NULL), BAND_E2BIG);
    assert_int_equal(band_chan_reserve(c, 1, &slot, BAND_FOREVER, NULL), BAND_ECLOSED);
    f->s[1].bytes = 11;
    assert_int_equal(reserve_async(c, &f->s[1]), BAND_E2BIG);
    assert_ptr_equal(f->s[1].rsv.slot.chan, NULL);
    f->s[1].bytes = 1;
    assert_int_equal(reserve_async(c, &f->s[1]), BAND_ECLOSED);
    assert_ptr_equal(f->s[1].rsv.slot.chan, NULL);
    assert_ptr_equal(slot.chan, NULL);
    st = stats_of(c);
    assert_u64_equal(st.refused_too_big, 7);
    assert_u64_equal(st.refused_closed, 6);
    assert_u64_equal(st.refused_full, 1);
    assert_u64_equal(st.len, 1);
    assert_u64_equal(st.sent, 1);
    assert_int_equal(band_waiter_is_pending(&f->s[0].op.w), 0);
    assert_int_equal(band_waiter_is_pending(&f->s[1].op.w), 0);
    assert_int_equal(atomic_load(&f->log.len), 0); /* refusals never wake */
    expect_recv(c, 1, 1);
    assert_int_equal(try_recv_rc(c), BAND_ECLOSED);
}

/* A pending op resubmitted and a non-empty slot are EINVAL, even on a closed channel. */
static void test_misuse_is_einval(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk(f, 1, 0);
    band_chan_slot slot = BAND_CHAN_SLOT_INIT;

    assert_int_equal(band_chan_try_reserve(c, 1, &slot), 0); /* full now */
    assert_ptr_equal(slot.chan, c);
    assert_int_equal(band_chan_try_reserve(c, 1, &slot), BAND_EINVAL);
    assert_int_equal(band_chan_reserve(c, 1, &slot, 0, NULL), BAND_EINVAL);

    assert_int_equal(send_async(c, &f->s[0]), BAND_PENDING);
    assert_int_equal(send_async(c, &f->s[0]), BAND_EINVAL);
    assert_int_equal(reserve_async(c, &f->s[0]), BAND_EINVAL);
    assert_int_equal(band_waiter_is_pending(&f->s[0].op.w), 1);
    assert_u64_equal(stats_of(c).waiting_senders, 1);
    assert_int_equal(band_chan_destroy(c), BAND_EBUSY);
    assert_int_equal(band_waiter_cancel(&f->s[0].op.w, BAND_ECANCELED), 0);

    assert_int_equal(recv_async(c, &f->r[0]), BAND_PENDING);
    assert_int_equal(recv_async(c, &f->r[0]), BAND_EINVAL);
    assert_int_equal(band_waiter_is_pending(&f->r[0].op.w), 1);
    band_chan_stats st = stats_of(c);
    assert_u64_equal(st.waiting_senders, 0);
    assert_u64_equal(st.waiting_receivers, 1);
    assert_u64_equal(st.refused_full + st.refused_closed + st.refused_too_big, 0);
    assert_int_equal(band_chan_destroy(c), BAND_EBUSY);

    assert_int_equal(band_chan_close(c), 0);
    /* The receiver still waits for the reservation. */
    assert_int_equal(wakes(&f->r[0].rec), 0);
    assert_int_equal(recv_async(c, &f->r[0]), BAND_EINVAL);
    assert_int_equal(band_chan_try_reserve(c, 1, &slot), BAND_EINVAL);
    assert_int_equal(send_async(c, &f->s[0]), BAND_ECLOSED);
    assert_int_equal(band_chan_slot_release(&slot), 0);
    assert_ptr_equal(slot.chan, NULL);
    assert_int_equal(wakes(&f->r[0].rec), 1);
    assert_int_equal(atomic_load(&f->r[0].rec.status), BAND_ECLOSED);
    assert_u64_equal(f->r[0].out, OUT_SENTINEL);
}

/* ---------------------------------------------------------------------------------- */
/* full queue, FIFO, hand-off                                                          */

/* The issue's deterministic full-queue test. */
static void test_full_queue_capacity_one(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk(f, 1, 0);
    uint64_t first = 1111, second = 2222;
    assert_int_equal(band_chan_try_send(c, &first, 1), 0);
    assert_int_equal(band_chan_try_send(c, &second, 1), BAND_EAGAIN);
    assert_u64_equal(second, 2222); /* the refused element stays with the caller */
    band_chan_stats st = stats_of(c);
    assert_u64_equal(st.len, 1);
    assert_u64_equal(st.sent, 1);
    assert_u64_equal(st.refused_full, 1);

    /* The first element was not lost, and the second is accepted once there is room. */
    expect_recv(c, 1111, 1);
    assert_int_equal(try_recv_rc(c), BAND_EAGAIN);
    assert_int_equal(band_chan_try_send(c, &second, 1), 0);
    expect_recv(c, 2222, 1);
    st = stats_of(c);
    assert_u64_equal(st.sent, 2);
    assert_u64_equal(st.received, 2);
    assert_u64_equal(st.len, 0);
    assert_u64_equal(st.refused_full, 1);
}

static void test_fifo_order_and_bytes(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk(f, 4, 0);
    for (uint64_t i = 0; i < 4; i++)
        assert_int_equal(try_send_u64(c, 10 + i, 1000 * i), 0);
    assert_int_equal(try_send_u64(c, 99, 0), BAND_EAGAIN);
    band_chan_stats st = stats_of(c);
    assert_u64_equal(st.len, 4);
    assert_u64_equal(st.bytes, 6000);
    for (uint64_t i = 0; i < 4; i++)
        expect_recv(c, 10 + i, 1000 * i);
    uint64_t v = 5;
    assert_int_equal(band_chan_try_recv(c, &v, NULL), BAND_EAGAIN);
    assert_u64_equal(v, 5); /* untouched */
    st = stats_of(c);
    assert_u64_equal(st.len, 0);
    assert_u64_equal(st.bytes, 0);
    /* bytes may be NULL; wrap-around of the ring keeps the order */
    for (int round = 0; round < 5; round++) {
        assert_int_equal(try_send_u64(c, 200 + (uint64_t)round, 0), 0);
        assert_int_equal(try_send_u64(c, 300 + (uint64_t)round, 0), 0);
        assert_int_equal(try_send_u64(c, 400 + (uint64_t)round, 0), 0);
        v = 0;
        assert_int_equal(band_chan_try_recv(c, &v, NULL), 0);
        assert_u64_equal(v, 200 + (uint64_t)round);
        assert_int_equal(band_chan_try_recv(c, &v, NULL), 0);
        assert_u64_equal(v, 300 + (uint64_t)round);
        assert_int_equal(band_chan_try_recv(c, &v, NULL), 0);
        assert_u64_equal(v, 400 + (uint64_t)round);
    }
}

/* Larger elements are copied whole, in and out. */
struct big {
    uint64_t a[9];
    char tail[3];
};

static void test_large_elements(void **state)
{
    (void)state;
    band_chan *c;
    assert_int_equal(band_chan_create(&c, sizeof(struct big), 3, NULL), 0);
    struct big in, out;
    for (int k = 0; k < 3; k++) {
        memset(&in, 0, sizeof(in));
        for (int i = 0; i < 9; i++)
            in.a[i] = (uint64_t)(k * 100 + i);
        in.tail[0] = (char)('a' + k);
        in.tail[2] = 'z';
        assert_int_equal(band_chan_try_send(c, &in, sizeof(in)), 0);
    }
    for (int k = 0; k < 3; k++) {
        memset(&out, 0xff, sizeof(out));
        uint64_t b = 0;
        assert_int_equal(band_chan_try_recv(c, &out, &b), 0);
        assert_u64_equal(b, sizeof(in));
        for (int i = 0; i < 9; i++)
            assert_u64_equal(out.a[i], (uint64_t)(k * 100 + i));
        assert_int_equal(out.tail[0], 'a' + k);
        assert_int_equal(out.tail[2], 'z');
    }
    assert_int_equal(band_chan_destroy(c), 0);
}

/* Every slot size class (the u64 path, the out-of-line copy for other sizes, slots
 * padded to a power of two, slots wider than a cache line) with capacities that are and
 * are not powers of two: each element comes out whole, in order, with its bytes, through
 * several wrap-arounds of the ring, and the stats and the drop function agree. */
static size_t sizes_dropped;

static void count_drop(void *elem, void *ctx)
{
    (void)elem;
    (void)ctx;
    sizes_dropped++;
}

static void fill_elem(unsigned char *e, size_t n, uint64_t k)
{
    for (size_t i = 0; i < n; i++)
        e[i] = (unsigned char)(k * 31 + i * 7 + 1);
}

static void test_element_sizes(void **state)
{
    (void)state;
    static const size_t sizes[] = {1, 3, 7, 8, 9, 16, 24, 40, 56, 57, 64, 100};
    static const uint64_t caps[] = {1, 2, 3, 5, 8};
    unsigned char in[128], out[128 * 4];
    for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
        for (size_t ci = 0; ci < sizeof(caps) / sizeof(caps[0]); ci++) {
            size_t n = sizes[si];
            uint64_t cap = caps[ci];
            band_chan_opts o;
            memset(&o, 0, sizeof(o));
            o.drop = count_drop;
            band_chan *c;
            assert_int_equal(band_chan_create(&c, n, cap, &o), 0);
            uint64_t sent = 0, got = 0;
            for (int round = 0; round < 4; round++) {
                for (uint64_t i = 0; i < cap; i++, sent++) {
                    fill_elem(in, n, sent);
                    assert_int_equal(i % 2 ? band_chan_try_send(c, in, sent + 1)
                                           : band_chan_send(c, in, sent + 1, 0, NULL),
                                     0);
                }
                fill_elem(in, n, 999);
                assert_int_equal(band_chan_try_send(c, in, 1), BAND_EAGAIN);
                band_chan_stats st = stats_of(c);
                assert_u64_equal(st.len, cap);
                uint64_t want_bytes = 0;
                for (uint64_t k = got; k < sent; k++)
                    want_bytes += k + 1;
                assert_u64_equal(st.bytes, want_bytes);
                if (round % 2 == 0) {
                    for (; got < sent; got++) {
                        uint64_t b = 0;
                        memset(out, 0xee, n + 1);
                        assert_int_equal(got % 2 ? band_chan_try_recv(c, out, &b)
                                                 : band_chan_recv(c, out, &b, 0, NULL),
                                         0);
                        fill_elem(in, n, got);
                        assert_memory_equal(out, in, n);
                        assert_int_equal(out[n], 0xee); /* nothing written past it */
                        assert_u64_equal(b, got + 1);
                    }
                } else {
                    while (got < sent) {
                        uint64_t bs[4];
                        size_t m = 0;
                        assert_int_equal(band_chan_recv_many(c, 4, out, bs, &m, 0, NULL), 0);
                        assert_true(m >= 1 && m <= 4 && m <= sent - got);
                        for (size_t j = 0; j < m; j++, got++) {
                            fill_elem(in, n, got);
                            assert_memory_equal(out + j * n, in, n);
                            assert_u64_equal(bs[j], got + 1);
                        }
                    }
                }
                uint64_t b = 0;
                assert_int_equal(band_chan_try_recv(c, out, &b), BAND_EAGAIN);
            }
            /* Leave some inside: destroy drops each of them once. */
            for (uint64_t i = 0; i < (cap + 1) / 2; i++, sent++) {
                fill_elem(in, n, sent);
                assert_int_equal(band_chan_try_send(c, in, 0), 0);
            }
            band_chan_stats st = stats_of(c);
            assert_u64_equal(st.sent, sent);
            assert_u64_equal(st.received, got);
            sizes_dropped = 0;
            assert_int_equal(band_chan_destroy(c), 0);
            assert_int_equal(sizes_dropped, (cap + 1) / 2);
        }
    }
}

/* Freed room goes to the oldest waiting sender; a newcomer cannot take it. */
static void test_fifo_grant_to_oldest_sender(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk(f, 1, 0);
    assert_int_equal(try_send_u64(c, 1, 1), 0);
    assert_int_equal(send_async(c, &f->s[0]), BAND_PENDING);
    assert_int_equal(send_async(c, &f->s[1]), BAND_PENDING);
    assert_u64_equal(stats_of(c).waiting_senders, 2);

    /* The receive frees the slot: s0 gets it, on this thread, before try_recv returns. */
    expect_recv(c, 1, 1);
    assert_int_equal(wakes(&f->s[0].rec), 1);
    assert_int_equal(atomic_load(&f->s[0].rec.status), 0);
    assert_int_equal(atomic_load(&f->s[0].rec.pending_in), 0);
    assert_true(pthread_equal(f->s[0].rec.thread, pthread_self()));
    assert_int_equal(band_waiter_status(&f->s[0].op.w), 0);
    assert_int_equal(wakes(&f->s[1].rec), 0);
    assert_int_equal(try_send_u64(c, 9, 1), BAND_EAGAIN);
    band_chan_stats st = stats_of(c);
    assert_u64_equal(st.len, 1);
    assert_u64_equal(st.waiting_senders, 1);
    assert_u64_equal(st.sent, 2);

    expect_recv(c, 100, 1);
    assert_int_equal(wakes(&f->s[1].rec), 1);
    /* The channel is full again with s1's element: the newcomer is still refused. */
    assert_int_equal(try_send_u64(c, 9, 1), BAND_EAGAIN);
    expect_recv(c, 101, 1);
    assert_int_equal(try_send_u64(c, 9, 1), 0);
    expect_recv(c, 9, 1);
    const int order[] = {0, 1};
    assert_log(&f->log, order, 2);
    st = stats_of(c);
    assert_u64_equal(st.sent, 4);
    assert_u64_equal(st.received, 4);
    assert_u64_equal(st.refused_full, 2);
}

/* While a sender waits, try_send is refused even when its element would fit. */
static void test_try_send_never_barges(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk(f, 4, 10);
    band_chan_slot slot = BAND_CHAN_SLOT_INIT;
    assert_int_equal(try_send_u64(c, 1, 6), 0);
    f->s[0].bytes = 8; /* 6 + 8 > 10: waits */
    assert_int_equal(send_async(c, &f->s[0]), BAND_PENDING);
    assert_int_equal(try_send_u64(c, 2, 1), BAND_EAGAIN); /* 6 + 1 would fit */
    assert_int_equal(try_send_u64(c, 2, 0), BAND_EAGAIN);
    assert_int_equal(band_chan_try_reserve(c, 1, &slot), BAND_EAGAIN);
    assert_u64_equal(stats_of(c).refused_full, 3);
    assert_int_equal(band_chan_send(c, &f->s[1].val, 1, 0, NULL), BAND_ETIMEDOUT);
    assert_int_equal(band_chan_reserve(c, 1, &slot, 0, NULL), BAND_ETIMEDOUT);
    assert_ptr_equal(slot.chan, NULL);
    band_chan_stats st = stats_of(c);
    assert_u64_equal(st.len, 1);
    assert_u64_equal(st.bytes, 6);
    assert_u64_equal(st.waiting_senders, 1);

    expect_recv(c, 1, 6);
    assert_int_equal(wakes(&f->s[0].rec), 1);
    st = stats_of(c);
    assert_u64_equal(st.bytes, 8);
    assert_u64_equal(st.waiting_senders, 0);
    assert_int_equal(try_send_u64(c, 2, 2), 0); /* 8 + 2 == 10 */
    assert_int_equal(try_send_u64(c, 3, 1), BAND_EAGAIN);
    expect_recv(c, 100, 8);
    expect_recv(c, 2, 2);
}

/* A head that needs many bytes holds back smaller senders behind it. */
static void test_head_of_line_blocking(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk(f, 10, 10);
    assert_int_equal(try_send_u64(c, 1, 4), 0);
    assert_int_equal(try_send_u64(c, 2, 4), 0);
    f->s[0].bytes = 9; /* waits for both */
    f->s[1].bytes = 1; /* would fit now, but waits behind s0 */
    f->s[2].bytes = 1;
    assert_int_equal(send_async(c, &f->s[0]), BAND_PENDING);
    assert_int_equal(send_async(c, &f->s[1]), BAND_PENDING);
    assert_int_equal(send_async(c, &f->s[2]), BAND_PENDING);
    assert_u64_equal(stats_of(c).waiting_senders, 3);

    expect_recv(c, 1, 4); /* 4 bytes queued: s0 still needs 9 */
    assert_int_equal(atomic_load(&f->log.len), 0);
    expect_recv(c, 2, 4); /* empty: s0 (9) and s1 (1) fit, s2 does not */
    const int order[] = {0, 1};
    assert_log(&f->log, order, 2);
    band_chan_stats st = stats_of(c);
    assert_u64_equal(st.len, 2);
    assert_u64_equal(st.bytes, 10);
    assert_u64_equal(st.waiting_senders, 1);
    expect_recv(c, 100, 9);
    const int order2[] = {0, 1, 2};
    assert_log(&f->log, order2, 3);
    expect_recv(c, 101, 1);
    expect_recv(c, 102, 1);
    assert_int_equal(try_recv_rc(c), BAND_EAGAIN);
}

/* The element of a pending send is copied when it is granted, not when it is submitted. */
static void test_async_copies_at_grant(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk(f, 1, 0);
    assert_int_equal(try_send_u64(c, 1, 1), 0);
    f->s[0].val = 50;
    assert_int_equal(send_async(c, &f->s[0]), BAND_PENDING);
    f->s[0].val = 51;
    expect_recv(c, 1, 1);
    f->s[0].val = 52; /* too late: already copied */
    expect_recv(c, 51, 1);
}

static void test_send_async_at_once(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk(f, 2, 0);
    f->s[0].bytes = 7;
    assert_int_equal(send_async(c, &f->s[0]), 0);
    assert_int_equal(band_waiter_is_pending(&f->s[0].op.w), 0);
    assert_int_equal(band_waiter_status(&f->s[0].op.w), 0);
    assert_int_equal(wakes(&f->s[0].rec), 0); /* completed at once: no wake */
    /* It can be submitted again right away. */
    assert_int_equal(send_async(c, &f->s[0]), 0);
    assert_int_equal(send_async(c, &f->s[0]), BAND_PENDING);
    expect_recv(c, 100, 7);
    assert_int_equal(wakes(&f->s[0].rec), 1);
    expect_recv(c, 100, 7);
    expect_recv(c, 100, 7);
    assert_u64_equal(stats_of(c).sent, 3);
}

/* Waiting receivers are served in arrival order; a send hands over directly, using no slot. */
static void test_handoff_to_waiting_receivers(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk(f, 1, 5);
    assert_int_equal(recv_async(c, &f->r[0]), BAND_PENDING);
    assert_int_equal(recv_async(c, &f->r[1]), BAND_PENDING);
    assert_int_equal(recv_async(c, &f->r[2]), BAND_PENDING);
    band_chan_stats st = stats_of(c);
    assert_u64_equal(st.waiting_receivers, 3);
    assert_int_equal(try_recv_rc(c), BAND_EAGAIN);
    uint64_t v = 0;
    assert_int_equal(band_chan_recv(c, &v, NULL, 0, NULL), BAND_ETIMEDOUT);

    assert_int_equal(try_send_u64(c, 7, 5), 0);
    assert_int_equal(wakes(&f->r[0].rec), 1);
    assert_int_equal(atomic_load(&f->r[0].rec.status), 0);
    assert_u64_equal(f->r[0].out, 7);
    assert_u64_equal(f->r[0].op.bytes, 5);
    assert_true(pthread_equal(f->r[0].rec.thread, pthread_self()));
    st = stats_of(c);
    assert_u64_equal(st.len, 0);
    assert_u64_equal(st.bytes, 0);
    assert_u64_equal(st.sent, 1);
    assert_u64_equal(st.received, 1);
    assert_u64_equal(st.waiting_receivers, 2);

    assert_int_equal(band_chan_send(c, &f->s[0].val, 2, 0, NULL), 0); /* past deadline, no wait */
    f->s[1].bytes = 3;
    assert_int_equal(send_async(c, &f->s[1]), 0); /* at once: no wake */
    assert_int_equal(wakes(&f->s[1].rec), 0);
    assert_u64_equal(f->r[1].out, 100);
    assert_u64_equal(f->r[1].op.bytes, 2);
    assert_u64_equal(f->r[2].out, 101);
    assert_u64_equal(f->r[2].op.bytes, 3);
    const int order[] = {10, 11, 12};
    assert_log(&f->log, order, 3);

    /* The hand-offs used no slot: the channel still has room for one. */
    assert_int_equal(try_send_u64(c, 8, 5), 0);
    assert_int_equal(try_send_u64(c, 9, 0), BAND_EAGAIN);
    st = stats_of(c);
    assert_u64_equal(st.sent, 4);
    assert_u64_equal(st.received, 3);
    assert_u64_equal(st.len, 1);
    expect_recv(c, 8, 5);
}

static void test_recv_async_at_once(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk(f, 2, 0);
    assert_int_equal(try_send_u64(c, 5, 50), 0);
    assert_int_equal(recv_async(c, &f->r[0]), 0);
    assert_u64_equal(f->r[0].out, 5);
    assert_u64_equal(f->r[0].op.bytes, 50);
    assert_int_equal(band_waiter_is_pending(&f->r[0].op.w), 0);
    assert_int_equal(band_waiter_status(&f->r[0].op.w), 0);
    assert_int_equal(wakes(&f->r[0].rec), 0);
    assert_u64_equal(stats_of(c).received, 1);
}

/* A receive that frees room completes the head sender, whose element is then queued. */
static void test_recv_async_frees_room(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk(f, 1, 0);
    assert_int_equal(try_send_u64(c, 1, 1), 0);
    assert_int_equal(send_async(c, &f->s[0]), BAND_PENDING);
    assert_int_equal(recv_async(c, &f->r[0]), 0);
    assert_u64_equal(f->r[0].out, 1);
    assert_int_equal(wakes(&f->s[0].rec), 1);
    assert_int_equal(recv_async(c, &f->r[1]), 0);
    assert_u64_equal(f->r[1].out, 100);
    assert_int_equal(recv_async(c, &f->r[2]), BAND_PENDING);
    assert_int_equal(band_waiter_cancel(&f->r[2].op.w, BAND_ECANCELED), 0);
}

/* ---------------------------------------------------------------------------------- */
/* cancel                                                                              */

static void test_cancel_send(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk(f, 1, 0);
    assert_int_equal(try_send_u64(c, 1, 1), 0);
    assert_int_equal(send_async(c, &f->s[0]), BAND_PENDING);
    assert_int_equal(send_async(c, &f->s[1]), BAND_PENDING);
    assert_int_equal(send_async(c, &f->s[2]), BAND_PENDING);

    /* A still-queued send: 0, no wake, status = reason, element stays with the caller. */
    assert_int_equal(band_waiter_cancel(&f->s[1].op.w, BAND_ECANCELED), 0);
    assert_int_equal(wakes(&f->s[1].rec), 0);
    assert_int_equal(band_waiter_status(&f->s[1].op.w), BAND_ECANCELED);
    assert_int_equal(band_waiter_is_pending(&f->s[1].op.w), 0);
    assert_int_equal(band_waiter_cancel(&f->s[1].op.w, BAND_ECANCELED), BAND_EINVAL);
    assert_int_equal(band_waiter_cancel(&f->s[2].op.w, BAND_ETIMEDOUT), 0);
    assert_int_equal(band_waiter_status(&f->s[2].op.w), BAND_ETIMEDOUT);
    assert_u64_equal(stats_of(c).waiting_senders, 1);

    /* A completed send: EALREADY, the element was queued. */
    expect_recv(c, 1, 1);
    assert_int_equal(wakes(&f->s[0].rec), 1);
    assert_int_equal(band_waiter_cancel(&f->s[0].op.w, BAND_ECANCELED), BAND_EALREADY);
    assert_int_equal(band_waiter_status(&f->s[0].op.w), 0);
    expect_recv(c, 100, 1);
    assert_int_equal(try_recv_rc(c), BAND_EAGAIN); /* s1, s2 were never queued */
    band_chan_stats st = stats_of(c);
    assert_u64_equal(st.sent, 2);
    assert_u64_equal(st.received, 2);
    assert_u64_equal(st.waiting_senders, 0);
    const int order[] = {0};
    assert_log(&f->log, order, 1);
}

/* Cancelling the head sender lets the next one in when it now fits. */
static void test_cancel_head_sender_grants_next(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk(f, 4, 10);
    assert_int_equal(try_send_u64(c, 1, 6), 0);
    f->s[0].bytes = 8; /* needs 6 to go */
    f->s[1].bytes = 3; /* fits behind the queued 6 */
    f->s[2].bytes = 2; /* 6 + 3 + 2 > 10 */
    assert_int_equal(send_async(c, &f->s[0]), BAND_PENDING);
    assert_int_equal(send_async(c, &f->s[1]), BAND_PENDING);
    assert_int_equal(send_async(c, &f->s[2]), BAND_PENDING);
    assert_int_equal(band_waiter_cancel(&f->s[0].op.w, BAND_ECANCELED), 0);
    /* s1 completed during the cancel, on this thread; s2 still waits. */
    assert_int_equal(wakes(&f->s[0].rec), 0);
    assert_int_equal(wakes(&f->s[1].rec), 1);
    assert_int_equal(atomic_load(&f->s[1].rec.status), 0);
    assert_int_equal(wakes(&f->s[2].rec), 0);
    band_chan_stats st = stats_of(c);
    assert_u64_equal(st.len, 2);
    assert_u64_equal(st.bytes, 9);
    assert_u64_equal(st.waiting_senders, 1);
    expect_recv(c, 1, 6);
    assert_int_equal(wakes(&f->s[2].rec), 1);
    expect_recv(c, 101, 3);
    expect_recv(c, 102, 2);
}

static void test_cancel_recv(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk(f, 2, 0);
    assert_int_equal(recv_async(c, &f->r[0]), BAND_PENDING);
    assert_int_equal(recv_async(c, &f->r[1]), BAND_PENDING);
    assert_int_equal(band_waiter_cancel(&f->r[0].op.w, BAND_ECANCELED), 0);
    assert_int_equal(wakes(&f->r[0].rec), 0);
    assert_int_equal(band_waiter_status(&f->r[0].op.w), BAND_ECANCELED);
    assert_u64_equal(f->r[0].out, OUT_SENTINEL);
    assert_u64_equal(stats_of(c).waiting_receivers, 1);

    assert_int_equal(try_send_u64(c, 3, 1), 0); /* goes to r1, the remaining waiter */
    assert_u64_equal(f->r[1].out, 3);
    assert_int_equal(band_waiter_cancel(&f->r[1].op.w, BAND_ECANCELED), BAND_EALREADY);
    assert_int_equal(band_waiter_status(&f->r[1].op.w), 0);
    assert_int_equal(try_send_u64(c, 4, 1), 0); /* nobody waits: queued */
    assert_u64_equal(stats_of(c).len, 1);
    assert_u64_equal(f->r[0].out, OUT_SENTINEL);
    expect_recv(c, 4, 1);
}

/* A cancel from inside the op's own wake finds it completed: EALREADY, nothing undone. */
static void hook_cancel_self(struct wake_rec *r)
{
    struct sop *s = r->ctx;
    r->hook_rc = band_waiter_cancel(&s->op.w, BAND_ECANCELED);
}

static void test_cancel_inside_own_wake(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk(f, 1, 0);
    assert_int_equal(try_send_u64(c, 1, 1), 0);
    f->s[0].rec.hook = hook_cancel_self;
    assert_int_equal(send_async(c, &f->s[0]), BAND_PENDING);
    expect_recv(c, 1, 1);
    assert_int_equal(wakes(&f->s[0].rec), 1);
    assert_int_equal(f->s[0].rec.hook_rc, BAND_EALREADY);
    expect_recv(c, 100, 1);
}

/* ---------------------------------------------------------------------------------- */
/* reservations                                                                        */

static void test_reserve_basic(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk(f, 2, 10);
    band_chan_slot a = BAND_CHAN_SLOT_INIT, b = BAND_CHAN_SLOT_INIT, d = BAND_CHAN_SLOT_INIT;

    assert_int_equal(band_chan_try_reserve(c, 3, &a), 0);
    assert_ptr_equal(a.chan, c);
    assert_u64_equal(a.bytes, 3);
    band_chan_stats st = stats_of(c);
    assert_u64_equal(st.reserved, 1);
    assert_u64_equal(st.reserved_bytes, 3);
    assert_u64_equal(st.len, 0);
    assert_u64_equal(st.sent, 0);
    assert_int_equal(try_recv_rc(c), BAND_EAGAIN);

    /* Reservations count against both bounds. */
    assert_int_equal(try_send_u64(c, 1, 8), BAND_EAGAIN); /* 3 + 8 > 10 */
    assert_int_equal(try_send_u64(c, 1, 7), 0);
    assert_int_equal(band_chan_try_reserve(c, 0, &b), BAND_EAGAIN); /* 1 + 1 == capacity */
    assert_u64_equal(stats_of(c).refused_full, 2);

    /* Filling appends at fill time: after the element sent in between. */
    uint64_t x = 42;
    assert_int_equal(band_chan_slot_send(&a, &x), 0);
    assert_ptr_equal(a.chan, NULL);
    assert_int_equal(band_chan_slot_send(&a, &x), BAND_EINVAL); /* now empty */
    st = stats_of(c);
    assert_u64_equal(st.reserved, 0);
    assert_u64_equal(st.reserved_bytes, 0);
    assert_u64_equal(st.len, 2);
    assert_u64_equal(st.bytes, 10);
    assert_u64_equal(st.sent, 2);
    expect_recv(c, 1, 7);
    expect_recv(c, 42, 3);

    /* Release returns the room unused. */
    assert_int_equal(band_chan_try_reserve(c, 5, &b), 0);
    assert_int_equal(band_chan_try_reserve(c, 5, &d), 0);
    assert_int_equal(try_send_u64(c, 1, 0), BAND_EAGAIN);
    assert_int_equal(band_chan_slot_release(&b), 0);
    assert_ptr_equal(b.chan, NULL);
    assert_int_equal(band_chan_slot_release(&b), 0); /* empty: no-op */
    st = stats_of(c);
    assert_u64_equal(st.reserved, 1);
    assert_u64_equal(st.reserved_bytes, 5);
    assert_int_equal(try_send_u64(c, 2, 5), 0);
    assert_int_equal(band_chan_slot_release(&d), 0);
    expect_recv(c, 2, 5);
    st = stats_of(c);
    assert_u64_equal(st.reserved, 0);
    assert_u64_equal(st.sent, 3);
    assert_u64_equal(st.received, 3);

    /* Too big is refused before anything else. */
    assert_int_equal(band_chan_try_reserve(c, 11, &a), BAND_E2BIG);
    assert_int_equal(band_chan_reserve(c, 11, &a, BAND_FOREVER, NULL), BAND_E2BIG);
    assert_u64_equal(stats_of(c).refused_too_big, 2);
    assert_ptr_equal(a.chan, NULL);
    /* Blocking reserve: at once with room, ETIMEDOUT past its deadline without. */
    assert_int_equal(band_chan_reserve(c, 10, &a, 0, NULL), 0);
    assert_int_equal(band_chan_reserve(c, 1, &b, 0, NULL), BAND_ETIMEDOUT);
    assert_ptr_equal(b.chan, NULL);
    assert_int_equal(band_chan_slot_release(&a), 0);
}

static void test_reserve_async_slot(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk(f, 1, 0);
    band_chan_slot slot = BAND_CHAN_SLOT_INIT;
    f->s[0].bytes = 4;
    f->s[0].rsv.slot.chan = (band_chan *)(uintptr_t)0x1234; /* output only: overwritten */
    assert_int_equal(reserve_async(c, &f->s[0]), 0);
    assert_int_equal(wakes(&f->s[0].rec), 0);
    band_chan_stats st = stats_of(c);
    assert_u64_equal(st.reserved, 1);
    assert_u64_equal(st.reserved_bytes, 4);
    assert_ptr_equal(f->s[0].rsv.slot.chan, c); /* the op's output holds the reservation */
    assert_u64_equal(f->s[0].rsv.slot.bytes, 4);
    assert_u64_equal(f->s[0].rsv.bytes, 4);
    slot = f->s[0].rsv.slot; /* a slot is a value: move it out */
    f->s[0].rsv.slot = (band_chan_slot)BAND_CHAN_SLOT_INIT;

    /* Full: the next reservation waits, FIFO with senders. */
    f->s[1].bytes = 2;
    assert_int_equal(send_async(c, &f->s[1]), BAND_PENDING);
    f->s[2].bytes = 6;
    assert_int_equal(reserve_async(c, &f->s[2]), BAND_PENDING);
    assert_ptr_equal(f->s[2].rsv.slot.chan, NULL); /* nothing granted yet */
    assert_int_equal(send_async(c, &f->s[3]), BAND_PENDING);
    assert_u64_equal(stats_of(c).waiting_senders, 3);

    uint64_t x = 77;
    assert_int_equal(band_chan_slot_send(&slot, &x), 0); /* queued: still full */
    assert_int_equal(atomic_load(&f->log.len), 0);
    expect_recv(c, 77, 4); /* s1's element goes in */
    const int o1[] = {1};
    assert_log(&f->log, o1, 1);
    expect_recv(c, 101, 2); /* s2's reservation is granted */
    const int o2[] = {1, 2};
    assert_log(&f->log, o2, 2);
    assert_int_equal(atomic_load(&f->s[2].rec.status), 0);
    assert_ptr_equal(f->s[2].rsv.slot.chan, c); /* written before the wake */
    assert_u64_equal(f->s[2].rsv.slot.bytes, 6);
    st = stats_of(c);
    assert_u64_equal(st.reserved, 1);
    assert_u64_equal(st.reserved_bytes, 6);
    assert_u64_equal(st.len, 0);
    assert_u64_equal(st.waiting_senders, 1);
    /* (A receive now would take s3's element straight from it; see
     * test_try_recv_takes_waiting_senders_element.) Releasing the granted reservation
     * lets s3 in instead. */
    assert_int_equal(band_chan_slot_release(&f->s[2].rsv.slot), 0);
    assert_ptr_equal(f->s[2].rsv.slot.chan, NULL);
    const int o3[] = {1, 2, 3};
    assert_log(&f->log, o3, 3);
    expect_recv(c, 103, 1);
    st = stats_of(c);
    assert_u64_equal(st.reserved, 0);
    assert_u64_equal(st.sent, 3);
    assert_u64_equal(st.received, 3);
}

/* A reservation filled while a receiver waits goes straight to that receiver. */
static void test_slot_send_hands_off(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk(f, 1, 0);
    band_chan_slot slot = BAND_CHAN_SLOT_INIT;
    assert_int_equal(band_chan_try_reserve(c, 9, &slot), 0);
    assert_int_equal(recv_async(c, &f->r[0]), BAND_PENDING);
    uint64_t x = 5;
    assert_int_equal(band_chan_slot_send(&slot, &x), 0);
    assert_int_equal(wakes(&f->r[0].rec), 1);
    assert_u64_equal(f->r[0].out, 5);
    assert_u64_equal(f->r[0].op.bytes, 9);
    band_chan_stats st = stats_of(c);
    assert_u64_equal(st.len, 0);
    assert_u64_equal(st.reserved, 0);
    assert_u64_equal(st.sent, 1);
    assert_u64_equal(st.received, 1);
    assert_int_equal(try_send_u64(c, 6, 0), 0);
    expect_recv(c, 6, 0);
}

/*
 * A receive that arrives while a send waits (a reservation holds the room, so nothing is
 * queued) takes that sender's element directly. Submitting never calls the submitter's own
 * wake (core.h rule 1): recv_async completes at once, returns 0 and its wake never runs;
 * the sender's wake runs (status 0) on this thread.
 */
static void test_recv_takes_waiting_senders_element(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk(f, 1, 0);
    band_chan_slot *slot = &f->slot;
    assert_int_equal(band_chan_try_reserve(c, 1, slot), 0);
    f->s[0].bytes = 4;
    assert_int_equal(send_async(c, &f->s[0]), BAND_PENDING); /* no room */
    assert_int_equal(recv_async(c, &f->r[0]), 0);
    assert_u64_equal(f->r[0].out, 100);
    assert_u64_equal(f->r[0].op.bytes, 4);
    assert_int_equal(band_waiter_is_pending(&f->r[0].op.w), 0);
    assert_int_equal(wakes(&f->r[0].rec), 0);
    assert_int_equal(wakes(&f->s[0].rec), 1);
    assert_int_equal(atomic_load(&f->s[0].rec.status), 0);
    band_chan_stats st = stats_of(c);
    assert_u64_equal(st.len, 0);
    assert_u64_equal(st.reserved, 1);
    assert_u64_equal(st.waiting_receivers, 0);
    assert_u64_equal(st.waiting_senders, 0);
    assert_u64_equal(st.sent, 1);
    assert_u64_equal(st.received, 1);
    assert_int_equal(band_chan_slot_release(slot), 0);
}

/* The same through the blocking receive and try_recv. */
static void test_blocking_recv_takes_waiting_senders_element(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk(f, 1, 0);
    band_chan_slot slot = BAND_CHAN_SLOT_INIT;
    assert_int_equal(band_chan_try_reserve(c, 1, &slot), 0);
    assert_int_equal(send_async(c, &f->s[0]), BAND_PENDING);
    assert_int_equal(send_async(c, &f->s[1]), BAND_PENDING);
    uint64_t v = 0, b = 0;
    assert_int_equal(band_chan_recv(c, &v, &b, BAND_FOREVER, NULL), 0);
    assert_u64_equal(v, 100);
    assert_u64_equal(b, 1);
    assert_int_equal(wakes(&f->s[0].rec), 1);
    assert_int_equal(wakes(&f->s[1].rec), 0);
    band_chan_stats st = stats_of(c);
    assert_u64_equal(st.waiting_receivers, 0);
    assert_u64_equal(st.waiting_senders, 1);
    assert_int_equal(band_chan_slot_release(&slot), 0); /* s1 is queued */
    assert_int_equal(wakes(&f->s[1].rec), 1);
    expect_recv(c, 101, 1);
}

/* try_recv and a receive with a past deadline take a waiting sender's element too. */
static void test_try_recv_takes_waiting_senders_element(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk(f, 1, 0);
    band_chan_slot *slot = &f->slot;
    assert_int_equal(band_chan_try_reserve(c, 1, slot), 0);
    f->s[0].bytes = 6;
    assert_int_equal(send_async(c, &f->s[0]), BAND_PENDING);
    assert_int_equal(send_async(c, &f->s[1]), BAND_PENDING);
    expect_recv(c, 100, 6);
    assert_int_equal(wakes(&f->s[0].rec), 1);
    uint64_t v = 0, b = 0;
    assert_int_equal(band_chan_recv(c, &v, &b, 0, NULL), 0);
    assert_u64_equal(v, 101);
    assert_int_equal(wakes(&f->s[1].rec), 1);
    assert_int_equal(try_recv_rc(c), BAND_EAGAIN); /* only the reservation is left */
    band_chan_stats st = stats_of(c);
    assert_u64_equal(st.sent, 2);
    assert_u64_equal(st.received, 2);
    assert_u64_equal(st.reserved, 1);
    assert_u64_equal(st.waiting_senders, 0);
    assert_int_equal(band_chan_slot_release(slot), 0);
}

/*
 * A reserve op at the head of the sender queue holds back a send behind it even when a
 * receiver waits (FIFO). Releasing the reservation grants the reserve op, then the send,
 * whose element goes straight to the waiting receiver.
 */
static void test_reserve_head_holds_back_send(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk(f, 1, 0);
    band_chan_slot slot = BAND_CHAN_SLOT_INIT;
    assert_int_equal(band_chan_try_reserve(c, 1, &slot), 0);
    f->s[1].bytes = 0;
    assert_int_equal(reserve_async(c, &f->s[1]), BAND_PENDING);
    f->s[0].bytes = 4;
    assert_int_equal(send_async(c, &f->s[0]), BAND_PENDING);
    assert_int_equal(recv_async(c, &f->r[0]), BAND_PENDING);
    band_chan_stats st = stats_of(c);
    assert_u64_equal(st.waiting_receivers, 1);
    assert_u64_equal(st.waiting_senders, 2);
    assert_int_equal(atomic_load(&f->log.len), 0);

    assert_int_equal(band_chan_slot_release(&slot), 0);
    assert_int_equal(wakes(&f->s[1].rec), 1);
    assert_int_equal(atomic_load(&f->s[1].rec.status), 0);
    assert_int_equal(wakes(&f->s[0].rec), 1);
    assert_int_equal(atomic_load(&f->s[0].rec.status), 0);
    assert_int_equal(wakes(&f->r[0].rec), 1);
    assert_int_equal(atomic_load(&f->r[0].rec.status), 0);
    assert_u64_equal(f->r[0].out, 100);
    assert_u64_equal(f->r[0].op.bytes, 4);
    st = stats_of(c);
    assert_u64_equal(st.len, 0);
    assert_u64_equal(st.reserved, 1);
    assert_u64_equal(st.waiting_receivers, 0);
    assert_u64_equal(st.waiting_senders, 0);
    assert_u64_equal(st.sent, 1);
    assert_u64_equal(st.received, 1);
    assert_ptr_equal(f->s[1].rsv.slot.chan, c);
    assert_u64_equal(f->s[1].rsv.slot.bytes, 0);
    assert_int_equal(band_chan_slot_release(&f->s[1].rsv.slot), 0);
}

/*
 * A reservation filled while a receiver waits hands the element over and so frees its
 * slot: a reserve op waiting for room gets it at once.
 */
static void test_slot_send_handoff_serves_senders(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk(f, 1, 0);
    band_chan_slot *slot = &f->slot;
    assert_int_equal(band_chan_try_reserve(c, 2, slot), 0);
    assert_int_equal(recv_async(c, &f->r[0]), BAND_PENDING);
    f->s[0].bytes = 3;
    assert_int_equal(reserve_async(c, &f->s[0]), BAND_PENDING);
    uint64_t x = 5;
    assert_int_equal(band_chan_slot_send(slot, &x), 0);
    assert_int_equal(wakes(&f->r[0].rec), 1);
    assert_u64_equal(f->r[0].out, 5);
    assert_int_equal(wakes(&f->s[0].rec), 1); /* room came back: the reserve op has it */
    assert_int_equal(atomic_load(&f->s[0].rec.status), 0);
    band_chan_stats st = stats_of(c);
    assert_u64_equal(st.waiting_senders, 0);
    assert_u64_equal(st.reserved, 1);
    assert_u64_equal(st.reserved_bytes, 3);
    assert_ptr_equal(f->s[0].rsv.slot.chan, c);
    assert_u64_equal(f->s[0].rsv.slot.bytes, 3);
    *slot = f->s[0].rsv.slot; /* the fixture's slot: teardown releases it if this fails */
    f->s[0].rsv.slot = (band_chan_slot)BAND_CHAN_SLOT_INIT;
    assert_int_equal(band_chan_slot_release(slot), 0);
}

/* ---------------------------------------------------------------------------------- */
/* close                                                                               */

static void test_close_with_queued_elements(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk(f, 3, 0);
    band_chan_slot slot = BAND_CHAN_SLOT_INIT;
    assert_int_equal(try_send_u64(c, 1, 10), 0);
    assert_int_equal(try_send_u64(c, 2, 20), 0);
    assert_int_equal(band_chan_is_closed(c), 0);
    assert_int_equal(band_chan_close(c), 0);
    assert_int_equal(band_chan_is_closed(c), 1);
    band_chan_stats st = stats_of(c);
    assert_int_equal(st.closed, 1);
    assert_u64_equal(st.len, 2);

    assert_int_equal(try_send_u64(c, 3, 1), BAND_ECLOSED);
    assert_int_equal(band_chan_send(c, &f->s[0].val, 1, BAND_FOREVER, NULL), BAND_ECLOSED);
    assert_int_equal(send_async(c, &f->s[0]), BAND_ECLOSED);
    assert_int_equal(band_waiter_is_pending(&f->s[0].op.w), 0);
    assert_int_equal(band_chan_try_reserve(c, 1, &slot), BAND_ECLOSED);
    assert_int_equal(band_chan_reserve(c, 1, &slot, BAND_FOREVER, NULL), BAND_ECLOSED);
    assert_int_equal(reserve_async(c, &f->s[1]), BAND_ECLOSED);
    assert_u64_equal(stats_of(c).refused_closed, 6);

    /* Queued elements are still received, in order; then ECLOSED everywhere. */
    expect_recv(c, 1, 10);
    assert_int_equal(recv_async(c, &f->r[0]), 0);
    assert_u64_equal(f->r[0].out, 2);
    assert_int_equal(try_recv_rc(c), BAND_ECLOSED);
    uint64_t v = 0;
    assert_int_equal(band_chan_recv(c, &v, NULL, BAND_FOREVER, NULL), BAND_ECLOSED);
    assert_int_equal(band_chan_recv(c, &v, NULL, 0, NULL), BAND_ECLOSED);
    assert_int_equal(recv_async(c, &f->r[1]), BAND_ECLOSED);
    assert_int_equal(band_waiter_is_pending(&f->r[1].op.w), 0);
    size_t n = 7;
    assert_int_equal(band_chan_recv_many(c, 1, &v, NULL, &n, BAND_FOREVER, NULL), BAND_ECLOSED);
    assert_int_equal(n, 0);

    /* Idempotent. */
    assert_int_equal(band_chan_close(c), 0);
    st = stats_of(c);
    assert_int_equal(st.closed, 1);
    assert_u64_equal(st.sent, 2);
    assert_u64_equal(st.received, 2);
    assert_int_equal(atomic_load(&f->log.len), 0);
}

static void test_close_fails_pending_senders(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk(f, 1, 0);
    assert_int_equal(try_send_u64(c, 1, 1), 0);
    assert_int_equal(send_async(c, &f->s[0]), BAND_PENDING);
    assert_int_equal(reserve_async(c, &f->s[1]), BAND_PENDING);
    assert_int_equal(send_async(c, &f->s[2]), BAND_PENDING);
    assert_int_equal(band_chan_close(c), 0);
    const int order[] = {0, 1, 2};
    assert_log(&f->log, order, 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(f->log.statuses[i], BAND_ECLOSED);
        assert_int_equal(band_waiter_status(&f->s[i].op.w), BAND_ECLOSED);
        assert_u64_equal(f->s[i].val, 100 + (uint64_t)i); /* still the caller's */
    }
    band_chan_stats st = stats_of(c);
    assert_u64_equal(st.waiting_senders, 0);
    assert_u64_equal(st.len, 1);
    assert_u64_equal(st.reserved, 0);
    assert_u64_equal(st.sent, 1);
    assert_u64_equal(st.refused_closed, 3); /* each failed sender counts */
    expect_recv(c, 1, 1);
    assert_int_equal(try_recv_rc(c), BAND_ECLOSED);
    assert_int_equal(band_chan_close(c), 0);
    assert_int_equal(atomic_load(&f->log.len), 3);
}

static void test_close_fails_pending_receivers(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk(f, 1, 0);
    assert_int_equal(recv_async(c, &f->r[0]), BAND_PENDING);
    assert_int_equal(recv_async(c, &f->r[1]), BAND_PENDING);
    assert_int_equal(band_chan_close(c), 0);
    const int order[] = {10, 11};
    assert_log(&f->log, order, 2);
    assert_int_equal(f->log.statuses[0], BAND_ECLOSED);
    assert_int_equal(f->log.statuses[1], BAND_ECLOSED);
    assert_u64_equal(f->r[0].out, OUT_SENTINEL);
    assert_u64_equal(stats_of(c).waiting_receivers, 0);
}

/* A held reservation keeps receivers waiting after close; filling it still works. */
static void test_close_with_held_reservation_filled(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk(f, 2, 0);
    band_chan_slot a = BAND_CHAN_SLOT_INIT, b = BAND_CHAN_SLOT_INIT;
    assert_int_equal(band_chan_try_reserve(c, 1, &a), 0);
    assert_int_equal(band_chan_try_reserve(c, 2, &b), 0);
    assert_int_equal(recv_async(c, &f->r[0]), BAND_PENDING);
    assert_int_equal(band_chan_close(c), 0);
    assert_int_equal(wakes(&f->r[0].rec), 0);
    assert_int_equal(try_recv_rc(c), BAND_EAGAIN); /* reservations left to fill */
    uint64_t v = 0;
    size_t n = 9;
    assert_int_equal(band_chan_recv(c, &v, NULL, 0, NULL), BAND_ETIMEDOUT);
    assert_int_equal(band_chan_recv_many(c, 1, &v, NULL, &n, 0, NULL), BAND_ETIMEDOUT);
    assert_int_equal(n, 0);

    uint64_t x = 31;
    assert_int_equal(band_chan_slot_send(&a, &x), 0); /* cannot fail, even closed */
    assert_int_equal(wakes(&f->r[0].rec), 1);
    assert_int_equal(atomic_load(&f->r[0].rec.status), 0);
    assert_u64_equal(f->r[0].out, 31);
    x = 32;
    assert_int_equal(band_chan_slot_send(&b, &x), 0);
    band_chan_stats st = stats_of(c);
    assert_u64_equal(st.len, 1);
    assert_u64_equal(st.reserved, 0);
    assert_u64_equal(st.sent, 2);
    expect_recv(c, 32, 2);
    assert_int_equal(try_recv_rc(c), BAND_ECLOSED);
}

/* ...and releasing the last one instead ends the waiting receivers with ECLOSED. */
static void test_close_with_held_reservation_released(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk(f, 2, 0);
    band_chan_slot a = BAND_CHAN_SLOT_INIT, b = BAND_CHAN_SLOT_INIT;
    assert_int_equal(band_chan_try_reserve(c, 1, &a), 0);
    assert_int_equal(band_chan_try_reserve(c, 1, &b), 0);
    assert_int_equal(recv_async(c, &f->r[0]), BAND_PENDING);
    assert_int_equal(recv_async(c, &f->r[1]), BAND_PENDING);
    assert_int_equal(band_chan_close(c), 0);
    assert_int_equal(band_chan_slot_release(&a), 0);
    assert_int_equal(atomic_load(&f->log.len), 0); /* b is still held */
    assert_int_equal(band_chan_slot_release(&b), 0);
    const int order[] = {10, 11};
    assert_log(&f->log, order, 2);
    assert_int_equal(f->log.statuses[0], BAND_ECLOSED);
    assert_int_equal(f->log.statuses[1], BAND_ECLOSED);
    assert_int_equal(try_recv_rc(c), BAND_ECLOSED);
    band_chan_stats st = stats_of(c);
    assert_u64_equal(st.reserved, 0);
    assert_u64_equal(st.waiting_receivers, 0);
    assert_u64_equal(st.sent, 0);
}

/* A reservation released after close while elements remain: receivers drain them first. */
static void test_close_release_with_queued(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk(f, 3, 0);
    band_chan_slot a = BAND_CHAN_SLOT_INIT;
    assert_int_equal(try_send_u64(c, 1, 1), 0);
    assert_int_equal(band_chan_try_reserve(c, 1, &a), 0);
    assert_int_equal(band_chan_close(c), 0);
    expect_recv(c, 1, 1);
    assert_int_equal(try_recv_rc(c), BAND_EAGAIN);
    assert_int_equal(recv_async(c, &f->r[0]), BAND_PENDING);
    assert_int_equal(band_chan_slot_release(&a), 0);
    assert_int_equal(wakes(&f->r[0].rec), 1);
    assert_int_equal(atomic_load(&f->r[0].rec.status), BAND_ECLOSED);
}

static void hook_after_close(struct wake_rec *r)
{
    struct fixture *f = r->ctx;
    uint64_t v = 1;
    r->hook_rc = band_chan_close(f->c);
    r->hook_u64 = (uint64_t)(int64_t)band_chan_try_send(f->c, &v, 1);
}

/* Wakes run by close may call back in: close again, try to send. */
static void test_close_wake_calls_back(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk(f, 1, 0);
    f->r[0].rec.hook = hook_after_close;
    f->r[0].rec.ctx = f;
    assert_int_equal(recv_async(c, &f->r[0]), BAND_PENDING);
    assert_int_equal(band_chan_close(c), 0);
    assert_int_equal(wakes(&f->r[0].rec), 1);
    assert_int_equal(f->r[0].rec.hook_rc, 0);
    assert_int_equal((int)(int64_t)f->r[0].rec.hook_u64, BAND_ECLOSED);
}

/* ---------------------------------------------------------------------------------- */
/* byte bounds and deadlines                                                           */

static void test_byte_bound(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk(f, 10, 100);
    assert_int_equal(try_send_u64(c, 1, 60), 0);
    assert_int_equal(try_send_u64(c, 2, 41), BAND_EAGAIN);
    assert_int_equal(try_send_u64(c, 2, 40), 0);
    assert_int_equal(try_send_u64(c, 3, 0), 0); /* zero bytes fit a full byte bound */
    assert_int_equal(try_send_u64(c, 4, 1), BAND_EAGAIN);
    assert_int_equal(try_send_u64(c, 5, 101), BAND_E2BIG);
    assert_int_equal(band_chan_send(c, &f->s[0].val, 101, BAND_FOREVER, NULL), BAND_E2BIG);
    f->s[0].bytes = 101;
    assert_int_equal(send_async(c, &f->s[0]), BAND_E2BIG);
    assert_int_equal(band_waiter_is_pending(&f->s[0].op.w), 0);
    band_chan_stats st = stats_of(c);
    assert_u64_equal(st.len, 3);
    assert_u64_equal(st.bytes, 100);
    assert_u64_equal(st.refused_full, 2);
    assert_u64_equal(st.refused_too_big, 3);
    expect_recv(c, 1, 60);
    expect_recv(c, 2, 40);
    expect_recv(c, 3, 0);
    /* Exactly the byte capacity fits an empty channel. */
    assert_int_equal(try_send_u64(c, 6, 100), 0);
    expect_recv(c, 6, 100);
}

/*
 * Any @bytes above the byte capacity is BAND_E2BIG (chan.h: "BAND_E2BIG (@bytes above the
 * byte capacity)"), also beyond BAND_MAX_UNITS, and counts in refused_too_big.
 */
static void test_huge_bytes_is_e2big(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk(f, 2, 100);
    band_chan_slot slot = BAND_CHAN_SLOT_INIT;
    assert_int_equal(try_send_u64(c, 1, MAXP + 1), BAND_E2BIG);
    assert_int_equal(try_send_u64(c, 1, UINT64_MAX), BAND_E2BIG);
    assert_int_equal(band_chan_try_reserve(c, UINT64_MAX, &slot), BAND_E2BIG);
    f->s[0].bytes = UINT64_MAX;
    assert_int_equal(send_async(c, &f->s[0]), BAND_E2BIG);
    assert_u64_equal(stats_of(c).refused_too_big, 4);
}

/* The ring wraps many times at capacities that are not powers of two (and at one), with
 * every fill level: order, bytes and counters stay exact. */
static void test_ring_wraps(void **state)
{
    struct fixture *f = *state;
    static const uint64_t caps[] = {1, 3, 5, 8};
    for (size_t k = 0; k < sizeof(caps) / sizeof(caps[0]); k++) {
        band_chan *c = mk(f, caps[k], 0);
        uint64_t next_in = 0, next_out = 0, bytes_in = 0;
        for (int round = 0; round < 200; round++) {
            uint64_t fill = (uint64_t)round % (caps[k] + 1);
            while (next_in - next_out < fill) {
                assert_int_equal(try_send_u64(c, next_in, next_in % 7), 0);
                bytes_in += next_in % 7;
                next_in++;
            }
            if (next_in - next_out == caps[k])
                assert_int_equal(try_send_u64(c, 999, 1), BAND_EAGAIN);
            band_chan_stats st = stats_of(c);
            assert_u64_equal(st.len, next_in - next_out);
            assert_u64_equal(st.bytes, bytes_in);
            while (next_out < next_in) {
                expect_recv(c, next_out, next_out % 7);
                bytes_in -= next_out % 7;
                next_out++;
            }
        }
        band_chan_stats st = stats_of(c);
        assert_u64_equal(st.sent, next_in);
        assert_u64_equal(st.received, next_out);
        assert_u64_equal(st.len, 0);
        assert_u64_equal(st.bytes, 0);
        assert_int_equal(band_chan_destroy(c), 0);
        f->c = NULL;
    }
}

/* A held reservation counts against the room of lock-free sends too. */
static void test_reservation_counts_for_fast_sends(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk(f, 2, 0);
    band_chan_slot slot = BAND_CHAN_SLOT_INIT;
    assert_int_equal(band_chan_try_reserve(c, 4, &slot), 0);
    assert_int_equal(try_send_u64(c, 1, 1), 0);
    assert_int_equal(try_send_u64(c, 2, 1), BAND_EAGAIN); /* one queued + one reserved */
    expect_recv(c, 1, 1);
    assert_int_equal(try_send_u64(c, 3, 1), 0);
    assert_int_equal(try_send_u64(c, 4, 1), BAND_EAGAIN); /* still counted after a refusal */
    assert_int_equal(band_chan_slot_release(&slot), 0);
    assert_int_equal(try_send_u64(c, 4, 1), 0); /* the gate reopened with the room */
    expect_recv(c, 3, 1);
    expect_recv(c, 4, 1);
    band_chan_stats st = stats_of(c);
    assert_u64_equal(st.sent, 3);
    assert_u64_equal(st.received, 3);
    assert_u64_equal(st.refused_full, 2);
}

static void pause_ns(band_time ns)
{
    band_time until = band_now() + ns;
    while (band_now() < until)
        ;
}

/* Deadline-aware: once the pace of serving waiting senders is measured, a sender that
 * would miss its deadline behind them is refused at once, keeping its element. */
static void test_deadline_aware(void **state)
{
    struct fixture *f = *state;
    band_chan *c;
    band_chan_opts o;
    memset(&o, 0, sizeof(o));
    o.deadline_aware = 2;
    assert_int_equal(band_chan_create(&f->c, sizeof(uint64_t), 1, &o), BAND_EINVAL);
    o.deadline_aware = 1;
    o.lifo_after = -1;
    assert_int_equal(band_chan_create(&f->c, sizeof(uint64_t), 1, &o), BAND_EINVAL);
    o.lifo_after = 0;
    assert_int_equal(band_chan_create(&f->c, sizeof(uint64_t), 1, &o), 0);
    c = f->c;

    assert_int_equal(try_send_u64(c, 1, 0), 0);
    f->s[0].val = 2;
    f->s[1].val = 3;
    assert_int_equal(send_async(c, &f->s[0]), BAND_PENDING);
    assert_int_equal(send_async(c, &f->s[1]), BAND_PENDING);
    assert_u64_equal(stats_of(c).serve_gap_ns, 0); /* nothing measured: nobody refused */
    expect_recv(c, 1, 0);                          /* serves s[0] */
    pause_ns(40 * BAND_MSEC);
    expect_recv(c, 2, 1); /* serves s[1], 40 ms later: the pace is one per 40 ms */
    band_chan_stats st = stats_of(c);
    assert_true(st.serve_gap_ns >= 40 * BAND_MSEC);

    /* Full again (s[1]'s element). 15 ms is not enough to be served: refused now. (Wide
     * margins: a blocking send spins briefly first, and a loaded machine stretches that.) */
    f->s[2].val = 4;
    f->s[2].op.w.deadline = band_now() + 15 * BAND_MSEC;
    assert_int_equal(send_async(c, &f->s[2]), BAND_ETIMEDOUT);
    assert_int_equal(band_waiter_status(&f->s[2].op.w), BAND_ETIMEDOUT);
    uint64_t v = 5;
    assert_int_equal(band_chan_send(c, &v, 0, band_now() + 15 * BAND_MSEC, NULL), BAND_ETIMEDOUT);
    /* A deadline a second away is worth waiting for. */
    f->s[3].val = 6;
    f->s[3].op.w.deadline = band_now() + BAND_SEC;
    assert_int_equal(send_async(c, &f->s[3]), BAND_PENDING);
    st = stats_of(c);
    assert_u64_equal(st.refused_deadline, 2);
    assert_u64_equal(st.waiting_senders, 1);
    expect_recv(c, 3, 1);
    expect_recv(c, 6, 1);
    assert_int_equal(wakes(&f->s[2].rec), 0); /* refused at once: no wake */
    assert_int_equal(wakes(&f->s[3].rec), 1);
}

/* The same schedule without deadline_aware queues everybody. */
static void test_deadline_unaware_queues(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk(f, 1, 0);
    assert_int_equal(try_send_u64(c, 1, 0), 0);
    assert_int_equal(send_async(c, &f->s[0]), BAND_PENDING);
    assert_int_equal(send_async(c, &f->s[1]), BAND_PENDING);
    expect_recv(c, 1, 0);
    pause_ns(40 * BAND_MSEC);
    expect_recv(c, f->s[0].val, 1);
    f->s[2].op.w.deadline = band_now() + 15 * BAND_MSEC;
    assert_int_equal(send_async(c, &f->s[2]), BAND_PENDING);
    band_chan_stats st = stats_of(c);
    assert_u64_equal(st.refused_deadline, 0);
    assert_true(st.serve_gap_ns >= 40 * BAND_MSEC); /* measured all the same */
    assert_int_equal(band_waiter_cancel(&f->s[2].op.w, BAND_ECANCELED), 0);
}

/* Adaptive LIFO: while the oldest element has waited past lifo_after, receivers take the
 * newest first; otherwise FIFO. Counters stay exact. */
static void test_lifo_after(void **state)
{
    struct fixture *f = *state;
    band_chan_opts o;
    memset(&o, 0, sizeof(o));
    o.lifo_after = 50 * BAND_MSEC; /* wide: a preempted test must not turn FIFO into LIFO */
    assert_int_equal(band_chan_create(&f->c, sizeof(uint64_t), 4, &o), 0);
    band_chan *c = f->c;
    for (uint64_t i = 1; i <= 3; i++)
        assert_int_equal(try_send_u64(c, i, i), 0);
    expect_recv(c, 1, 1); /* fresh: FIFO */
    pause_ns(60 * BAND_MSEC);
    assert_int_equal(try_send_u64(c, 4, 4), 0);
    expect_recv(c, 4, 4); /* 2 is stale: the newest goes first */
    expect_recv(c, 3, 3);
    expect_recv(c, 2, 2); /* the last one is both oldest and newest */
    assert_int_equal(try_recv_rc(c), BAND_EAGAIN);
    for (uint64_t i = 5; i <= 8; i++)
        assert_int_equal(try_send_u64(c, i, 0), 0); /* wraps: positions were given back */
    assert_int_equal(try_send_u64(c, 9, 0), BAND_EAGAIN);
    band_chan_stats st = stats_of(c);
    assert_u64_equal(st.lifo_taken, 2);
    assert_u64_equal(st.sent, 8);
    assert_u64_equal(st.received, 4);
    assert_u64_equal(st.len, 4);
    for (uint64_t i = 5; i <= 8; i++)
        expect_recv(c, i, 0);
}

struct fork_run {
    band_chan *c;
    uint64_t n;
};

static int fork_producer(void *arg)
{
    struct fork_run *fr = arg;
    for (uint64_t i = 0; i < fr->n; i++)
        if (band_chan_send(fr->c, &i, 0, BAND_FOREVER, NULL) != 0)
            return 1;
    return 0;
}

/* A forked child re-registers for the asymmetric barriers (or falls back to fences):
 * blocking traffic through a one-slot channel, which waits on both sides all the time,
 * arrives complete and in order in the child. */
static void test_works_after_fork(void **state)
{
    struct fixture *f = *state;
    band_chan *parent_chan = mk(f, 1, 0); /* the barriers were set up before the fork */
    assert_int_equal(try_send_u64(parent_chan, 1, 0), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct fork_run fr = {NULL, 20000};
        if (band_chan_create(&fr.c, sizeof(uint64_t), 1, NULL) != 0)
            _exit(2);
        struct test_thread th;
        if (test_thread_start(&th, fork_producer, &fr) != 0)
            _exit(3);
        for (uint64_t i = 0; i < fr.n; i++) {
            uint64_t v = UINT64_MAX;
            if (band_chan_recv(fr.c, &v, NULL, band_now() + 10 * BAND_SEC, NULL) != 0 || v != i)
                _exit(4);
        }
        _exit(test_thread_join(&th) == 0 ? 0 : 5);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    expect_recv(parent_chan, 1, 0);
}

/* Without a byte bound, bytes are counted but never refused. */
static void test_no_byte_bound(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk(f, 3, 0);
    assert_int_equal(try_send_u64(c, 1, UINT64_C(1) << 40), 0);
    assert_int_equal(try_send_u64(c, 2, UINT64_C(1) << 40), 0);
    band_chan_stats st = stats_of(c);
    assert_u64_equal(st.bytes, UINT64_C(1) << 41);
    assert_u64_equal(st.byte_capacity, 0);
    assert_u64_equal(st.refused_too_big, 0);
    expect_recv(c, 1, UINT64_C(1) << 40);
    expect_recv(c, 2, UINT64_C(1) << 40);
}

static void test_past_deadlines(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk(f, 1, 0);
    uint64_t v = 3, out = 0;
    size_t n = 5;
    band_time past = band_now() - BAND_SEC;
    assert_int_equal(band_chan_recv(c, &out, NULL, past, NULL), BAND_ETIMEDOUT);
    assert_int_equal(band_chan_recv(c, &out, NULL, 0, NULL), BAND_ETIMEDOUT);
    assert_int_equal(band_chan_recv_many(c, 1, &out, NULL, &n, past, NULL), BAND_ETIMEDOUT);
    assert_int_equal(n, 0);
    assert_int_equal(band_chan_send(c, &v, 1, past, NULL), 0); /* room: no wait needed */
    assert_int_equal(band_chan_send(c, &v, 1, past, NULL), BAND_ETIMEDOUT);
    assert_int_equal(band_chan_send(c, &v, 1, INT64_MIN, NULL), BAND_ETIMEDOUT);
    band_chan_stats st = stats_of(c);
    assert_u64_equal(st.waiting_senders, 0);
    assert_u64_equal(st.waiting_receivers, 0);
    assert_u64_equal(st.len, 1);
    assert_u64_equal(st.sent, 1);
    assert_int_equal(band_chan_recv(c, &out, NULL, past, NULL), 0);
    assert_u64_equal(out, 3);
}

/* ---------------------------------------------------------------------------------- */
/* recv_many                                                                           */

static void test_recv_many(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk(f, 5, 0);
    for (uint64_t i = 0; i < 5; i++)
        assert_int_equal(try_send_u64(c, 10 + i, i), 0);
    uint64_t out[4] = {0}, bytes[4] = {0};
    size_t n = 0;
    assert_int_equal(band_chan_recv_many(c, 3, out, bytes, &n, BAND_FOREVER, NULL), 0);
    assert_int_equal(n, 3);
    for (uint64_t i = 0; i < 3; i++) {
        assert_u64_equal(out[i], 10 + i);
        assert_u64_equal(bytes[i], i);
    }
    assert_int_equal(band_chan_recv_many(c, 4, out, NULL, &n, 0, NULL), 0);
    assert_int_equal(n, 2);
    assert_u64_equal(out[0], 13);
    assert_u64_equal(out[1], 14);
    band_chan_stats st = stats_of(c);
    assert_u64_equal(st.received, 5);
    assert_u64_equal(st.len, 0);
    assert_int_equal(band_chan_recv_many(c, 4, out, NULL, &n, 0, NULL), BAND_ETIMEDOUT);
    assert_int_equal(n, 0);
}

/* recv_many frees room for several waiting senders at once, in order. */
static void test_recv_many_grants_senders(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk(f, 2, 0);
    assert_int_equal(try_send_u64(c, 1, 1), 0);
    assert_int_equal(try_send_u64(c, 2, 1), 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(send_async(c, &f->s[i]), BAND_PENDING);
    uint64_t out[2];
    size_t n = 0;
    assert_int_equal(band_chan_recv_many(c, 2, out, NULL, &n, BAND_FOREVER, NULL), 0);
    assert_int_equal(n, 2);
    assert_u64_equal(out[0], 1);
    assert_u64_equal(out[1], 2);
    const int order[] = {0, 1};
    assert_log(&f->log, order, 2);
    assert_int_equal(band_chan_recv_many(c, 2, out, NULL, &n, BAND_FOREVER, NULL), 0);
    assert_int_equal(n, 2);
    assert_u64_equal(out[0], 100);
    assert_u64_equal(out[1], 101);
    const int order2[] = {0, 1, 2};
    assert_log(&f->log, order2, 3);
    expect_recv(c, 102, 1);
}

/* ---------------------------------------------------------------------------------- */
/* sender counting                                                                     */

static void test_sender_counting(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk_opts(f, 2, 0, BAND_CHAN_WAIT, 2);
    assert_u64_equal(stats_of(c).senders, 2);
    assert_int_equal(band_chan_sender_join(c), 0);
    assert_u64_equal(stats_of(c).senders, 3);
    assert_int_equal(try_send_u64(c, 1, 1), 0);
    assert_int_equal(recv_async(c, &f->r[0]), 0);
    assert_int_equal(recv_async(c, &f->r[1]), BAND_PENDING);
    assert_int_equal(band_chan_sender_leave(c), 0);
    assert_int_equal(band_chan_sender_leave(c), 0);
    band_chan_stats st = stats_of(c);
    assert_u64_equal(st.senders, 1);
    assert_int_equal(st.closed, 0);
    assert_int_equal(band_chan_is_closed(c), 0);
    assert_int_equal(wakes(&f->r[1].rec), 0);
    assert_int_equal(band_chan_sender_leave(c), 0); /* the last one closes */
    st = stats_of(c);
    assert_u64_equal(st.senders, 0);
    assert_int_equal(st.closed, 1);
    assert_int_equal(band_chan_is_closed(c), 1);
    assert_int_equal(wakes(&f->r[1].rec), 1);
    assert_int_equal(atomic_load(&f->r[1].rec.status), BAND_ECLOSED);
    assert_int_equal(band_chan_sender_leave(c), BAND_EINVAL); /* no sender left */
    assert_int_equal(band_chan_sender_join(c), BAND_ECLOSED);
    assert_int_equal(try_send_u64(c, 1, 1), BAND_ECLOSED);
}

static void test_sender_counting_close_first(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk_opts(f, 2, 0, BAND_CHAN_WAIT, 1);
    assert_int_equal(band_chan_close(c), 0);
    assert_int_equal(band_chan_sender_join(c), BAND_ECLOSED);
    assert_u64_equal(stats_of(c).senders, 1);
    assert_int_equal(band_chan_sender_leave(c), 0); /* leaving a closed channel is fine */
    assert_u64_equal(stats_of(c).senders, 0);
    assert_int_equal(band_chan_sender_leave(c), BAND_EINVAL);
}

static void test_sender_counting_off(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk(f, 2, 0);
    assert_int_equal(band_chan_sender_join(c), BAND_EINVAL);
    assert_int_equal(band_chan_sender_leave(c), BAND_EINVAL);
    band_chan_stats st = stats_of(c);
    assert_u64_equal(st.senders, 0);
    assert_int_equal(st.closed, 0);
}

/* ---------------------------------------------------------------------------------- */
/* drop policies                                                                       */

static void test_drop_oldest(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk_opts(f, 2, 0, BAND_CHAN_DROP_OLDEST, 0);
    uint64_t v, dropped = 0, dbytes = 0;
    int out = -1;
    v = 1;
    assert_int_equal(band_chan_offer(c, &v, 10, &dropped, &dbytes, &out), 0);
    assert_int_equal(out, 0);
    v = 2;
    out = -1;
    assert_int_equal(band_chan_offer(c, &v, 20, &dropped, &dbytes, &out), 0);
    assert_int_equal(out, 0);
    v = 3;
    out = -1;
    assert_int_equal(band_chan_offer(c, &v, 30, &dropped, &dbytes, &out), 0);
    assert_int_equal(out, 1);
    assert_u64_equal(dropped, 1);
    assert_u64_equal(dbytes, 10);
    v = 4;
    out = -1;
    assert_int_equal(band_chan_offer(c, &v, 40, &dropped, NULL, &out), 0);
    assert_int_equal(out, 1);
    assert_u64_equal(dropped, 2);
    band_chan_stats st = stats_of(c);
    assert_u64_equal(st.dropped, 2);
    assert_u64_equal(st.sent, 4);
    assert_u64_equal(st.len, 2);
    assert_u64_equal(st.bytes, 70);
    assert_u64_equal(st.refused_full, 0);
    expect_recv(c, 3, 30);
    expect_recv(c, 4, 40);
    assert_u64_equal(stats_of(c).received, 2);
}

static void test_drop_newest(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk_opts(f, 2, 0, BAND_CHAN_DROP_NEWEST, 0);
    uint64_t v, dropped = 0, dbytes = 0;
    int out = -1;
    v = 1;
    assert_int_equal(band_chan_offer(c, &v, 10, &dropped, &dbytes, &out), 0);
    assert_int_equal(out, 0);
    v = 2;
    assert_int_equal(band_chan_offer(c, &v, 20, &dropped, &dbytes, &out), 0);
    assert_int_equal(out, 0);
    v = 3;
    assert_int_equal(band_chan_offer(c, &v, 30, &dropped, &dbytes, &out), 0);
    assert_int_equal(out, 1);
    assert_u64_equal(dropped, 3);
    assert_u64_equal(dbytes, 30);
    band_chan_stats st = stats_of(c);
    assert_u64_equal(st.dropped, 1);
    assert_u64_equal(st.sent, 2); /* the dropped element was not accepted */
    assert_u64_equal(st.len, 2);
    assert_u64_equal(st.bytes, 30);
    expect_recv(c, 1, 10);
    expect_recv(c, 2, 20);
}

/* Under a byte bound, drop-oldest evicts one element at most; if that is not enough,
 * nothing is evicted and the offer is refused. */
static void test_drop_oldest_bytes(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk_opts(f, 4, 10, BAND_CHAN_DROP_OLDEST, 0);
    uint64_t v, dropped = 0, dbytes = 0;
    int out = -1;
    for (v = 1; v <= 3; v++) {
        assert_int_equal(band_chan_offer(c, &v, 3, &dropped, &dbytes, &out), 0);
        assert_int_equal(out, 0);
    }
    v = 4; /* 9 + 4 > 10: evict 1 (3 bytes) -> 6 + 4 == 10 */
    assert_int_equal(band_chan_offer(c, &v, 4, &dropped, &dbytes, &out), 0);
    assert_int_equal(out, 1);
    assert_u64_equal(dropped, 1);
    assert_u64_equal(dbytes, 3);
    v = 5; /* 10 + 8: evicting 2 (3 bytes) leaves 7 + 8 > 10: refused, nothing evicted */
    dropped = 0;
    out = -1;
    assert_int_equal(band_chan_offer(c, &v, 8, &dropped, &dbytes, &out), BAND_EAGAIN);
    assert_u64_equal(dropped, 0);
    band_chan_stats st = stats_of(c);
    assert_u64_equal(st.len, 3);
    assert_u64_equal(st.bytes, 10);
    assert_u64_equal(st.dropped, 1);
    assert_u64_equal(st.refused_full, 1);
    v = 6;
    assert_int_equal(band_chan_offer(c, &v, 11, &dropped, &dbytes, &out), BAND_E2BIG);
    assert_u64_equal(stats_of(c).refused_too_big, 1);
    expect_recv(c, 2, 3);
    expect_recv(c, 3, 3);
    expect_recv(c, 4, 4);
}

/* Drop-newest under a byte bound: no byte room means the new element comes back. */
static void test_drop_newest_bytes(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk_opts(f, 4, 10, BAND_CHAN_DROP_NEWEST, 0);
    uint64_t v = 1, dropped = 0, dbytes = 0;
    int out = -1;
    assert_int_equal(band_chan_offer(c, &v, 8, &dropped, &dbytes, &out), 0);
    v = 2;
    assert_int_equal(band_chan_offer(c, &v, 3, &dropped, &dbytes, &out), 0);
    assert_int_equal(out, 1);
    assert_u64_equal(dropped, 2);
    assert_u64_equal(dbytes, 3);
    v = 3;
    assert_int_equal(band_chan_offer(c, &v, 2, &dropped, &dbytes, &out), 0);
    assert_int_equal(out, 0);
    band_chan_stats st = stats_of(c);
    assert_u64_equal(st.dropped, 1);
    assert_u64_equal(st.len, 2);
    assert_u64_equal(st.bytes, 10);
    expect_recv(c, 1, 8);
    expect_recv(c, 3, 2);
}

static void test_drop_policy_misuse(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk_opts(f, 1, 0, BAND_CHAN_DROP_OLDEST, 0);
    band_chan_slot slot = BAND_CHAN_SLOT_INIT;
    uint64_t v = 1, dropped = 0;
    int out = 0;
    assert_int_equal(try_send_u64(c, 1, 1), BAND_EINVAL);
    assert_int_equal(band_chan_send(c, &v, 1, BAND_FOREVER, NULL), BAND_EINVAL);
    assert_int_equal(send_async(c, &f->s[0]), BAND_EINVAL);
    assert_int_equal(band_chan_try_reserve(c, 1, &slot), BAND_EINVAL);
    assert_int_equal(band_chan_reserve(c, 1, &slot, BAND_FOREVER, NULL), BAND_EINVAL);
    assert_int_equal(reserve_async(c, &f->s[0]), BAND_EINVAL);
    assert_int_equal(band_chan_offer(c, NULL, 1, &dropped, NULL, &out), BAND_EINVAL);
    assert_int_equal(band_chan_offer(c, &v, 1, NULL, NULL, &out), BAND_EINVAL);
    assert_int_equal(band_chan_offer(c, &v, 1, &dropped, NULL, NULL), BAND_EINVAL);
    band_chan_stats st = stats_of(c);
    assert_u64_equal(st.len, 0);
    assert_u64_equal(st.refused_full + st.refused_closed + st.refused_too_big, 0);

    /* offer on a waiting channel is EINVAL, even when full or closed */
    band_chan *w;
    assert_int_equal(band_chan_create(&w, sizeof(uint64_t), 1, NULL), 0);
    assert_int_equal(band_chan_offer(w, &v, 1, &dropped, NULL, &out), BAND_EINVAL);
    assert_int_equal(band_chan_close(w), 0);
    assert_int_equal(band_chan_offer(w, &v, 1, &dropped, NULL, &out), BAND_EINVAL);
    assert_int_equal(band_chan_destroy(w), 0);

    /* closed drop channel: ECLOSED */
    assert_int_equal(band_chan_close(c), 0);
    assert_int_equal(band_chan_offer(c, &v, 1, &dropped, NULL, &out), BAND_ECLOSED);
    assert_u64_equal(stats_of(c).refused_closed, 1);
}

/* Receivers waiting on a drop channel get offers handed over directly. */
static void test_offer_hands_off(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk_opts(f, 1, 0, BAND_CHAN_DROP_NEWEST, 0);
    uint64_t v = 9, dropped = 0;
    int out = -1;
    assert_int_equal(recv_async(c, &f->r[0]), BAND_PENDING);
    assert_int_equal(band_chan_offer(c, &v, 4, &dropped, NULL, &out), 0);
    assert_int_equal(out, 0);
    assert_int_equal(wakes(&f->r[0].rec), 1);
    assert_u64_equal(f->r[0].out, 9);
    assert_u64_equal(f->r[0].op.bytes, 4);
    band_chan_stats st = stats_of(c);
    assert_u64_equal(st.len, 0);
    assert_u64_equal(st.sent, 1);
    assert_u64_equal(st.received, 1);
    assert_u64_equal(st.dropped, 0);
}

/* ---------------------------------------------------------------------------------- */
/* destroy                                                                             */

static void test_destroy_drops_each_element(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk_opts(f, 4, 0, BAND_CHAN_WAIT, 0);
    for (uint64_t i = 0; i < 3; i++)
        assert_int_equal(try_send_u64(c, 50 + i, 1), 0);
    expect_recv(c, 50, 1);
    assert_int_equal(try_send_u64(c, 53, 1), 0);
    assert_int_equal(band_chan_close(c), 0);
    assert_int_equal(band_chan_destroy(c), 0);
    f->c = NULL;
    assert_int_equal(f->drops.calls, 3);
    assert_ptr_equal(f->drops.ctx_seen, &f->drops);
    uint64_t seen = 0;
    for (int i = 0; i < 3; i++) {
        assert_true(f->drops.elems[i] >= 51 && f->drops.elems[i] <= 53);
        seen |= UINT64_C(1) << (f->drops.elems[i] - 51);
    }
    assert_u64_equal(seen, 7); /* each once */
}

static void test_destroy_open_channel_drops(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk_opts(f, 2, 0, BAND_CHAN_DROP_OLDEST, 0);
    uint64_t v = 7, d;
    int out;
    assert_int_equal(band_chan_offer(c, &v, 1, &d, NULL, &out), 0);
    assert_int_equal(band_chan_destroy(c), 0); /* not closed: still fine */
    f->c = NULL;
    assert_int_equal(f->drops.calls, 1);
    assert_u64_equal(f->drops.elems[0], 7);
}

static void test_destroy_without_drop_fn(void **state)
{
    (void)state;
    band_chan *c;
    assert_int_equal(band_chan_create(&c, sizeof(uint64_t), 3, NULL), 0);
    assert_int_equal(try_send_u64(c, 1, 1), 0);
    assert_int_equal(try_send_u64(c, 2, 1), 0);
    assert_int_equal(band_chan_destroy(c), 0);
}

static void test_destroy_busy(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk_opts(f, 1, 0, BAND_CHAN_WAIT, 0);
    band_chan_slot slot = BAND_CHAN_SLOT_INIT;

    assert_int_equal(recv_async(c, &f->r[0]), BAND_PENDING);
    assert_int_equal(band_chan_destroy(c), BAND_EBUSY);
    assert_int_equal(band_waiter_cancel(&f->r[0].op.w, BAND_ECANCELED), 0);

    assert_int_equal(band_chan_try_reserve(c, 1, &slot), 0);
    assert_int_equal(band_chan_destroy(c), BAND_EBUSY);
    assert_int_equal(send_async(c, &f->s[0]), BAND_PENDING);
    assert_int_equal(band_chan_destroy(c), BAND_EBUSY);
    assert_int_equal(band_chan_close(c), 0);            /* fails s0 */
    assert_int_equal(band_chan_destroy(c), BAND_EBUSY); /* slot still held */
    assert_int_equal(f->drops.calls, 0);
    uint64_t x = 8;
    assert_int_equal(band_chan_slot_send(&slot, &x), 0);
    band_chan_stats st = stats_of(c); /* nothing was freed */
    assert_u64_equal(st.len, 1);
    assert_int_equal(band_chan_destroy(c), 0);
    f->c = NULL;
    assert_int_equal(f->drops.calls, 1);
    assert_u64_equal(f->drops.elems[0], 8);
}

/* ---------------------------------------------------------------------------------- */
/* wakes that call back in                                                             */

static void hook_send_more(struct wake_rec *r)
{
    struct fixture *f = r->ctx;
    uint64_t v = 4242;
    r->hook_rc = band_chan_try_send(f->c, &v, 2);
}

static void hook_recv_one(struct wake_rec *r)
{
    struct fixture *f = r->ctx;
    uint64_t v = 0;
    r->hook_rc = band_chan_try_recv(f->c, &v, NULL);
    r->hook_u64 = v;
}

static void hook_resubmit_recv(struct wake_rec *r)
{
    struct fixture *f = r->ctx;
    r->hook_rc = recv_async(f->c, &f->r[1]);
}

static void test_wakes_call_back(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk(f, 1, 0);

    /* A receiver's wake sends: the element lands in the queue. */
    f->r[0].rec.hook = hook_send_more;
    f->r[0].rec.ctx = f;
    assert_int_equal(recv_async(c, &f->r[0]), BAND_PENDING);
    assert_int_equal(try_send_u64(c, 1, 1), 0);
    assert_int_equal(f->r[0].rec.hook_rc, 0);
    assert_u64_equal(f->r[0].out, 1);
    band_chan_stats st = stats_of(c);
    assert_u64_equal(st.len, 1);

    /* A sender's wake receives: the grant happened before the wake, so it sees it. */
    f->s[0].rec.hook = hook_recv_one;
    f->s[0].rec.ctx = f;
    assert_int_equal(send_async(c, &f->s[0]), BAND_PENDING);
    expect_recv(c, 4242, 2); /* frees room: s0 granted; its wake takes s0's own element */
    assert_int_equal(f->s[0].rec.hook_rc, 0);
    assert_u64_equal(f->s[0].rec.hook_u64, 100);
    st = stats_of(c);
    assert_u64_equal(st.len, 0);

    /* A receiver's wake queues another receive (on a different op). */
    f->r[2].rec.hook = hook_resubmit_recv;
    f->r[2].rec.ctx = f;
    assert_int_equal(recv_async(c, &f->r[2]), BAND_PENDING);
    assert_int_equal(try_send_u64(c, 2, 1), 0);
    assert_int_equal(f->r[2].rec.hook_rc, BAND_PENDING);
    assert_int_equal(try_send_u64(c, 3, 1), 0);
    assert_u64_equal(f->r[1].out, 3);
    st = stats_of(c);
    assert_u64_equal(st.sent, 5);
    assert_u64_equal(st.received, 5);
}

/* ---------------------------------------------------------------------------------- */
/* blocking calls                                                                      */

enum { W_SEND, W_RECV, W_RESERVE, W_RECV_MANY };

struct worker_arg {
    band_chan *c;
    int kind;
    uint64_t val, bytes;
    band_time deadline;
    uint64_t out[4], out_bytes;
    size_t n;
    band_chan_slot slot;
    pthread_t self;
};

static int worker_fn(void *arg)
{
    struct worker_arg *a = arg;
    a->self = pthread_self();
    switch (a->kind) {
    case W_SEND:
        return band_chan_send(a->c, &a->val, a->bytes, a->deadline, NULL);
    case W_RECV:
        return band_chan_recv(a->c, &a->out[0], &a->out_bytes, a->deadline, NULL);
    case W_RESERVE:
        return band_chan_reserve(a->c, a->bytes, &a->slot, a->deadline, NULL);
    case W_RECV_MANY:
        return band_chan_recv_many(a->c, 4, a->out, NULL, &a->n, a->deadline, NULL);
    }
    return -1;
}

struct chan_cond {
    band_chan *c;
    uint64_t senders, receivers;
};

static bool cond_waiting(void *arg)
{
    struct chan_cond *k = arg;
    band_chan_stats st;
    if (band_chan_get_stats(k->c, &st) != 0)
        return false;
    return st.waiting_senders >= k->senders && st.waiting_receivers >= k->receivers;
}

static void wait_for(band_chan *c, uint64_t senders, uint64_t receivers)
{
    struct chan_cond k = {c, senders, receivers};
    assert_true(test_wait_until(cond_waiting, &k, 20 * BAND_SEC));
}

static void test_blocking_send_and_recv(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk(f, 1, 0);
    assert_int_equal(try_send_u64(c, 1, 1), 0);

    struct worker_arg a = {.c = c, .kind = W_SEND, .val = 2, .bytes = 3, .deadline = BAND_FOREVER};
    struct test_thread t;
    assert_int_equal(test_thread_start(&t, worker_fn, &a), 0);
    wait_for(c, 1, 0);
    assert_int_equal(try_send_u64(c, 9, 1), BAND_EAGAIN); /* the blocked sender is first */
    expect_recv(c, 1, 1);
    assert_int_equal(test_thread_join(&t), 0);
    expect_recv(c, 2, 3);
    band_chan_stats st = stats_of(c);
    assert_true(st.send_wait_ns > 0);
    assert_true(st.send_wait_ns_max > 0);
    assert_true(st.send_wait_ns_max <= st.send_wait_ns);

    /* A blocked receiver gets a send made on this thread; its wake ran here. */
    struct worker_arg b = {.c = c, .kind = W_RECV, .deadline = BAND_FOREVER};
    assert_int_equal(test_thread_start(&t, worker_fn, &b), 0);
    wait_for(c, 0, 1);
    assert_int_equal(try_send_u64(c, 5, 6), 0);
    assert_int_equal(test_thread_join(&t), 0);
    assert_u64_equal(b.out[0], 5);
    assert_u64_equal(b.out_bytes, 6);
    assert_u64_equal(stats_of(c).len, 0);
}

/* On a ring large enough that a spinning sender waits for a run of free slots (and a
 * spinning receiver for a run of published ones) before retrying, those waits are bounded:
 * a sender on a full ring and a receiver on an empty one still end their spinning and
 * queue, and one freed slot or one element then completes them. */
static void test_spinning_waits_are_bounded(void **state)
{
    struct fixture *f = *state;
    enum { CAP = 1024 };
    band_chan *c = mk(f, CAP, 0);
    for (uint64_t i = 0; i < CAP; i++)
        assert_int_equal(try_send_u64(c, i, 1), 0);

    struct worker_arg a = {
        .c = c, .kind = W_SEND, .val = CAP, .bytes = 1, .deadline = BAND_FOREVER};
    struct test_thread t;
    assert_int_equal(test_thread_start(&t, worker_fn, &a), 0);
    wait_for(c, 1, 0); /* it stopped spinning and queued */
    expect_recv(c, 0, 1);
    assert_int_equal(test_thread_join(&t), 0);
    for (uint64_t i = 1; i <= CAP; i++)
        expect_recv(c, i, 1);
    assert_u64_equal(stats_of(c).len, 0);

    struct worker_arg b = {.c = c, .kind = W_RECV, .deadline = BAND_FOREVER};
    assert_int_equal(test_thread_start(&t, worker_fn, &b), 0);
    wait_for(c, 0, 1);
    assert_int_equal(try_send_u64(c, 7, 8), 0);
    assert_int_equal(test_thread_join(&t), 0);
    assert_u64_equal(b.out[0], 7);
    assert_u64_equal(b.out_bytes, 8);
    band_chan_stats st = stats_of(c);
    assert_u64_equal(st.len, 0);
    assert_u64_equal(st.sent, CAP + 2);
    assert_u64_equal(st.received, CAP + 2);
}

static void test_blocking_deadlines(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk(f, 1, 0);
    assert_int_equal(try_send_u64(c, 1, 1), 0);
    struct worker_arg a = {.c = c,
                           .kind = W_SEND,
                           .val = 2,
                           .bytes = 1,
                           .deadline = band_deadline_after(20 * BAND_MSEC)};
    struct test_thread t;
    band_time t0 = band_now();
    assert_int_equal(test_thread_start(&t, worker_fn, &a), 0);
    assert_int_equal(test_thread_join(&t), BAND_ETIMEDOUT);
    assert_true(band_now() - t0 >= 20 * BAND_MSEC);
    band_chan_stats st = stats_of(c);
    assert_u64_equal(st.waiting_senders, 0);
    assert_u64_equal(st.len, 1);
    assert_u64_equal(st.sent, 1);
    expect_recv(c, 1, 1);

    struct worker_arg b = {.c = c, .kind = W_RECV, .deadline = band_deadline_after(20 * BAND_MSEC)};
    assert_int_equal(test_thread_start(&t, worker_fn, &b), 0);
    assert_int_equal(test_thread_join(&t), BAND_ETIMEDOUT);
    struct worker_arg d = {
        .c = c, .kind = W_RECV_MANY, .deadline = band_deadline_after(20 * BAND_MSEC)};
    assert_int_equal(test_thread_start(&t, worker_fn, &d), 0);
    assert_int_equal(test_thread_join(&t), BAND_ETIMEDOUT);
    assert_int_equal(d.n, 0);
    st = stats_of(c);
    assert_u64_equal(st.waiting_receivers, 0);
    /* Nothing is left behind: a later send is queued, not handed to a timed-out waiter. */
    assert_int_equal(try_send_u64(c, 3, 1), 0);
    expect_recv(c, 3, 1);
}

static void test_blocking_close_wakes(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk(f, 1, 0);
    struct test_thread t1, t2;
    struct worker_arg r = {.c = c, .kind = W_RECV, .deadline = BAND_FOREVER};
    assert_int_equal(test_thread_start(&t1, worker_fn, &r), 0);
    wait_for(c, 0, 1);
    assert_int_equal(band_chan_close(c), 0);
    assert_int_equal(test_thread_join(&t1), BAND_ECLOSED);
    band_chan_destroy(c);
    f->c = NULL;

    c = mk(f, 1, 0);
    assert_int_equal(try_send_u64(c, 1, 1), 0);
    struct worker_arg s = {.c = c, .kind = W_SEND, .val = 2, .bytes = 1, .deadline = BAND_FOREVER};
    struct worker_arg v = {.c = c, .kind = W_RESERVE, .bytes = 1, .deadline = BAND_FOREVER};
    assert_int_equal(test_thread_start(&t1, worker_fn, &s), 0);
    wait_for(c, 1, 0);
    assert_int_equal(test_thread_start(&t2, worker_fn, &v), 0);
    wait_for(c, 2, 0);
    assert_int_equal(band_chan_close(c), 0);
    assert_int_equal(test_thread_join(&t1), BAND_ECLOSED);
    assert_int_equal(test_thread_join(&t2), BAND_ECLOSED);
    assert_ptr_equal(v.slot.chan, NULL);
    expect_recv(c, 1, 1);
    assert_int_equal(try_recv_rc(c), BAND_ECLOSED);
}

static void test_blocking_reserve_and_recv_many(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk(f, 1, 0);
    assert_int_equal(try_send_u64(c, 1, 1), 0);
    struct test_thread t;
    struct worker_arg v = {.c = c, .kind = W_RESERVE, .bytes = 7, .deadline = BAND_FOREVER};
    assert_int_equal(test_thread_start(&t, worker_fn, &v), 0);
    wait_for(c, 1, 0);
    expect_recv(c, 1, 1);
    assert_int_equal(test_thread_join(&t), 0);
    assert_ptr_equal(v.slot.chan, c);
    assert_u64_equal(v.slot.bytes, 7);
    assert_u64_equal(stats_of(c).reserved, 1);

    struct worker_arg m = {.c = c, .kind = W_RECV_MANY, .deadline = BAND_FOREVER};
    assert_int_equal(test_thread_start(&t, worker_fn, &m), 0);
    wait_for(c, 0, 1);
    uint64_t x = 11;
    assert_int_equal(band_chan_slot_send(&v.slot, &x), 0);
    assert_int_equal(test_thread_join(&t), 0);
    assert_int_equal(m.n, 1);
    assert_u64_equal(m.out[0], 11);
}

/* The wake runs on the thread that completed the operation. */
static void test_wake_thread(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk(f, 1, 0);
    assert_int_equal(recv_async(c, &f->r[0]), BAND_PENDING);
    struct worker_arg a = {.c = c, .kind = W_SEND, .val = 77, .bytes = 1, .deadline = BAND_FOREVER};
    struct test_thread t;
    assert_int_equal(test_thread_start(&t, worker_fn, &a), 0);
    assert_int_equal(test_thread_join(&t), 0);
    assert_int_equal(wakes(&f->r[0].rec), 1);
    assert_true(pthread_equal(f->r[0].rec.thread, a.self));
    assert_u64_equal(f->r[0].out, 77);
}

/* ---------------------------------------------------------------------------------- */
/* counters                                                                            */

static bool now_past(void *arg)
{
    return band_now() >= *(band_time *)arg;
}

static void test_send_wait_counters(void **state)
{
    struct fixture *f = *state;
    band_chan *c = mk(f, 1, 0);
    assert_int_equal(try_send_u64(c, 1, 1), 0);
    assert_int_equal(send_async(c, &f->s[0]), BAND_PENDING);
    band_time until = band_now() + 2 * BAND_MSEC;
    assert_true(test_wait_until(now_past, &until, 10 * BAND_SEC));
    expect_recv(c, 1, 1);
    band_chan_stats st = stats_of(c);
    assert_true(st.send_wait_ns >= (uint64_t)(2 * BAND_MSEC));
    assert_u64_equal(st.send_wait_ns_max, st.send_wait_ns);
    assert_int_equal(send_async(c, &f->s[1]), BAND_PENDING);
    expect_recv(c, 100, 1);
    band_chan_stats st2 = stats_of(c);
    assert_true(st2.send_wait_ns >= st.send_wait_ns);
    assert_true(st2.send_wait_ns_max >= st.send_wait_ns_max);
    assert_true(st2.send_wait_ns_max <= st2.send_wait_ns);
}

/*
 * The wait histogram named in the options records one value per queued sender, whatever
 * ended its wait (served, cancelled, failed by close), the same as send_wait_ns sums;
 * senders that never queued record nothing.
 */
static void test_wait_histo_option(void **state)
{
    struct fixture *f = *state;
    band_histo h;
    band_histo_init(&h);
    band_chan_opts o = {.wait_histo = &h};
    assert_int_equal(band_chan_create(&f->c, sizeof(uint64_t), 1, &o), 0);
    band_chan *c = f->c;
    band_histo_snapshot snap;

    assert_int_equal(try_send_u64(c, 1, 1), 0);           /* never queued: nothing recorded */
    assert_int_equal(try_send_u64(c, 2, 1), BAND_EAGAIN); /* refused: nothing either */
    assert_int_equal(band_histo_read(&h, &snap), 0);
    assert_u64_equal(snap.count, 0);

    assert_int_equal(send_async(c, &f->s[0]), BAND_PENDING);
    band_time until = band_now() + 2 * BAND_MSEC;
    assert_true(test_wait_until(now_past, &until, 10 * BAND_SEC));
    expect_recv(c, 1, 1); /* serves s[0] */
    assert_int_equal(band_histo_read(&h, &snap), 0);
    assert_u64_equal(snap.count, 1);
    assert_true(snap.max >= (uint64_t)(2 * BAND_MSEC));

    assert_int_equal(send_async(c, &f->s[1]), BAND_PENDING);
    assert_int_equal(band_waiter_cancel(&f->s[1].op.w, BAND_ECANCELED), 0);
    assert_int_equal(send_async(c, &f->s[2]), BAND_PENDING);
    assert_int_equal(band_chan_close(c), 0); /* fails s[2] */
    assert_int_equal(atomic_load(&f->s[2].rec.status), BAND_ECLOSED);
    assert_int_equal(band_histo_read(&h, &snap), 0);
    assert_u64_equal(snap.count, 3);
    band_chan_stats st = stats_of(c);
    assert_u64_equal(snap.sum, st.send_wait_ns);
    assert_u64_equal(snap.max, st.send_wait_ns_max);
    expect_recv(c, 100, 1);
    assert_int_equal(band_chan_destroy(c), 0);
    f->c = NULL;
    assert_int_equal(band_histo_read(&h, &snap), 0); /* still the caller's */
    assert_u64_equal(snap.count, 3);
}

/* ---------------------------------------------------------------------------------- */
/* exactly-once accounting with counted payloads                                       */

#define EO_ELEMS 4096
#define EO_OPS   6

struct eo {
    band_chan *c;
    uint8_t received[EO_ELEMS]; /* times each element reached a receiver */
    uint8_t returned[EO_ELEMS]; /* times it came back to its sender */
    uint8_t issued[EO_ELEMS];
    uint64_t next;
    int bad; /* something impossible was seen in a wake */
};

struct eo_sop {
    union {
        band_chan_send_op op;     /* first: sends */
        band_chan_reserve_op rsv; /* reservations: the same waiter */
    };
    struct eo *eo;
    uint64_t val;
    int pending, reserve;
};

struct eo_rop {
    struct band_chan_recv_op op; /* first */
    struct eo *eo;
    uint64_t out;
    int pending;
};

static void eo_send_wake(band_waiter *w)
{
    struct eo_sop *s = (struct eo_sop *)(void *)w;
    int st = band_waiter_status(w);
    s->pending = 0;
    if (s->reserve) {
        if (st == 0) {
            /* The reservation is ours: fill it with the element. */
            if (s->rsv.slot.chan != s->eo->c || band_chan_slot_send(&s->rsv.slot, &s->val) != 0)
                s->eo->bad++;
        } else if (st == BAND_ECLOSED) {
            s->eo->returned[s->val]++;
        } else {
            s->eo->bad++;
        }
        return;
    }
    if (st == BAND_ECLOSED)
        s->eo->returned[s->val]++;
    else if (st != 0)
        s->eo->bad++;
}

static void eo_recv_wake(band_waiter *w)
{
    struct eo_rop *r = (struct eo_rop *)(void *)w;
    int st = band_waiter_status(w);
    r->pending = 0;
    if (st == 0) {
        if (r->out < EO_ELEMS)
            r->eo->received[r->out]++;
        else
            r->eo->bad++;
    } else if (st != BAND_ECLOSED) {
        r->eo->bad++;
    }
}

static uint64_t eo_issue(struct eo *e)
{
    uint64_t v = e->next++ % EO_ELEMS;
    e->issued[v]++;
    return v;
}

static void eo_try_recv(struct eo *e)
{
    uint64_t v = UINT64_MAX;
    int rc = band_chan_try_recv(e->c, &v, NULL);
    if (rc == 0) {
        assert_true(v < EO_ELEMS);
        e->received[v]++;
    } else {
        assert_true(rc == BAND_EAGAIN || rc == BAND_ECLOSED);
    }
}

static void test_exactly_once_accounting(void **state)
{
    (void)state;
    static struct eo e;
    static struct eo_sop sops[EO_OPS];
    static struct eo_rop rops[EO_OPS];
    memset(&e, 0, sizeof(e));
    band_chan_opts o = {.byte_capacity = 16};
    assert_int_equal(band_chan_create(&e.c, sizeof(uint64_t), 3, &o), 0);
    band_chan_slot slots[3] = {BAND_CHAN_SLOT_INIT, BAND_CHAN_SLOT_INIT, BAND_CHAN_SLOT_INIT};
    uint64_t slot_val[3] = {0};
    for (int i = 0; i < EO_OPS; i++) {
        sops[i].eo = &e;
        sops[i].pending = 0;
        band_waiter_init(&sops[i].op.w, eo_send_wake, NULL);
        rops[i].eo = &e;
        rops[i].pending = 0;
        band_waiter_init(&rops[i].op.w, eo_recv_wake, NULL);
    }
    uint64_t rng = 0x5eed;
    const int steps = 3000, close_at = 2500;
    for (int step = 0; step < steps; step++) {
        if (step == close_at)
            assert_int_equal(band_chan_close(e.c), 0);
        uint64_t k = test_rng_range(&rng, 0, 9);
        uint64_t bytes = test_rng_range(&rng, 0, 8);
        int i = (int)test_rng_range(&rng, 0, EO_OPS - 1);
        int si = (int)test_rng_range(&rng, 0, 2);
        int rc;
        switch (k) {
        case 0: { /* try_send */
            uint64_t v = eo_issue(&e);
            rc = band_chan_try_send(e.c, &v, bytes);
            if (rc != 0) {
                assert_true(rc == BAND_EAGAIN || rc == BAND_ECLOSED);
                e.returned[v]++;
            }
            break;
        }
        case 1:   /* send_async or reserve_async */
        case 2: { /* (the wake fills a granted reservation with the element) */
            if (sops[i].pending)
                break;
            sops[i].val = eo_issue(&e);
            sops[i].reserve = k == 2;
            sops[i].pending = 1;
            rc = sops[i].reserve ? band_chan_reserve_async(e.c, bytes, &sops[i].rsv)
                                 : band_chan_send_async(e.c, &sops[i].val, bytes, &sops[i].op);
            if (rc == BAND_PENDING)
                break;
            sops[i].pending = 0;
            if (rc == 0 && sops[i].reserve) {
                assert_ptr_equal(sops[i].rsv.slot.chan, e.c);
                assert_u64_equal(sops[i].rsv.slot.bytes, bytes);
                assert_int_equal(band_chan_slot_send(&sops[i].rsv.slot, &sops[i].val), 0);
            } else if (rc != 0) {
                assert_int_equal(rc, BAND_ECLOSED);
                e.returned[sops[i].val]++;
            }
            break;
        }
        case 3: /* cancel a send */
            if (!sops[i].pending)
                break;
            rc = band_waiter_cancel(&sops[i].op.w, BAND_ECANCELED);
            if (rc == 0) {
                sops[i].pending = 0;
                e.returned[sops[i].val]++;
            } else {
                fail_msg("cancel of a pending send (single-threaded): %d", rc);
            }
            break;
        case 4: /* recv_async */
            if (rops[i].pending)
                break;
            rops[i].out = UINT64_MAX;
            rops[i].pending = 1;
            rc = band_chan_recv_async(e.c, &rops[i].out, &rops[i].op);
            if (rc == BAND_PENDING)
                break;
            rops[i].pending = 0;
            if (rc == 0) {
                assert_true(rops[i].out < EO_ELEMS);
                e.received[rops[i].out]++;
            } else {
                assert_int_equal(rc, BAND_ECLOSED);
            }
            break;
        case 5: /* cancel a receive */
            if (rops[i].pending)
                assert_int_equal(band_waiter_cancel(&rops[i].op.w, BAND_ETIMEDOUT), 0);
            rops[i].pending = 0;
            break;
        case 6:
        case 7:
            eo_try_recv(&e);
            break;
        case 8: /* reserve into a slot, or fill / release it */
            if (slots[si].chan == NULL) {
                slot_val[si] = eo_issue(&e);
                rc = band_chan_try_reserve(e.c, bytes, &slots[si]);
                if (rc != 0)
                    e.returned[slot_val[si]]++;
            } else if (bytes & 1) {
                assert_int_equal(band_chan_slot_send(&slots[si], &slot_val[si]), 0);
            } else {
                assert_int_equal(band_chan_slot_release(&slots[si]), 0);
                e.returned[slot_val[si]]++;
            }
            break;
        case 9: { /* recv_many */
            uint64_t out[3];
            size_t n = 0;
            rc = band_chan_recv_many(e.c, 3, out, NULL, &n, 0, NULL);
            if (rc == 0) {
                assert_true(n >= 1 && n <= 3);
                for (size_t j = 0; j < n; j++)
                    e.received[out[j]]++;
            } else {
                assert_true(rc == BAND_ETIMEDOUT || rc == BAND_ECLOSED);
                assert_int_equal(n, 0);
            }
            break;
        }
        }
        assert_int_equal(e.bad, 0);
    }
    /* End: every held reservation is filled, then everything is drained. */
    for (int s = 0; s < 3; s++)
        if (slots[s].chan != NULL)
            assert_int_equal(band_chan_slot_send(&slots[s], &slot_val[s]), 0);
    band_chan_stats st = stats_of(e.c);
    assert_int_equal(st.closed, 1);
    assert_u64_equal(st.waiting_senders, 0);
    assert_u64_equal(st.reserved, 0);
    for (;;) {
        uint64_t v = UINT64_MAX;
        int rc = band_chan_try_recv(e.c, &v, NULL);
        if (rc == BAND_ECLOSED)
            break;
        assert_int_equal(rc, 0);
        e.received[v]++;
    }
    for (int i = 0; i < EO_OPS; i++) {
        assert_int_equal(rops[i].pending, 0);
        assert_int_equal(sops[i].pending, 0);
    }
    assert_int_equal(e.bad, 0);
    /* Every element issued was received or handed back, exactly once. */
    uint64_t recv_total = 0, ret_total = 0;
    for (uint64_t v = 0; v < e.next && v < EO_ELEMS; v++) {
        if (e.received[v] + e.returned[v] != e.issued[v])
            fail_msg("element %llu: issued %d, received %d, returned %d", (unsigned long long)v,
                     e.issued[v], e.received[v], e.returned[v]);
        recv_total += e.received[v];
        ret_total += e.returned[v];
    }
    assert_true(e.next <= EO_ELEMS); /* no id reuse: each counter is one element */
    st = stats_of(e.c);
    assert_u64_equal(st.sent, recv_total);
    assert_u64_equal(st.received, recv_total);
    assert_true(recv_total > 100);
    assert_true(ret_total > 100);
    assert_int_equal(band_chan_destroy(e.c), 0);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_args),
        T(test_fresh_stats),
        T(test_set_name),
        T(test_null_args),
        T(test_check_order),
        T(test_misuse_is_einval),
        T(test_full_queue_capacity_one),
        T(test_fifo_order_and_bytes),
        cmocka_unit_test(test_large_elements),
        T(test_fifo_grant_to_oldest_sender),
        T(test_try_send_never_barges),
        T(test_head_of_line_blocking),
        T(test_async_copies_at_grant),
        T(test_send_async_at_once),
        T(test_handoff_to_waiting_receivers),
        T(test_recv_async_at_once),
        T(test_recv_async_frees_room),
        T(test_cancel_send),
        T(test_cancel_head_sender_grants_next),
        T(test_cancel_recv),
        T(test_cancel_inside_own_wake),
        T(test_reserve_basic),
        T(test_reserve_async_slot),
        T(test_slot_send_hands_off),
        T(test_recv_takes_waiting_senders_element),
        T(test_blocking_recv_takes_waiting_senders_element),
        T(test_try_recv_takes_waiting_senders_element),
        T(test_reserve_head_holds_back_send),
        T(test_slot_send_handoff_serves_senders),
        T(test_close_with_queued_elements),
        T(test_close_fails_pending_senders),
        T(test_close_fails_pending_receivers),
        T(test_close_with_held_reservation_filled),
        T(test_close_with_held_reservation_released),
        T(test_close_release_with_queued),
        T(test_close_wake_calls_back),
        T(test_byte_bound),
        T(test_huge_bytes_is_e2big),
        T(test_no_byte_bound),
        T(test_works_after_fork),
        T(test_deadline_aware),
        T(test_deadline_unaware_queues),
        T(test_lifo_after),
        T(test_ring_wraps),
        T(test_reservation_counts_for_fast_sends),
        T(test_past_deadlines),
        cmocka_unit_test(test_element_sizes),
        T(test_recv_many),
        T(test_recv_many_grants_senders),
        T(test_sender_counting),
        T(test_sender_counting_close_first),
        T(test_sender_counting_off),
        T(test_drop_oldest),
        T(test_drop_newest),
        T(test_drop_oldest_bytes),
        T(test_drop_newest_bytes),
        T(test_drop_policy_misuse),
        T(test_offer_hands_off),
        T(test_destroy_drops_each_element),
        T(test_destroy_open_channel_drops),
        cmocka_unit_test(test_destroy_without_drop_fn),
        T(test_destroy_busy),
        T(test_wakes_call_back),
        T(test_blocking_send_and_recv),
        T(test_spinning_waits_are_bounded),
        T(test_blocking_deadlines),
        T(test_blocking_close_wakes),
        T(test_blocking_reserve_and_recv_many),
        T(test_wake_thread),
        T(test_send_wait_counters),
        T(test_wait_histo_option),
        cmocka_unit_test(test_exactly_once_accounting),
    };
#undef T
    return cmocka_run_group_tests_name("chan", tests, NULL, NULL);
}
