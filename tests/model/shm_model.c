/* SPDX-License-Identifier: MIT */
/*
 * shm_model.c - the two-process interpreter and reference model of shm_model.h.
 *
 * Process 0 is the caller; process 1 is a child forked for each run that opens the same
 * named segment and executes the commands it reads from a pipe (struct cmd), answering
 * each with a struct resp. Both processes run the commands through exec_cmd(), so an
 * operation means the same thing whichever process runs it. The wakes of both processes'
 * async waiters are recorded in a MAP_SHARED block, so the caller sees the child's too.
 *
 * The model: one bound (capacity, available, debt, closed), the units each process holds,
 * a FIFO of queued requests, and each waiter's expected wake count and status. Grants
 * follow the segment's rule: strict FIFO, the head blocks everyone behind it, never a
 * partial grant. Counters are modelled too.
 */
#define _GNU_SOURCE

#include "shm_model.h"

#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "band/band.h"
#include "band/shm.h"
#include "model_input.h"

#define NW        4 /* async waiters per process */
#define MAXSLOTS  6 /* the segment's waiter slots: fewer than 2 * NW, so EBUSY happens */
#define QMAX      (2 * NW + 1)
#define MAXU      BAND_MAX_UNITS
#define WAKE_WAIT (3 * BAND_SEC)

/* ---------------------------------------------------------------------------------- */
/* The executor, in either process                                                     */

enum {
    X_OPEN,
    X_DESTROY,
    X_TRY,
    X_ACQ_PAST,
    X_ACQ_SHORT,
    X_ASYNC,
    X_RELEASE,
    X_REDUCE,
    X_GROW,
    X_DRAIN,
    X_CANCEL,
    X_CLOSE,
    X_HELD,
    X_EXIT
};

struct cmd {
    int op;
    int idx;
    int reason;
    uint64_t a;
    char name[64];
};

struct resp {
    int rc;
    uint64_t val;
};

struct wrec {
    atomic_int wakes;
    atomic_int status;
};

struct shared {
    struct wrec w[2][NW];
};

struct proc {
    band_shm *s;
    band_waiter w[NW];
    struct wrec *rec; /* this process's row of the shared block */
};

static void model_wake(band_waiter *w)
{
    struct wrec *r = w->data;
    atomic_store(&r->status, band_waiter_status(w));
    atomic_fetch_add(&r->wakes, 1);
}

static struct resp exec_cmd(struct proc *pr, const struct cmd *c)
{
    struct resp r = {0, 0};
    switch (c->op) {
    case X_OPEN:
        pr->s = NULL;
        r.rc = band_shm_open(&pr->s, c->name, NULL);
        break;
    case X_DESTROY:
        r.rc = band_shm_destroy(pr->s);
        if (r.rc == 0)
            pr->s = NULL;
        break;
    case X_TRY:
        r.rc = band_shm_try_acquire(pr->s, 0, c->a);
        break;
    case X_ACQ_PAST:
        r.rc = band_shm_acquire(pr->s, 0, c->a, band_now() - 1, NULL);
        break;
    case X_ACQ_SHORT:
        r.rc = band_shm_acquire(pr->s, 0, c->a, band_deadline_after(BAND_MSEC), NULL);
        break;
    case X_ASYNC:
        /* The wake of this waiter's last operation ran on the doorbell thread; reading
         * what it wrote orders it before the new initialisation (the parent waited for it,
         * but across processes no thread tool can see that). */
        (void)atomic_load(&pr->rec[c->idx].wakes);
        if (!band_waiter_is_pending(&pr->w[c->idx]) &&
            band_waiter_status(&pr->w[c->idx]) != BAND_PENDING)
            band_waiter_init(&pr->w[c->idx], model_wake, &pr->rec[c->idx]);
        r.rc = band_shm_acquire_async(pr->s, 0, c->a, &pr->w[c->idx]);
        break;
    case X_RELEASE:
        r.rc = band_shm_release(pr->s, 0, c->a);
        break;
    case X_REDUCE:
        r.rc = band_shm_reduce(pr->s, 0, c->a);
        break;
    case X_GROW:
        r.rc = band_shm_grow(pr->s, 0, c->a);
        break;
    case X_DRAIN:
        r.val = band_shm_drain(pr->s, 0, c->a);
        break;
    case X_CANCEL:
        (void)atomic_load(&pr->rec[c->idx].wakes); /* as for X_ASYNC */
        r.rc = band_waiter_cancel(&pr->w[c->idx], c->reason);
        break;
    case X_CLOSE:
        r.rc = band_shm_close(pr->s);
        break;
    case X_HELD:
        r.val = band_shm_held(pr->s, 0);
        break;
    default:
        r.rc = -1;
        break;
    }
    return r;
}

static int read_full(int fd, void *buf, size_t n)
{
    char *p = buf;
    while (n > 0) {
        ssize_t k = read(fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

static int write_full(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

static void child_main(int in, int out, struct shared *sh)
{
    (void)prctl(PR_SET_PDEATHSIG, SIGKILL);
    /* Die of its own faults: a test framework's handlers would longjmp into the parent's
     * code. */
    static const int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
        signal(sigs[i], SIG_DFL);
    struct proc pr;
    memset(&pr, 0, sizeof(pr));
    pr.rec = sh->w[1];
    struct cmd c;
    while (read_full(in, &c, sizeof(c)) == 0 && c.op != X_EXIT) {
        struct resp r = exec_cmd(&pr, &c);
        if (write_full(out, &r, sizeof(r)) != 0)
            break;
    }
    _exit(0);
}

/* ---------------------------------------------------------------------------------- */
/* The model                                                                           */

struct mwaiter {
    int pending;  /* queued in the model */
    int woken;    /* ended with a wake since its last submission */
    int expected; /* wakes expected in total for this waiter */
    int status;   /* the status of its last expected wake */
    uint64_t n;
};

struct qent {
    int p, i; /* i < 0: a blocking request (never left queued) */
    uint64_t n;
};

struct shm_model {
    struct model_input in;
    struct shared *sh;
    struct proc self;
    pid_t child, pid[2];
    int to_child, from_child;
    char name[64];
    unsigned serial;
    /* the model */
    uint64_t cap, avail, debt, held[2];
    int closed;
    struct qent q[QMAX];
    int nq;
    struct mwaiter mw[2][NW];
    uint64_t queued, grants, timeouts, cancels, closed_fails, try_refusals, too_big;
    /* the run */
    uint64_t op_no;
    int last_actor; /* who ran the operation whose grants are being counted */
    int failed;
    char err[512];
    struct shm_model_counts counts;
};

static int fail(struct shm_model *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(struct shm_model *m, const char *fmt, ...)
{
    if (m->failed)
        return -1;
    m->failed = 1;
    int k = snprintf(m->err, sizeof(m->err), "op #%" PRIu64 ": ", m->op_no);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->err + k, sizeof(m->err) - (size_t)k, fmt, ap);
    va_end(ap);
    return -1;
}

static int trace(void)
{
    static int t = -1;
    if (t < 0) {
        const char *v = getenv("SHM_MODEL_TRACE");
        t = v != NULL && *v == '1';
    }
    return t;
}

static struct resp run_on(struct shm_model *m, int p, struct cmd c)
{
    if (p == 0)
        return exec_cmd(&m->self, &c);
    struct resp r = {-9999, 0};
    if (write_full(m->to_child, &c, sizeof(c)) != 0 || read_full(m->from_child, &r, sizeof(r)) != 0)
        fail(m, "the child process is gone");
    return r;
}

static struct resp run1(struct shm_model *m, int p, int op, uint64_t a)
{
    struct cmd c;
    memset(&c, 0, sizeof(c));
    c.op = op;
    c.a = a;
    return run_on(m, p, c);
}

static void expect_wake(struct shm_model *m, int p, int i, int status)
{
    struct mwaiter *w = &m->mw[p][i];
    w->pending = 0;
    w->woken = 1;
    w->expected++;
    w->status = status;
    m->counts.wakes++;
    if (status == 0) {
        m->counts.grants++;
        if (p != m->last_actor)
            m->counts.cross++;
    } else if (status == BAND_ECLOSED)
        m->counts.closed++;
    else if (status == BAND_E2BIG)
        m->counts.e2big_wakes++;
}

static void q_remove(struct shm_model *m, int k)
{
    memmove(&m->q[k], &m->q[k + 1], (size_t)(m->nq - k - 1) * sizeof(m->q[0]));
    m->nq--;
}

static void grant_pass(struct shm_model *m)
{
    if (m->closed)
        return;
    while (m->nq > 0 && m->q[0].n <= m->avail) {
        struct qent e = m->q[0];
        m->avail -= e.n;
        m->held[e.p] += e.n;
        m->grants++;
        q_remove(m, 0);
        expect_wake(m, e.p, e.i, 0);
    }
}

static void give_back(struct shm_model *m, int p, uint64_t n)
{
    uint64_t repay = m->debt < n ? m->debt : n;
    m->held[p] -= n;
    m->debt -= repay;
    m->avail += n - repay;
}

/* The immediate part every acquisition shares: 0 (granted), 1 (must wait) or a code. */
static int model_try(struct shm_model *m, int p, uint64_t n)
{
    if (m->closed)
        return BAND_ECLOSED;
    if (n == 0)
        return 0;
    if (n > m->cap) {
        m->too_big++;
        return BAND_E2BIG;
    }
    if (m->held[p] + n > MAXU)
        return BAND_EOVERFLOW;
    if (m->nq > 0 || n > m->avail)
        return 1;
    m->avail -= n;
    m->held[p] += n;
    return 0;
}

/* An amount: mostly small, sometimes at the edges. */
static uint64_t amount(struct shm_model *m)
{
    uint8_t v = model_input_byte(&m->in);
    if (v < 200)
        return v % 12;
    switch (v % 8) {
    case 0:
        return MAXU;
    case 1:
        return MAXU + 1;
    case 2:
        return UINT64_MAX;
    case 3:
        return m->cap;
    case 4:
        return m->cap + 1;
    case 5:
        return m->avail;
    case 6:
        return MAXU - m->cap;
    default:
        return (uint64_t)model_input_byte(&m->in) * 3;
    }
}

/* Wait (bounded) until every waiter of both processes has seen the wakes the model
 * expects, then compare their counts and statuses. */
static int check_wakes(struct shm_model *m)
{
    band_time end = band_now() + WAKE_WAIT;
    for (;;) {
        int behind = 0;
        for (int p = 0; p < 2; p++)
            for (int i = 0; i < NW; i++)
                behind |= atomic_load(&m->sh->w[p][i].wakes) < m->mw[p][i].expected;
        if (!behind || band_now() > end)
            break;
        sched_yield();
    }
    for (int p = 0; p < 2; p++)
        for (int i = 0; i < NW; i++) {
            const struct mwaiter *w = &m->mw[p][i];
            int got = atomic_load(&m->sh->w[p][i].wakes);
            if (got != w->expected)
                return fail(m, "process %d waiter %d: %d wakes, expected %d", p, i, got,
                            w->expected);
            if (w->expected > 0 && w->woken) {
                int st = atomic_load(&m->sh->w[p][i].status);
                if (st != w->status)
                    return fail(m, "process %d waiter %d woken with %s, expected %s", p, i,
                                band_err_name(st), band_err_name(w->status));
            }
        }
    return 0;
}

static int check_state(struct shm_model *m)
{
    band_shm_stats st;
    if (band_shm_get_stats(m->self.s, &st) != 0)
        return fail(m, "band_shm_get_stats failed");
    const band_shm_bound_stats *b = &st.bounds[0];
    const struct {
        const char *what;
        uint64_t got, want;
    } f[] = {
        {"capacity", b->capacity, m->cap},
        {"available", b->available, m->avail},
        {"debt", b->debt, m->debt},
        {"in_use", b->in_use, m->held[0] + m->held[1]},
        {"waiters", b->waiters, (uint64_t)m->nq},
        {"queued", b->queued, m->queued},
        {"grants", b->grants, m->grants},
        {"timeouts", b->timeouts, m->timeouts},
        {"cancels", b->cancels, m->cancels},
        {"closed_fails", b->closed_fails, m->closed_fails},
        {"try_refusals", b->try_refusals, m->try_refusals},
        {"too_big", b->too_big, m->too_big},
        {"closed", (uint64_t)st.closed, (uint64_t)m->closed},
        {"handles", st.handles, 2},
        {"segment waiters", st.waiters, (uint64_t)m->nq},
    };
    for (size_t k = 0; k < sizeof(f) / sizeof(f[0]); k++)
        if (f[k].got != f[k].want)
            return fail(m, "stats %s: %" PRIu64 ", expected %" PRIu64, f[k].what, f[k].got,
                        f[k].want);
    uint64_t wu = 0;
    for (int k = 0; k < m->nq; k++)
        wu += m->q[k].n;
    if (b->waiting_units != wu)
        return fail(m, "stats waiting_units: %" PRIu64 ", expected %" PRIu64, b->waiting_units, wu);
    band_shm_waiter_info wi[QMAX];
    size_t n = 0;
    if (band_shm_list_waiters(m->self.s, wi, QMAX, &n) != 0 || n != (size_t)m->nq)
        return fail(m, "list_waiters: %zu, expected %d", n, m->nq);
    for (int k = 0; k < m->nq; k++) {
        if (wi[k].pid != m->pid[m->q[k].p] || wi[k].want[0] != m->q[k].n || wi[k].async != 1)
            return fail(m,
                        "queue position %d: pid %d want %" PRIu64 " async %d, expected pid %d "
                        "want %" PRIu64,
                        k, (int)wi[k].pid, wi[k].want[0], wi[k].async, (int)m->pid[m->q[k].p],
                        m->q[k].n);
        if (k > 0 && wi[k - 1].seq >= wi[k].seq)
            return fail(m, "queue position %d: seq not increasing", k);
    }
    band_shm_holder h[2];
    if (band_shm_list_holders(m->self.s, h, 2, &n) != 0 || n != 2)
        return fail(m, "list_holders: %zu records, expected 2", n);
    for (int k = 0; k < 2; k++) {
        int p = h[k].pid == m->pid[0] ? 0 : h[k].pid == m->pid[1] ? 1 : -1;
        if (p < 0 || h[k].alive != 1)
            return fail(m, "holder %d: pid %d alive %d", k, (int)h[k].pid, h[k].alive);
        if (h[k].held[0] != m->held[p])
            return fail(m, "process %d holds %" PRIu64 ", expected %" PRIu64, p, h[k].held[0],
                        m->held[p]);
    }
    for (int p = 0; p < 2; p++) {
        struct resp r = run1(m, p, X_HELD, 0);
        if (r.val != m->held[p])
            return fail(m, "band_shm_held in process %d: %" PRIu64 ", expected %" PRIu64, p, r.val,
                        m->held[p]);
    }
    if (m->debt != 0)
        m->counts.debt_ops++;
    return 0;
}

/* ---------------------------------------------------------------------------------- */
/* Segments and the child                                                              */

static int segment_up(struct shm_model *m, uint64_t cap)
{
    snprintf(m->name, sizeof(m->name), "/band_model_shm_%d_%u", (int)getpid(), m->serial++);
    (void)band_shm_unlink(m->name);
    band_shm_bound b = {"model", cap, BAND_SHM_UNITS};
    band_shm_opts o = {.max_handles = 4, .max_waiters = MAXSLOTS};
    int rc = band_shm_create(&m->self.s, m->name, &b, 1, &o);
    if (rc != 0)
        return fail(m, "band_shm_create: %s", band_err_name(rc));
    struct cmd c;
    memset(&c, 0, sizeof(c));
    c.op = X_OPEN;
    snprintf(c.name, sizeof(c.name), "%s", m->name);
    struct resp r = run_on(m, 1, c);
    if (r.rc != 0)
        return fail(m, "band_shm_open in the child: %s", band_err_name(r.rc));
    m->cap = cap;
    m->avail = cap;
    m->debt = 0;
    m->held[0] = m->held[1] = 0;
    m->closed = 0;
    m->nq = 0;
    /* Waiters keep their state: a woken one stays ended (band_waiter_cancel() says
     * BAND_EALREADY) until it is submitted again. */
    for (int p = 0; p < 2; p++)
        for (int i = 0; i < NW; i++)
            m->mw[p][i].pending = 0;
    m->queued = m->grants = m->timeouts = m->cancels = m->closed_fails = m->try_refusals =
        m->too_big = 0;
    m->counts.segments++;
    return 0;
}

/* Close, collect the wakes, destroy both handles and remove the name. */
static int segment_down(struct shm_model *m)
{
    if (m->self.s == NULL)
        return 0;
    m->last_actor = 0;
    if (band_shm_close(m->self.s) != 0)
        fail(m, "band_shm_close failed");
    if (!m->closed) {
        m->closed = 1;
        for (int k = 0; k < m->nq; k++) {
            m->closed_fails++;
            expect_wake(m, m->q[k].p, m->q[k].i, BAND_ECLOSED);
        }
        m->nq = 0;
    }
    int rc = check_wakes(m);
    if (rc == 0)
        rc = check_state(m);
    struct resp r = run1(m, 1, X_DESTROY, 0);
    if (r.rc != 0)
        fail(m, "child destroy: %s", band_err_name(r.rc));
    int d = band_shm_destroy(m->self.s);
    if (d != 0)
        fail(m, "destroy: %s", band_err_name(d));
    m->self.s = NULL;
    (void)band_shm_unlink(m->name);
    return m->failed ? -1 : rc;
}

static int child_up(struct shm_model *m)
{
    int a[2], b[2];
    if (pipe(a) != 0)
        return fail(m, "pipe");
    if (pipe(b) != 0) {
        close(a[0]);
        close(a[1]);
        return fail(m, "pipe");
    }
    fflush(NULL);
    pid_t p = fork();
    if (p < 0)
        return fail(m, "fork");
    if (p == 0) {
        close(a[1]);
        close(b[0]);
        child_main(a[0], b[1], m->sh);
    }
    close(a[0]);
    close(b[1]);
    m->child = p;
    m->pid[0] = getpid();
    m->pid[1] = p;
    m->to_child = a[1];
    m->from_child = b[0];
    return 0;
}

static void child_down(struct shm_model *m)
{
    if (m->child <= 0)
        return;
    struct cmd c;
    memset(&c, 0, sizeof(c));
    c.op = X_EXIT;
    (void)write_full(m->to_child, &c, sizeof(c));
    close(m->to_child);
    close(m->from_child);
    int st;
    while (waitpid(m->child, &st, 0) < 0 && errno == EINTR)
        ;
    m->child = 0;
}

/* ---------------------------------------------------------------------------------- */
/* Operations                                                                          */

static const char *const op_names[SHM_OP_COUNT] = {
    "try",   "acquire_past", "acquire_short", "async", "release_held", "release_any",  "reduce",
    "drain", "cancel",       "stats",         "close", "recreate",     "destroy_busy", "grow"};

/* Weights out of 128 (close and recreate rare). */
static int pick_op(uint8_t v)
{
    static const uint8_t w[SHM_OP_COUNT] = {18, 8, 2, 22, 18, 6, 8, 6, 14, 6, 2, 0, 3, 15};
    int x = v % 128;
    for (int k = 0; k < SHM_OP_COUNT; k++) {
        if (x < w[k])
            return k;
        x -= w[k];
    }
    return SHM_OP_STATS;
}

static uint64_t initial_cap(struct shm_model *m)
{
    uint8_t v = model_input_byte(&m->in);
    switch (v % 8) {
    case 0:
        return 0;
    case 1:
        return MAXU;
    case 2:
        return MAXU - 3;
    default:
        return 1 + model_input_byte(&m->in) % 16;
    }
}

static int expect_rc(struct shm_model *m, const char *what, int p, int got, int want)
{
    if (got == BAND_EOVERFLOW)
        m->counts.overflows++;
    if (got == BAND_EBUSY)
        m->counts.busy++;
    if (got != want)
        return fail(m, "%s in process %d: %s, expected %s", what, p, band_err_name(got),
                    band_err_name(want));
    return 0;
}

static int free_slots(const struct shm_model *m)
{
    return MAXSLOTS - m->nq;
}

static int step(struct shm_model *m)
{
    uint8_t ob = model_input_byte(&m->in);
    int p = ob >> 7;
    int op = pick_op((uint8_t)(ob & 0x7f) + model_input_byte(&m->in));
    m->last_actor = p;
    if (m->closed && op != SHM_OP_RELEASE_HELD && op != SHM_OP_DRAIN && op != SHM_OP_STATS &&
        op != SHM_OP_CANCEL && model_input_byte(&m->in) % 4 == 0)
        op = SHM_OP_RECREATE;
    m->counts.ops[op]++;
    if (p == 1)
        m->counts.remote++;
    if (trace())
        fprintf(stderr,
                "op #%" PRIu64 " p%d %s: cap %" PRIu64 " avail %" PRIu64 " debt %" PRIu64
                " held %" PRIu64 "/%" PRIu64 " nq %d closed %d\n",
                m->op_no, p, op_names[op], m->cap, m->avail, m->debt, m->held[0], m->held[1], m->nq,
                m->closed);
    struct resp r;
    switch (op) {
    case SHM_OP_TRY:
    case SHM_OP_ACQUIRE_PAST:
    case SHM_OP_ACQUIRE_SHORT: {
        uint64_t n = amount(m);
        int want;
        if (n > MAXU) {
            want = BAND_EINVAL;
        } else {
            want = model_try(m, p, n);
            if (want == 1 && op == SHM_OP_TRY) {
                m->try_refusals++;
                want = BAND_EAGAIN;
            } else if (want == 1 && op == SHM_OP_ACQUIRE_PAST) {
                want = BAND_ETIMEDOUT;
            } else if (want == 1) {
                if (free_slots(m) == 0) {
                    want = BAND_EBUSY;
                } else {
                    m->queued++;
                    m->timeouts++;
                    want = BAND_ETIMEDOUT;
                }
            }
        }
        r = run1(m, p,
                 op == SHM_OP_TRY            ? X_TRY
                 : op == SHM_OP_ACQUIRE_PAST ? X_ACQ_PAST
                                             : X_ACQ_SHORT,
                 n);
        return expect_rc(m, op_names[op], p, r.rc, want);
    }
    case SHM_OP_ASYNC: {
        int i = model_input_byte(&m->in) % NW;
        uint64_t n = amount(m);
        struct mwaiter *w = &m->mw[p][i];
        int want;
        if (w->pending) {
            want = BAND_EINVAL;
        } else if (n > MAXU) {
            want = BAND_EINVAL;
            w->woken = 0; /* the executor initialised it again: ended, not DONE */
        } else {
            want = model_try(m, p, n);
            if (want == 1) {
                if (free_slots(m) == 0) {
                    want = BAND_EBUSY;
                } else {
                    m->queued++;
                    m->q[m->nq++] = (struct qent){p, i, n};
                    w->pending = 1;
                    w->n = n;
                    want = BAND_PENDING;
                    m->counts.pending++;
                }
            }
            w->woken = 0; /* pending, or ended at once (no wake) */
        }
        struct cmd c;
        memset(&c, 0, sizeof(c));
        c.op = X_ASYNC;
        c.idx = i;
        c.a = n;
        r = run_on(m, p, c);
        if (trace())
            fprintf(stderr, "  async waiter %d n %" PRIu64 ": %s, expected %s\n", i, n,
                    band_err_name(r.rc), band_err_name(want));
        return expect_rc(m, "acquire_async", p, r.rc, want);
    }
    case SHM_OP_RELEASE_HELD:
    case SHM_OP_RELEASE_ANY: {
        uint64_t n;
        if (op == SHM_OP_RELEASE_HELD) {
            uint8_t v = model_input_byte(&m->in);
            n = m->held[p] == 0 ? 0 : v >= 128 ? m->held[p] : v % (m->held[p] + 1);
        } else {
            n = amount(m);
        }
        int want = 0;
        if (n > m->held[p]) {
            want = BAND_EOVERFLOW;
        } else if (n != 0) {
            give_back(m, p, n);
            grant_pass(m);
        }
        r = run1(m, p, X_RELEASE, n);
        return expect_rc(m, "release", p, r.rc, want);
    }
    case SHM_OP_REDUCE: {
        uint64_t n = amount(m);
        int want = 0;
        uint64_t take = m->avail < n ? m->avail : n;
        if (n > m->cap) {
            want = BAND_EINVAL;
        } else if (m->debt + (n - take) > MAXU) {
            want = BAND_EOVERFLOW;
        } else if (n != 0) {
            m->cap -= n;
            m->avail -= take;
            m->debt += n - take;
            for (int k = 0; k < m->nq;) {
                if (m->q[k].n > m->cap) {
                    struct qent e = m->q[k];
                    m->too_big++;
                    q_remove(m, k);
                    expect_wake(m, e.p, e.i, BAND_E2BIG);
                } else {
                    k++;
                }
            }
            grant_pass(m);
        }
        r = run1(m, p, X_REDUCE, n);
        return expect_rc(m, "reduce", p, r.rc, want);
    }
    case SHM_OP_GROW: {
        uint64_t n = amount(m);
        int want = 0;
        if (n > MAXU || m->cap + n > MAXU) {
            want = BAND_EOVERFLOW;
        } else if (n != 0) {
            uint64_t repay = m->debt < n ? m->debt : n;
            m->cap += n;
            m->debt -= repay;
            m->avail += n - repay;
            grant_pass(m);
        }
        r = run1(m, p, X_GROW, n);
        return expect_rc(m, "grow", p, r.rc, want);
    }
    case SHM_OP_DRAIN: {
        uint64_t n = amount(m);
        uint64_t took = m->avail < n ? m->avail : n;
        if (took > MAXU - m->held[p])
            took = MAXU - m->held[p];
        m->avail -= took;
        m->held[p] += took;
        r = run1(m, p, X_DRAIN, n);
        if (r.val != took)
            return fail(m, "drain(%" PRIu64 ") in process %d: %" PRIu64 ", expected %" PRIu64, n, p,
                        r.val, took);
        return 0;
    }
    case SHM_OP_CANCEL: {
        int i = model_input_byte(&m->in) % NW;
        uint8_t rv = model_input_byte(&m->in);
        int reason = rv < 120 ? BAND_ECANCELED : rv < 240 ? BAND_ETIMEDOUT : BAND_EAGAIN;
        struct mwaiter *w = &m->mw[p][i];
        int want;
        if (reason == BAND_EAGAIN) {
            want = BAND_EINVAL;
        } else if (w->pending) {
            want = 0;
            for (int k = 0; k < m->nq; k++)
                if (m->q[k].p == p && m->q[k].i == i) {
                    q_remove(m, k);
                    break;
                }
            w->pending = 0;
            w->woken = 0;
            if (reason == BAND_ETIMEDOUT)
                m->timeouts++;
            else
                m->cancels++;
            m->counts.cancels_ok++;
            grant_pass(m); /* the head that held others back may be gone */
        } else if (w->woken) {
            want = BAND_EALREADY;
            m->counts.ealready++;
        } else {
            want = BAND_EINVAL;
        }
        struct cmd c;
        memset(&c, 0, sizeof(c));
        c.op = X_CANCEL;
        c.idx = i;
        c.reason = reason;
        r = run_on(m, p, c);
        if (trace())
            fprintf(stderr, "  cancel waiter %d (%s): %s, expected %s\n", i, band_err_name(reason),
                    band_err_name(r.rc), band_err_name(want));
        return expect_rc(m, "band_waiter_cancel", p, r.rc, want);
    }
    case SHM_OP_CLOSE:
        if (!m->closed) {
            m->closed = 1;
            for (int k = 0; k < m->nq; k++) {
                m->closed_fails++;
                expect_wake(m, m->q[k].p, m->q[k].i, BAND_ECLOSED);
            }
            m->nq = 0;
        }
        r = run1(m, p, X_CLOSE, 0);
        return expect_rc(m, "close", p, r.rc, 0);
    case SHM_OP_RECREATE: {
        if (segment_down(m) != 0)
            return -1;
        return segment_up(m, initial_cap(m));
    }
    case SHM_OP_DESTROY_BUSY: {
        int busy = 0;
        for (int i = 0; i < NW; i++)
            busy |= m->mw[p][i].pending;
        if (!busy)
            return 0;
        r = run1(m, p, X_DESTROY, 0);
        return expect_rc(m, "destroy with a pending async", p, r.rc, BAND_EBUSY);
    }
    case SHM_OP_STATS:
    default:
        return 0; /* every step checks the state */
    }
}

static int run(struct shm_model *m, uint64_t max_ops, band_time until)
{
    m->failed = 0;
    m->err[0] = 0;
    m->op_no = 0;
    memset(m->sh, 0, sizeof(*m->sh));
    memset(m->mw, 0, sizeof(m->mw));
    memset(&m->self.w, 0, sizeof(m->self.w));
    m->self.rec = m->sh->w[0];
    if (child_up(m) != 0)
        return -1;
    int rc = segment_up(m, initial_cap(m));
    while (rc == 0 && m->op_no < max_ops && !(m->in.use_rng == 0 && model_input_done(&m->in))) {
        if (until != 0 && (m->op_no & 15) == 0 && band_now() > until)
            break;
        rc = step(m);
        if (rc == 0)
            rc = check_wakes(m);
        if (rc == 0)
            rc = check_state(m);
        m->op_no++;
    }
    int d = segment_down(m);
    child_down(m);
    if (m->self.s != NULL) {
        (void)band_shm_destroy(m->self.s);
        m->self.s = NULL;
    }
    (void)band_shm_unlink(m->name);
    return rc != 0 || d != 0 || m->failed ? -1 : 0;
}

struct shm_model *shm_model_new(void)
{
    /* A child that died must be reported as a mismatch, not end this process. */
    signal(SIGPIPE, SIG_IGN);
    struct shm_model *m = calloc(1, sizeof(*m));
    if (m == NULL)
        return NULL;
    m->sh = mmap(NULL, sizeof(*m->sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m->sh == MAP_FAILED) {
        free(m);
        return NULL;
    }
    return m;
}

void shm_model_free(struct shm_model *m)
{
    if (m == NULL)
        return;
    munmap(m->sh, sizeof(*m->sh));
    free(m);
}

int shm_model_run_bytes(struct shm_model *m, const uint8_t *data, size_t len)
{
    model_input_bytes(&m->in, data, len);
    return run(m, 4096, 0);
}

int shm_model_run_seed(struct shm_model *m, uint64_t seed, uint64_t ops, band_time until)
{
    model_input_seed(&m->in, seed);
    return run(m, ops, until);
}

const char *shm_model_error(const struct shm_model *m)
{
    return m->err;
}

const struct shm_model_counts *shm_model_counts(const struct shm_model *m)
{
    return &m->counts;
}

uint64_t shm_model_ops_done(const struct shm_model *m)
{
    return m->op_no;
}
