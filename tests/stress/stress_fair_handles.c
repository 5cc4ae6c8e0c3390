/* SPDX-License-Identifier: MIT */
/*
 * stress_fair_handles.c - more threads than cores on one band_fair, mixing the lock-free
 * path of key handles (try and release while nothing is queued) with the locked calls by
 * key id: tries, blocking acquires that queue (which shuts the gate the handles look at),
 * releases by id of units taken through a handle and the other way round, and handles put
 * and taken again mid-run. Four scenarios: a roomy fair (capacity 8, caps 2..5, a class
 * with headroom), a tight one (capacity 2, caps 1), where the gate opens and shuts all
 * the time, and the roomy one without caps (the handles count their own units), once with
 * a thread that switches two keys between no cap, a cap and a reservation all the while
 * (each switch folds their handles' counts into the key's shared word). Each is bounded by
 * iterations and wall time (1.5 s; 0.75 s under sanitizers).
 *
 * Exact accounting. Every worker keeps what it holds per key and adds it, after a grant
 * and before a release, to shared shadow counters: the shadow of a key may never pass its
 * cap, the total never the capacity (both are lower bounds of what the fair counts). A
 * worker releases everything it holds before it blocks, so some holder always runs; a
 * blocking acquire that times out after 5 s is a lost hand-off. At the end every unit is
 * back, nothing waits, band__fair_check() holds, the classes' granted counters equal the
 * grants the workers saw (handles' lock-free grants included, also across a put), and only
 * the configured keys remain. Workers never assert; the main thread checks their counts.
 */
#include "test.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "prim/fair/fair_internal.h"

enum { THREADS = 6, ITERS = 60000, KEYS = 5, CLASSES = 2 };

struct shared {
    band_fair *f;
    uint64_t capacity;
    uint64_t cap[KEYS]; /* the caps the keys were configured with (key 4: the default) */
    band_time end;
    _Atomic uint64_t shadow_total;
    _Atomic uint64_t shadow_key[KEYS];
};

struct worker {
    struct shared *sh;
    struct test_thread t;
    uint64_t seed;
    int own; /* the key of its handle */
    band_fair_handle *h;
    uint64_t held[KEYS];
    uint64_t granted[CLASSES], errors, lost, iters, handle_grants, puts;
};

static void shadow_add(struct worker *w, uint64_t key, uint64_t n)
{
    struct shared *sh = w->sh;
    w->held[key] += n;
    uint64_t k = atomic_fetch_add(&sh->shadow_key[key], n) + n;
    uint64_t t = atomic_fetch_add(&sh->shadow_total, n) + n;
    if (k > sh->cap[key] || t > sh->capacity)
        w->errors++; /* more granted than the cap or the capacity allow */
}

static void shadow_sub(struct worker *w, uint64_t key, uint64_t n)
{
    w->held[key] -= n;
    atomic_fetch_sub(&w->sh->shadow_key[key], n);
    atomic_fetch_sub(&w->sh->shadow_total, n);
}

/* Return @n of @key's units, through the handle when it is on that key and @via says so. */
static void give_back(struct worker *w, uint64_t key, uint64_t n, int via)
{
    shadow_sub(w, key, n);
    int rc = via && (int)key == w->own ? band_fair_handle_release(w->h, n)
                                       : band_fair_release(w->sh->f, key, n);
    if (rc != 0)
        w->errors++;
}

static void give_back_all(struct worker *w, uint64_t *rng)
{
    for (uint64_t k = 0; k < KEYS; k++)
        if (w->held[k] > 0)
            give_back(w, k, w->held[k], (int)(test_rng_next(rng) & 1));
}

static int worker_main(void *arg)
{
    struct worker *w = arg;
    struct shared *sh = w->sh;
    uint64_t rng = w->seed;
    for (int i = 0; i < ITERS && band_now() < sh->end; i++) {
        w->iters++;
        uint64_t r = test_rng_range(&rng, 0, 99);
        uint32_t cls = (uint32_t)test_rng_range(&rng, 0, CLASSES - 1);
        uint64_t n = test_rng_range(&rng, 1, 2);
        uint64_t key = test_rng_range(&rng, 0, KEYS - 1);
        uint64_t total = 0;
        for (int k = 0; k < KEYS; k++)
            total += w->held[k];
        if (total >= 4 && r < 70)
            r = 90; /* holding plenty: give some back instead */
        if (r < 45) {
            int rc = band_fair_handle_try_acquire(w->h, cls, n);
            if (rc == 0) {
                shadow_add(w, (uint64_t)w->own, n);
                w->granted[cls]++;
                w->handle_grants++;
            } else if (rc != BAND_EAGAIN && rc != BAND_E2BIG) {
                w->errors++;
            }
        } else if (r < 55) {
            int rc = band_fair_try_acquire(sh->f, key, cls, n);
            if (rc == 0) {
                shadow_add(w, key, n);
                w->granted[cls]++;
            } else if (rc != BAND_EAGAIN && rc != BAND_E2BIG) {
                w->errors++;
            }
        } else if (r < 68) {
            /* queue behind the others: holding nothing, so every holder can go on */
            give_back_all(w, &rng);
            int rc = band_fair_acquire(sh->f, key, cls, n, band_deadline_after(5 * BAND_SEC), NULL);
            if (rc == 0) {
                shadow_add(w, key, n);
                w->granted[cls]++;
            } else if (rc == BAND_ETIMEDOUT) {
                w->lost++;
            } else if (rc != BAND_E2BIG) {
                w->errors++;
            }
        } else if (r < 70) {
            /* a new handle on the same key; what it granted stays counted */
            band_fair_handle *h = NULL;
            if (band_fair_handle_get(sh->f, (uint64_t)w->own, &h) != 0 ||
                band_fair_handle_put(w->h) != 0)
                w->errors++;
            w->h = h;
            w->puts++;
        } else {
            for (uint64_t k = 0; k < KEYS; k++) {
                uint64_t kk = (key + k) % KEYS;
                if (w->held[kk] > 0) {
                    give_back(w, kk, test_rng_range(&rng, 1, w->held[kk]),
                              (int)(test_rng_next(&rng) & 1));
                    break;
                }
            }
        }
    }
    give_back_all(w, &rng);
    return 0;
}

/* Keys 1 and 2 in turn: the capacity as cap (their handles count their own units), a cap
 * of 3, a reservation of 2; each switch away from the first folds the handles' counts into
 * the key's shared word while the workers run. */
static int toggler_main(void *arg)
{
    struct shared *sh = arg;
    int errors = 0;
    for (unsigned i = 0; band_now() < sh->end; i++) {
        static const band_fair_key_opts opts[3] = {{1, 0, 0}, {2, 3, 0}, {1, 0, 2}};
        if (band_fair_key_set(sh->f, 1 + i % 2, &opts[(i / 2) % 3]) != 0)
            errors++;
        if (i % 8 == 7)
            sched_yield();
    }
    return errors;
}

static void run_scenario(uint64_t capacity, const uint64_t caps[KEYS], uint64_t headroom1,
                         bool toggle)
{
    band_fair_opts fo = {0};
    fo.classes = CLASSES;
    fo.headroom[1] = headroom1;
    struct shared sh;
    memset(&sh, 0, sizeof(sh));
    sh.capacity = capacity;
    assert_int_equal(band_fair_create(&sh.f, capacity, &fo), 0);
    for (int k = 0; k < KEYS; k++) {
        /* a toggled key's units may lie above a cap just lowered: only the capacity binds */
        sh.cap[k] = caps[k] == 0 || (toggle && (k == 1 || k == 2)) ? capacity : caps[k];
        atomic_init(&sh.shadow_key[k], 0);
        if (caps[k] != 0) {
            band_fair_key_opts o = {1 + (uint32_t)k % 2, caps[k], 0};
            assert_int_equal(band_fair_key_set(sh.f, (uint64_t)k, &o), 0);
        }
    }
    atomic_init(&sh.shadow_total, 0);
    sh.end = band_deadline_after(test_under_sanitizer() ? 3 * BAND_SEC / 4 : 3 * BAND_SEC / 2);

    struct worker w[THREADS];
    memset(w, 0, sizeof(w));
    for (int i = 0; i < THREADS; i++) {
        w[i].sh = &sh;
        w[i].seed = 0x4a4d0000u + (uint64_t)i * 104729u + capacity;
        w[i].own = i % KEYS;
        assert_int_equal(band_fair_handle_get(sh.f, (uint64_t)w[i].own, &w[i].h), 0);
    }
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(test_thread_start(&w[i].t, worker_main, &w[i]), 0);
    struct test_thread tog;
    if (toggle)
        assert_int_equal(test_thread_start(&tog, toggler_main, &sh), 0);
    uint64_t granted[CLASSES] = {0}, errors = 0, lost = 0, iters = 0, hg = 0, puts = 0;
    for (int i = 0; i < THREADS; i++) {
        assert_int_equal(test_thread_join(&w[i].t), 0);
        for (int c = 0; c < CLASSES; c++)
            granted[c] += w[i].granted[c];
        errors += w[i].errors;
        lost += w[i].lost;
        iters += w[i].iters;
        hg += w[i].handle_grants;
        puts += w[i].puts;
    }
    if (toggle)
        assert_int_equal(test_thread_join(&tog), 0);
    band_fair_stats st;
    assert_int_equal(band_fair_get_stats(sh.f, &st), 0);
    print_message("stress_fair_handles capacity %llu: %llu ops, %llu + %llu grants (%llu through "
                  "handles), %llu handle swaps, lost %llu, errors %llu\n",
                  (unsigned long long)capacity, (unsigned long long)iters,
                  (unsigned long long)granted[0], (unsigned long long)granted[1],
                  (unsigned long long)hg, (unsigned long long)puts, (unsigned long long)lost,
                  (unsigned long long)errors);
    assert_u64_equal(errors, 0);
    assert_u64_equal(lost, 0);
    assert_true(hg > 0);
    assert_u64_equal(atomic_load(&sh.shadow_total), 0);
    assert_int_equal(band__fair_check(sh.f), 0);
    assert_u64_equal(st.in_use, 0);
    assert_u64_equal(st.waiters, 0);
    for (int c = 0; c < CLASSES; c++)
        assert_u64_equal(st.cls[c].granted, granted[c]);
    for (int k = 0; k < KEYS; k++) {
        band_fair_key_stats ks;
        assert_int_equal(band_fair_key_get_stats(sh.f, (uint64_t)k, &ks), 0);
        assert_u64_equal(ks.held, 0);
    }
    assert_int_equal(band_fair_destroy(sh.f), BAND_EBUSY); /* handles are live */
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(band_fair_handle_put(w[i].h), 0);
    assert_int_equal(band_fair_get_stats(sh.f, &st), 0);
    for (int c = 0; c < CLASSES; c++)
        assert_u64_equal(st.cls[c].granted, granted[c]);
    assert_u64_equal(st.keys, st.keys_pinned); /* the unconfigured key is evicted */
    assert_int_equal(band__fair_check(sh.f), 0);
    assert_int_equal(band_fair_close(sh.f), 0);
    assert_int_equal(band_fair_destroy(sh.f), 0);
}

static void test_roomy(void **state)
{
    (void)state;
    static const uint64_t caps[KEYS] = {3, 2, 5, 4, 0};
    run_scenario(8, caps, 2, false);
}

static void test_tight(void **state)
{
    (void)state;
    static const uint64_t caps[KEYS] = {1, 1, 1, 1, 0};
    run_scenario(2, caps, 1, false);
}

/* No cap binds: every handle counts its own units (key 0 has two handles). */
static void test_split(void **state)
{
    (void)state;
    static const uint64_t caps[KEYS] = {0, 0, 0, 0, 0};
    run_scenario(8, caps, 2, false);
}

/* The same with keys 1 and 2 switched between the two kinds all the time. */
static void test_split_toggled(void **state)
{
    (void)state;
    static const uint64_t caps[KEYS] = {0, 0, 0, 0, 0};
    run_scenario(8, caps, 2, true);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roomy),
        cmocka_unit_test(test_tight),
        cmocka_unit_test(test_split),
        cmocka_unit_test(test_split_toggled),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
