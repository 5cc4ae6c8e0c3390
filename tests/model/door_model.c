/* SPDX-License-Identifier: MIT */
/*
 * door_model.c - the reference model of band_front_door and the op interpreter that compares
 * it with the real thing (see door_model.h).
 *
 * The model is written out the long way from front_door.h, answer.h, sem.h, rate.h and
 * chan.h:
 *
 *  - the semaphore is a count of available units, a FIFO of waiting users with the head's
 *    partial grant (nothing is visible as available while anyone waits; a release fills the
 *    head first, then the next ones, then the count; a cancelled head's grant goes to the
 *    ones behind it; close fails them all, in order);
 *  - the rate budget is the textbook bucket in integers: the level counts tokens in units
 *    of 1/period, each nanosecond adds `tokens` units, the bucket holds burst x period;
 *  - the backlog is a FIFO of job numbers with a capacity;
 *  - the door decides in the documented order: closed -> GONE; more than a semaphore can
 *    hold -> TOO_BIG; shedding (class c leaves fewer than headroom[c] units) -> SHED, or
 *    TOO_BIG when the class can never fit (budget capacity - headroom, or the rate's
 *    burst); the permit try; on a refusal a class with headroom is shed, and otherwise the
 *    rate is read without taking anything (closed -> GONE, above the burst -> TOO_BIG, and
 *    with a wait: too few tokens -> OVER_QUOTA with the time the missing whole tokens take);
 *    a wait that nobody can end times out; no permits -> LATER when a job fits the
 *    backlog, else BUSY; with the permits, the tokens, or the permits go back and the
 *    rate's answer (exact Retry-After) is given; ACCEPT hands the permits over;
 *  - BUSY and SHED carry mean hold x ceil((waiting units + n) / peak in flight), read from
 *    the door's own mean hold (which comes from the real clock), or 1 s before any;
 *  - band_front_door_done() takes back only permits of the door's semaphore, non-empty, no more
 *    than the door has in flight, with an admission time in [0, band_now()].
 *
 * The driver is single-threaded, so a wait for permits can never be ended by a release:
 * it always times out (the door's wait is 0 or 1 us, and the caller's deadline is either
 * BAND_FOREVER or already past).
 */
#include "door_model.h"

#include "model_input.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "band/band.h"

#define SLOTS   8 /* permits the driver holds */
#define WAITERS 4 /* other users' async acquisitions */
#define MAXQ    4 /* backlog capacity at most */
#define MAXEV   16

enum { SEM_NONE = 0, SEM_PLAIN = 1, SEM_BUDGET = 2 };
enum { W_IDLE = 0, W_PENDING = 1, W_GRANTED = 2 };

struct dm_waiter {
    band_waiter w; /* first */
    struct door_model *m;
    int idx;
    int state;
    uint64_t want;
};

struct door_model {
    struct model_input in;
    band_time now; /* the rate budget's fake clock */

    /* the real objects */
    band_sem *sem;
    band_budget *budget;
    band_rate *rate;
    band_chan *backlog;
    band_front_door *door;

    /* the configuration */
    int sem_kind;
    uint64_t cap; /* plain: initial permits; budget: capacity */
    int has_rate;
    uint64_t tokens, burst;
    int64_t period;
    uint64_t qcap; /* 0: no backlog */
    int classes;
    uint64_t headroom[BAND_FRONT_DOOR_CLASSES];
    band_time wait;

    /* the model: semaphore */
    uint64_t avail, head_got;
    int sem_closed;
    int q[WAITERS];
    int qlen;
    struct dm_waiter wt[WAITERS];
    /* rate */
    int64_t level;
    int rate_closed;
    uint64_t outside_tokens;
    /* backlog */
    uint64_t jobs[MAXQ];
    int jlen;
    int chan_closed;
    uint64_t next_job;
    /* door */
    int door_closed;
    uint64_t in_flight, peak;
    int measured;
    uint64_t answers[DM_ANSWER_KINDS], admitted[BAND_FRONT_DOOR_CLASSES],
        refused[BAND_FRONT_DOOR_CLASSES];
    uint64_t accept_units, admitted_units, done_units;

    /* the permits the driver holds; door: 1 when the door handed it over */
    struct {
        band_permit p;
        int door;
    } slot[SLOTS];

    /* wakes: what ran, and what the model expects, in order */
    int wlog[MAXEV], wstat[MAXEV], wlen;
    int elog[MAXEV], estat[MAXEV], elen;

    int failed;
    char err[600];
    uint64_t opno;
    const char *opname;
    int trace;
    struct door_model_counts counts;
};

static const int http_of[DM_ANSWER_KINDS] = {200, 202, 503, 429, 503, 413, 503};

__attribute__((format(printf, 2, 3))) static int fail(struct door_model *m, const char *fmt, ...)
{
    if (m->failed)
        return -1;
    m->failed = 1;
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    snprintf(m->err, sizeof(m->err), "op #%llu (%s): %s", (unsigned long long)m->opno,
             m->opname != NULL ? m->opname : "setup", msg);
    return -1;
}

#define EXPECT_EQ(m, what, want, got)                                                              \
    do {                                                                                           \
        long long w_ = (long long)(want), g_ = (long long)(got);                                   \
        if (w_ != g_)                                                                              \
            return fail((m), "%s: expected %lld, got %lld", (what), w_, g_);                       \
    } while (0)

static uint8_t next(struct door_model *m)
{
    return model_input_byte(&m->in);
}

static band_time fake_clock(void *ctx)
{
    return ((struct door_model *)ctx)->now;
}

static void wake_fn(band_waiter *w)
{
    struct dm_waiter *x = (struct dm_waiter *)w;
    struct door_model *m = x->m;
    if (m->wlen < MAXEV) {
        m->wlog[m->wlen] = x->idx;
        m->wstat[m->wlen] = band_waiter_status(w);
    }
    m->wlen++;
}

static void expect_wake(struct door_model *m, int idx, int status)
{
    if (m->elen < MAXEV) {
        m->elog[m->elen] = idx;
        m->estat[m->elen] = status;
    }
    m->elen++;
}

/* ---------------------------------------------------------------- the semaphore model */

static uint64_t m_visible(const struct door_model *m)
{
    return m->qlen > 0 ? 0 : m->avail;
}

static uint64_t m_waiting_units(const struct door_model *m)
{
    uint64_t u = 0;
    for (int i = 0; i < m->qlen; i++)
        u += m->wt[m->q[i]].want;
    return u;
}

static void m_pop_head(struct door_model *m)
{
    for (int i = 1; i < m->qlen; i++)
        m->q[i - 1] = m->q[i];
    m->qlen--;
}

/* Units come back: the head first (partial grants), then the next ones, then the count. */
static void m_grant(struct door_model *m, uint64_t pool)
{
    while (pool > 0 && m->qlen > 0) {
        struct dm_waiter *h = &m->wt[m->q[0]];
        uint64_t need = h->want - m->head_got;
        if (pool < need) {
            m->head_got += pool;
            return;
        }
        pool -= need;
        m->head_got = 0;
        m_pop_head(m);
        h->state = W_GRANTED;
        expect_wake(m, h->idx, 0);
    }
    m->avail += pool;
}

/* What band_permit_try_acquire(n) answers; takes the units on 0. */
static int m_try(struct door_model *m, uint64_t n)
{
    if (n > BAND_MAX_UNITS)
        return BAND_EINVAL;
    if (m->sem_kind == SEM_BUDGET && n > m->cap)
        return BAND_E2BIG;
    if (m->sem_closed)
        return BAND_ECLOSED;
    if (m->qlen > 0 || m->avail < n)
        return BAND_EAGAIN;
    m->avail -= n;
    return 0;
}

/* ---------------------------------------------------------------- the rate model */

static void m_advance(struct door_model *m, band_time dt)
{
    int64_t full = (int64_t)m->burst * m->period;
    m->level += dt * (int64_t)m->tokens;
    if (m->level > full)
        m->level = full;
}

static uint64_t m_rate_avail(const struct door_model *m)
{
    return (uint64_t)(m->level / m->period);
}

static band_time ceil_div(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

/* band_rate_try_acquire(): 0 (taken), ECLOSED, E2BIG, or EAGAIN with the exact retry-after. */
static int m_rate_try(struct door_model *m, uint64_t n, band_time *retry)
{
    *retry = 0;
    if (m->rate_closed)
        return BAND_ECLOSED;
    if (n > m->burst)
        return BAND_E2BIG;
    int64_t cost = (int64_t)n * m->period;
    if (m->level >= cost) {
        m->level -= cost;
        return 0;
    }
    *retry = ceil_div(cost - m->level, (int64_t)m->tokens);
    return BAND_EAGAIN;
}

/* What the door reads before a wait: nothing is taken; the retry counts whole tokens. */
static int m_rate_peek(const struct door_model *m, uint64_t n, band_time *retry)
{
    *retry = 0;
    if (m->rate_closed)
        return BAND_ECLOSED;
    if (n > m->burst)
        return BAND_E2BIG;
    uint64_t have = m_rate_avail(m);
    if (have >= n)
        return 0;
    *retry = ceil_div((int64_t)(n - have) * m->period, (int64_t)m->tokens);
    return BAND_EAGAIN;
}

/* ---------------------------------------------------------------- the door model */

struct expect {
    int rc;
    int kind, reason;
    band_time retry;
    int later; /* the job went to the backlog */
    int took;  /* the permits (and tokens) were handed over */
};

static band_time m_busy_retry(const struct door_model *m, uint64_t n, band_time hold)
{
    if (hold <= 0 || m->sem_kind == SEM_NONE)
        return BAND_SEC;
    uint64_t w = m_waiting_units(m), units;
    if (__builtin_add_overflow(w, n, &units))
        units = UINT64_MAX;
    uint64_t conc = m->peak > 0 ? m->peak : 1;
    uint64_t rounds = units / conc + (units % conc != 0);
    if (rounds > (uint64_t)(INT64_MAX / hold))
        return INT64_MAX;
    return (band_time)rounds * hold;
}

static void set(struct expect *e, int kind, int reason, band_time retry)
{
    e->rc = 0;
    e->kind = kind;
    e->reason = reason;
    e->retry = retry;
}

/* Shedding: SHED, or TOO_BIG when class @cls can never take @n. */
static void m_shed(struct door_model *m, int cls, uint64_t n, band_time hold, struct expect *e)
{
    uint64_t h = m->headroom[cls];
    band_time r;
    if (n > BAND_MAX_UNITS || h > BAND_MAX_UNITS - n) {
        m->counts.too_big_sem++;
        set(e, BAND_ANSWER_TOO_BIG, BAND_E2BIG, 0);
    } else if (m->sem_kind == SEM_BUDGET && (n > m->cap || h > m->cap - n)) {
        if (n > m->cap)
            m->counts.too_big_sem++;
        else
            m->counts.too_big_headroom++;
        set(e, BAND_ANSWER_TOO_BIG, BAND_E2BIG, 0);
    } else if (m->has_rate && m_rate_peek(m, n, &r) == BAND_E2BIG) {
        m->counts.too_big_rate++;
        set(e, BAND_ANSWER_TOO_BIG, BAND_E2BIG, 0);
    } else {
        set(e, BAND_ANSWER_SHED, BAND_EAGAIN, m_busy_retry(m, n, hold));
    }
}

/* No permits: LATER when a job fits the backlog, else BUSY, or TOO_BIG / GONE. */
static void m_no_room(struct door_model *m, int rc, uint64_t n, int job, band_time hold,
                      struct expect *e)
{
    if (rc == BAND_EAGAIN || rc == BAND_ETIMEDOUT) {
        if (job && m->qcap > 0 && !m->chan_closed && (uint64_t)m->jlen < m->qcap) {
            set(e, BAND_ANSWER_LATER, 0, 0);
            e->later = 1;
            return;
        }
        set(e, BAND_ANSWER_BUSY, rc, m_busy_retry(m, n, hold));
        return;
    }
    if (rc == BAND_E2BIG) {
        m->counts.too_big_sem++;
        set(e, BAND_ANSWER_TOO_BIG, BAND_E2BIG, 0);
    } else {
        set(e, BAND_ANSWER_GONE, rc, 0); /* BAND_ECLOSED */
    }
}

/* The whole decision; updates the model as the door would. */
static void m_admit(struct door_model *m, int cls, uint64_t n, int job, band_time hold,
                    struct expect *e)
{
    memset(e, 0, sizeof(*e));
    if (m->door_closed) {
        set(e, BAND_ANSWER_GONE, BAND_ECLOSED, 0);
        return;
    }
    if (m->sem_kind != SEM_NONE) {
        if (n > BAND_MAX_UNITS) {
            m->counts.too_big_sem++;
            set(e, BAND_ANSWER_TOO_BIG, BAND_E2BIG, 0);
            return;
        }
        uint64_t h = m->headroom[cls];
        uint64_t vis = m_visible(m);
        if (h > 0 && (vis < n || vis - n < h)) {
            m_shed(m, cls, n, hold, e);
            return;
        }
        int rc = m_try(m, n);
        if (rc == BAND_EAGAIN) {
            if (h > 0) {
                m_shed(m, cls, n, hold, e);
                return;
            }
            band_time retry = 0;
            int prc = m->has_rate ? m_rate_peek(m, n, &retry) : 0;
            if (prc == BAND_E2BIG) {
                m->counts.too_big_rate++;
                set(e, BAND_ANSWER_TOO_BIG, BAND_E2BIG, 0);
                return;
            }
            if (prc == BAND_ECLOSED) {
                set(e, BAND_ANSWER_GONE, BAND_ECLOSED, 0);
                return;
            }
            if (m->wait > 0) {
                if (prc == BAND_EAGAIN) {
                    m->counts.peek_over_quota++;
                    set(e, BAND_ANSWER_OVER_QUOTA, BAND_EAGAIN, retry);
                    return;
                }
                m->counts.waited_path++;
                rc = BAND_ETIMEDOUT; /* nobody can release while this thread waits */
            }
        }
        if (rc != 0) {
            m_no_room(m, rc, n, job, hold, e);
            return;
        }
    }
    if (m->has_rate) {
        band_time retry = 0;
        int rrc = m_rate_try(m, n, &retry);
        if (rrc != 0) {
            if (m->sem_kind != SEM_NONE) {
                m_grant(m, n); /* both or neither */
                m->counts.rate_gave_back++;
            }
            if (rrc == BAND_EAGAIN)
                set(e, BAND_ANSWER_OVER_QUOTA, BAND_EAGAIN, retry);
            else if (rrc == BAND_E2BIG) {
                m->counts.too_big_rate++;
                set(e, BAND_ANSWER_TOO_BIG, BAND_E2BIG, 0);
            } else
                set(e, BAND_ANSWER_GONE, BAND_ECLOSED, 0);
            return;
        }
    }
    set(e, BAND_ANSWER_ACCEPT, 0, 0);
    e->took = 1;
    m->accept_units += n;
    if (m->sem_kind != SEM_NONE) {
        m->in_flight += n;
        m->admitted_units += n;
        if (m->in_flight > m->peak)
            m->peak = m->in_flight;
    }
}

/* ---------------------------------------------------------------- checks */

static int check_wakes(struct door_model *m)
{
    if (m->wlen != m->elen)
        return fail(m, "%d wakes ran, the model expected %d", m->wlen, m->elen);
    for (int i = 0; i < m->wlen && i < MAXEV; i++) {
        if (m->wlog[i] != m->elog[i] || m->wstat[i] != m->estat[i])
            return fail(m, "wake %d: waiter %d status %d, the model expected waiter %d status %d",
                        i, m->wlog[i], m->wstat[i], m->elog[i], m->estat[i]);
    }
    m->counts.wakes += (uint64_t)m->wlen;
    m->wlen = m->elen = 0;
    return 0;
}

/* Everything observable against the model, and the invariants. */
static int check_all(struct door_model *m)
{
    if (check_wakes(m) != 0)
        return -1;
    if (m->sem_kind != SEM_NONE) {
        band_sem_stats st;
        EXPECT_EQ(m, "band_sem_get_stats()", 0, band_sem_get_stats(m->sem, &st));
        EXPECT_EQ(m, "band_sem_available()", m_visible(m), band_sem_available(m->sem));
        EXPECT_EQ(m, "waiters", m->qlen, st.waiters);
        EXPECT_EQ(m, "waiting_units", m_waiting_units(m), st.waiting_units);
        EXPECT_EQ(m, "head_granted", m->head_got, st.head_granted);
        EXPECT_EQ(m, "closed", m->sem_closed, st.closed);
        EXPECT_EQ(m, "debt", 0, st.debt);
        /* Every unit is somewhere: available, the head's grant, held, granted to a user. */
        uint64_t held = 0;
        for (int i = 0; i < SLOTS; i++)
            held += m->slot[i].p.count;
        for (int i = 0; i < WAITERS; i++)
            if (m->wt[i].state == W_GRANTED)
                held += m->wt[i].want;
        EXPECT_EQ(m, "units accounted for", m->cap, m->avail + m->head_got + held);
        /* Permits in flight at the door == admitted - given back through done(). */
        EXPECT_EQ(m, "in flight == admitted - done", m->in_flight,
                  m->admitted_units - m->done_units);
    }
    if (m->has_rate) {
        band_rate_stats rs;
        EXPECT_EQ(m, "band_rate_get_stats()", 0, band_rate_get_stats(m->rate, &rs));
        EXPECT_EQ(m, "band_rate_available()", m_rate_avail(m), band_rate_available(m->rate));
        /* Tokens spent by the door == units it admitted (other users' tokens aside). */
        EXPECT_EQ(m, "tokens spent - other users' == units admitted", m->accept_units,
                  rs.granted_tokens - m->outside_tokens);
        EXPECT_EQ(m, "rate closed", m->rate_closed, rs.closed);
    }
    if (m->qcap > 0) {
        band_chan_stats cs;
        EXPECT_EQ(m, "band_chan_get_stats()", 0, band_chan_get_stats(m->backlog, &cs));
        EXPECT_EQ(m, "backlog length", m->jlen, cs.len);
    }
    band_front_door_stats ds;
    EXPECT_EQ(m, "band_front_door_get_stats()", 0, band_front_door_get_stats(m->door, &ds));
    for (int k = 0; k < DM_ANSWER_KINDS; k++)
        EXPECT_EQ(m, band_answer_name(k), m->answers[k], ds.answers[k]);
    for (int c = 0; c < BAND_FRONT_DOOR_CLASSES; c++) {
        EXPECT_EQ(m, "admitted[c]", m->admitted[c], ds.admitted[c]);
        EXPECT_EQ(m, "refused[c]", m->refused[c], ds.refused[c]);
    }
    EXPECT_EQ(m, "waited (nobody can end a wait here)", 0, ds.waited);
    EXPECT_EQ(m, "mean_hold measured", m->measured, ds.mean_hold > 0);
    return 0;
}

/* The answer is one of the documented ones, consistent in itself. */
static int check_answer_shape(struct door_model *m, const band_answer *a)
{
    if (a->kind < 0 || a->kind >= DM_ANSWER_KINDS)
        return fail(m, "answer kind %d is not documented", a->kind);
    EXPECT_EQ(m, "http_status of the kind", http_of[a->kind], a->http_status);
    if (a->retry_after < 0)
        return fail(m, "negative retry_after %lld", (long long)a->retry_after);
    switch (a->kind) {
    case BAND_ANSWER_ACCEPT:
    case BAND_ANSWER_LATER:
        EXPECT_EQ(m, "reason of accept/later", 0, a->reason);
        EXPECT_EQ(m, "retry_after of accept/later", 0, a->retry_after);
        break;
    case BAND_ANSWER_TOO_BIG:
        EXPECT_EQ(m, "reason of too_big", BAND_E2BIG, a->reason);
        EXPECT_EQ(m, "retry_after of too_big", 0, a->retry_after);
        break;
    case BAND_ANSWER_GONE:
        EXPECT_EQ(m, "reason of gone", BAND_ECLOSED, a->reason);
        EXPECT_EQ(m, "retry_after of gone", 0, a->retry_after);
        break;
    default: /* busy, over_quota, shed */
        if (a->kind == BAND_ANSWER_BUSY) {
            if (a->reason != BAND_EAGAIN && a->reason != BAND_ETIMEDOUT)
                return fail(m, "busy with reason %d", a->reason);
        } else {
            EXPECT_EQ(m, "reason of over_quota/shed", BAND_EAGAIN, a->reason);
        }
        if (a->retry_after <= 0)
            return fail(m, "%s without a retry_after", band_answer_name(a->kind));
        break;
    }
    return 0;
}

/* ---------------------------------------------------------------- setup and teardown */

static int release_slot(struct door_model *m, int i)
{
    uint64_t n = m->slot[i].p.count;
    if (m->slot[i].p.sem == NULL)
        return 0;
    EXPECT_EQ(m, "band_permit_release()", 0, band_permit_release(&m->slot[i].p));
    m->slot[i].door = 0;
    m_grant(m, n);
    return 0;
}

/* Give everything back and destroy the bounds; the model must end balanced. */
static int teardown(struct door_model *m)
{
    if (m->door == NULL)
        return 0;
    if (m->sem_kind != SEM_NONE) {
        for (int i = 0; i < WAITERS; i++) {
            struct dm_waiter *x = &m->wt[i];
            if (x->state == W_PENDING) {
                EXPECT_EQ(m, "band_waiter_cancel()", 0, band_waiter_cancel(&x->w, BAND_ECANCELED));
                int head = m->q[0] == i;
                int pos = 0;
                while (m->q[pos] != i)
                    pos++;
                for (int k = pos + 1; k < m->qlen; k++)
                    m->q[k - 1] = m->q[k];
                m->qlen--;
                x->state = W_IDLE;
                if (head) {
                    uint64_t pool = m->head_got;
                    m->head_got = 0;
                    m_grant(m, pool);
                }
            }
        }
        for (int i = 0; i < SLOTS; i++)
            if (release_slot(m, i) != 0)
                return -1;
        for (int i = 0; i < WAITERS; i++) {
            struct dm_waiter *x = &m->wt[i];
            if (x->state == W_GRANTED) {
                EXPECT_EQ(m, "band_sem_release()", 0, band_sem_release(m->sem, x->want));
                x->state = W_IDLE;
                m_grant(m, x->want);
            }
        }
        if (check_all(m) != 0)
            return -1;
        EXPECT_EQ(m, "units available after teardown", m->cap, band_sem_available(m->sem));
    } else if (check_all(m) != 0) {
        return -1;
    }
    EXPECT_EQ(m, "band_front_door_destroy()", 0, band_front_door_destroy(m->door));
    m->door = NULL;
    if (m->backlog != NULL)
        EXPECT_EQ(m, "band_chan_destroy()", 0, band_chan_destroy(m->backlog));
    m->backlog = NULL;
    if (m->rate != NULL)
        EXPECT_EQ(m, "band_rate_destroy()", 0, band_rate_destroy(m->rate));
    m->rate = NULL;
    if (m->budget != NULL)
        EXPECT_EQ(m, "band_budget_destroy()", 0, band_budget_destroy(m->budget));
    else if (m->sem != NULL)
        EXPECT_EQ(m, "band_sem_destroy()", 0, band_sem_destroy(m->sem));
    m->budget = NULL;
    m->sem = NULL;
    return 0;
}

/*
 * Build a door from the next five bytes:
 *   b0: semaphore kind b0 % 3 (none, plain, budget), capacity 1 + (b0 / 3) % 8;
 *   b1: bit 0 a rate budget, tokens per period 1 + ((b1 >> 1) & 3) % 3, burst
 *       1 + ((b1 >> 3) & 7) % 6;
 *   b2: the period, 1 + 4 * b2 ns;
 *   b3: backlog capacity b3 % 4 (0: none; only with a semaphore), classes
 *       1 + ((b3 >> 2) & 3) % 3, bit 4 a wait of 1 us;
 *   b4: headroom[0] 1 when (b4 & 3) == 3, then each class adds ((b4 >> 2c) & 3) % 3; when
 *       both top bits are set the last class's headroom is BAND_MAX_UNITS + (b4 & 1)
 *       (one above the maximum is refused by band_front_door_create(); the door is then made with
 *       the maximum).
 */
static int setup(struct door_model *m)
{
    uint8_t b0 = next(m), b1 = next(m), b2 = next(m), b3 = next(m), b4 = next(m);
    m->sem_kind = b0 % 3;
    m->cap = 1 + (uint64_t)(b0 / 3) % 8;
    m->has_rate = b1 & 1;
    m->tokens = 1 + (uint64_t)((b1 >> 1) & 3) % 3;
    m->burst = 1 + (uint64_t)((b1 >> 3) & 7) % 6;
    m->period = 1 + (int64_t)b2 * 4;
    m->qcap = m->sem_kind != SEM_NONE ? (uint64_t)(b3 % 4) : 0;
    m->classes = 1 + ((b3 >> 2) & 3) % 3;
    m->wait = (b3 >> 4) & 1 ? BAND_USEC : 0;
    memset(m->headroom, 0, sizeof(m->headroom));
    if (m->sem_kind != SEM_NONE) {
        m->headroom[0] = (b4 & 3) == 3 ? 1 : 0;
        for (int c = 1; c < m->classes; c++)
            m->headroom[c] = m->headroom[c - 1] + (uint64_t)((b4 >> (2 * c)) & 3) % 3;
        if ((b4 & 0xc0) == 0xc0 && m->classes > 1) /* now and then: more than any holds */
            m->headroom[m->classes - 1] = BAND_MAX_UNITS + (b4 & 1);
    }

    m->now = 1000;
    m->avail = m->cap;
    m->head_got = 0;
    m->sem_closed = 0;
    m->qlen = 0;
    for (int i = 0; i < WAITERS; i++)
        m->wt[i].state = W_IDLE;
    m->level = (int64_t)m->burst * m->period;
    m->rate_closed = 0;
    m->outside_tokens = 0;
    m->jlen = 0;
    m->chan_closed = 0;
    m->door_closed = 0;
    m->in_flight = m->peak = 0;
    m->measured = 0;
    memset(m->answers, 0, sizeof(m->answers));
    memset(m->admitted, 0, sizeof(m->admitted));
    memset(m->refused, 0, sizeof(m->refused));
    m->accept_units = m->admitted_units = m->done_units = 0;
    for (int i = 0; i < SLOTS; i++) {
        band_permit z = BAND_PERMIT_INIT;
        m->slot[i].p = z;
        m->slot[i].door = 0;
    }

    if (m->sem_kind == SEM_PLAIN) {
        EXPECT_EQ(m, "band_sem_create()", 0, band_sem_create(&m->sem, m->cap, NULL));
    } else if (m->sem_kind == SEM_BUDGET) {
        EXPECT_EQ(m, "band_budget_create()", 0, band_budget_create(&m->budget, m->cap, NULL));
        m->sem = band_budget_sem(m->budget);
    }
    if (m->has_rate) {
        band_rate_opts ro;
        memset(&ro, 0, sizeof(ro));
        ro.clock = fake_clock;
        ro.clock_ctx = m;
        EXPECT_EQ(m, "band_rate_create()", 0,
                  band_rate_create(&m->rate, m->tokens, m->period, m->burst, &ro));
    }
    if (m->qcap > 0)
        EXPECT_EQ(m, "band_chan_create()", 0,
                  band_chan_create(&m->backlog, sizeof(uint64_t), m->qcap, 0));
    band_front_door_opts o;
    memset(&o, 0, sizeof(o));
    o.sem = m->sem;
    o.rate = m->rate;
    o.backlog = m->backlog;
    o.classes = m->classes;
    memcpy(o.headroom, m->headroom, sizeof(o.headroom));
    o.wait = m->wait;
    int rc = band_front_door_create(&m->door, &o);
    int want = 0;
    for (int c = 0; c < m->classes; c++)
        if (m->headroom[c] > BAND_MAX_UNITS)
            want = BAND_EINVAL;
    EXPECT_EQ(m, "band_front_door_create()", want, rc);
    if (rc != 0) {
        /* Refused as documented: a door whose last class keeps reasonable headroom. */
        o.headroom[m->classes - 1] = m->headroom[m->classes - 1] = BAND_MAX_UNITS;
        EXPECT_EQ(m, "band_front_door_create()", 0, band_front_door_create(&m->door, &o));
    }
    m->counts.doors++;
    if (m->trace)
        fprintf(stderr,
                "door: sem %d cap %llu rate %d (%llu per %lld ns, burst %llu) backlog %llu "
                "classes %d wait %lld headroom %llu %llu %llu\n",
                m->sem_kind, (unsigned long long)m->cap, m->has_rate, (unsigned long long)m->tokens,
                (long long)m->period, (unsigned long long)m->burst, (unsigned long long)m->qcap,
                m->classes, (long long)m->wait, (unsigned long long)m->headroom[0],
                (unsigned long long)m->headroom[1], (unsigned long long)m->headroom[2]);
    return check_all(m);
}

/* ---------------------------------------------------------------- operations */

/* An amount for a request, from one byte: < 160 -> 1 + b % min(capacity, burst); < 232 ->
 * 1 + b % (capacity + 3); < 236 -> 0; < 244 -> burst + 1 + (b & 1); < 250 ->
 * BAND_MAX_UNITS - 1 + (b & 3); else UINT64_MAX - (b & 7). */
static uint64_t amount(struct door_model *m)
{
    uint8_t b = next(m);
    uint64_t fits = m->has_rate && m->burst < m->cap ? m->burst : m->cap;
    if (b < 160)
        return 1 + (uint64_t)b % fits;
    if (b < 232)
        return 1 + (uint64_t)b % (m->cap + 3);
    if (b < 236)
        return 0;
    if (b < 244)
        return m->burst + 1 + (b & 1);
    if (b < 250)
        return BAND_MAX_UNITS - 1 + (uint64_t)(b & 3);
    return UINT64_MAX - (uint64_t)(b & 7);
}

static int op_admit(struct door_model *m)
{
    uint8_t cb = next(m);
    uint64_t n = amount(m);
    uint8_t f = next(m);
    int cls = (cb & 15) == 15 ? m->classes : cb % m->classes;
    int job = f & 1;
    band_time deadline = (f & 2) ? BAND_FOREVER : 0;
    int si = (f >> 2) % SLOTS;
    band_permit *p = m->sem_kind != SEM_NONE ? &m->slot[si].p : NULL;
    int invalid = n == 0 || cls >= m->classes || (p != NULL && p->sem != NULL);

    band_front_door_stats before;
    EXPECT_EQ(m, "band_front_door_get_stats()", 0, band_front_door_get_stats(m->door, &before));
    uint64_t jobno = m->next_job;
    band_permit keep = p != NULL ? *p : (band_permit)BAND_PERMIT_INIT;
    band_answer a;
    a.kind = a.http_status = a.reason = 0x5a5a;
    a.retry_after = 0x5a5a5a;
    int rc = band_front_door_admit(m->door, cls, n, job ? &jobno : NULL, p, &a, deadline, NULL);
    if (m->trace)
        fprintf(stderr,
                "  admit cls %d n %llu job %d deadline %s slot %d -> rc %d %s reason %d "
                "retry %lld\n",
                cls, (unsigned long long)n, job, deadline ? "forever" : "past", si, rc,
                rc == 0 ? band_answer_name(a.kind) : "-", rc == 0 ? a.reason : 0,
                rc == 0 ? (long long)a.retry_after : 0LL);
    if (invalid) {
        m->counts.admit_einval++;
        EXPECT_EQ(m, "band_front_door_admit() of bad arguments", BAND_EINVAL, rc);
        if (a.kind != 0x5a5a || a.http_status != 0x5a5a || a.reason != 0x5a5a ||
            a.retry_after != 0x5a5a5a)
            return fail(m, "BAND_EINVAL wrote the answer");
        if (p != NULL && (p->sem != keep.sem || p->count != keep.count))
            return fail(m, "BAND_EINVAL changed the permit");
        return 0;
    }
    struct expect e;
    m_admit(m, cls, n, job, before.mean_hold, &e);
    EXPECT_EQ(m, "band_front_door_admit()", 0, rc);
    if (check_answer_shape(m, &a) != 0)
        return -1;
    if (a.kind != e.kind)
        return fail(m, "answer %s (reason %d), the model says %s (reason %d)",
                    band_answer_name(a.kind), a.reason, band_answer_name(e.kind), e.reason);
    EXPECT_EQ(m, "reason", e.reason, a.reason);
    EXPECT_EQ(m, "retry_after", e.retry, a.retry_after);
    if ((a.kind == BAND_ANSWER_BUSY || a.kind == BAND_ANSWER_SHED) && before.mean_hold > 0)
        m->counts.measured_busy++;
    m->answers[e.kind]++;
    m->counts.answers[e.kind]++;
    if (e.kind == BAND_ANSWER_ACCEPT)
        m->admitted[cls]++;
    else if (e.kind != BAND_ANSWER_LATER)
        m->refused[cls]++;
    if (p != NULL) {
        if (e.took) {
            if (p->sem != m->sem || p->count != n)
                return fail(m, "accepted, but the permit holds %llu of %s",
                            (unsigned long long)p->count, p->sem == m->sem ? "the semaphore" : "?");
            m->slot[si].door = 1;
        } else if (p->sem != NULL || p->count != 0) {
            return fail(m, "%s, but the permit holds %llu", band_answer_name(a.kind),
                        (unsigned long long)p->count);
        }
    }
    if (e.later) {
        m->jobs[m->jlen++] = jobno;
    }
    if (job)
        m->next_job++;
    return 0;
}

static int op_done(struct door_model *m)
{
    uint8_t b = next(m);
    int si = b % SLOTS;
    int mode = (b >> 3) % 8;
    band_time at = 0;
    if (mode == 5)
        at = 1; /* measures a hold of about the machine's uptime */
    else if (mode == 6)
        at = band_now() + 3600 * BAND_SEC;
    else if (mode == 7)
        at = -(band_time)(b & 3) - 1;
    int bad_at = at < 0 || mode == 6;
    if (m->sem_kind == SEM_NONE) {
        int rc = band_front_door_done(m->door, (b & 1) ? &m->slot[si].p : NULL, at);
        EXPECT_EQ(m, "band_front_door_done() without a semaphore", bad_at ? BAND_EINVAL : 0, rc);
        if (rc == 0) {
            m->counts.done_ok++;
            if (at > 0)
                m->measured = 1;
        } else {
            m->counts.done_einval++;
        }
        return 0;
    }
    band_permit *p = &m->slot[si].p;
    uint64_t n = p->count;
    int want = bad_at || p->sem == NULL || n > m->in_flight ? BAND_EINVAL : 0;
    int rc = band_front_door_done(m->door, p, at);
    if (m->trace)
        fprintf(stderr, "  done slot %d (%llu, door %d) at %lld -> %d\n", si, (unsigned long long)n,
                m->slot[si].door, (long long)at, rc);
    EXPECT_EQ(m, "band_front_door_done()", want, rc);
    if (rc != 0) {
        m->counts.done_einval++;
        EXPECT_EQ(m, "permit kept on a refusal", n, p->count);
        return 0;
    }
    m->counts.done_ok++;
    if (p->sem != NULL)
        return fail(m, "band_front_door_done() left the permit non-empty");
    m->in_flight -= n;
    m->done_units += n;
    m->slot[si].door = 0;
    if (at > 0)
        m->measured = 1;
    m_grant(m, n);
    return 0;
}

static int op_take(struct door_model *m)
{
    if (m->sem_kind == SEM_NONE)
        return 0;
    uint64_t n = amount(m);
    int si = next(m) % SLOTS;
    if (n == 0 || m->slot[si].p.sem != NULL)
        return 0;
    int want = m_try(m, n);
    int rc = band_permit_try_acquire(&m->slot[si].p, m->sem, n);
    EXPECT_EQ(m, "band_permit_try_acquire()", want, rc);
    if (rc == 0)
        m->slot[si].door = 0;
    return 0;
}

static int op_release(struct door_model *m)
{
    if (m->sem_kind == SEM_NONE)
        return 0;
    return release_slot(m, next(m) % SLOTS);
}

static int op_async(struct door_model *m)
{
    if (m->sem_kind == SEM_NONE)
        return 0;
    struct dm_waiter *x = &m->wt[next(m) % WAITERS];
    uint64_t n = 1 + (uint64_t)next(m) % (m->cap + 1);
    if (x->state != W_IDLE)
        return 0;
    int want;
    if (m->sem_kind == SEM_BUDGET && n > m->cap)
        want = BAND_E2BIG;
    else if (m->sem_closed)
        want = BAND_ECLOSED;
    else if (m->qlen == 0 && m->avail >= n)
        want = 0;
    else
        want = BAND_PENDING;
    band_waiter_init(&x->w, wake_fn, NULL);
    int rc = band_sem_acquire_async(m->sem, n, &x->w);
    EXPECT_EQ(m, "band_sem_acquire_async()", want, rc);
    x->want = n;
    if (want == 0) {
        m->avail -= n;
        x->state = W_GRANTED;
    } else if (want == BAND_PENDING) {
        if (m->qlen == 0) {
            m->head_got = m->avail; /* the new head holds what is there */
            m->avail = 0;
        }
        m->q[m->qlen++] = x->idx;
        x->state = W_PENDING;
    }
    return 0;
}

static int op_cancel(struct door_model *m)
{
    if (m->sem_kind == SEM_NONE)
        return 0;
    int i = next(m) % WAITERS;
    struct dm_waiter *x = &m->wt[i];
    if (x->state != W_PENDING)
        return 0;
    EXPECT_EQ(m, "band_waiter_cancel()", 0, band_waiter_cancel(&x->w, BAND_ECANCELED));
    int pos = 0;
    while (m->q[pos] != i)
        pos++;
    for (int k = pos + 1; k < m->qlen; k++)
        m->q[k - 1] = m->q[k];
    m->qlen--;
    x->state = W_IDLE;
    if (pos == 0) {
        uint64_t pool = m->head_got;
        m->head_got = 0;
        m_grant(m, pool);
    }
    return 0;
}

static int op_wrelease(struct door_model *m)
{
    if (m->sem_kind == SEM_NONE)
        return 0;
    struct dm_waiter *x = &m->wt[next(m) % WAITERS];
    if (x->state != W_GRANTED)
        return 0;
    EXPECT_EQ(m, "band_sem_release()", 0, band_sem_release(m->sem, x->want));
    x->state = W_IDLE;
    m_grant(m, x->want);
    return 0;
}

static int op_rate(struct door_model *m)
{
    uint64_t n = 1 + (uint64_t)next(m) % (m->burst + 1);
    if (!m->has_rate)
        return 0;
    band_time want_retry = 0, retry = -1;
    int want = m_rate_try(m, n, &want_retry);
    int rc = band_rate_try_acquire(m->rate, n, &retry);
    EXPECT_EQ(m, "band_rate_try_acquire()", want, rc);
    EXPECT_EQ(m, "band_rate_try_acquire() retry_after", want_retry, retry);
    if (rc == 0)
        m->outside_tokens += n;
    return 0;
}

static int op_tick(struct door_model *m)
{
    band_time dt = ((band_time)next(m) * m->period) / 32;
    m->now += dt;
    m_advance(m, dt);
    return 0;
}

static int op_recv(struct door_model *m)
{
    if (m->qcap == 0)
        return 0;
    uint64_t got = 0;
    int want = m->jlen > 0 ? 0 : m->chan_closed ? BAND_ECLOSED : BAND_EAGAIN;
    int rc = band_chan_try_recv(m->backlog, &got, NULL);
    EXPECT_EQ(m, "band_chan_try_recv()", want, rc);
    if (rc == 0) {
        EXPECT_EQ(m, "job from the backlog", m->jobs[0], got);
        for (int i = 1; i < m->jlen; i++)
            m->jobs[i - 1] = m->jobs[i];
        m->jlen--;
    }
    return 0;
}

static int op_close(struct door_model *m)
{
    switch (next(m) % 4) {
    case 0:
        EXPECT_EQ(m, "band_front_door_close()", 0, band_front_door_close(m->door));
        m->door_closed = 1;
        break;
    case 1:
        if (m->sem_kind == SEM_NONE)
            break;
        EXPECT_EQ(m, "band_sem_close()", 0, band_sem_close(m->sem));
        if (!m->sem_closed) {
            m->sem_closed = 1;
            for (int i = 0; i < m->qlen; i++) {
                m->wt[m->q[i]].state = W_IDLE;
                expect_wake(m, m->q[i], BAND_ECLOSED);
            }
            m->qlen = 0;
            m->avail += m->head_got;
            m->head_got = 0;
        }
        break;
    case 2:
        if (!m->has_rate)
            break;
        EXPECT_EQ(m, "band_rate_close()", 0, band_rate_close(m->rate));
        m->rate_closed = 1;
        break;
    default:
        if (m->qcap == 0)
            break;
        EXPECT_EQ(m, "band_chan_close()", 0, band_chan_close(m->backlog));
        m->chan_closed = 1;
        break;
    }
    return 0;
}

static int op_recreate(struct door_model *m)
{
    if (teardown(m) != 0)
        return -1;
    return setup(m);
}

static const char *const op_names[DM_OP_COUNT] = {"admit", "done",   "take",     "release",
                                                  "async", "cancel", "wrelease", "rate",
                                                  "tick",  "recv",   "close",    "recreate"};

/*
 * The op byte, then its arguments (fuzz/make_door_corpus.py writes seeds in this format):
 *   [0, 80) and [236, 256) admit: class byte (low nibble 15: a class out of range, else
 *        byte % classes), amount byte (see amount()), flags (bit 0 a job, bit 1 deadline
 *        BAND_FOREVER else already past, bits 2-4 the permit slot);
 *   [80, 120) done: slot = b % 8, admitted_at by (b >> 3) % 8: 5 -> 1 (measures), 6 -> an
 *        hour ahead, 7 -> negative, else 0;
 *   [120, 134) take: amount byte, slot byte;   [134, 148) release: slot byte;
 *   [148, 158) async: waiter byte, units byte; [158, 165) cancel: waiter byte;
 *   [165, 172) wrelease: waiter byte;          [172, 184) rate: tokens byte;
 *   [184, 218) tick: byte * period / 32 ns;    [218, 230) recv;
 *   230 close: byte % 4 (door, semaphore, rate, backlog); [231, 236) recreate: five bytes.
 */
static int decode(uint8_t b)
{
    if (b < 80 || b >= 236)
        return DM_OP_ADMIT;
    if (b < 120)
        return DM_OP_DONE;
    if (b < 134)
        return DM_OP_TAKE;
    if (b < 148)
        return DM_OP_RELEASE;
    if (b < 158)
        return DM_OP_ASYNC;
    if (b < 165)
        return DM_OP_CANCEL;
    if (b < 172)
        return DM_OP_WRELEASE;
    if (b < 184)
        return DM_OP_RATE;
    if (b < 218)
        return DM_OP_TICK;
    if (b < 230)
        return DM_OP_RECV;
    if (b < 231)
        return DM_OP_CLOSE;
    return DM_OP_RECREATE;
}

static int run_one(struct door_model *m)
{
    int op = decode(next(m));
    m->opno++;
    m->opname = op_names[op];
    m->counts.ops[op]++;
    int rc = 0;
    switch (op) {
    case DM_OP_ADMIT:
        rc = op_admit(m);
        break;
    case DM_OP_DONE:
        rc = op_done(m);
        break;
    case DM_OP_TAKE:
        rc = op_take(m);
        break;
    case DM_OP_RELEASE:
        rc = op_release(m);
        break;
    case DM_OP_ASYNC:
        rc = op_async(m);
        break;
    case DM_OP_CANCEL:
        rc = op_cancel(m);
        break;
    case DM_OP_WRELEASE:
        rc = op_wrelease(m);
        break;
    case DM_OP_RATE:
        rc = op_rate(m);
        break;
    case DM_OP_TICK:
        rc = op_tick(m);
        break;
    case DM_OP_RECV:
        rc = op_recv(m);
        break;
    case DM_OP_CLOSE:
        rc = op_close(m);
        break;
    default:
        return op_recreate(m);
    }
    if (rc != 0)
        return -1;
    return check_all(m);
}

static int run(struct door_model *m, uint64_t max_ops)
{
    m->opname = NULL;
    if (setup(m) != 0)
        return -1;
    for (uint64_t i = 0; i < max_ops && !model_input_done(&m->in); i++)
        if (run_one(m) != 0)
            return -1;
    m->opname = "final teardown";
    return teardown(m);
}

/* ---------------------------------------------------------------- public */

struct door_model *door_model_new(void)
{
    struct door_model *m = calloc(1, sizeof(*m));
    if (m == NULL)
        return NULL;
    for (int i = 0; i < WAITERS; i++) {
        m->wt[i].m = m;
        m->wt[i].idx = i;
    }
    const char *t = getenv("DOOR_MODEL_TRACE");
    m->trace = t != NULL && *t != '\0' && *t != '0';
    return m;
}

void door_model_free(struct door_model *m)
{
    if (m == NULL)
        return;
    if (m->door != NULL) { /* after a mismatch: free what can be freed, never assert */
        for (int i = 0; i < WAITERS; i++)
            if (m->wt[i].state == W_PENDING)
                (void)band_waiter_cancel(&m->wt[i].w, BAND_ECANCELED);
        (void)band_front_door_destroy(m->door);
        if (m->backlog != NULL)
            (void)band_chan_destroy(m->backlog);
        if (m->rate != NULL)
            (void)band_rate_destroy(m->rate);
        if (m->budget != NULL)
            (void)band_budget_destroy(m->budget);
        else if (m->sem != NULL)
            (void)band_sem_destroy(m->sem);
    }
    free(m);
}

int door_model_run_bytes(struct door_model *m, const uint8_t *data, size_t len)
{
    model_input_bytes(&m->in, data, len);
    return run(m, UINT64_MAX);
}

int door_model_run_seed(struct door_model *m, uint64_t seed, uint64_t ops)
{
    model_input_seed(&m->in, seed);
    return run(m, ops);
}

const char *door_model_error(const struct door_model *m)
{
    return m->failed ? m->err : "";
}

const struct door_model_counts *door_model_counts(const struct door_model *m)
{
    return &m->counts;
}
