/* SPDX-License-Identifier: MIT */
/*
 * keyrate_model.c - the keyed rate budgets against a per-key reference (see
 * keyrate_model.h).
 *
 * The reference keeps each key's theoretical arrival time, @tat, on an absolute clock in
 * units of 1/tokens ns: the key misses max(0, tat - t x tokens) units at time t, a token
 * costs @period units, and n tokens are there when missing + n x period <= burst x period.
 * Every time x tokens is below 2^126 in magnitude, so signed 128-bit arithmetic holds all
 * of it exactly.
 */
#include "keyrate_model.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "band/keyrate.h"
#include "model_input.h"

__extension__ typedef __int128 i128;

#define NKEYS   12 /* valid keys; two more indices are invalid ones */
#define KEY_LEN 24 /* the table's max_key_len */

struct mkey {
    const char *bytes;
    size_t len;
};

static const struct mkey keys[NKEYS + 2] = {
    {"", 0},
    {"a", 1},
    {"b", 1},
    {"ab", 2},
    {"tenant-1", 8},
    {"tenant-2", 8},
    {"x\0y", 3},
    {"x\0z", 3},
    {"x", 1},
    {"0123456789abcdef", 16},
    {"123456789012345678901234", 24},
    {"route:/api/v1/items", 19},
    {"1234567890123456789012345", 25}, /* one byte too long: EINVAL */
    {NULL, 3},                         /* NULL with a length: EINVAL */
};

struct mstate {
    int tracked; /* short of full when last looked at; else full */
    i128 tat;
    uint64_t seq;
};

struct keyrate_model {
    struct model_input in;
    band_keyrate *k;
    band_time clock; /* the fake clock */
    i128 seen;       /* the table's time: the latest reading a call applied */
    uint64_t tokens, burst;
    band_time period;
    size_t max_keys;
    unsigned shards;
    int full, closed;
    struct mstate st[NKEYS];
    uint64_t seq;
    /* the expected counters */
    uint64_t granted, granted_tokens, refused_rate, refused_too_big, refused_full, refused_closed,
        evicted_busy, forgotten;
    /* the last refusal, for KM_OP_TO_RETRY */
    int last_key;
    uint64_t last_n;
    band_time last_ra;
    uint64_t opno;
    int failed;
    char err[512];
    struct keyrate_model_counts counts;
};

/* ---------------------------------------------------------------- failures */

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
static void
fail(struct keyrate_model *m, const char *fmt, ...)
{
    if (m->failed)
        return;
    m->failed = 1;
    int n = snprintf(m->err, sizeof(m->err),
                     "op #%llu (%llu tokens per %lld ns, burst %llu, max_keys %zu, shards %u, "
                     "full %d, clock %lld, table time %lld): ",
                     (unsigned long long)m->opno, (unsigned long long)m->tokens,
                     (long long)m->period, (unsigned long long)m->burst, m->max_keys, m->shards,
                     m->full, (long long)m->clock, (long long)m->seen);
    if (n < 0 || (size_t)n >= sizeof(m->err))
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->err + n, sizeof(m->err) - (size_t)n, fmt, ap);
    va_end(ap);
}

static void expect_rc(struct keyrate_model *m, const char *what, int expected, int actual)
{
    if (expected != actual)
        fail(m, "%s: expected %s, got %s", what, band_err_name(expected), band_err_name(actual));
}

static void expect_u64(struct keyrate_model *m, const char *what, uint64_t expected,
                       uint64_t actual)
{
    if (expected != actual)
        fail(m, "%s: expected %llu, got %llu", what, (unsigned long long)expected,
             (unsigned long long)actual);
}

static void count_rc(struct keyrate_model *m, int rc)
{
    switch (rc) {
    case 0:
        break;
    case BAND_EAGAIN:
        m->counts.eagain++;
        break;
    case BAND_E2BIG:
        m->counts.e2big++;
        break;
    case BAND_ENOSPC:
        m->counts.enospc++;
        break;
    case BAND_ECLOSED:
        m->counts.eclosed++;
        break;
    case BAND_EINVAL:
        m->counts.einval++;
        break;
    case BAND_ENOENT:
        m->counts.enoent++;
        break;
    case BAND_EOVERFLOW:
        m->counts.eoverflow++;
        break;
    default:
        break;
    }
}

/* ---------------------------------------------------------------- input */

static uint8_t next_byte(struct keyrate_model *m)
{
    return model_input_byte(&m->in);
}

static uint64_t next_u64(struct keyrate_model *m)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)next_byte(m) << (8 * i);
    return v;
}

/* A number in [0, @hi]. */
static uint64_t read_upto(struct keyrate_model *m, uint64_t hi)
{
    if (hi == 0)
        return 0;
    if (hi < 256)
        return next_byte(m) % (hi + 1);
    uint64_t v = next_u64(m);
    return hi == UINT64_MAX ? v : v % (hi + 1);
}

static i128 clamp_time(i128 t)
{
    if (t > INT64_MAX)
        return INT64_MAX;
    if (t < INT64_MIN)
        return INT64_MIN;
    return t;
}

/* One token's worth of time, at least 1 ns. */
static i128 step_of(const struct keyrate_model *m)
{
    return (i128)m->period / (i128)m->tokens + 1;
}

static uint64_t span_bound(i128 hi)
{
    return hi > (i128)INT64_MAX ? (uint64_t)INT64_MAX : (uint64_t)hi;
}

/* A span of time: mostly up to two tokens' worth, sometimes up to the depth twice over,
 * rarely anything. */
static i128 read_span(struct keyrate_model *m)
{
    uint8_t b = next_byte(m);
    i128 step = step_of(m);
    if (b < 200)
        return (i128)read_upto(m, span_bound(2 * step));
    if (b < 245)
        return (i128)read_upto(m, span_bound(2 * (i128)m->burst * step));
    return (i128)(next_u64(m) >> 1);
}

/* A key index: mostly the first few (so tables fill), sometimes any, rarely invalid. */
static int read_key(struct keyrate_model *m)
{
    uint8_t b = next_byte(m);
    if (b < 160)
        return b % 5;
    if (b < 248)
        return b % NKEYS;
    return NKEYS + (b & 1);
}

static uint64_t read_n(struct keyrate_model *m)
{
    uint8_t b = next_byte(m);
    uint64_t small = m->burst < 4 ? m->burst : 4;
    if (b < 150)
        return 1 + b % small;
    if (b < 200)
        return 1 + read_upto(m, m->burst); /* up to burst + 1 */
    if (b < 220)
        return m->burst;
    if (b < 235)
        return m->burst + 1;
    if (b < 245)
        return 0;
    return UINT64_MAX - (b & 3);
}

static const uint64_t x_tokens[] = {
    1, 2, 3, 7, 1000, 1000000000, (UINT64_C(1) << 32) + 1, UINT64_C(1) << 62, (uint64_t)INT64_MAX};
static const band_time x_periods[] = {
    1, 2, 3, 1000, 7919, BAND_SEC, INT64_C(1) << 40, INT64_MAX / 3, INT64_MAX};

struct settings {
    uint64_t tokens, burst;
    band_time period;
};

/* Settings; with @invalid, one time in eight an invalid or overflowing one. */
static struct settings read_settings(struct keyrate_model *m, int invalid)
{
    struct settings s;
    uint8_t b = next_byte(m);
    if (invalid && b % 8 == 0) {
        switch ((b >> 3) % 5) {
        case 0:
            return (struct settings){0, 1, BAND_SEC};
        case 1:
            return (struct settings){1, 0, BAND_SEC};
        case 2:
            return (struct settings){1, 1, -(band_time)(b >> 4)};
        case 3:
            return (struct settings){(uint64_t)INT64_MAX + 1 + (b >> 6), 1, 1};
        default:
            return (struct settings){1, 2 + (b >> 6), INT64_MAX / 2 + 1};
        }
    }
    if (b & 1) {
        s.tokens = 1 + read_upto(m, 999);
        s.period = (band_time)(1 + read_upto(m, (UINT64_C(1) << 40) - 1));
    } else {
        s.tokens = x_tokens[next_byte(m) % (sizeof(x_tokens) / sizeof(x_tokens[0]))];
        s.period = x_periods[next_byte(m) % (sizeof(x_periods) / sizeof(x_periods[0]))];
    }
    uint64_t bmax = (uint64_t)INT64_MAX / (uint64_t)s.period;
    uint8_t c = next_byte(m);
    if (c < 160)
        s.burst = 1 + c % 8;
    else if (c < 240)
        s.burst = 1 + read_upto(m, 999);
    else
        s.burst = bmax;
    if (s.burst > bmax)
        s.burst = bmax;
    return s;
}

static int settings_rc(struct settings s)
{
    if (s.tokens == 0 || s.period <= 0 || s.burst == 0 || s.tokens > (uint64_t)INT64_MAX)
        return BAND_EINVAL;
    if ((i128)s.burst * (uint64_t)s.period > (i128)INT64_MAX)
        return BAND_EOVERFLOW;
    return 0;
}

/* ---------------------------------------------------------------- the reference */

static band_time hook_clock(void *ctx)
{
    return ((struct keyrate_model *)ctx)->clock;
}

/* A library call read the clock: the table's time (never back). */
static i128 apply_clock(struct keyrate_model *m)
{
    if ((i128)m->clock < m->seen)
        m->counts.stale_clock++;
    else
        m->seen = m->clock;
    return m->seen;
}

static i128 depth(const struct keyrate_model *m)
{
    return (i128)m->burst * m->period;
}

/* Units key @i misses at @t (0 when full; a full key is forgotten). */
static i128 missing_at(struct keyrate_model *m, int i, i128 t)
{
    struct mstate *s = &m->st[i];
    if (!s->tracked)
        return 0;
    i128 miss = s->tat - t * (i128)m->tokens;
    if (miss <= 0) {
        s->tracked = 0;
        return 0;
    }
    return miss;
}

static i128 ceil_div(i128 a, i128 b)
{
    return a / b + (a % b != 0);
}

static int valid_key(int i)
{
    return i < NKEYS;
}

static int lib_try(struct keyrate_model *m, int i, uint64_t n, band_time *ra)
{
    return band_keyrate_try_acquire(m->k, keys[i].bytes, keys[i].len, n, ra);
}

static void do_try(struct keyrate_model *m, int i, uint64_t n, int exact_retry)
{
    band_time ra = -7;
    int rc = lib_try(m, i, n, &ra);
    count_rc(m, rc);
    int want;
    band_time want_ra = 0;
    if (!valid_key(i) || n == 0) {
        want = BAND_EINVAL;
    } else {
        i128 t = apply_clock(m);
        if (m->closed) {
            want = BAND_ECLOSED;
            m->refused_closed++;
        } else if (n > m->burst) {
            want = BAND_E2BIG;
            m->refused_too_big++;
        } else {
            i128 miss = missing_at(m, i, t);
            i128 after = miss + (i128)n * m->period;
            want = 0;
            if (after > depth(m)) {
                want = BAND_EAGAIN;
                want_ra = (band_time)ceil_div(after - depth(m), (i128)m->tokens);
                m->refused_rate++;
                m->last_key = i;
                m->last_n = n;
                m->last_ra = want_ra;
            } else if (miss == 0) {
                /* A key that is full needs room in the table. */
                int busy = 0, victim = -1;
                i128 vmiss = 0;
                for (int j = 0; j < NKEYS; j++) {
                    i128 mj = j == i ? 0 : missing_at(m, j, t);
                    if (mj == 0)
                        continue;
                    busy++;
                    if (victim < 0 || mj < vmiss ||
                        (mj == vmiss && m->st[j].seq < m->st[victim].seq)) {
                        victim = j;
                        vmiss = mj;
                    }
                }
                if (m->shards == 1 && (size_t)busy >= m->max_keys) {
                    if (m->full == BAND_KEYRATE_FULL_REFUSE) {
                        want = BAND_ENOSPC;
                        m->refused_full++;
                    } else {
                        m->st[victim].tracked = 0;
                        m->evicted_busy++;
                        m->counts.evicted_busy++;
                    }
                }
            }
            if (want == 0) {
                struct mstate *s = &m->st[i];
                if (miss == 0)
                    s->seq = ++m->seq;
                s->tracked = 1;
                s->tat = t * (i128)m->tokens + after;
                m->granted++;
                m->granted_tokens =
                    n > UINT64_MAX - m->granted_tokens ? UINT64_MAX : m->granted_tokens + n;
                m->counts.granted++;
                if (exact_retry)
                    m->counts.retry_exact++;
            }
        }
    }
    if (getenv("KEYRATE_MODEL_TRACE") != NULL)
        fprintf(stderr, "#%llu try key %d n %llu at %lld: %s ra %lld\n",
                (unsigned long long)m->opno, i, (unsigned long long)n, (long long)m->clock,
                band_err_name(rc), (long long)ra);
    expect_rc(m, "try", want, rc);
    expect_u64(m, "try retry-after", (uint64_t)want_ra, (uint64_t)ra);
}

static void op_available(struct keyrate_model *m)
{
    int i = read_key(m);
    uint64_t got = band_keyrate_available(m->k, keys[i].bytes, keys[i].len);
    uint64_t want = 0;
    if (valid_key(i)) {
        i128 miss = missing_at(m, i, apply_clock(m));
        want = (uint64_t)((depth(m) - miss) / m->period);
    }
    if (getenv("KEYRATE_MODEL_TRACE") != NULL)
        fprintf(stderr, "#%llu available key %d at %lld: %llu\n", (unsigned long long)m->opno, i,
                (long long)m->clock, (unsigned long long)got);
    expect_u64(m, "available", want, got);
}

static void op_forget(struct keyrate_model *m)
{
    int i = read_key(m);
    int rc = band_keyrate_forget(m->k, keys[i].bytes, keys[i].len);
    count_rc(m, rc);
    int want = BAND_EINVAL;
    if (valid_key(i)) {
        want = BAND_ENOENT;
        if (missing_at(m, i, apply_clock(m)) > 0) {
            m->st[i].tracked = 0;
            m->forgotten++;
            m->counts.forgotten++;
            want = 0;
        }
    }
    expect_rc(m, "forget", want, rc);
}

static void op_set(struct keyrate_model *m)
{
    struct settings s = read_settings(m, 1);
    int rc = band_keyrate_set(m->k, s.tokens, s.period, s.burst);
    count_rc(m, rc);
    int want = settings_rc(s);
    if (getenv("KEYRATE_MODEL_TRACE") != NULL)
        fprintf(stderr, "#%llu set %llu per %lld burst %llu at %lld: %s\n",
                (unsigned long long)m->opno, (unsigned long long)s.tokens, (long long)s.period,
                (unsigned long long)s.burst, (long long)m->clock, band_err_name(rc));
    expect_rc(m, "set", want, rc);
    if (want != 0 || rc != 0)
        return;
    i128 t = apply_clock(m);
    for (int i = 0; i < NKEYS; i++) {
        i128 miss = missing_at(m, i, t);
        if (miss == 0)
            continue;
        /* The shortfall in tokens is kept, at most the new burst: in the new units,
         * rounded up. */
        i128 miss_new = ceil_div(miss * s.period, m->period);
        if (miss_new > (i128)s.burst * s.period)
            miss_new = (i128)s.burst * s.period;
        m->st[i].tat = t * (i128)s.tokens + miss_new;
    }
    m->tokens = s.tokens;
    m->period = s.period;
    m->burst = s.burst;
    m->counts.sets_ok++;
}

static void op_stats(struct keyrate_model *m)
{
    band_keyrate_stats st;
    int rc = band_keyrate_get_stats(m->k, &st);
    expect_rc(m, "stats", 0, rc);
    if (rc != 0)
        return;
    i128 t = apply_clock(m);
    uint64_t busy = 0;
    for (int i = 0; i < NKEYS; i++)
        busy += missing_at(m, i, t) > 0;
    expect_u64(m, "stats keys", busy, st.keys);
    expect_u64(m, "stats tokens", m->tokens, st.tokens);
    expect_u64(m, "stats burst", m->burst, st.burst);
    expect_u64(m, "stats period", (uint64_t)m->period, (uint64_t)st.period);
    expect_u64(m, "stats max_keys", m->max_keys, st.max_keys);
    expect_u64(m, "stats shards", m->shards, st.shards);
    expect_u64(m, "stats granted", m->granted, st.granted);
    expect_u64(m, "stats granted_tokens", m->granted_tokens, st.granted_tokens);
    expect_u64(m, "stats refused_rate", m->refused_rate, st.refused_rate);
    expect_u64(m, "stats refused_too_big", m->refused_too_big, st.refused_too_big);
    expect_u64(m, "stats refused_full", m->refused_full, st.refused_full);
    expect_u64(m, "stats refused_closed", m->refused_closed, st.refused_closed);
    expect_u64(m, "stats evicted_busy", m->evicted_busy, st.evicted_busy);
    expect_u64(m, "stats forgotten", m->forgotten, st.forgotten);
    expect_u64(m, "stats closed", (uint64_t)m->closed, (uint64_t)st.closed);
}

static void destroy_table(struct keyrate_model *m)
{
    band_keyrate_destroy(m->k);
    m->k = NULL;
}

/* A new table from the next bytes. 0, or -1 (a failure was recorded). */
static int create_table(struct keyrate_model *m)
{
    destroy_table(m);
    struct settings s = read_settings(m, 1);
    uint8_t b = next_byte(m);
    uint8_t c = next_byte(m);
    band_keyrate_opts o;
    memset(&o, 0, sizeof(o));
    o.clock = hook_clock;
    o.clock_ctx = m;
    o.max_key_len = KEY_LEN;
    o.full = (c & 1) ? BAND_KEYRATE_FULL_REFUSE : BAND_KEYRATE_FULL_EVICT;
    if (b % 4 == 3) {
        o.shards = 2 + (b >> 2) % 4;
        o.max_keys = (size_t)o.shards * NKEYS; /* a shard can hold every key */
    } else {
        o.shards = 1;
        o.max_keys = 1 + (b >> 2) % 6;
    }
    band_keyrate *k = NULL;
    int rc = band_keyrate_create(&k, s.tokens, s.period, s.burst, &o);
    int want = settings_rc(s);
    expect_rc(m, "create", want, rc);
    if (rc != want)
        return -1;
    if (rc != 0) { /* refused as it should be: the defaults instead */
        s = (struct settings){3, 5, BAND_SEC};
        rc = band_keyrate_create(&k, s.tokens, s.period, s.burst, &o);
        expect_rc(m, "create", 0, rc);
        if (rc != 0)
            return -1;
    }
    m->k = k;
    m->tokens = s.tokens;
    m->period = s.period;
    m->burst = s.burst;
    m->max_keys = o.max_keys;
    m->shards = o.shards;
    m->full = o.full;
    m->closed = 0;
    m->seen = INT64_MIN;
    memset(m->st, 0, sizeof(m->st));
    m->seq = 0;
    m->granted = m->granted_tokens = m->refused_rate = m->refused_too_big = 0;
    m->refused_full = m->refused_closed = m->evicted_busy = m->forgotten = 0;
    m->last_key = -1;
    m->counts.tables++;
    m->counts.sharded_tables += o.shards > 1;
    return 0;
}

static void move_clock(struct keyrate_model *m, i128 to)
{
    m->clock = (band_time)clamp_time(to);
}

static void step(struct keyrate_model *m)
{
    uint8_t b = next_byte(m);
    int op;
    if (b < 110)
        op = KM_OP_TRY;
    else if (b < 130)
        op = KM_OP_AVAILABLE;
    else if (b < 140)
        op = KM_OP_FORGET;
    else if (b < 190)
        op = KM_OP_ADVANCE;
    else if (b < 210)
        op = KM_OP_TO_RETRY;
    else if (b < 218)
        op = KM_OP_STEP_BACK;
    else if (b < 221)
        op = KM_OP_JUMP;
    else if (b < 231)
        op = KM_OP_SET;
    else if (b < 251)
        op = KM_OP_STATS;
    else if (b < 252)
        op = KM_OP_CLOSE;
    else
        op = KM_OP_RECREATE;
    /* Shards keep their time apart: a clock that steps back only on one shard. */
    if (m->shards > 1 && (op == KM_OP_STEP_BACK || op == KM_OP_JUMP))
        op = KM_OP_ADVANCE;
    m->counts.ops[op]++;
    switch (op) {
    case KM_OP_TRY: {
        int i = read_key(m);
        do_try(m, i, read_n(m), 0);
        break;
    }
    case KM_OP_AVAILABLE:
        op_available(m);
        break;
    case KM_OP_FORGET:
        op_forget(m);
        break;
    case KM_OP_ADVANCE:
        move_clock(m, (i128)m->clock + read_span(m));
        break;
    case KM_OP_TO_RETRY:
        if (m->last_key >= 0) {
            /* To the nanosecond the refusal named, or one short of it (still refused,
             * unless the table's time is ahead of the clock). */
            int short_by = next_byte(m) & 1;
            i128 base = m->seen > (i128)m->clock ? m->seen : (i128)m->clock;
            move_clock(m, base + m->last_ra - short_by);
            int i = m->last_key;
            uint64_t n = m->last_n;
            m->last_key = -1;
            do_try(m, i, n, !short_by);
        }
        break;
    case KM_OP_STEP_BACK:
        move_clock(m, (i128)m->clock - read_span(m));
        break;
    case KM_OP_JUMP:
        move_clock(m, (next_byte(m) & 1) ? INT64_MAX : INT64_MIN);
        break;
    case KM_OP_SET:
        op_set(m);
        break;
    case KM_OP_STATS:
        op_stats(m);
        break;
    case KM_OP_CLOSE:
        expect_rc(m, "close", 0, band_keyrate_close(m->k));
        m->closed = 1;
        expect_rc(m, "is_closed", 1, band_keyrate_is_closed(m->k));
        break;
    default:
        (void)create_table(m);
        break;
    }
}

/* ---------------------------------------------------------------- runs */

struct keyrate_model *keyrate_model_new(void)
{
    return calloc(1, sizeof(struct keyrate_model));
}

void keyrate_model_free(struct keyrate_model *m)
{
    if (m == NULL)
        return;
    destroy_table(m);
    free(m);
}

static int run(struct keyrate_model *m, uint64_t ops)
{
    m->failed = 0;
    m->err[0] = 0;
    m->opno = 0;
    uint8_t b = next_byte(m);
    m->clock = (b & 1) ? (band_time)(next_u64(m) >> (b >> 4)) : (band_time)(b << 20);
    if (b & 2)
        m->clock = -m->clock;
    if (create_table(m) != 0)
        return -1;
    for (uint64_t i = 0; i < ops && !m->failed && !model_input_done(&m->in); i++) {
        m->opno = i;
        step(m);
    }
    if (!m->failed) /* a last check of every counter */
        op_stats(m);
    destroy_table(m);
    return m->failed ? -1 : 0;
}

int keyrate_model_run_bytes(struct keyrate_model *m, const uint8_t *data, size_t len)
{
    model_input_bytes(&m->in, data, len);
    return run(m, UINT64_MAX);
}

int keyrate_model_run_seed(struct keyrate_model *m, uint64_t seed, uint64_t ops)
{
    model_input_seed(&m->in, seed);
    return run(m, ops);
}

const char *keyrate_model_error(const struct keyrate_model *m)
{
    return m->err;
}

const struct keyrate_model_counts *keyrate_model_counts(const struct keyrate_model *m)
{
    return &m->counts;
}
