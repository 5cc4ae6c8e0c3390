/* SPDX-License-Identifier: MIT */
/*
 * test_fair_split.c - the split accounting of key handles against a reference model.
 *
 * A key whose cap binds no grant and that has no reservation lets its handles count their
 * own units; its units held are then its shared word plus every handle's count, and a
 * release by key id, or through another handle, takes them from wherever they lie. A cap
 * or reservation set on the key folds the handles' counts back into the shared word (the
 * cap binds again), and so does putting a handle. Random single-threaded runs mix tries
 * and releases by key id and through several handles per key (inline and exported calls),
 * handles got and put with units held, and key changes that switch keys between the two
 * kinds; with nothing ever queued the answers follow from units held, caps and limits
 * alone, and after every step each key's units held, the units in use and
 * band__fair_check() must match the model exactly. And a cap set while a try is in flight
 * waits for its count before it folds it.
 */
#include "test.h"

#include <sched.h>
#include <string.h>

#include "prim/fair/fair_internal.h"

enum { CAPACITY = 10, HEADROOM1 = 3, KEYS = 4, SLOTS = 3, STEPS = 20000 };

struct model {
    band_fair *f;
    band_fair_handle *h[KEYS][SLOTS];
    uint64_t held[KEYS], cap[KEYS], reserve[KEYS], in_use;
    uint64_t rng;
    int step;
    /* how the runs went: each path must be reached */
    uint64_t split_grants, capped_grants, cross_releases, folds_with_units, puts_with_units;
};

static uint64_t limit_of(uint32_t cls)
{
    return cls == 0 ? CAPACITY : CAPACITY - HEADROOM1;
}

static uint64_t reserved_total(const struct model *m)
{
    uint64_t s = 0;
    for (int k = 0; k < KEYS; k++)
        s += m->reserve[k];
    return s;
}

/* Units of @k that lie in its handles' own counts (to see which paths ran). */
static uint64_t in_handles(const struct model *m, int k)
{
    uint64_t s = 0;
    for (int j = 0; j < SLOTS; j++)
        if (m->h[k][j] != NULL)
            s += atomic_load(&m->h[k][j]->taken) - atomic_load(&m->h[k][j]->given);
    return s;
}

static bool is_split(const struct model *m, int k)
{
    return m->reserve[k] == 0 && m->cap[k] >= CAPACITY;
}

static void compare(struct model *m, const char *what)
{
    band_fair_stats st;
    assert_int_equal(band_fair_get_stats(m->f, &st), 0);
    if (st.in_use != m->in_use)
        fail_msg("step %d (%s): in_use %llu, model %llu", m->step, what,
                 (unsigned long long)st.in_use, (unsigned long long)m->in_use);
    for (int k = 0; k < KEYS; k++) {
        band_fair_key_stats ks;
        assert_int_equal(band_fair_key_get_stats(m->f, (uint64_t)k, &ks), 0);
        if (ks.held != m->held[k])
            fail_msg("step %d (%s): key %d holds %llu, model %llu", m->step, what, k,
                     (unsigned long long)ks.held, (unsigned long long)m->held[k]);
        if (ks.live && ks.cap != m->cap[k])
            fail_msg("step %d (%s): key %d cap %llu, model %llu", m->step, what, k,
                     (unsigned long long)ks.cap, (unsigned long long)m->cap[k]);
        if (!is_split(m, k) && in_handles(m, k) != 0)
            fail_msg("step %d (%s): key %d is capped and its handles count %llu units", m->step,
                     what, k, (unsigned long long)in_handles(m, k));
    }
    int rc = band__fair_check(m->f);
    if (rc != 0)
        fail_msg("step %d (%s): band__fair_check() failed at line %d", m->step, what, -rc);
}

/* A handle of @k, or NULL (then the call goes by key id). */
static band_fair_handle *pick_handle(struct model *m, int k)
{
    int j = (int)test_rng_range(&m->rng, 0, SLOTS);
    return j < SLOTS ? m->h[k][j] : NULL;
}

static void op_try(struct model *m)
{
    int k = (int)test_rng_range(&m->rng, 0, KEYS - 1);
    uint32_t cls = (uint32_t)test_rng_range(&m->rng, 0, 1);
    uint64_t n = test_rng_range(&m->rng, 0, 4);
    int exp;
    if (n == 0)
        exp = 0;
    else if (n > limit_of(cls) || n > m->cap[k])
        exp = BAND_E2BIG;
    else if (m->in_use + n <= limit_of(cls) && m->held[k] + n <= m->cap[k])
        exp = 0;
    else
        exp = BAND_EAGAIN;
    band_fair_handle *h = pick_handle(m, k);
    int rc;
    if (h == NULL)
        rc = band_fair_try_acquire(m->f, (uint64_t)k, cls, n);
    else if (test_rng_next(&m->rng) & 1)
        rc = band_fair_handle_try_acquire(h, cls, n); /* the inline path */
    else
        rc = (band_fair_handle_try_acquire)(h, cls, n);
    if (rc != exp)
        fail_msg("step %d: try key %d cls %u n %llu (%s): %d, model %d", m->step, k, cls,
                 (unsigned long long)n, h != NULL ? "handle" : "id", rc, exp);
    if (rc == 0 && n > 0) {
        m->held[k] += n;
        m->in_use += n;
        if (h != NULL && is_split(m, k))
            m->split_grants++;
        else if (h != NULL)
            m->capped_grants++;
    }
}

static void op_release(struct model *m)
{
    int k = (int)test_rng_range(&m->rng, 0, KEYS - 1);
    uint64_t n = test_rng_range(&m->rng, 0, 4);
    int exp = n <= m->held[k] ? 0 : BAND_EINVAL;
    band_fair_handle *h = pick_handle(m, k);
    uint64_t theirs = in_handles(m, k);
    if (h != NULL)
        theirs -= atomic_load(&h->taken) - atomic_load(&h->given);
    if (exp == 0 && n > 0 && theirs > 0)
        m->cross_releases++; /* units that another handle counts may be among them */
    int rc;
    if (h == NULL)
        rc = band_fair_release(m->f, (uint64_t)k, n);
    else if (test_rng_next(&m->rng) & 1)
        rc = band_fair_handle_release(h, n);
    else
        rc = (band_fair_handle_release)(h, n);
    if (rc != exp)
        fail_msg("step %d: release key %d n %llu (%s): %d, model %d (held %llu)", m->step, k,
                 (unsigned long long)n, h != NULL ? "handle" : "id", rc, exp,
                 (unsigned long long)m->held[k]);
    if (rc == 0) {
        m->held[k] -= n;
        m->in_use -= n;
    }
}

static void op_handle(struct model *m)
{
    int k = (int)test_rng_range(&m->rng, 0, KEYS - 1);
    int j = (int)test_rng_range(&m->rng, 0, SLOTS - 1);
    if (m->h[k][j] == NULL) {
        assert_int_equal(band_fair_handle_get(m->f, (uint64_t)k, &m->h[k][j]), 0);
    } else {
        if (atomic_load(&m->h[k][j]->taken) != atomic_load(&m->h[k][j]->given))
            m->puts_with_units++;
        assert_int_equal(band_fair_handle_put(m->h[k][j]), 0);
        m->h[k][j] = NULL;
    }
}

static void op_key_set(struct model *m)
{
    int k = (int)test_rng_range(&m->rng, 0, KEYS - 1);
    uint64_t r = test_rng_range(&m->rng, 0, 9);
    if (r < 2) {
        assert_int_equal(band_fair_key_unset(m->f, (uint64_t)k), 0);
        m->cap[k] = CAPACITY;
        m->reserve[k] = 0;
        return;
    }
    /* half the time a cap that binds or a reservation, else the capacity */
    uint64_t cap = r < 6 ? test_rng_range(&m->rng, 1, CAPACITY) : 0;
    uint64_t eff = cap == 0 ? CAPACITY : cap;
    uint64_t reserve = (r & 1) ? test_rng_range(&m->rng, 0, 3) : 0;
    band_fair_key_opts o = {(uint32_t)test_rng_range(&m->rng, 1, 3), cap, reserve};
    int exp =
        reserve > eff || reserved_total(m) - m->reserve[k] + reserve > CAPACITY ? BAND_EINVAL : 0;
    bool folds =
        exp == 0 && is_split(m, k) && in_handles(m, k) > 0 && (reserve != 0 || eff < CAPACITY);
    int rc = band_fair_key_set(m->f, (uint64_t)k, &o);
    if (rc != exp)
        fail_msg("step %d: key_set key %d cap %llu reserve %llu: %d, model %d", m->step, k,
                 (unsigned long long)cap, (unsigned long long)reserve, rc, exp);
    if (rc == 0) {
        m->cap[k] = eff;
        m->reserve[k] = reserve;
        m->folds_with_units += folds;
    }
}

static void run(uint64_t seed)
{
    struct model m;
    memset(&m, 0, sizeof(m));
    m.rng = seed;
    band_fair_opts fo = {0};
    fo.classes = 2;
    fo.headroom[1] = HEADROOM1;
    assert_int_equal(band_fair_create(&m.f, CAPACITY, &fo), 0);
    for (int k = 0; k < KEYS; k++)
        m.cap[k] = CAPACITY;
    for (m.step = 0; m.step < STEPS; m.step++) {
        uint64_t r = test_rng_range(&m.rng, 0, 99);
        const char *what;
        if (r < 40) {
            op_try(&m);
            what = "try";
        } else if (r < 80) {
            op_release(&m);
            what = "release";
        } else if (r < 93) {
            op_handle(&m);
            what = "handle get/put";
        } else {
            op_key_set(&m);
            what = "key_set";
        }
        compare(&m, what);
    }
    for (int k = 0; k < KEYS; k++)
        for (int j = 0; j < SLOTS; j++)
            if (m.h[k][j] != NULL) {
                assert_int_equal(band_fair_handle_put(m.h[k][j]), 0);
                m.h[k][j] = NULL;
            }
    compare(&m, "after putting the handles");
    for (int k = 0; k < KEYS; k++)
        assert_int_equal(band_fair_release(m.f, (uint64_t)k, m.held[k]), 0);
    memset(m.held, 0, sizeof(m.held));
    m.in_use = 0;
    compare(&m, "after releasing everything");
    print_message("seed %llu: %llu split grants, %llu capped, %llu cross releases, %llu folds "
                  "and %llu puts with units in the handle\n",
                  (unsigned long long)seed, (unsigned long long)m.split_grants,
                  (unsigned long long)m.capped_grants, (unsigned long long)m.cross_releases,
                  (unsigned long long)m.folds_with_units, (unsigned long long)m.puts_with_units);
    assert_true(m.split_grants > 100 && m.capped_grants > 100 && m.cross_releases > 100);
    assert_true(m.folds_with_units > 10 && m.puts_with_units > 10);
    assert_int_equal(band_fair_close(m.f), 0);
    assert_int_equal(band_fair_destroy(m.f), 0);
}

static void test_split_model(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 8; seed++)
        run(0x5eed0000u + seed);
}

struct setter {
    band_fair *f;
    _Atomic int done;
};

static int set_cap_main(void *arg)
{
    struct setter *st = arg;
    band_fair_key_opts o = {1, 2, 0};
    int rc = band_fair_key_set(st->f, 1, &o);
    atomic_store(&st->done, 1);
    return rc;
}

/* A cap set while a handle's try is between its compare-and-swap on the state word and the
 * store of its count waits for that store (the busy flag), then folds the unit into the
 * key's shared word: none stays in the handle's count of a key whose cap binds. The try in
 * flight is played by hand, word by word, as the inline code does it. */
static void test_fold_waits_for_busy(void **state)
{
    (void)state;
    band_fair *f = NULL;
    band_fair_handle *h = NULL;
    assert_int_equal(band_fair_create(&f, CAPACITY, NULL), 0);
    assert_int_equal(band_fair_handle_get(f, 1, &h), 0);
    assert_true(atomic_load(&h->k->a_fast_cap) == FAIR_SPLIT);
    atomic_store(&h->busy, 1);
    atomic_fetch_add(h->state, 1); /* the try's CAS went through before the gate shut */
    struct setter st = {f, 0};
    struct test_thread t;
    assert_int_equal(test_thread_start(&t, set_cap_main, &st), 0);
    band_time until = band_deadline_after(50 * BAND_MSEC);
    while (band_now() < until)
        sched_yield();
    assert_int_equal(atomic_load(&st.done), 0); /* it waits for the count */
    atomic_store(&h->taken, 1);
    atomic_store(&h->cnt[0].granted, 1);
    atomic_store(&h->cnt[0].units, 1);
    atomic_store(&h->busy, 0);
    assert_int_equal(test_thread_join(&t), 0);
    assert_int_equal(atomic_load(&h->given), 1); /* folded */
    assert_int_equal(atomic_load(&h->k->a_held), 1);
    assert_int_equal(atomic_load(&h->k->a_fast_cap), 2);
    assert_int_equal(band__fair_check(f), 0);
    band_fair_key_stats ks;
    assert_int_equal(band_fair_key_get_stats(f, 1, &ks), 0);
    assert_int_equal(ks.held, 1);
    assert_int_equal(ks.granted, 1);
    assert_int_equal(band_fair_handle_try_acquire(h, 0, 2), BAND_EAGAIN); /* 1 + 2 > cap 2 */
    assert_int_equal(band_fair_handle_release(h, 1), 0);
    assert_int_equal(band_fair_handle_put(h), 0);
    assert_int_equal(band_fair_destroy(f), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_model),
        cmocka_unit_test(test_fold_waits_for_busy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
