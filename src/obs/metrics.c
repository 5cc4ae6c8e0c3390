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
#include <stdlib.h>
#include <string.h>

#include "band/metrics.h"
#include "core/internal.h"

enum kind { K_SEM, K_CHAN, K_RATE, K_FRONT_DOOR, K_HISTO };

struct entry {
    enum kind kind;
    const void *obj;
    const band_histo *histo;
    char name[BAND_NAME_MAX];
    char family[BAND_NAME_MAX];
    char help[128];
    union {
        band_sem_stats sem;
        band_chan_stats chan;
        band_rate_stats rate;
        band_front_door_stats door;
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

static void family(struct out *o, const char *name, const char *type, const char *help)
{
    put(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One sample: metric{name="...",extra} value. @extra may be NULL. */
static void sample(struct out *o, const char *metric, const struct entry *e, const char *extra,
                   const char *value)
{
    put(o, "%s{", metric);
    put_label(o, "name", e->name);
    if (extra != NULL)
        put(o, ",%s", extra);
    put(o, "} %s\n", value);
}

static void sample_u64(struct out *o, const char *metric, const struct entry *e, const char *extra,
                       uint64_t v)
{
    char num[32];
    (void)snprintf(num, sizeof(num), "%llu", (unsigned long long)v);
    sample(o, metric, e, extra, num);
}

static void sample_sec(struct out *o, const char *metric, const struct entry *e, const char *extra,
                       uint64_t ns)
{
    char num[40];
    (void)snprintf(num, sizeof(num), "%.9f", (double)ns / 1e9);
    sample(o, metric, e, extra, num);
}

/* Cumulative bucket bounds in ns, and their labels. */
static const uint64_t bounds_ns[] = {1000,     10000,     100000,     1000000,
                                     10000000, 100000000, 1000000000, 10000000000};
static const char *const bounds_le[] = {"1e-06", "1e-05", "0.0001", "0.001",
                                        "0.01",  "0.1",   "1",      "10"};

static void histo_series(struct out *o, const char *fam, const struct entry *e)
{
    band_histo_snapshot s;
    if (band_histo_read(e->histo, &s) != 0)
        return;
    char metric[BAND_NAME_MAX + 16];
    (void)snprintf(metric, sizeof(metric), "%s_bucket", fam);
    uint64_t cum = 0;
    unsigned b = 0;
    for (size_t k = 0; k < sizeof(bounds_ns) / sizeof(bounds_ns[0]); k++) {
        while (b < BAND_HISTO_BUCKETS && band_histo_bucket_high(b) <= bounds_ns[k])
            cum += s.buckets[b++];
        char le[24];
        (void)snprintf(le, sizeof(le), "le=\"%s\"", bounds_le[k]);
        sample_u64(o, metric, e, le, cum);
    }
    sample_u64(o, metric, e, "le=\"+Inf\"", s.count);
    (void)snprintf(metric, sizeof(metric), "%s_sum", fam);
    sample_sec(o, metric, e, NULL, s.sum);
    (void)snprintf(metric, sizeof(metric), "%s_count", fam);
    sample_u64(o, metric, e, NULL, s.count);
}

/* A histogram family over every entry of @kind that has one. */
static void histo_family(struct out *o, const band_metrics *m, enum kind kind, const char *fam,
                         const char *help)
{
    int any = 0;
    for (size_t i = 0; i < m->n; i++)
        any |= m->e[i].kind == kind && m->e[i].histo != NULL;
    if (!any)
        return;
    family(o, fam, "histogram", help);
    for (size_t i = 0; i < m->n; i++)
        if (m->e[i].kind == kind && m->e[i].histo != NULL)
            histo_series(o, fam, &m->e[i]);
}

/* A gauge or counter family: one series per entry of @kind, value from @get. */
typedef uint64_t getter_fn(const struct entry *e);

static void simple_family(struct out *o, const band_metrics *m, enum kind kind, const char *fam,
                          const char *type, const char *help, getter_fn *get)
{
    int any = 0;
    for (size_t i = 0; i < m->n && !any; i++)
        any = m->e[i].kind == kind;
    if (!any)
        return;
    family(o, fam, type, help);
    for (size_t i = 0; i < m->n; i++)
        if (m->e[i].kind == kind)
            sample_u64(o, fam, &m->e[i], NULL, get(&m->e[i]));
}

/* A counter family with one series per (entry, reason). */
struct reason {
    const char *label;
    getter_fn *get;
};

static void reason_family(struct out *o, const band_metrics *m, enum kind kind, const char *fam,
                          const char *help, const struct reason *r, size_t nr)
{
    int any = 0;
    for (size_t i = 0; i < m->n && !any; i++)
        any = m->e[i].kind == kind;
    if (!any)
        return;
    family(o, fam, "counter", help);
    for (size_t i = 0; i < m->n; i++)
        if (m->e[i].kind == kind)
            for (size_t k = 0; k < nr; k++)
                sample_u64(o, fam, &m->e[i], r[k].label, r[k].get(&m->e[i]));
}

#define GET(fn, expr)                                                                              \
    static uint64_t fn(const struct entry *e)                                                      \
    {                                                                                              \
        return (uint64_t)(expr);                                                                   \
    }

GET(sem_available, e->st.sem.available)
GET(sem_in_use, e->st.sem.in_use)
GET(sem_capacity, e->st.sem.capacity)
GET(sem_debt, e->st.sem.debt)
GET(sem_waiters, e->st.sem.waiters)
GET(sem_waiting_units, e->st.sem.waiting_units)
GET(sem_grants, e->st.sem.grants)
GET(sem_queued, e->st.sem.queued)
GET(sem_r_try, e->st.sem.try_refusals)
GET(sem_r_big, e->st.sem.too_big)
GET(sem_r_timeout, e->st.sem.timeouts)
GET(sem_r_cancel, e->st.sem.cancels)
GET(sem_r_closed, e->st.sem.closed_fails)
GET(sem_r_deadline, e->st.sem.refused_deadline)
GET(chan_len, e->st.chan.len)
GET(chan_bytes, e->st.chan.bytes)
GET(chan_capacity, e->st.chan.capacity)
GET(chan_reserved, e->st.chan.reserved)
GET(chan_wsend, e->st.chan.waiting_senders)
GET(chan_wrecv, e->st.chan.waiting_receivers)
GET(chan_sent, e->st.chan.sent)
GET(chan_received, e->st.chan.received)
GET(chan_dropped, e->st.chan.dropped)
GET(chan_r_full, e->st.chan.refused_full)
GET(chan_r_closed, e->st.chan.refused_closed)
GET(chan_r_big, e->st.chan.refused_too_big)
GET(chan_r_deadline, e->st.chan.refused_deadline)
GET(rate_available, e->st.rate.available)
GET(rate_granted, e->st.rate.granted_tokens)
GET(rate_delayed, e->st.rate.delayed)
GET(rate_cancelled, e->st.rate.cancelled)
GET(rate_r_rate, e->st.rate.refused_rate)
GET(rate_r_deadline, e->st.rate.refused_deadline)
GET(rate_r_big, e->st.rate.refused_too_big)
GET(rate_r_closed, e->st.rate.refused_closed)
GET(door_accept, e->st.door.answers[BAND_ANSWER_ACCEPT])
GET(door_later, e->st.door.answers[BAND_ANSWER_LATER])
GET(door_busy, e->st.door.answers[BAND_ANSWER_BUSY])
GET(door_quota, e->st.door.answers[BAND_ANSWER_OVER_QUOTA])
GET(door_shed, e->st.door.answers[BAND_ANSWER_SHED])
GET(door_big, e->st.door.answers[BAND_ANSWER_TOO_BIG])
GET(door_gone, e->st.door.answers[BAND_ANSWER_GONE])

static void read_stats(band_metrics *m)
{
    for (size_t i = 0; i < m->n; i++) {
        struct entry *e = &m->e[i];
        switch (e->kind) {
        case K_SEM:
            (void)band_sem_get_stats(e->obj, &e->st.sem);
            break;
        case K_CHAN:
            (void)band_chan_get_stats(e->obj, &e->st.chan);
            break;
        case K_RATE:
            (void)band_rate_get_stats(e->obj, &e->st.rate);
            break;
        case K_FRONT_DOOR:
            (void)band_front_door_get_stats(e->obj, &e->st.door);
            break;
        case K_HISTO:
            break;
        }
    }
}

static void render(struct out *o, const band_metrics *m)
{
    simple_family(o, m, K_SEM, "band_sem_available", "gauge", "Permits available now.",
                  sem_available);
    simple_family(o, m, K_SEM, "band_sem_in_use", "gauge", "Units held (budgets; 0 otherwise).",
                  sem_in_use);
    simple_family(o, m, K_SEM, "band_sem_capacity", "gauge", "Capacity (budgets; 0 otherwise).",
                  sem_capacity);
    simple_family(o, m, K_SEM, "band_sem_debt", "gauge", "Permits releases must repay first.",
                  sem_debt);
    simple_family(o, m, K_SEM, "band_sem_waiters", "gauge", "Queued acquisitions.", sem_waiters);
    simple_family(o, m, K_SEM, "band_sem_waiting_units", "gauge",
                  "Units the queued acquisitions asked for.", sem_waiting_units);
    simple_family(o, m, K_SEM, "band_sem_queued_total", "counter",
                  "Acquisitions that had to queue.", sem_queued);
    simple_family(o, m, K_SEM, "band_sem_grants_total", "counter",
                  "Queued acquisitions that were granted.", sem_grants);
    static const struct reason sem_r[] = {
        {"reason=\"full\"", sem_r_try},        {"reason=\"too_big\"", sem_r_big},
        {"reason=\"timeout\"", sem_r_timeout}, {"reason=\"cancelled\"", sem_r_cancel},
        {"reason=\"closed\"", sem_r_closed},   {"reason=\"deadline\"", sem_r_deadline}};
    reason_family(o, m, K_SEM, "band_sem_refusals_total",
                  "Acquisitions refused or ended, by reason.", sem_r,
                  sizeof(sem_r) / sizeof(sem_r[0]));
    histo_family(o, m, K_SEM, "band_sem_wait_seconds", "Time queued acquisitions waited.");

    simple_family(o, m, K_CHAN, "band_chan_len", "gauge", "Elements queued.", chan_len);
    simple_family(o, m, K_CHAN, "band_chan_bytes", "gauge", "Declared bytes queued.", chan_bytes);
    simple_family(o, m, K_CHAN, "band_chan_capacity", "gauge", "Element capacity.", chan_capacity);
    simple_family(o, m, K_CHAN, "band_chan_reserved", "gauge", "Reservations held.", chan_reserved);
    simple_family(o, m, K_CHAN, "band_chan_waiting_senders", "gauge", "Senders queued.",
                  chan_wsend);
    simple_family(o, m, K_CHAN, "band_chan_waiting_receivers", "gauge", "Receivers queued.",
                  chan_wrecv);
    simple_family(o, m, K_CHAN, "band_chan_sent_total", "counter", "Elements accepted.", chan_sent);
    simple_family(o, m, K_CHAN, "band_chan_received_total", "counter", "Elements received.",
                  chan_received);
    simple_family(o, m, K_CHAN, "band_chan_dropped_total", "counter",
                  "Elements handed back by an overflow policy.", chan_dropped);
    static const struct reason chan_r[] = {{"reason=\"full\"", chan_r_full},
                                           {"reason=\"closed\"", chan_r_closed},
                                           {"reason=\"too_big\"", chan_r_big},
                                           {"reason=\"deadline\"", chan_r_deadline}};
    reason_family(o, m, K_CHAN, "band_chan_refusals_total", "Sends refused, by reason.", chan_r,
                  sizeof(chan_r) / sizeof(chan_r[0]));
    histo_family(o, m, K_CHAN, "band_chan_send_wait_seconds", "Time queued senders waited.");

    simple_family(o, m, K_RATE, "band_rate_available", "gauge", "Whole tokens in the bucket.",
                  rate_available);
    simple_family(o, m, K_RATE, "band_rate_granted_tokens_total", "counter", "Tokens taken.",
                  rate_granted);
    simple_family(o, m, K_RATE, "band_rate_delayed_total", "counter",
                  "Bookings that waited for their slot.", rate_delayed);
    simple_family(o, m, K_RATE, "band_rate_cancelled_total", "counter",
                  "Bookings given back before they were due.", rate_cancelled);
    static const struct reason rate_r[] = {{"reason=\"rate\"", rate_r_rate},
                                           {"reason=\"deadline\"", rate_r_deadline},
                                           {"reason=\"too_big\"", rate_r_big},
                                           {"reason=\"closed\"", rate_r_closed}};
    reason_family(o, m, K_RATE, "band_rate_refusals_total", "Requests refused, by reason.", rate_r,
                  sizeof(rate_r) / sizeof(rate_r[0]));

    static const struct reason door_a[] = {
        {"answer=\"accept\"", door_accept}, {"answer=\"later\"", door_later},
        {"answer=\"busy\"", door_busy},     {"answer=\"over_quota\"", door_quota},
        {"answer=\"shed\"", door_shed},     {"answer=\"too_big\"", door_big},
        {"answer=\"gone\"", door_gone}};
    reason_family(o, m, K_FRONT_DOOR, "band_front_door_answers_total",
                  "Admission answers, by kind.", door_a, sizeof(door_a) / sizeof(door_a[0]));
    histo_family(o, m, K_FRONT_DOOR, "band_front_door_hold_seconds",
                 "Time admitted work held its permits.");

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
        for (size_t j = i; j < m->n; j++)
            if (m->e[j].kind == K_HISTO && strcmp(m->e[j].family, e->family) == 0)
                histo_series(o, fam, &m->e[j]);
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

int band_metrics_fprint(const band_metrics *m, FILE *f)
{
    if (m == NULL || f == NULL)
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
        if (rc == 0)
            (void)fputs(buf, f); /* a stream error stays in ferror(f) */
        free(buf);
    }
    return rc;
}
