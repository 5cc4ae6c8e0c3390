/* SPDX-License-Identifier: MIT */
/*
 * metrics.c - the registry and its Prometheus text rendering.
 *
 * Output is grouped by metric family (one HELP and one TYPE line each, then one series per
 * registered primitive), as the exposition format asks. Each primitive is read once per
 * write through its get_stats function, so the series of one primitive agree with each
 * other. Rendering goes through a bounded appender that keeps counting after the buffer is
 * full, which is how band_metrics_write() reports the size it needs.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "band/metrics.h"
#include "core/internal.h"

enum kind {
    K_SEM,
    K_BUDGET,
    K_CHAN,
    K_RATE,
    K_FRONT_DOOR,
    K_FAIR,
    K_ADMIT,
    K_CAP_TREE,
    K_LIMIT,
    K_EXEC,
    K_ONESHOT,
    K_WATCH,
    K_BROADCAST,
    K_GROUP,
    K_LATCH,
    K_HISTO
};

struct entry {
    enum kind kind;
    const void *obj;
    const band_histo *histo;
    char name[BAND_NAME_MAX];
    char family[BAND_NAME_MAX];
    char help[128];
    /* K_FAIR: the live keys listed (at most max_keys) */
    band_fair_key_stats *keys;
    size_t max_keys, nkeys;
    /* K_ADMIT: the budgets of the set */
    const band_sem *sems[BAND_ADMIT_MAX];
    size_t nsems;
    /* K_EXEC: queue and service times */
    band_histo_snapshot *snap;
    union {
        band_sem_stats sem;
        band_budget_stats budget;
        band_chan_stats chan;
        band_rate_stats rate;
        band_front_door_stats door;
        band_fair_stats fair;
        band_sem_stats admit[BAND_ADMIT_MAX];
        band_cap_tree_stats tree;
        band_limit_stats limit;
        band_exec_stats exec;
        band_oneshot_stats oneshot;
        band_watch_stats watch;
        band_broadcast_stats bcast;
        band_group_stats group;
        band_latch_stats latch;
    } st;
};

struct band_metrics {
    size_t n, max;
    struct entry *e;
};

int band_metrics_create(band_metrics **out, size_t max_entries)
{
    if (out == NULL || max_entries == 0 || max_entries > SIZE_MAX / sizeof(struct entry))
        return BAND_EINVAL;
    band_metrics *m = calloc(1, sizeof(*m));
    if (m == NULL)
        return BAND_ENOMEM;
    m->e = calloc(max_entries, sizeof(*m->e));
    if (m->e == NULL) {
        free(m);
        return BAND_ENOMEM;
    }
    m->max = max_entries;
    *out = m;
    return 0;
}

int band_metrics_destroy(band_metrics *m)
{
    if (m != NULL) {
        for (size_t i = 0; i < m->n; i++) {
            free(m->e[i].keys);
            free(m->e[i].snap);
        }
        free(m->e);
        free(m);
    }
    return 0;
}

static int valid_family(const char *f)
{
    size_t n = f != NULL ? strlen(f) : 0;
    if (n == 0 || n >= BAND_NAME_MAX - sizeof("_seconds"))
        return 0;
    for (size_t i = 0; i < n; i++) {
        char ch = f[i];
        int alpha = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_' || ch == ':';
        if (!alpha && !(i > 0 && ch >= '0' && ch <= '9'))
            return 0;
    }
    return 1;
}

static int add(band_metrics *m, enum kind kind, const char *name, const void *obj,
               const band_histo *h, struct entry **out)
{
    size_t len = name != NULL ? strlen(name) : 0;
    if (m == NULL || obj == NULL || len == 0 || len >= BAND_NAME_MAX)
        return BAND_EINVAL;
    if (m->n == m->max)
        return BAND_E2BIG;
    struct entry *e = &m->e[m->n++];
    memset(e, 0, sizeof(*e));
    e->kind = kind;
    e->obj = obj;
    e->histo = h;
    memcpy(e->name, name, len + 1);
    if (out != NULL)
        *out = e;
    return 0;
}

int band_metrics_add_sem(band_metrics *m, const char *name, const band_sem *s,
                         const band_histo *wait)
{
    return add(m, K_SEM, name, s, wait, NULL);
}

int band_metrics_add_budget(band_metrics *m, const char *name, const band_budget *b,
                            const band_histo *wait)
{
    return add(m, K_BUDGET, name, b, wait, NULL);
}

int band_metrics_add_chan(band_metrics *m, const char *name, const band_chan *c,
                          const band_histo *wait)
{
    return add(m, K_CHAN, name, c, wait, NULL);
}

int band_metrics_add_rate(band_metrics *m, const char *name, const band_rate *r)
{
    return add(m, K_RATE, name, r, NULL, NULL);
}

int band_metrics_add_front_door(band_metrics *m, const char *name, const band_front_door *d,
                                const band_histo *hold)
{
    return add(m, K_FRONT_DOOR, name, d, hold, NULL);
}

int band_metrics_add_fair(band_metrics *m, const char *name, const band_fair *f, size_t max_keys)
{
    if (max_keys > BAND_METRICS_MAX_KEYS)
        return BAND_EINVAL;
    band_fair_key_stats *keys = NULL;
    if (max_keys > 0 && m != NULL && f != NULL) {
        keys = calloc(max_keys, sizeof(*keys));
        if (keys == NULL)
            return BAND_ENOMEM;
    }
    struct entry *e = NULL;
    int rc = add(m, K_FAIR, name, f, NULL, &e);
    if (rc != 0) {
        free(keys);
        return rc;
    }
    e->keys = keys;
    e->max_keys = max_keys;
    return 0;
}

int band_metrics_add_admit(band_metrics *m, const char *name, const band_sem *const *sems, size_t n)
{
    if (sems == NULL || n == 0 || n > BAND_ADMIT_MAX)
        return BAND_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (sems[i] == NULL)
            return BAND_EINVAL;
    struct entry *e = NULL;
    int rc = add(m, K_ADMIT, name, sems, NULL, &e);
    if (rc != 0)
        return rc;
    for (size_t i = 0; i < n; i++)
        e->sems[i] = sems[i];
    e->nsems = n;
    e->obj = e->sems; /* the caller's array need not outlive the call */
    return 0;
}

int band_metrics_add_cap_tree(band_metrics *m, const char *name, const band_cap_tree *t)
{
    return add(m, K_CAP_TREE, name, t, NULL, NULL);
}

int band_metrics_add_limit(band_metrics *m, const char *name, const band_limit *l)
{
    return add(m, K_LIMIT, name, l, NULL, NULL);
}

int band_metrics_add_exec(band_metrics *m, const char *name, const band_exec *ex)
{
    band_histo_snapshot *snap = NULL;
    if (m != NULL && ex != NULL) {
        snap = calloc(2, sizeof(*snap));
        if (snap == NULL)
            return BAND_ENOMEM;
    }
    struct entry *e = NULL;
    int rc = add(m, K_EXEC, name, ex, NULL, &e);
    if (rc != 0) {
        free(snap);
        return rc;
    }
    e->snap = snap;
    return 0;
}

int band_metrics_add_oneshot(band_metrics *m, const char *name, const band_oneshot *o)
{
    return add(m, K_ONESHOT, name, o, NULL, NULL);
}

int band_metrics_add_watch(band_metrics *m, const char *name, const band_watch *w)
{
    return add(m, K_WATCH, name, w, NULL, NULL);
}

int band_metrics_add_broadcast(band_metrics *m, const char *name, const band_broadcast *b)
{
    return add(m, K_BROADCAST, name, b, NULL, NULL);
}

int band_metrics_add_group(band_metrics *m, const char *name, const band_group *g)
{
    return add(m, K_GROUP, name, g, NULL, NULL);
}

int band_metrics_add_latch(band_metrics *m, const char *name, const band_latch *l)
{
    return add(m, K_LATCH, name, l, NULL, NULL);
}

int band_metrics_add_histo(band_metrics *m, const char *family, const char *name, const char *help,
                           const band_histo *h)
{
    if (!valid_family(family))
        return BAND_EINVAL;
    struct entry *e = NULL;
    int rc = add(m, K_HISTO, name, h, h, &e);
    if (rc != 0)
        return rc;
    memcpy(e->family, family, strlen(family) + 1);
    if (help != NULL) {
        size_t n = strlen(help);
        n = n < sizeof(e->help) - 1 ? n : sizeof(e->help) - 1;
        memcpy(e->help, help, n);
        e->help[n] = '\0';
    }
    return 0;
}

/* ---------------------------------------------------------------- rendering */

struct out {
    char *buf;
    size_t cap, len; /* len keeps counting past cap */
};

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
static void
put(struct out *o, const char *fmt, ...)
{
    char *dst = NULL;
    size_t room = 0;
    if (o->len < o->cap) {
        dst = o->buf + o->len;
        room = o->cap - o->len;
    }
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(dst, room, fmt, ap); // NOLINT(clang-analyzer-valist.Uninitialized)
    va_end(ap);
    if (n > 0)
        o->len += (size_t)n;
}

/* The name label, escaped as the exposition format asks (\\, \", \n). */
static void put_label(struct out *o, const char *key, const char *v)
{
    put(o, "%s=\"", key);
    for (; *v != '\0'; v++) {
        if (*v == '\\' || *v == '"')
            put(o, "\\%c", *v);
        else if (*v == '\n')
            put(o, "\\n");
        else
            put(o, "%c", *v);
    }
    put(o, "\"");
}

/* HELP and TYPE of one family. The help text is escaped as the format asks of it (\\ and
 * \n; a quote stays as it is). */
static void family(struct out *o, const char *name, const char *type, const char *help)
{
    put(o, "# HELP %s ", name);
    for (; *help != '\0'; help++) {
        if (*help == '\\')
            put(o, "\\\\");
        else if (*help == '\n')
            put(o, "\\n");
        else
            put(o, "%c", *help);
    }
    put(o, "\n# TYPE %s %s\n", name, type);
}

/* The labels of one series: name="...", then the instance's label, then @extra. */
static void labels(struct out *o, const struct entry *e, const char *lkey, const char *lval,
                   const char *extra)
{
    put(o, "{");
    put_label(o, "name", e->name);
    if (lkey != NULL) {
        put(o, ",");
        put_label(o, lkey, lval);
    }
    if (extra != NULL)
        put(o, ",%s", extra);
    put(o, "}");
}

static void put_value(struct out *o, uint64_t v, int ns)
{
    if (ns)
        put(o, " %.9f\n", (double)v / 1e9);
    else
        put(o, " %llu\n", (unsigned long long)v);
}

/* ---------------------------------------------------------------- histograms */

/* Cumulative bucket bounds in ns, and their labels. */
static const uint64_t bounds_ns[] = {1000,     10000,     100000,     1000000,
                                     10000000, 100000000, 1000000000, 10000000000};
static const char *const bounds_le[] = {"1e-06", "1e-05", "0.0001", "0.001",
                                        "0.01",  "0.1",   "1",      "10"};

static void histo_series(struct out *o, const char *fam, const struct entry *e,
                         const band_histo_snapshot *s)
{
    uint64_t cum = 0;
    unsigned b = 0;
    for (size_t k = 0; k < sizeof(bounds_ns) / sizeof(bounds_ns[0]); k++) {
        while (b < BAND_HISTO_BUCKETS && band_histo_bucket_high(b) <= bounds_ns[k])
            cum += s->buckets[b++];
        char le[24];
        (void)snprintf(le, sizeof(le), "le=\"%s\"", bounds_le[k]);
        put(o, "%s_bucket", fam);
        labels(o, e, NULL, NULL, le);
        put_value(o, cum, 0);
    }
    put(o, "%s_bucket", fam);
    labels(o, e, NULL, NULL, "le=\"+Inf\"");
    put_value(o, s->count, 0);
    put(o, "%s_sum", fam);
    labels(o, e, NULL, NULL, NULL);
    put_value(o, s->sum, 1);
    put(o, "%s_count", fam);
    labels(o, e, NULL, NULL, NULL);
    put_value(o, s->count, 0);
}

/* A histogram family over every entry of @kind that has one: the histogram it was
 * registered with, or (@which >= 0) the snapshot the entry read. */
static void histo_family(struct out *o, const band_metrics *m, enum kind kind, int which,
                         const char *fam, const char *help)
{
    int any = 0;
    for (size_t i = 0; i < m->n; i++)
        any |= m->e[i].kind == kind && (which >= 0 || m->e[i].histo != NULL);
    if (!any)
        return;
    family(o, fam, "histogram", help);
    for (size_t i = 0; i < m->n; i++) {
        const struct entry *e = &m->e[i];
        if (e->kind != kind)
            continue;
        if (which >= 0) {
            histo_series(o, fam, e, &e->snap[which]);
        } else if (e->histo != NULL) {
            band_histo_snapshot s;
            if (band_histo_read(e->histo, &s) == 0)
                histo_series(o, fam, e, &s);
        }
    }
}

/* ---------------------------------------------------------------- tables of families */

/* One series of an instance: a value of @size bytes at @off in the instance's stats. Rows
 * with the same family follow each other (one per label value of @extra). */
struct row {
    const char *fam, *type, *help;
    const char *extra; /* a label pair after the instance's labels (reason="full"), or NULL */
    size_t off, size;
    int ns; /* nanoseconds, rendered in seconds */
};

#define ROWX(fam, type, help, extra, T, f, ns)                                                     \
    {                                                                                              \
        fam, type, help, extra, offsetof(T, f), sizeof(((T *)0)->f), ns                            \
    }
#define GAUGE(fam, help, T, f)     ROWX(fam, "gauge", help, NULL, T, f, 0)
#define GAUGE_S(fam, help, T, f)   ROWX(fam, "gauge", help, NULL, T, f, 1)
#define COUNTER(fam, help, T, f)   ROWX(fam, "counter", help, NULL, T, f, 0)
#define COUNTER_S(fam, help, T, f) ROWX(fam, "counter", help, NULL, T, f, 1)
#define BY(fam, help, label, T, f) ROWX(fam, "counter", help, label, T, f, 0)
#define NROWS(a)                   (sizeof(a) / sizeof((a)[0]))

static uint64_t row_value(const struct row *r, const void *st)
{
    const unsigned char *p = (const unsigned char *)st + r->off;
    if (r->size == sizeof(uint32_t)) {
        uint32_t v;
        memcpy(&v, p, sizeof(v));
        return v;
    }
    uint64_t v;
    memcpy(&v, p, sizeof(v));
    return (int64_t)v < 0 && r->ns ? 0 : v; /* a band_time is never negative here */
}

/* What a family's series are taken from: the entry's stats, or one part of them. */
enum view {
    V_MAIN,       /* the entry's stats */
    V_TREE,       /* the entry's stats, labelled parent="..." */
    V_FAIR_CLASS, /* one per class, class="c" */
    V_FAIR_KEY,   /* one per listed key, key="id", then key="evicted" (counters only) */
    V_ADMIT,      /* one per budget of the set, budget="..." */
    V_DOOR_CLASS  /* one per class, class="c" */
};

struct door_class {
    uint64_t admitted, refused;
};

struct inst {
    const void *st;
    const char *lkey; /* the instance's label, or NULL */
    char lval[BAND_NAME_MAX];
    int counters_only;
    union {
        band_fair_key_stats ev;
        struct door_class dc;
    } scratch;
};

/* Instance @i of @e in view @v: 1 with *@in filled, 0 when there is none. */
static int instance(const band_metrics *m, const struct entry *e, enum view v, size_t i,
                    struct inst *in)
{
    in->lkey = NULL;
    in->lval[0] = '\0';
    in->counters_only = 0;
    switch (v) {
    case V_MAIN:
        in->st = &e->st;
        return i == 0;
    case V_TREE: {
        if (i > 0)
            return 0;
        in->st = &e->st.tree;
        in->lkey = "parent";
        const band_cap_tree *p = band_cap_tree_parent(e->obj);
        for (size_t j = 0; p != NULL && j < m->n; j++)
            if (m->e[j].kind == K_CAP_TREE && m->e[j].obj == p) {
                memcpy(in->lval, m->e[j].name, sizeof(in->lval));
                break;
            }
        return 1;
    }
    case V_FAIR_CLASS:
        if (i >= e->st.fair.classes || i >= BAND_FAIR_MAX_CLASSES)
            return 0;
        in->st = &e->st.fair.cls[i];
        in->lkey = "class";
        (void)snprintf(in->lval, sizeof(in->lval), "%zu", i);
        return 1;
    case V_FAIR_KEY:
        in->lkey = "key";
        if (i < e->nkeys) {
            in->st = &e->keys[i];
            (void)snprintf(in->lval, sizeof(in->lval), "%llu", (unsigned long long)e->keys[i].key);
            return 1;
        }
        if (i > e->nkeys)
            return 0;
        memset(&in->scratch.ev, 0, sizeof(in->scratch.ev));
        in->scratch.ev.granted = e->st.fair.evicted_granted;
        in->scratch.ev.granted_units = e->st.fair.evicted_granted_units;
        in->scratch.ev.queued = e->st.fair.evicted_queued;
        in->scratch.ev.timeouts = e->st.fair.evicted_timeouts;
        in->scratch.ev.cancels = e->st.fair.evicted_cancels;
        in->scratch.ev.wait_ns_total = e->st.fair.evicted_wait_ns_total;
        in->st = &in->scratch.ev;
        memcpy(in->lval, "evicted", sizeof("evicted"));
        in->counters_only = 1;
        return 1;
    case V_ADMIT:
        if (i >= e->nsems)
            return 0;
        in->st = &e->st.admit[i];
        in->lkey = "budget";
        if (e->st.admit[i].name[0] != '\0')
            memcpy(in->lval, e->st.admit[i].name, sizeof(in->lval));
        else
            (void)snprintf(in->lval, sizeof(in->lval), "%zu", i);
        return 1;
    case V_DOOR_CLASS:
        if (i >= BAND_FRONT_DOOR_CLASSES)
            return 0;
        in->scratch.dc.admitted = e->st.door.admitted[i];
        in->scratch.dc.refused = e->st.door.refused[i];
        in->st = &in->scratch.dc;
        in->lkey = "class";
        (void)snprintf(in->lval, sizeof(in->lval), "%zu", i);
        return 1;
    }
    return 0;
}

/* Every family of @rows, over every entry of @kind, in view @v. */
static void families(struct out *o, const band_metrics *m, enum kind kind, enum view v,
                     const struct row *rows, size_t nrows)
{
    int any = 0;
    for (size_t i = 0; i < m->n && !any; i++)
        any = m->e[i].kind == kind;
    if (!any)
        return;
    struct inst in;
    for (size_t r = 0; r < nrows;) {
        size_t end = r + 1;
        while (end < nrows && strcmp(rows[end].fam, rows[r].fam) == 0)
            end++;
        int gauge = strcmp(rows[r].type, "gauge") == 0;
        family(o, rows[r].fam, rows[r].type, rows[r].help);
        for (size_t i = 0; i < m->n; i++) {
            const struct entry *e = &m->e[i];
            if (e->kind != kind)
                continue;
            for (size_t k = 0; instance(m, e, v, k, &in); k++) {
                if (gauge && in.counters_only)
                    continue;
                for (size_t x = r; x < end; x++) {
                    put(o, "%s", rows[x].fam);
                    labels(o, e, in.lkey, in.lval, rows[x].extra);
                    put_value(o, row_value(&rows[x], in.st), rows[x].ns);
                }
            }
        }
        r = end;
    }
}

/* Semaphores and budgets: the same fields under two prefixes. */
#define SEM_ROWS(P, T, WHAT)                                                                       \
    GAUGE(P "_capacity", "The capacity: what is free when nothing is held.", T, capacity),         \
        GAUGE(P "_available", WHAT " available now.", T, available),                               \
        GAUGE(P "_in_use", WHAT " held by callers.", T, in_use),                                   \
        GAUGE(P "_debt", WHAT " that releases must repay first.", T, debt),                        \
        GAUGE(P "_waiters", "Queued acquisitions.", T, waiters),                                   \
        GAUGE(P "_waiting_units", "Units the queued acquisitions asked for.", T, waiting_units),   \
        GAUGE(P "_closed", "1 once closed.", T, closed),                                           \
        COUNTER(P "_queued_total", "Acquisitions that had to queue.", T, queued),                  \
        COUNTER(P "_grants_total", "Queued acquisitions that were granted.", T, grants),           \
        COUNTER_S(P "_wait_seconds_total", "Time queued acquisitions waited, summed.", T,          \
                  wait_ns_total),                                                                  \
        BY(P "_refusals_total", "Acquisitions refused or ended, by reason.", "reason=\"full\"", T, \
           try_refusals),                                                                          \
        BY(P "_refusals_total", "", "reason=\"too_big\"", T, too_big),                             \
        BY(P "_refusals_total", "", "reason=\"timeout\"", T, timeouts),                            \
        BY(P "_refusals_total", "", "reason=\"cancelled\"", T, cancels),                           \
        BY(P "_refusals_total", "", "reason=\"closed\"", T, closed_fails),                         \
        BY(P "_refusals_total", "", "reason=\"deadline\"", T, refused_deadline)

static const struct row sem_rows[] = {SEM_ROWS("band_sem", band_sem_stats, "Permits")};
static const struct row budget_rows[] = {SEM_ROWS("band_budget", band_budget_stats, "Units")};

#define CH band_chan_stats
static const struct row chan_rows[] = {
    GAUGE("band_chan_len", "Elements queued.", CH, len),
    GAUGE("band_chan_bytes", "Declared bytes queued.", CH, bytes),
    GAUGE("band_chan_capacity", "Element capacity.", CH, capacity),
    GAUGE("band_chan_capacity_bytes", "Byte capacity (0: no byte bound).", CH, byte_capacity),
    GAUGE("band_chan_reserved", "Reservations held.", CH, reserved),
    GAUGE("band_chan_reserved_bytes", "Bytes of the reservations held.", CH, reserved_bytes),
    GAUGE("band_chan_waiting_senders", "Senders queued.", CH, waiting_senders),
    GAUGE("band_chan_waiting_receivers", "Receivers queued.", CH, waiting_receivers),
    GAUGE("band_chan_closed", "1 once closed.", CH, closed),
    COUNTER("band_chan_sent_total", "Elements accepted.", CH, sent),
    COUNTER("band_chan_received_total", "Elements received.", CH, received),
    COUNTER("band_chan_dropped_total", "Elements handed back by an overflow policy.", CH, dropped),
    COUNTER_S("band_chan_send_wait_seconds_total", "Time queued senders waited, summed.", CH,
              send_wait_ns),
    BY("band_chan_refusals_total", "Sends refused, by reason.", "reason=\"full\"", CH,
       refused_full),
    BY("band_chan_refusals_total", "", "reason=\"closed\"", CH, refused_closed),
    BY("band_chan_refusals_total", "", "reason=\"too_big\"", CH, refused_too_big),
    BY("band_chan_refusals_total", "", "reason=\"deadline\"", CH, refused_deadline),
};
#undef CH

#define RT band_rate_stats
static const struct row rate_rows[] = {
    GAUGE("band_rate_tokens", "Tokens added per period.", RT, tokens),
    GAUGE_S("band_rate_period_seconds", "The refill period.", RT, period),
    GAUGE("band_rate_burst", "The most tokens the bucket holds.", RT, burst),
    GAUGE("band_rate_available", "Whole tokens in the bucket.", RT, available),
    GAUGE("band_rate_closed", "1 once closed.", RT, closed),
    COUNTER("band_rate_granted_total", "Requests that took tokens.", RT, granted),
    COUNTER("band_rate_granted_tokens_total", "Tokens taken.", RT, granted_tokens),
    COUNTER("band_rate_delayed_total", "Bookings that waited for their slot.", RT, delayed),
    COUNTER("band_rate_cancelled_total", "Bookings given back before they were due.", RT,
            cancelled),
    BY("band_rate_refusals_total", "Requests refused, by reason.", "reason=\"rate\"", RT,
       refused_rate),
    BY("band_rate_refusals_total", "", "reason=\"deadline\"", RT, refused_deadline),
    BY("band_rate_refusals_total", "", "reason=\"too_big\"", RT, refused_too_big),
    BY("band_rate_refusals_total", "", "reason=\"closed\"", RT, refused_closed),
};
#undef RT

#define FD band_front_door_stats
static const struct row door_rows[] = {
    BY("band_front_door_answers_total", "Admission answers, by kind.", "answer=\"accept\"", FD,
       answers[BAND_ANSWER_ACCEPT]),
    BY("band_front_door_answers_total", "", "answer=\"later\"", FD, answers[BAND_ANSWER_LATER]),
    BY("band_front_door_answers_total", "", "answer=\"busy\"", FD, answers[BAND_ANSWER_BUSY]),
    BY("band_front_door_answers_total", "", "answer=\"over_quota\"", FD,
       answers[BAND_ANSWER_OVER_QUOTA]),
    BY("band_front_door_answers_total", "", "answer=\"shed\"", FD, answers[BAND_ANSWER_SHED]),
    BY("band_front_door_answers_total", "", "answer=\"too_big\"", FD, answers[BAND_ANSWER_TOO_BIG]),
    BY("band_front_door_answers_total", "", "answer=\"gone\"", FD, answers[BAND_ANSWER_GONE]),
    COUNTER("band_front_door_waited_total", "Admissions that had to wait for permits.", FD, waited),
    GAUGE_S("band_front_door_mean_hold_seconds", "The hold time estimate (0: none yet).", FD,
            mean_hold),
    GAUGE("band_front_door_closed", "1 once closed.", FD, closed),
};
#undef FD

static const struct row door_class_rows[] = {
    COUNTER("band_front_door_admitted_total", "Admissions accepted, by class (0: most urgent).",
            struct door_class, admitted),
    COUNTER("band_front_door_refused_total",
            "Admissions answered anything but accept or later, by class.", struct door_class,
            refused),
};

#define FS band_fair_stats
static const struct row fair_rows[] = {
    GAUGE("band_fair_capacity", "Units shared.", FS, capacity),
    GAUGE("band_fair_in_use", "Units held by all keys.", FS, in_use),
    GAUGE("band_fair_reserved", "The configured reservations, summed.", FS, reserved),
    GAUGE("band_fair_waiters", "Queued requests, all classes.", FS, waiters),
    GAUGE("band_fair_keys", "Live key states.", FS, keys),
    GAUGE("band_fair_keys_pinned", "Configured keys.", FS, keys_pinned),
    GAUGE("band_fair_max_keys", "The most key states the fair keeps.", FS, max_keys),
    GAUGE("band_fair_closed", "1 once closed.", FS, closed),
    COUNTER("band_fair_keys_created_total", "Key states created.", FS, keys_created),
    COUNTER("band_fair_keys_evicted_total", "Idle key states evicted.", FS, keys_evicted),
    BY("band_fair_refusals_total", "Requests refused, by reason.", "reason=\"full\"", FS,
       try_refusals),
    BY("band_fair_refusals_total", "", "reason=\"too_big\"", FS, too_big),
    BY("band_fair_refusals_total", "", "reason=\"closed\"", FS, closed_fails),
    BY("band_fair_refusals_total", "", "reason=\"key_table_full\"", FS, key_refusals),
};
#undef FS

#define FC band_fair_class_stats
static const struct row fair_class_rows[] = {
    GAUGE("band_fair_class_headroom", "Units the class leaves free for more urgent ones.", FC,
          headroom),
    GAUGE("band_fair_class_stalled", "1 while the key whose turn it is waits for capacity.", FC,
          stalled),
    GAUGE("band_fair_class_waiters", "Queued requests of the class.", FC, waiters),
    GAUGE("band_fair_class_waiting_units", "Units they ask for.", FC, waiting_units),
    COUNTER("band_fair_class_granted_total", "Requests granted.", FC, granted),
    COUNTER("band_fair_class_granted_units_total", "Units granted.", FC, granted_units),
    COUNTER("band_fair_class_queued_total", "Requests that had to queue.", FC, queued),
    COUNTER_S("band_fair_class_wait_seconds_total", "Time queued requests waited, summed.", FC,
              wait_ns_total),
    BY("band_fair_class_refusals_total", "Queued requests that ended without a grant, by reason.",
       "reason=\"timeout\"", FC, timeouts),
    BY("band_fair_class_refusals_total", "", "reason=\"cancelled\"", FC, cancels),
};
#undef FC

#define FK band_fair_key_stats
static const struct row fair_key_rows[] = {
    GAUGE("band_fair_key_weight", "The key's weight: its share of a contended class.", FK, weight),
    GAUGE("band_fair_key_cap", "The most units the key may hold.", FK, cap),
    GAUGE("band_fair_key_reserve", "Units reserved for the key.", FK, reserve),
    GAUGE("band_fair_key_pinned", "1 for a configured key.", FK, pinned),
    GAUGE("band_fair_key_held", "Units the key holds.", FK, held),
    GAUGE("band_fair_key_waiters", "Queued requests of the key.", FK, waiters),
    GAUGE("band_fair_key_waiting_units", "Units they ask for.", FK, waiting_units),
    COUNTER("band_fair_key_granted_total",
            "Requests granted (key=\"evicted\": of every evicted key state).", FK, granted),
    COUNTER("band_fair_key_granted_units_total", "Units granted.", FK, granted_units),
    COUNTER("band_fair_key_queued_total", "Requests that had to queue.", FK, queued),
    COUNTER_S("band_fair_key_wait_seconds_total", "Time queued requests waited, summed.", FK,
              wait_ns_total),
    BY("band_fair_key_refusals_total", "Queued requests that ended without a grant, by reason.",
       "reason=\"timeout\"", FK, timeouts),
    BY("band_fair_key_refusals_total", "", "reason=\"cancelled\"", FK, cancels),
};
#undef FK

#define SS band_sem_stats
static const struct row admit_rows[] = {
    GAUGE("band_admit_capacity", "Capacity of the budget (0 for a plain semaphore).", SS, capacity),
    GAUGE("band_admit_held", "Units held of the budget.", SS, in_use),
    GAUGE("band_admit_available", "Units of the budget available now.", SS, available),
    GAUGE("band_admit_waiters", "Requests queued at the budget.", SS, waiters),
    COUNTER("band_admit_queued_total", "Requests that had to queue at the budget.", SS, queued),
    COUNTER("band_admit_grants_total", "Queued requests granted by the budget.", SS, grants),
    BY("band_admit_refusals_total", "Requests the budget refused or ended, by reason.",
       "reason=\"full\"", SS, try_refusals),
    BY("band_admit_refusals_total", "", "reason=\"too_big\"", SS, too_big),
    BY("band_admit_refusals_total", "", "reason=\"timeout\"", SS, timeouts),
    BY("band_admit_refusals_total", "", "reason=\"cancelled\"", SS, cancels),
    BY("band_admit_refusals_total", "", "reason=\"closed\"", SS, closed_fails),
};
#undef SS

#define TS band_cap_tree_stats
static const struct row tree_rows[] = {
    GAUGE("band_cap_tree_capacity", "The node's cap.", TS, capacity),
    GAUGE("band_cap_tree_in_use", "Units held at the node (its subtree's).", TS, in_use),
    GAUGE("band_cap_tree_available", "Units free at the node.", TS, available),
    GAUGE("band_cap_tree_reserve", "The node's guaranteed reservation.", TS, reserve),
    GAUGE("band_cap_tree_children", "Child nodes.", TS, children),
    GAUGE("band_cap_tree_child_reserve", "The children's reservations, summed.", TS, child_reserve),
    GAUGE("band_cap_tree_waiters", "Requests queued at the node.", TS, waiters),
    GAUGE("band_cap_tree_waiting_units", "Units they ask for.", TS, waiting_units),
    GAUGE("band_cap_tree_guaranteed_waiting_units", "Units of queued guaranteed requests.", TS,
          guaranteed_waiting_units),
    COUNTER("band_cap_tree_queued_total", "Requests that had to queue at the node.", TS, queued),
    COUNTER("band_cap_tree_grants_total", "Queued requests granted at the node.", TS, grants),
    BY("band_cap_tree_refusals_total", "Requests refused or ended at the node, by reason.",
       "reason=\"full\"", TS, try_refusals),
    BY("band_cap_tree_refusals_total", "", "reason=\"too_big\"", TS, too_big),
    BY("band_cap_tree_refusals_total", "", "reason=\"timeout\"", TS, timeouts),
    BY("band_cap_tree_refusals_total", "", "reason=\"cancelled\"", TS, cancels),
    BY("band_cap_tree_refusals_total", "", "reason=\"closed\"", TS, closed_fails),
};
#undef TS

#define LS band_limit_stats
static const struct row limit_rows[] = {
    GAUGE("band_limit_current", "The current concurrency limit.", LS, limit),
    GAUGE("band_limit_min", "The lowest the limit may go.", LS, min),
    GAUGE("band_limit_max", "The highest the limit may go.", LS, max),
    GAUGE("band_limit_in_flight", "Permits counted in flight.", LS, inflight),
    GAUGE_S("band_limit_min_rtt_seconds", "Smallest round trip seen (0: none yet).", LS, min_rtt),
    GAUGE_S("band_limit_smoothed_rtt_seconds", "Smoothed round trip (0: none yet).", LS,
            smoothed_rtt),
    GAUGE_S("band_limit_window_rtt_seconds", "Mean round trip of the last window.", LS, window_rtt),
    GAUGE("band_limit_closed", "1 once closed.", LS, closed),
    COUNTER("band_limit_samples_total", "Samples recorded.", LS, samples),
    COUNTER("band_limit_drops_total", "Samples reported dropped.", LS, drops),
    COUNTER("band_limit_ignored_total", "Samples reported to be ignored.", LS, ignored),
    COUNTER("band_limit_windows_total", "Windows closed.", LS, windows),
    BY("band_limit_adjustments_total", "Adjustments of the limit, by direction.",
       "direction=\"increase\"", LS, increases),
    BY("band_limit_adjustments_total", "", "direction=\"decrease\"", LS, decreases),
};
#undef LS

#define XS band_exec_stats
static const struct row exec_rows[] = {
    GAUGE("band_exec_workers", "Worker threads started.", XS, workers),
    GAUGE("band_exec_capacity", "Queue capacity.", XS, capacity),
    GAUGE("band_exec_queued", "Jobs in the queue.", XS, queued),
    GAUGE("band_exec_waiting", "Submitters blocked for room.", XS, waiting),
    GAUGE("band_exec_running", "Jobs running.", XS, running),
    GAUGE("band_exec_closed", "1 once shut down.", XS, closed),
    COUNTER("band_exec_accepted_total", "Jobs accepted.", XS, accepted),
    COUNTER("band_exec_completed_total", "Jobs whose function returned.", XS, completed),
    COUNTER("band_exec_cancelled_total", "Jobs handed back cancelled.", XS, cancelled),
    COUNTER("band_exec_drained_total", "Jobs handed back by shutdown.", XS, drained),
    BY("band_exec_refusals_total", "Submissions refused, by reason.", "reason=\"full\"", XS,
       refused_full),
    BY("band_exec_refusals_total", "", "reason=\"closed\"", XS, refused_closed),
};
#undef XS

#define OS band_oneshot_stats
static const struct row oneshot_rows[] = {
    GAUGE("band_oneshot_sent", "1 once a value was sent.", OS, sent),
    GAUGE("band_oneshot_received", "1 once the value was delivered.", OS, received),
    GAUGE("band_oneshot_holds_value", "1 while a sent value waits.", OS, holds_value),
    GAUGE("band_oneshot_waiting", "1 while a receive is pending.", OS, waiting),
    GAUGE("band_oneshot_closed", "1 once closed.", OS, closed),
    COUNTER("band_oneshot_refused_total", "Sends refused.", OS, refused),
    COUNTER("band_oneshot_queued_total", "Receives that had to wait.", OS, queued),
    BY("band_oneshot_wait_refusals_total", "Queued receives that ended without a value.",
       "reason=\"timeout\"", OS, timeouts),
    BY("band_oneshot_wait_refusals_total", "", "reason=\"cancelled\"", OS, cancels),
};
#undef OS

#define WS band_watch_stats
static const struct row watch_rows[] = {
    GAUGE("band_watch_version", "The current version (accepted sends).", WS, version),
    GAUGE("band_watch_waiters", "Receivers waiting.", WS, waiters),
    GAUGE("band_watch_closed", "1 once closed.", WS, closed),
    COUNTER("band_watch_sends_total", "Sends accepted.", WS, sends),
    COUNTER("band_watch_refused_total", "Sends refused after close.", WS, refused),
    COUNTER("band_watch_delivered_total", "Changes delivered to receivers.", WS, delivered),
    COUNTER("band_watch_queued_total", "Waits that had to queue.", WS, queued),
    BY("band_watch_wait_refusals_total", "Queued waits that ended without a change, by reason.",
       "reason=\"timeout\"", WS, timeouts),
    BY("band_watch_wait_refusals_total", "", "reason=\"cancelled\"", WS, cancels),
    BY("band_watch_wait_refusals_total", "", "reason=\"closed\"", WS, closed_fails),
};
#undef WS

#define BS band_broadcast_stats
static const struct row bcast_rows[] = {
    GAUGE("band_broadcast_capacity", "Ring slots.", BS, capacity),
    GAUGE("band_broadcast_retained", "Messages in the ring.", BS, retained),
    GAUGE("band_broadcast_receivers", "Subscribed receivers.", BS, receivers),
    GAUGE("band_broadcast_waiting_senders", "Queued sends.", BS, waiting_senders),
    GAUGE("band_broadcast_waiting_receivers", "Queued receives.", BS, waiting_receivers),
    GAUGE("band_broadcast_closed", "1 once closed.", BS, closed),
    COUNTER("band_broadcast_sent_total", "Messages sent.", BS, next_seq),
    COUNTER("band_broadcast_sent_unheard_total", "Messages sent while nobody was subscribed.", BS,
            sent_unheard),
    COUNTER("band_broadcast_received_total", "Messages copied out to receivers.", BS, received),
    COUNTER("band_broadcast_overwritten_total", "Messages overwritten in a full ring.", BS,
            overwritten),
    COUNTER("band_broadcast_lagged_total", "Messages receivers missed.", BS, lagged),
    COUNTER("band_broadcast_lag_events_total", "Lagged answers to receivers.", BS, lag_events),
    COUNTER("band_broadcast_send_queued_total", "Sends that had to queue.", BS, send_queued),
    COUNTER_S("band_broadcast_send_wait_seconds_total", "Time queued sends waited, summed.", BS,
              send_wait_ns_total),
    BY("band_broadcast_send_refusals_total", "Sends refused or ended, by reason.",
       "reason=\"full\"", BS, try_send_refusals),
    BY("band_broadcast_send_refusals_total", "", "reason=\"timeout\"", BS, send_timeouts),
    BY("band_broadcast_send_refusals_total", "", "reason=\"cancelled\"", BS, send_cancels),
    BY("band_broadcast_send_refusals_total", "", "reason=\"closed\"", BS, send_closed_fails),
    COUNTER("band_broadcast_recv_queued_total", "Receives that had to queue.", BS, recv_queued),
    BY("band_broadcast_recv_refusals_total", "Queued receives that ended, by reason.",
       "reason=\"timeout\"", BS, recv_timeouts),
    BY("band_broadcast_recv_refusals_total", "", "reason=\"cancelled\"", BS, recv_cancels),
    BY("band_broadcast_recv_refusals_total", "", "reason=\"closed\"", BS, recv_closed_fails),
};
#undef BS

#define GS band_group_stats
static const struct row group_rows[] = {
    GAUGE("band_group_outstanding", "Outstanding tasks.", GS, count),
    GAUGE("band_group_waiters", "Waits queued.", GS, waiters),
    COUNTER("band_group_queued_total", "Waits that had to queue.", GS, queued),
    COUNTER("band_group_released_total", "Queued waits released by the count reaching 0.", GS,
            released),
    COUNTER("band_group_zeroes_total", "Times the count reached 0.", GS, zeroes),
    COUNTER("band_group_misuse_total", "Done calls refused (below zero).", GS, misuse),
    BY("band_group_wait_refusals_total", "Queued waits that ended early, by reason.",
       "reason=\"timeout\"", GS, timeouts),
    BY("band_group_wait_refusals_total", "", "reason=\"cancelled\"", GS, cancels),
};
#undef GS

#define LT band_latch_stats
static const struct row latch_rows[] = {
    GAUGE("band_latch_remaining", "The remaining count (0: open).", LT, count),
    GAUGE("band_latch_waiters", "Waits queued.", LT, waiters),
    GAUGE("band_latch_opened", "1 once a count-down opened the latch.", LT, opened),
    COUNTER("band_latch_queued_total", "Waits that had to queue.", LT, queued),
    COUNTER("band_latch_released_total", "Queued waits released by the opening.", LT, released),
    COUNTER("band_latch_misuse_total", "Count-downs refused (below zero).", LT, misuse),
    BY("band_latch_wait_refusals_total", "Queued waits that ended early, by reason.",
       "reason=\"timeout\"", LT, timeouts),
    BY("band_latch_wait_refusals_total", "", "reason=\"cancelled\"", LT, cancels),
};
#undef LT

/* ---------------------------------------------------------------- reading and rendering */

static void read_stats(band_metrics *m)
{
    for (size_t i = 0; i < m->n; i++) {
        struct entry *e = &m->e[i];
        int rc = 0;
        switch (e->kind) {
        case K_SEM:
            rc = band_sem_get_stats(e->obj, &e->st.sem);
            break;
        case K_BUDGET:
            rc = band_budget_get_stats(e->obj, &e->st.budget);
            break;
        case K_CHAN:
            rc = band_chan_get_stats(e->obj, &e->st.chan);
            break;
        case K_RATE:
            rc = band_rate_get_stats(e->obj, &e->st.rate);
            break;
        case K_FRONT_DOOR:
            rc = band_front_door_get_stats(e->obj, &e->st.door);
            break;
        case K_FAIR:
            rc = band_fair_get_stats(e->obj, &e->st.fair);
            e->nkeys = 0;
            if (rc == 0 && e->max_keys > 0 &&
                band_fair_list_keys(e->obj, e->keys, e->max_keys, &e->nkeys) != 0)
                e->nkeys = 0;
            break;
        case K_ADMIT:
            for (size_t k = 0; k < e->nsems; k++)
                if (band_sem_get_stats(e->sems[k], &e->st.admit[k]) != 0)
                    memset(&e->st.admit[k], 0, sizeof(e->st.admit[k]));
            break;
        case K_CAP_TREE:
            rc = band_cap_tree_get_stats(e->obj, &e->st.tree);
            break;
        case K_LIMIT:
            rc = band_limit_get_stats(e->obj, &e->st.limit);
            break;
        case K_EXEC:
            rc = band_exec_get_stats(e->obj, &e->st.exec);
            if (band_exec_get_histos(e->obj, &e->snap[0], &e->snap[1]) != 0)
                memset(e->snap, 0, 2 * sizeof(*e->snap));
            break;
        case K_ONESHOT:
            rc = band_oneshot_get_stats(e->obj, &e->st.oneshot);
            break;
        case K_WATCH:
            rc = band_watch_get_stats(e->obj, &e->st.watch);
            break;
        case K_BROADCAST:
            rc = band_broadcast_get_stats(e->obj, &e->st.bcast);
            break;
        case K_GROUP:
            rc = band_group_get_stats(e->obj, &e->st.group);
            break;
        case K_LATCH:
            rc = band_latch_get_stats(e->obj, &e->st.latch);
            break;
        case K_HISTO:
            break;
        }
        if (rc != 0 && e->kind != K_ADMIT) /* never for a registered object: zeros */
            memset(&e->st, 0, sizeof(e->st));
    }
}

static void render(struct out *o, const band_metrics *m)
{
    families(o, m, K_SEM, V_MAIN, sem_rows, NROWS(sem_rows));
    histo_family(o, m, K_SEM, -1, "band_sem_wait_seconds", "Time queued acquisitions waited.");
    families(o, m, K_BUDGET, V_MAIN, budget_rows, NROWS(budget_rows));
    histo_family(o, m, K_BUDGET, -1, "band_budget_wait_seconds",
                 "Time queued acquisitions waited.");
    families(o, m, K_CHAN, V_MAIN, chan_rows, NROWS(chan_rows));
    histo_family(o, m, K_CHAN, -1, "band_chan_send_wait_seconds", "Time queued senders waited.");
    families(o, m, K_RATE, V_MAIN, rate_rows, NROWS(rate_rows));
    families(o, m, K_FRONT_DOOR, V_MAIN, door_rows, NROWS(door_rows));
    families(o, m, K_FRONT_DOOR, V_DOOR_CLASS, door_class_rows, NROWS(door_class_rows));
    histo_family(o, m, K_FRONT_DOOR, -1, "band_front_door_hold_seconds",
                 "Time admitted work held its permits.");
    families(o, m, K_FAIR, V_MAIN, fair_rows, NROWS(fair_rows));
    families(o, m, K_FAIR, V_FAIR_CLASS, fair_class_rows, NROWS(fair_class_rows));
    families(o, m, K_FAIR, V_FAIR_KEY, fair_key_rows, NROWS(fair_key_rows));
    families(o, m, K_ADMIT, V_ADMIT, admit_rows, NROWS(admit_rows));
    families(o, m, K_CAP_TREE, V_TREE, tree_rows, NROWS(tree_rows));
    families(o, m, K_LIMIT, V_MAIN, limit_rows, NROWS(limit_rows));
    families(o, m, K_EXEC, V_MAIN, exec_rows, NROWS(exec_rows));
    histo_family(o, m, K_EXEC, 0, "band_exec_queue_time_seconds", "Time jobs waited in the queue.");
    histo_family(o, m, K_EXEC, 1, "band_exec_service_time_seconds", "Time jobs ran.");
    families(o, m, K_ONESHOT, V_MAIN, oneshot_rows, NROWS(oneshot_rows));
    families(o, m, K_WATCH, V_MAIN, watch_rows, NROWS(watch_rows));
    families(o, m, K_BROADCAST, V_MAIN, bcast_rows, NROWS(bcast_rows));
    families(o, m, K_GROUP, V_MAIN, group_rows, NROWS(group_rows));
    families(o, m, K_LATCH, V_MAIN, latch_rows, NROWS(latch_rows));

    /* Free-standing histograms, one family per distinct family name, in first-seen order. */
    for (size_t i = 0; i < m->n; i++) {
        const struct entry *e = &m->e[i];
        if (e->kind != K_HISTO)
            continue;
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++)
            seen = m->e[j].kind == K_HISTO && strcmp(m->e[j].family, e->family) == 0;
        if (seen)
            continue;
        char fam[BAND_NAME_MAX + 8];
        (void)snprintf(fam, sizeof(fam), "%s_seconds", e->family);
        family(o, fam, "histogram", e->help[0] != '\0' ? e->help : "A band latency histogram.");
        for (size_t j = i; j < m->n; j++) {
            band_histo_snapshot s;
            if (m->e[j].kind == K_HISTO && strcmp(m->e[j].family, e->family) == 0 &&
                band_histo_read(m->e[j].histo, &s) == 0)
                histo_series(o, fam, &m->e[j], &s);
        }
    }
}

int band_metrics_write(const band_metrics *cm, char *buf, size_t cap, size_t *len)
{
    if (len != NULL)
        *len = 0;
    if (cm == NULL || (buf == NULL && cap > 0))
        return BAND_EINVAL;
    band_metrics *m = (band_metrics *)cm; /* the stats copies are scratch space */
    read_stats(m);
    struct out o = {buf, cap, 0};
    render(&o, m);
    if (len != NULL)
        *len = o.len;
    if (o.len >= cap) {
        if (cap > 0)
            buf[cap - 1] = '\0';
        return BAND_E2BIG;
    }
    return 0;
}

int band_metrics_render(const band_metrics *m, char **out, size_t *len)
{
    if (out != NULL)
        *out = NULL;
    if (m == NULL || out == NULL)
        return BAND_EINVAL;
    size_t need = 0;
    int rc = band_metrics_write(m, NULL, 0, &need);
    /* Counters move between the two writes: leave room, and retry if they outgrew it. */
    for (int tries = 0; rc == BAND_E2BIG && tries < 4; tries++) {
        size_t cap = need + need / 4 + 256;
        char *buf = malloc(cap);
        if (buf == NULL)
            return BAND_ENOMEM;
        rc = band_metrics_write(m, buf, cap, &need);
        if (rc == 0) {
            *out = buf;
            if (len != NULL)
                *len = need;
            return 0;
        }
        free(buf);
    }
    return rc;
}

int band_metrics_fprint(const band_metrics *m, FILE *f)
{
    if (m == NULL || f == NULL)
        return BAND_EINVAL;
    char *text;
    int rc = band_metrics_render(m, &text, NULL);
    if (rc == 0) {
        (void)fputs(text, f); /* a stream error stays in ferror(f) */
        free(text);
    }
    return rc;
}
