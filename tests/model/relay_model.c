/* SPDX-License-Identifier: MIT */
/*
 * relay_model.c - the band_relay interpreter and its reference model (relay_model.h).
 */
#include "relay_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "band/relay.h"
#include "model_input.h"

#define RM_WAITERS 6

enum rm_state { RM_IDLE, RM_PARKED, RM_DONE };

struct rm_waiter {
    band_waiter w;
    struct relay_model *m;
    int id;
    enum rm_state state; /* the model's view */
    int status;          /* the model's status once ended */
    int wakes;           /* wakes seen since the last park */
    int wake_status;     /* the status the last wake saw */
    int repark;          /* the wake parks the waiter again */
};

struct relay_model {
    band_relay *r;
    band_relay *other; /* a second relay, for completes aimed at the wrong one */
    struct rm_waiter wt[RM_WAITERS];
    int hook_calls, hook_reason, hook_id; /* the last cancel hook call */
    struct model_input in;
    struct relay_model_counts counts;
    char err[160];
    int failed;
};

static void rm_fail(struct relay_model *m, const char *what, int got, int want)
{
    if (m->failed)
        return;
    m->failed = 1;
    snprintf(m->err, sizeof(m->err), "%s: got %d, expected %d", what, got, want);
}

static void rm_expect(struct relay_model *m, const char *what, int got, int want)
{
    if (got != want)
        rm_fail(m, what, got, want);
}

static void rm_wake(band_waiter *w)
{
    struct rm_waiter *x = (struct rm_waiter *)w;
    x->wakes++;
    x->wake_status = band_waiter_status(w);
    x->m->counts.wakes++;
    if (x->repark) {
        x->repark = 0;
        x->m->counts.reparks++;
        /* Parking again from the wake: the relay's lock is not held here. */
        rm_expect(x->m, "park from the wake", band_relay_park(x->m->r, w), 0);
    }
}

static void rm_hook(band_relay *r, band_waiter *w, int reason, void *data)
{
    struct relay_model *m = data;
    if (r != m->r)
        rm_fail(m, "hook relay", 0, 1);
    m->hook_calls++;
    m->hook_reason = reason;
    m->hook_id = ((struct rm_waiter *)w)->id;
    m->counts.hooks++;
}

static int rm_create(struct relay_model *m)
{
    m->r = NULL;
    if (band_relay_create(&m->r, rm_hook, m) != 0)
        return -1;
    m->counts.relays++;
    for (int i = 0; i < RM_WAITERS; i++) {
        struct rm_waiter *x = &m->wt[i];
        memset(x, 0, sizeof(*x));
        band_waiter_init(&x->w, rm_wake, NULL);
        x->m = m;
        x->id = i;
        x->state = RM_IDLE;
    }
    return 0;
}

struct relay_model *relay_model_new(void)
{
    struct relay_model *m = calloc(1, sizeof(*m));
    if (m == NULL)
        return NULL;
    if (band_relay_create(&m->other, NULL, NULL) != 0 || rm_create(m) != 0) {
        band_relay_destroy(m->other);
        free(m);
        return NULL;
    }
    return m;
}

/* End every parked waiter so the relay can be freed. */
static void rm_drain(struct relay_model *m)
{
    for (int i = 0; i < RM_WAITERS; i++) {
        m->wt[i].repark = 0;
        if (m->wt[i].state == RM_PARKED)
            (void)band_relay_complete(m->r, &m->wt[i].w, 0);
    }
}

void relay_model_free(struct relay_model *m)
{
    if (m == NULL)
        return;
    rm_drain(m);
    (void)band_relay_destroy(m->r);
    (void)band_relay_destroy(m->other);
    free(m);
}

static size_t rm_parked(const struct relay_model *m)
{
    size_t n = 0;
    for (int i = 0; i < RM_WAITERS; i++)
        n += m->wt[i].state == RM_PARKED;
    return n;
}

/* Every waiter's real state against the model's. */
static void rm_check_all(struct relay_model *m)
{
    for (int i = 0; i < RM_WAITERS && !m->failed; i++) {
        struct rm_waiter *x = &m->wt[i];
        rm_expect(m, "is_pending", band_waiter_is_pending(&x->w), x->state == RM_PARKED);
        if (x->state == RM_PARKED)
            rm_expect(m, "status while parked", band_waiter_status(&x->w), BAND_PENDING);
        else if (x->state == RM_DONE || x->status != 0)
            rm_expect(m, "status", band_waiter_status(&x->w), x->status);
        if (x->wakes > 1)
            rm_fail(m, "wakes per park", x->wakes, 1);
    }
    rm_expect(m, "count", (int)band_relay_count(m->r), (int)rm_parked(m));
}

static const int rm_statuses[] = {0, BAND_ECLOSED, BAND_ETIMEDOUT, BAND_ESTALE, 1};
static const int rm_reasons[] = {BAND_ECANCELED, BAND_ETIMEDOUT, BAND_EAGAIN, 0};

static void rm_step(struct relay_model *m)
{
    uint8_t op = model_input_byte(&m->in) % RM_OP_COUNT;
    uint8_t arg = model_input_byte(&m->in);
    struct rm_waiter *x = &m->wt[arg % RM_WAITERS];
    m->counts.ops[op]++;
    switch ((enum relay_model_op)op) {
    case RM_OP_PARK: {
        int want = x->state == RM_PARKED ? BAND_EINVAL : 0;
        int rc = band_relay_park(m->r, &x->w);
        rm_expect(m, "park", rc, want);
        if (rc == 0) {
            x->state = RM_PARKED;
            x->wakes = 0;
            x->repark = (arg >> 4) % 4 == 0;
        }
        if (want == BAND_EINVAL)
            m->counts.einval++;
        break;
    }
    case RM_OP_COMPLETE: {
        int status = rm_statuses[(arg >> 3) % 5];
        int wrong = (arg >> 6) == 3; /* aimed at the other relay */
        int want;
        if (status > 0)
            want = BAND_EINVAL;
        else if (x->state != RM_PARKED || wrong)
            want = BAND_EALREADY;
        else
            want = 0;
        int repark = x->repark;
        int rc = band_relay_complete(wrong ? m->other : m->r, &x->w, status);
        rm_expect(m, "complete", rc, want);
        if (rc == BAND_EALREADY)
            m->counts.ealready++;
        else if (rc == BAND_EINVAL)
            m->counts.einval++;
        if (want == 0) {
            rm_expect(m, "wakes after complete", x->wakes, 1);
            rm_expect(m, "wake status", x->wake_status, status);
            if (repark) {
                x->state = RM_PARKED; /* the wake parked it again */
                x->wakes = 0;
            } else {
                x->state = RM_DONE;
                x->status = status;
            }
        }
        break;
    }
    case RM_OP_CANCEL: {
        int reason = rm_reasons[(arg >> 3) % 4];
        int want;
        if (reason != BAND_ECANCELED && reason != BAND_ETIMEDOUT)
            want = BAND_EINVAL;
        else if (x->state == RM_PARKED)
            want = 0;
        else if (x->state == RM_DONE)
            want = BAND_EALREADY;
        else
            want = BAND_EINVAL;
        int hooks = m->hook_calls;
        int rc = band_waiter_cancel(&x->w, reason);
        rm_expect(m, "cancel", rc, want);
        if (want == 0) {
            rm_expect(m, "hook calls", m->hook_calls, hooks + 1);
            rm_expect(m, "hook reason", m->hook_reason, reason);
            rm_expect(m, "hook waiter", m->hook_id, x->id);
            rm_expect(m, "no wake after cancel", x->wakes, 0);
            x->state = RM_IDLE;
            x->status = reason;
            x->repark = 0;
        } else {
            rm_expect(m, "no hook", m->hook_calls, hooks);
            if (rc == BAND_EALREADY)
                m->counts.ealready++;
            else
                m->counts.einval++;
        }
        break;
    }
    case RM_OP_COUNT_Q:
        rm_expect(m, "count", (int)band_relay_count(m->r), (int)rm_parked(m));
        break;
    case RM_OP_DESTROY: {
        size_t parked = rm_parked(m);
        int rc = band_relay_destroy(m->r);
        rm_expect(m, "destroy", rc, parked != 0 ? BAND_EBUSY : 0);
        if (rc == BAND_EBUSY) {
            m->counts.ebusy++;
        } else if (rc == 0) {
            m->r = NULL;
            if (rm_create(m) != 0)
                rm_fail(m, "recreate", -1, 0);
        }
        break;
    }
    case RM_OP_MISUSE: {
        band_waiter bare;
        band_waiter_init(&bare, NULL, NULL);
        rm_expect(m, "park without wake", band_relay_park(m->r, &bare), BAND_EINVAL);
        rm_expect(m, "park NULL", band_relay_park(m->r, NULL), BAND_EINVAL);
        rm_expect(m, "park on NULL", band_relay_park(NULL, &x->w), BAND_EINVAL);
        rm_expect(m, "complete NULL", band_relay_complete(m->r, NULL, 0), BAND_EINVAL);
        rm_expect(m, "complete on NULL", band_relay_complete(NULL, &x->w, 0), BAND_EINVAL);
        rm_expect(m, "count NULL", (int)band_relay_count(NULL), 0);
        m->counts.einval += 5;
        break;
    }
    case RM_OP_COUNT:
        break;
    }
    rm_check_all(m);
}

static int rm_run(struct relay_model *m, uint64_t ops, band_time until)
{
    m->failed = 0;
    m->err[0] = '\0';
    for (uint64_t i = 0; i < ops && !m->failed; i++) {
        if (model_input_done(&m->in))
            break;
        if ((i & 1023) == 0 && band_now() >= until)
            break;
        rm_step(m);
    }
    return m->failed ? -1 : 0;
}

int relay_model_run_bytes(struct relay_model *m, const uint8_t *data, size_t len)
{
    model_input_bytes(&m->in, data, len);
    return rm_run(m, UINT64_MAX, BAND_FOREVER);
}

int relay_model_run_seed(struct relay_model *m, uint64_t seed, uint64_t ops, band_time until)
{
    model_input_seed(&m->in, seed);
    return rm_run(m, ops, until);
}

const char *relay_model_error(const struct relay_model *m)
{
    return m->err;
}

const struct relay_model_counts *relay_model_counts(const struct relay_model *m)
{
    return &m->counts;
}
