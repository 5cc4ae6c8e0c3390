/* SPDX-License-Identifier: MIT */
/*
 * test_fair_share.c - band_fair's shares measured on deterministic schedules, and the key
 * registry under a flood of distinct keys.
 *
 * Schedule: the capacity starts held by a placeholder key; every key has a backlog of
 * queued requests; each step releases the OLDEST outstanding grant (a FIFO of grants), so
 * the order of grants is decided by band_fair alone. Everything runs on the test thread
 * (wakes run inside the releases), so the results are exact and repeatable.
 */
#include "test_fair_util.h"

#define CHECK(f) assert_int_equal(band_fair_check_(f), 0)
static int band_fair_check_(const band_fair *f)
{
    return band__fair_check(f);
}

/* A FIFO of outstanding grants, fed by the grant log. */
struct sched {
    band_fair *f;
    struct fair_log *log;
    struct freq *reqs; /* indexed by id */
    unsigned consumed; /* log entries already turned into outstanding grants */
    unsigned head, tail;
    int fifo[FAIR_LOG_MAX];
};

/* Move new log entries into the FIFO. */
static void sched_pull(struct sched *s)
{
    while (s->consumed < s->log->len)
        s->fifo[s->tail++ % FAIR_LOG_MAX] = s->log->ids[s->consumed++];
}

/* Release the oldest outstanding grant. Returns 0, or -1 when none is outstanding. */
static int sched_step(struct sched *s)
{
    sched_pull(s);
    if (s->head == s->tail)
        return -1;
    int id = s->fifo[s->head++ % FAIR_LOG_MAX];
    int rc = band_fair_release(s->f, s->reqs[id].key, s->reqs[id].n);
    sched_pull(s);
    return rc;
}

/* |got - want| <= 5% of want */
static void assert_within_5pct(double got, double want)
{
    double d = got > want ? got - want : want - got;
    if (d > 0.05 * want)
        fail_msg("share %.1f is not within 5%% of %.1f", got, want);
}

/* Weights 1:2:4 with unit requests; then the weight-4 key runs dry and its share goes to
 * the others, 1:2, with no unit left idle. */
static void test_weights_124_and_idle_share(void **state)
{
    (void)state;
    static struct fair_log log;
    memset(&log, 0, sizeof(log));
    enum { NA = 2000, NB = 2000, NC = 400 };
    const uint64_t cap = 4;
    band_fair *f = fair_new(cap, 1, 1);
    assert_non_null(f);
    assert_int_equal(fair_set(f, 1, 1, 0, 0), 0);
    assert_int_equal(fair_set(f, 2, 2, 0, 0), 0);
    assert_int_equal(fair_set(f, 3, 4, 0, 0), 0);
    struct freq *reqs = calloc(NA + NB + NC + 1, sizeof(*reqs));
    assert_non_null(reqs);
    /* placeholder grants hold the capacity while the backlogs are queued */
    struct sched s = {f, &log, reqs, 0, 0, 0, {0}};
    int id = 0;
    freq_init(&reqs[id], id, &log, 99, 0, cap);
    assert_int_equal(freq_submit(f, &reqs[id]), 0);
    s.fifo[s.tail++] = id++;
    /* queue the backlogs interleaved in a bad order: the light key first */
    for (int i = 0; i < NA; i++) {
        freq_init(&reqs[id], id, &log, 1, 0, 1);
        assert_int_equal(freq_submit(f, &reqs[id++]), BAND_PENDING);
    }
    for (int i = 0; i < NB; i++) {
        freq_init(&reqs[id], id, &log, 2, 0, 1);
        assert_int_equal(freq_submit(f, &reqs[id++]), BAND_PENDING);
    }
    for (int i = 0; i < NC; i++) {
        freq_init(&reqs[id], id, &log, 3, 0, 1);
        assert_int_equal(freq_submit(f, &reqs[id++]), BAND_PENDING);
    }
    CHECK(f);

    /* Phase 1: all backlogged. 700 grants: expect 100 : 200 : 400. */
    unsigned got[4] = {0};
    while (log.len < 700)
        assert_int_equal(sched_step(&s), 0);
    for (unsigned i = 0; i < 700; i++)
        got[log.keys[i]]++;
    print_message("fair 1:2:4 phase 1 (700 grants): %u %u %u\n", got[1], got[2], got[3]);
    assert_within_5pct(got[1], 100);
    assert_within_5pct(got[2], 200);
    assert_within_5pct(got[3], 400);
    /* and on every prefix of whole rounds (7 grants) it is exact: DRR */
    for (unsigned r = 1; r <= 100; r++) {
        unsigned c[4] = {0};
        for (unsigned i = 0; i < 7 * r; i++)
            c[log.keys[i]]++;
        assert_int_equal(c[1], r);
        assert_int_equal(c[2], 2 * r);
        assert_int_equal(c[3], 4 * r);
    }

    /* Phase 2: key 3 drained its backlog; 600 more grants split 1:2, none lost. */
    band_fair_key_stats ks;
    assert_int_equal(band_fair_key_get_stats(f, 3, &ks), 0);
    assert_u64_equal(ks.waiters, 0);
    unsigned start = log.len;
    while (log.len < start + 600) {
        assert_int_equal(sched_step(&s), 0);
        band_fair_stats st;
        band_fair_get_stats(f, &st);
        assert_u64_equal(st.in_use, cap); /* work-conserving: every freed unit is regranted */
    }
    unsigned a = 0, b = 0, other = 0;
    for (unsigned i = start; i < start + 600; i++) {
        if (log.keys[i] == 1)
            a++;
        else if (log.keys[i] == 2)
            b++;
        else
            other++;
    }
    print_message("fair 1:2:4 phase 2 (key 3 idle, 600 grants): %u %u (others %u)\n", a, b, other);
    assert_int_equal(other, 0);
    assert_within_5pct(a, 200);
    assert_within_5pct(b, 400);
    CHECK(f);
    band_fair_close(f);
    assert_int_equal(band_fair_destroy(f), 0);
    free(reqs);
}

/*
 * Three always-backlogged keys with weights 1:2:4 asking one unit per request, on the FIFO
 * schedule above, with capacity @cap, base quantum @q and caps @caps (0: the capacity).
 * Runs @grants grants and stores each key's count in @got. Fails the test unless, after
 * every grant, the normalized shares got[i] / weight[i] lie within one base quantum of each
 * other: the rounding of a deficit round robin, and no more.
 */
static void run_backlogged_124(uint64_t cap, uint64_t q, const uint64_t caps[3], unsigned grants,
                               unsigned got[3])
{
    static struct fair_log log;
    memset(&log, 0, sizeof(log));
    static const uint64_t w[3] = {1, 2, 4};
    const unsigned backlog = grants + 1;
    band_fair *f = fair_new(cap, 1, q);
    assert_non_null(f);
    for (uint64_t k = 0; k < 3; k++)
        assert_int_equal(fair_set(f, k + 1, (uint32_t)w[k], caps[k], 0), 0);
    struct freq *reqs = calloc(3 * backlog + 1, sizeof(*reqs));
    assert_non_null(reqs);
    struct sched s = {f, &log, reqs, 0, 0, 0, {0}};
    int id = 0;
    freq_init(&reqs[id], id, &log, 99, 0, cap); /* holds the capacity while keys queue */
    assert_int_equal(freq_submit(f, &reqs[id]), 0);
    s.fifo[s.tail++] = id++;
    for (uint64_t k = 1; k <= 3; k++) {
        for (unsigned i = 0; i < backlog; i++) {
            freq_init(&reqs[id], id, &log, k, 0, 1);
            assert_int_equal(freq_submit(f, &reqs[id++]), BAND_PENDING);
        }
    }
    CHECK(f);
    unsigned c[4] = {0}, counted = 0, first_off = 0;
    while (counted < grants) {
        assert_int_equal(sched_step(&s), 0);
        for (; counted < log.len && counted < grants; counted++) {
            c[log.keys[counted]]++;
            /* c[i] / w[i] - c[j] / w[j] <= q, for every pair: */
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 3; j++)
                    if (first_off == 0 && c[i + 1] * w[j] > c[j + 1] * w[i] + q * w[i] * w[j])
                        first_off = counted + 1;
        }
    }
    if (first_off != 0)
        fail_msg("capacity %llu quantum %llu: %u %u %u of %u grants; more than a quantum apart "
                 "after grant %u",
                 (unsigned long long)cap, (unsigned long long)q, c[1], c[2], c[3], grants,
                 first_off);
    CHECK(f);
    for (int k = 0; k < 3; k++)
        got[k] = c[k + 1];
    band_fair_close(f);
    assert_int_equal(band_fair_destroy(f), 0);
    free(reqs);
}

/* Weights 1:2:4 receive exactly 100:200:400 of every 700 grants (per base quantum), whatever
 * the capacity: also when a key's quantum (4 units for weight 4) exceeds the capacity and
 * so its own cap, where it can never hold its whole quantum at once. */
static void test_shares_exact_any_capacity(void **state)
{
    (void)state;
    static const uint64_t dflt[3] = {0, 0, 0};
    for (uint64_t q = 1; q <= 3; q++) {
        for (uint64_t cap = 1; cap <= 9; cap++) {
            unsigned got[3];
            run_backlogged_124(cap, q, dflt, 700 * (unsigned)q, got);
            if (got[0] != 100 * q || got[1] != 200 * q || got[2] != 400 * q)
                fail_msg("capacity %llu quantum %llu: %u %u %u of %u grants, want %llu %llu %llu",
                         (unsigned long long)cap, (unsigned long long)q, got[0], got[1], got[2],
                         700 * (unsigned)q, (unsigned long long)(100 * q),
                         (unsigned long long)(200 * q), (unsigned long long)(400 * q));
        }
    }
}

/* Caps below the quantum: a key whose cap is below its quantum still receives its share
 * when the cap leaves room for it; a cap that leaves no room gives the key what the cap
 * allows, and the others split the rest by their weights. */
static void test_shares_caps_below_quantum(void **state)
{
    (void)state;
    unsigned got[3];
    /* capacity 3, the weight-1 key capped at 1 and the weight-2 key at 1: no share needs
     * more than the cap allows (each grant is held while 3 grants are outstanding) */
    static const uint64_t a1[3] = {1, 0, 0}, b1[3] = {0, 1, 0};
    run_backlogged_124(3, 1, a1, 700, got);
    assert_int_equal(got[0], 100);
    assert_int_equal(got[1], 200);
    assert_int_equal(got[2], 400);
    run_backlogged_124(3, 2, b1, 1400, got);
    assert_int_equal(got[0], 200);
    assert_int_equal(got[1], 400);
    assert_int_equal(got[2], 800);
    /* capacity 6, the weight-4 key capped at 2 of its 4/7: it holds its cap, so it gets
     * one grant in three; the others split the rest 1:2 */
    static const uint64_t c2[3] = {0, 0, 2};
    for (uint64_t q = 1; q <= 2; q++) {
        unsigned n = 700 * (unsigned)q;
        unsigned rest[3];
        memset(rest, 0, sizeof(rest));
        /* run_backlogged_124's pairwise bound does not apply to a key its cap holds back:
         * check the shares here instead */
        static struct fair_log log;
        memset(&log, 0, sizeof(log));
        band_fair *f = fair_new(6, 1, q);
        assert_non_null(f);
        assert_int_equal(fair_set(f, 1, 1, c2[0], 0), 0);
        assert_int_equal(fair_set(f, 2, 2, c2[1], 0), 0);
        assert_int_equal(fair_set(f, 3, 4, c2[2], 0), 0);
        struct freq *reqs = calloc(3 * (n + 1) + 1, sizeof(*reqs));
        assert_non_null(reqs);
        struct sched s = {f, &log, reqs, 0, 0, 0, {0}};
        int id = 0;
        freq_init(&reqs[id], id, &log, 99, 0, 6);
        assert_int_equal(freq_submit(f, &reqs[id]), 0);
        s.fifo[s.tail++] = id++;
        for (uint64_t k = 1; k <= 3; k++) {
            for (unsigned i = 0; i <= n; i++) {
                freq_init(&reqs[id], id, &log, k, 0, 1);
                assert_int_equal(freq_submit(f, &reqs[id++]), BAND_PENDING);
            }
        }
        while (log.len < n)
            assert_int_equal(sched_step(&s), 0);
        for (unsigned i = 0; i < n; i++)
            rest[log.keys[i] - 1]++;
        print_message("fair capacity 6, weight-4 key capped at 2, quantum %llu: %u %u %u\n",
                      (unsigned long long)q, rest[0], rest[1], rest[2]);
        assert_int_equal(rest[2], n / 3); /* 2 of every 6 grants outstanding */
        unsigned ab = rest[0] + rest[1];
        assert_true(3 * rest[0] >= ab - 3 * q && 3 * rest[0] <= ab + 3 * q);
        CHECK(f);
        band_fair_close(f);
        assert_int_equal(band_fair_destroy(f), 0);
        free(reqs);
    }
}

/* Requests of different sizes: shares are in units, not requests. Weights 1:1:2 asking
 * 4, 1 and 2 units per request receive units 1:1:2. */
static void test_weighted_units(void **state)
{
    (void)state;
    static struct fair_log log;
    memset(&log, 0, sizeof(log));
    enum { N = 1500 };
    const uint64_t cap = 8;
    band_fair *f = fair_new(cap, 1, 2);
    assert_non_null(f);
    assert_int_equal(fair_set(f, 1, 1, 0, 0), 0);
    assert_int_equal(fair_set(f, 2, 1, 0, 0), 0);
    assert_int_equal(fair_set(f, 3, 2, 0, 0), 0);
    struct freq *reqs = calloc(3 * N + 1, sizeof(*reqs));
    assert_non_null(reqs);
    struct sched s = {f, &log, reqs, 0, 0, 0, {0}};
    int id = 0;
    freq_init(&reqs[id], id, &log, 99, 0, cap);
    assert_int_equal(freq_submit(f, &reqs[id]), 0);
    s.fifo[s.tail++] = id++;
    static const uint64_t size[4] = {0, 4, 1, 2};
    for (int i = 0; i < N; i++) {
        for (uint64_t k = 1; k <= 3; k++) {
            freq_init(&reqs[id], id, &log, k, 0, size[k]);
            assert_int_equal(freq_submit(f, &reqs[id++]), BAND_PENDING);
        }
    }
    uint64_t units[4] = {0};
    unsigned counted = 0;
    while (units[1] + units[2] + units[3] < 4000) {
        assert_int_equal(sched_step(&s), 0);
        for (; counted < log.len; counted++)
            units[log.keys[counted]] += size[log.keys[counted]];
    }
    uint64_t total = units[1] + units[2] + units[3];
    print_message("fair units 1:1:2 (sizes 4/1/2): %llu %llu %llu of %llu\n",
                  (unsigned long long)units[1], (unsigned long long)units[2],
                  (unsigned long long)units[3], (unsigned long long)total);
    assert_within_5pct((double)units[1], (double)total / 4);
    assert_within_5pct((double)units[2], (double)total / 4);
    assert_within_5pct((double)units[3], (double)total / 2);
    CHECK(f);
    band_fair_close(f);
    assert_int_equal(band_fair_destroy(f), 0);
    free(reqs);
}

/* Requests of BAND_FAIR_MAX_CAPACITY units over a quantum of 1 push the rounds past the
 * rebase point. Key 2 is granted its giant request and parks at its cap with a 2-unit
 * head; key 4, queued one giant request later, has the turn, which rebases the rounds;
 * then key 4's weight rises to 2. Key 4 is then owed more than its request (half of it
 * was due by the round key 2 was served in), so it is caught up to the lag bound with its
 * stamp, ahead of key 2 (back from its cap there with a later stamp): the release of key 2
 * grants key 4. (The rebase used to turn key 4's rounds into credit at weight 1, which
 * left it due one round after key 2, and key 2 was granted first.) */
static void test_rebase_then_weight(void **state)
{
    (void)state;
    static struct fair_log log;
    memset(&log, 0, sizeof(log));
    const uint64_t max = BAND_FAIR_MAX_CAPACITY;
    band_fair *f = fair_new(max, 1, 1);
    assert_non_null(f);
    static struct freq reqs[3];
    static const uint64_t key[3] = {2, 2, 4};
    static const uint64_t n[3] = {BAND_FAIR_MAX_CAPACITY, 2, BAND_FAIR_MAX_CAPACITY};
    assert_int_equal(band_fair_try_acquire(f, 99, 0, max), 0);
    for (int i = 0; i < 3; i++) {
        freq_init(&reqs[i], i, &log, key[i], 0, n[i]);
        assert_int_equal(freq_submit(f, &reqs[i]), BAND_PENDING);
    }
    uint64_t before = f->cls[0].vround; /* key 2's due round; key 4 is due max rounds later */
    assert_int_equal(band_fair_release(f, 99, max), 0);
    assert_int_equal(log.len, 1);
    assert_int_equal(log.ids[0], 0);
    assert_true(f->cls[0].vround < before + max); /* rebased */
    CHECK(f);
    assert_int_equal(fair_set(f, 4, 2, 0, 0), 0);
    assert_int_equal(log.len, 1);
    CHECK(f);
    assert_int_equal(band_fair_release(f, 2, max), 0);
    assert_int_equal(log.len, 2);
    assert_int_equal(log.ids[1], 2);
    assert_u64_equal(fair_in_use(f), max);
    CHECK(f);
    band_fair_close(f);
    assert_int_equal(band_fair_destroy(f), 0);
}

/* Equal weights, one key with a deep backlog and 63 keys with one request each: every
 * newcomer is served within one round. */
static void test_many_keys_one_round(void **state)
{
    (void)state;
    static struct fair_log log;
    memset(&log, 0, sizeof(log));
    enum { DEEP = 1000, FEW = 63 };
    band_fair *f = fair_new(1, 1, 1);
    assert_non_null(f);
    struct freq *reqs = calloc(DEEP + FEW + 1, sizeof(*reqs));
    assert_non_null(reqs);
    struct sched s = {f, &log, reqs, 0, 0, 0, {0}};
    int id = 0;
    freq_init(&reqs[id], id, &log, 999, 0, 1);
    assert_int_equal(freq_submit(f, &reqs[id]), 0);
    s.fifo[s.tail++] = id++;
    for (int i = 0; i < DEEP; i++) {
        freq_init(&reqs[id], id, &log, 0, 0, 1);
        assert_int_equal(freq_submit(f, &reqs[id++]), BAND_PENDING);
    }
    for (int i = 0; i < FEW; i++) {
        freq_init(&reqs[id], id, &log, (uint64_t)i + 1, 0, 1);
        assert_int_equal(freq_submit(f, &reqs[id++]), BAND_PENDING);
    }
    while (log.len < 2 * (FEW + 1))
        assert_int_equal(sched_step(&s), 0);
    /* in the first 64 grants: key 0 once, every newcomer once */
    unsigned deep = 0;
    for (unsigned i = 0; i < FEW + 1; i++)
        deep += log.keys[i] == 0;
    assert_int_equal(deep, 1);
    band_fair_close(f);
    assert_int_equal(band_fair_destroy(f), 0);
    free(reqs);
}

/* The registry under a flood of distinct keys stays within max_keys. */
static void test_registry_flood(void **state)
{
    (void)state;
    band_fair_opts o = {0};
    o.max_keys = 64;
    band_fair *f = NULL;
    assert_int_equal(band_fair_create(&f, 1000, &o), 0);
    uint64_t rng = 42;
    /* 1. each distinct key acquires and releases: its state lives only meanwhile */
    for (int i = 0; i < 100000; i++) {
        uint64_t key = test_rng_next(&rng);
        assert_int_equal(band_fair_try_acquire(f, key, 0, 1), 0);
        assert_int_equal(band_fair_release(f, key, 1), 0);
    }
    band_fair_stats st;
    band_fair_get_stats(f, &st);
    assert_u64_equal(st.keys, 0);
    assert_u64_equal(st.keys_created, 100000);
    assert_u64_equal(st.keys_evicted, 100000);
    assert_true(f->nfree <= FAIR_FREE_CACHE);
    /* 2. 64 keys hold units; every further distinct key is refused, and changes nothing */
    for (uint64_t k = 0; k < 64; k++)
        assert_int_equal(band_fair_try_acquire(f, k, 0, 1), 0);
    struct freq q;
    for (int i = 0; i < 10000; i++) {
        uint64_t key = 1000 + test_rng_next(&rng) % UINT64_C(1000000000);
        assert_int_equal(band_fair_try_acquire(f, key, 0, 1), BAND_ENOMEM);
        freq_init(&q, 0, NULL, key, 0, 1);
        assert_int_equal(freq_submit(f, &q), BAND_ENOMEM);
        assert_int_equal(band_waiter_status(&q.r.w), BAND_ENOMEM);
    }
    band_fair_get_stats(f, &st);
    assert_u64_equal(st.keys, 64);
    assert_u64_equal(st.key_refusals, 20000);
    assert_u64_equal(st.in_use, 64);
    assert_true(f->tab_mask + 1 <= f->tab_max);
    assert_true(f->tab_max <= 64);
    CHECK(f);
    /* live keys keep working */
    assert_int_equal(band_fair_try_acquire(f, 5, 0, 10), 0);
    assert_int_equal(band_fair_release(f, 5, 11), 0);
    /* 3. once a key goes idle, a new key fits */
    assert_int_equal(band_fair_try_acquire(f, 777777, 0, 1), 0);
    for (uint64_t k = 0; k < 64; k++)
        (void)band_fair_release(f, k, 1);
    assert_int_equal(band_fair_release(f, 777777, 1), 0);
    band_fair_get_stats(f, &st);
    assert_u64_equal(st.keys, 0);
    assert_u64_equal(st.in_use, 0);
    CHECK(f);
    assert_int_equal(band_fair_destroy(f), 0);
}

/* Thousands of live keys: the table grows, lookups stay right. */
static void test_registry_many_live(void **state)
{
    (void)state;
    band_fair_opts o = {0};
    o.max_keys = 5000;
    band_fair *f = NULL;
    assert_int_equal(band_fair_create(&f, 100000, &o), 0);
    for (uint64_t k = 0; k < 5000; k++)
        assert_int_equal(band_fair_try_acquire(f, k * 7919, 0, 1 + k % 3), 0);
    assert_int_equal(band_fair_try_acquire(f, 1, 0, 1), BAND_ENOMEM);
    assert_true(f->tab_mask + 1 >= 4096);
    CHECK(f);
    for (uint64_t k = 0; k < 5000; k++) {
        band_fair_key_stats ks;
        assert_int_equal(band_fair_key_get_stats(f, k * 7919, &ks), 0);
        assert_u64_equal(ks.held, 1 + k % 3);
        assert_int_equal(band_fair_release(f, k * 7919, 1 + k % 3), 0);
    }
    band_fair_stats st;
    band_fair_get_stats(f, &st);
    assert_u64_equal(st.keys, 0);
    CHECK(f);
    assert_int_equal(band_fair_destroy(f), 0);
}

/*
 * Random operation sequences (submit, try, release, cancel, key changes) on one thread,
 * checked after every step against a count model: units held per key, exactly one end per
 * queued request, and band__fair_check() (which includes the dispatch's fixpoint: nothing
 * left queued that the rules would grant now).
 */
enum { RND_SLOTS = 48, RND_KEYS = 8 };
enum { SLOT_FREE, SLOT_PENDING };

struct rnd {
    band_fair *f;
    struct freq q[RND_SLOTS];
    int state[RND_SLOTS];
    uint64_t held[RND_KEYS];
    uint64_t rng;
};

/* Account for the wakes that ran since the last step. Returns the number of errors. */
static int rnd_collect(struct rnd *m)
{
    int errors = 0;
    for (int i = 0; i < RND_SLOTS; i++) {
        if (m->state[i] != SLOT_PENDING)
            continue;
        int wakes = atomic_load(&m->q[i].wakes);
        if (wakes > 1)
            errors++;
        if (wakes == 1) {
            int st = atomic_load(&m->q[i].status);
            if (st == 0)
                m->held[m->q[i].key] += m->q[i].n;
            else if (st != BAND_E2BIG)
                errors++;
            m->state[i] = SLOT_FREE;
        }
    }
    return errors;
}

static void rnd_step(struct rnd *m)
{
    uint64_t key = test_rng_next(&m->rng) % RND_KEYS;
    uint32_t cls = 2 - (uint32_t)(test_rng_next(&m->rng) % 3); /* class 2: the least urgent */
    uint64_t n = test_rng_range(&m->rng, 1, 5);
    int i = (int)(test_rng_next(&m->rng) % RND_SLOTS);
    int rc;
    switch (test_rng_next(&m->rng) % 8) {
    case 0:
    case 1:
    case 2:
        if (m->state[i] != SLOT_FREE)
            return;
        freq_init(&m->q[i], i, NULL, key, cls, n);
        rc = freq_submit(m->f, &m->q[i]);
        if (rc == 0)
            m->held[key] += n;
        else if (rc == BAND_PENDING)
            m->state[i] = SLOT_PENDING;
        else
            assert_true(rc == BAND_E2BIG || rc == BAND_ENOMEM);
        break;
    case 3:
        rc = band_fair_try_acquire(m->f, key, cls, n);
        if (rc == 0)
            m->held[key] += n;
        else
            assert_true(rc == BAND_EAGAIN || rc == BAND_E2BIG || rc == BAND_ENOMEM);
        break;
    case 4:
    case 5:
        if (m->held[key] == 0) {
            assert_int_equal(band_fair_release(m->f, key, 1), BAND_EINVAL);
            return;
        }
        n = test_rng_range(&m->rng, 1, m->held[key]);
        assert_int_equal(band_fair_release(m->f, key, n), 0);
        m->held[key] -= n;
        break;
    case 6:
        if (m->state[i] != SLOT_PENDING)
            return;
        rc = band_waiter_cancel(&m->q[i].r.w,
                                test_rng_next(&m->rng) % 2 ? BAND_ECANCELED : BAND_ETIMEDOUT);
        if (rc == 0) {
            assert_int_equal(atomic_load(&m->q[i].wakes), 0);
            m->state[i] = SLOT_FREE;
        } else {
            assert_int_equal(rc, BAND_EALREADY);
        }
        break;
    default:
        if (key >= 3)
            key = key % 3;
        if (test_rng_next(&m->rng) % 3 == 0) {
            assert_int_equal(band_fair_key_unset(m->f, key), 0);
        } else {
            band_fair_key_opts o = {(uint32_t)test_rng_range(&m->rng, 1, 4),
                                    test_rng_range(&m->rng, 2, 12), 0};
            o.reserve = test_rng_range(&m->rng, 0, 3);
            rc = band_fair_key_set(m->f, key, &o);
            assert_true(rc == 0 || rc == BAND_ENOMEM || rc == BAND_EINVAL);
        }
        break;
    }
}

static void test_random_ops(void **state)
{
    (void)state;
    struct rnd *m = calloc(1, sizeof(*m));
    assert_non_null(m);
    for (uint64_t seed = 1; seed <= 60; seed++) {
        band_fair_opts o = {0};
        o.classes = 3;
        o.headroom[1] = 3; /* class 1 may fill 9 of the 12 units, class 2 only 6 */
        o.headroom[2] = 6;
        o.max_keys = 6;
        o.quantum = 1 + seed % 3;
        memset(m, 0, sizeof(*m));
        m->rng = seed;
        assert_int_equal(band_fair_create(&m->f, 12, &o), 0);
        for (int step = 0; step < 3000; step++) {
            rnd_step(m);
            assert_int_equal(rnd_collect(m), 0);
            assert_int_equal(band__fair_check(m->f), 0);
            band_fair_stats st;
            band_fair_get_stats(m->f, &st);
            uint64_t sum = 0;
            for (int k = 0; k < RND_KEYS; k++)
                sum += m->held[k];
            assert_u64_equal(st.in_use, sum);
        }
        for (int k = 0; k < RND_KEYS; k++) {
            band_fair_key_stats ks;
            band_fair_key_get_stats(m->f, (uint64_t)k, &ks);
            assert_u64_equal(ks.held, m->held[k]);
        }
        /* quiesce: close fails the rest, every unit comes back */
        assert_int_equal(band_fair_close(m->f), 0);
        for (int i = 0; i < RND_SLOTS; i++) {
            if (m->state[i] == SLOT_PENDING) {
                assert_int_equal(atomic_load(&m->q[i].wakes), 1);
                assert_int_equal(atomic_load(&m->q[i].status), BAND_ECLOSED);
            }
        }
        for (int k = 0; k < RND_KEYS; k++)
            if (m->held[k] > 0)
                assert_int_equal(band_fair_release(m->f, (uint64_t)k, m->held[k]), 0);
        band_fair_stats st;
        band_fair_get_stats(m->f, &st);
        assert_u64_equal(st.in_use, 0);
        assert_u64_equal(st.keys, st.keys_pinned);
        assert_int_equal(band__fair_check(m->f), 0);
        assert_int_equal(band_fair_destroy(m->f), 0);
    }
    free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_weights_124_and_idle_share),
        cmocka_unit_test(test_shares_exact_any_capacity),
        cmocka_unit_test(test_shares_caps_below_quantum),
        cmocka_unit_test(test_weighted_units),
        cmocka_unit_test(test_rebase_then_weight),
        cmocka_unit_test(test_many_keys_one_round),
        cmocka_unit_test(test_registry_flood),
        cmocka_unit_test(test_registry_many_live),
        cmocka_unit_test(test_random_ops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
