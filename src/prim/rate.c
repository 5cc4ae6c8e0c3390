/* SPDX-License-Identifier: MIT */
/*
 * rate.c - the rate budget (GCRA).
 *
 * Design notes
 * ------------
 * GCRA keeps one time, the moment the bucket will be full again. Here it is kept relative
 * to the bucket's own time @last (the latest time the clock hook returned): @missing is
 * how far the bucket is from full at @last, in units of 1/tokens of a nanosecond. One
 * token is @period of those units (period / tokens ns), so the same number also reads as
 * "tokens missing × period":
 *
 *   - time refills: dt nanoseconds later, missing -= dt × tokens (not below 0: full);
 *   - n tokens cost n × period units; the bucket holds burst × period units (its depth);
 *   - a request for n tokens may start once missing + n × period <= depth, that is after
 *     (missing + n × period - depth) / tokens nanoseconds, rounded up (never early);
 *   - whole tokens in the bucket: (depth - missing) / period, rounded down.
 *
 * Every step is an exact integer operation, so a rate of 3 per second gives slots at
 * exactly 1/3 s, 2/3 s, 1 s, and no rounding accumulates. Keeping the state relative to
 * @last means no absolute time is ever computed except a booking's slot, so the clock may
 * read anything from INT64_MIN to INT64_MAX.
 *
 * Bounds: derive() keeps burst × period <= INT64_MAX. A booking is refused with
 * BAND_EOVERFLOW unless the bucket would be full again within INT64_MAX ns and no later
 * than INT64_MAX (the invariant fits()), so every delay, retry-after and slot fits in a
 * band_time and @missing < 2^63 × tokens < 2^126. The sums below stay under 2^128.
 *
 * A change of settings keeps what has accrued (as the token bucket of Go's x/time/rate
 * does): the bucket is first brought to now under the old rate, then the tokens it holds
 * (negative when bookings run ahead) are kept, clamped to a lower burst:
 *     tokens missing after = max(0, tokens missing before + new burst - old burst)
 *     missing' = ceil(that × old period × new period / old period)
 * The one rounding is up, by less than 1/tokens' ns, in the bucket's favour.
 *
 * The lock-free fast path of try_acquire
 * --------------------------------------
 * The state above needs 128 bits and a mutex. For the common settings the same state also
 * fits in one 64-bit word, @word, that try_acquire updates with a single compare-and-swap
 * and no lock:
 *
 *     bit 63      NOFAST: the word holds no state (the mutex holder owns it, the settings
 *                 do not fit, or the bucket is closed): take the mutex;
 *     bits 47-62  a generation, bumped whenever the fast settings below change;
 *     bits 0-46   x, the time the bucket is full again (the absolute GCRA time), counted
 *                 from @f_base in units of 1/@f_unit ns.
 *
 * The unit is exact: with h = gcd(tokens, period, missing), 1 ns = tokens / h units and a
 * token costs period / h units, and @missing stays a multiple of h (a grant adds period
 * units, a refill tokens × dt) so the two forms convert both ways without rounding:
 * missing = h × max(0, x - (last - base) × unit). The refill is implicit: at a time now,
 * the bucket misses max(0, x - now_u). A grant of n stores max(x, now_u) + n × cost;
 * a refusal stores nothing and its retry-after is ceil((that - now_u - depth) / unit).
 * The fast settings (base, unit, cost, depth, emax) are chosen under the mutex so that
 * every x the fast path can store, and every slot it implies, stays below 2^47 and below
 * INT64_MAX ns: a time more than @f_emax ns past @f_base, a request above the burst, and
 * everything but try_acquire go through the mutex, which moves the base forward (a
 * "rebase") or, for settings too large for 47 bits, keeps the bucket on the locked form.
 *
 * Every locked operation first swaps the word for NOFAST (so a concurrent fast path's CAS
 * fails and it queues on the mutex), converts it to @missing, works on the locked form as
 * before, and stores it back, under the same generation when the fast settings still hold.
 * A fast path reads the settings after loading the word; if they changed meanwhile, the
 * word did too and its CAS fails. The generation has 16 bits: a try_acquire stalled between
 * its load and its CAS through 65536 changes of the fast settings that then meets the very
 * same word could apply stale settings. The fast settings change only in band_rate_set(),
 * when the bucket's time passes the middle of the base's window (at least about half a
 * millisecond, hours for rates with small units), and when the word takes the state back
 * after it did not fit (settings or bookings too large for 47 bits).
 *
 * A thread whose slot is owned by a thread that exited (and whose id is not that one)
 * counts in the shared slot for good: correct, but two more locked instructions.
 *
 * The bucket's time: try_acquire reads the clock before the CAS, so between threads a
 * reading can be older than one another thread already applied. @last_hint keeps the
 * latest reading (a plain store when the reading is newer; it may, between racing threads,
 * fall back to another thread's slightly older reading). Reading an older time only ever
 * grants less and reports a longer retry-after, never more. A single thread sees exactly
 * the contract's clock rules.
 *
 * Counters: a fast grant or refusal counts in a per-thread slot (the slot owned by the
 * calling thread, found by hashing pthread_self(); a thread whose slot another live
 * thread owns counts with atomic adds in a shared slot), so the fast path costs one locked
 * instruction, its CAS, and a refusal none. The stats add the slots up. The token counts
 * of the slots are kept below 2^56 each (a grant that would pass it takes the mutex), so
 * their sum is below 2^61 and the locked counter saturates exactly as before.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "band/rate.h"
#include "core/block.h"
#include "core/internal.h"
#include "core/name.h"
#include "prim/rate_internal.h"

#if !defined(__SIZEOF_INT128__)
#error "src/rate.c needs a compiler with 128-bit integers (GCC or Clang on a 64-bit target)"
#endif
__extension__ typedef unsigned __int128 u128;

#define W_NOFAST   (UINT64_C(1) << 63)
#define W_GEN_BITS 16
#define W_X_BITS   47
#define W_X_MASK   ((UINT64_C(1) << W_X_BITS) - 1)
#define W_GEN_MASK (((UINT64_C(1) << W_GEN_BITS) - 1) << W_X_BITS)
/* The narrowest window of the base worth a fast path: narrower ones would rebase all the
 * time. */
#define FAST_EMAX_MIN (UINT64_C(1) << 20)
/* A slot's token count stays below this (see the counters above). */
#define SLOT_TOKENS_MAX (UINT64_C(1) << 56)
#define RATE_SLOTS      16

struct rate_slot {
    _Atomic uintptr_t owner; /* pthread_self() of the thread that counts here; 0: free */
    _Atomic uint64_t granted, tokens, refused;
};

struct band_rate {
    /* Read and written by the fast path without the lock. */
    _Atomic uint64_t word;           /* see above */
    _Atomic band_time last_hint;     /* the latest clock reading */
    _Atomic band_time f_base;        /* the fast settings: written under the lock while the */
    _Atomic uint64_t f_unit, f_cost; /* word is NOFAST; read by the fast path after it */
    _Atomic uint64_t f_depth, f_emax, f_burst; /* loaded a word that is not */
    band_rate_clock_fn *clock;
    void *clock_ctx;
    struct rate_slot shared; /* fast counts of threads without a slot (atomic adds) */
    struct rate_slot slots[RATE_SLOTS];

    pthread_mutex_t lock; /* guards everything below */
    band_rate_sleep_fn *sleep;
    void *sleep_ctx;
    uint64_t tokens, burst;
    band_time period;
    band_time last; /* the bucket's time: the latest time the clock hook returned */
    u128 missing;   /* how far from full at @last, in 1/tokens ns (see above); 0: full */
    int closed;
    int fast;         /* the fast settings below describe the current settings */
    uint64_t gen;     /* generation of the fast settings */
    band_time c_base; /* the fast settings (the lock holder's copy) and ... */
    uint64_t c_unit, c_cost, c_depth, c_emax;
    uint64_t c_fmax; /* ... the largest x they allow */
    uint64_t c_h;    /* 1/tokens-ns units per fast unit */
    char name[BAND_NAME_MAX];
    uint64_t granted, granted_tokens, delayed, cancelled; /* the locked part of the counts */
    uint64_t refused_rate, refused_deadline, refused_too_big, refused_closed;
#ifdef BAND_TESTING
    void (*cas_hook)(void *ctx); /* see band__rate_cas_hook() */
    void *cas_hook_ctx;
#endif
};

#define RLX memory_order_relaxed

/* ---------------------------------------------------------------- arithmetic */

static u128 depth_of(uint64_t burst, band_time period)
{
    return (u128)burst * (uint64_t)period;
}

/* ceil(@a / @b) for @b >= 1 (no wrap: the + 1 only happens when @b >= 2). */
static u128 ceil_div(u128 a, uint64_t b)
{
    if (a >> 64 == 0) { /* the common case, without a call to a 128-bit division */
        uint64_t lo = (uint64_t)a;
        return lo / b + (lo % b != 0);
    }
    return a / b + (a % b != 0);
}

/* ceil(@a × @b / @c) for @c >= 1, through a 192-bit product: 0, or BAND_EOVERFLOW when the
 * result does not fit in 128 bits. */
static int muldiv_ceil(u128 a, uint64_t b, uint64_t c, u128 *out)
{
    /* a × b = hi × 2^64 + lo, and hi = qh × c + rh, lo = ql × c + rl, so
     * a × b / c = qh × 2^64 + ql + (rh × 2^64 + rl) / c, where rh, rl < c < 2^64. */
    u128 hi = (a >> 64) * b;
    u128 lo = (u128)(uint64_t)a * b;
    u128 qh = hi / c, rh = hi % c;
    u128 ql = lo / c, rl = lo % c;
    if (qh >> 64 != 0)
        return BAND_EOVERFLOW;
    u128 mid = (rh << 64) + rl;
    u128 low = ql + mid / c + (mid % c != 0); /* ql < 2^127 and mid / c < 2^64 */
    u128 q = (qh << 64) + low;
    if (q < low)
        return BAND_EOVERFLOW;
    *out = q;
    return 0;
}

/* 1 when a bucket @missing units (1/@tokens ns) from full at @now is full again within
 * INT64_MAX ns and no later than INT64_MAX (so every slot and delay fits in a band_time):
 * ceil(missing / tokens) <= room, that is missing <= room x tokens. */
static int fits(u128 missing, uint64_t tokens, band_time now)
{
    uint64_t room = now >= 0 ? (uint64_t)(INT64_MAX - now) : (uint64_t)INT64_MAX;
    return missing <= (u128)room * tokens;
}

/* ---------------------------------------------------------------- the fast form */

static uint64_t gcd64(uint64_t a, uint64_t b)
{
    while (b != 0) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* Bring the locked form to @t when it is later (lock held). A clock that steps back is
 * read as no time elapsed: the bucket's time never goes backwards, so no booking made at
 * once turns "not due" again and nothing refills twice. */
static void advance_to(band_rate *r, band_time t)
{
    if (t <= r->last)
        return;
    uint64_t dt = (uint64_t)t - (uint64_t)r->last; /* up to 2^64 - 1 */
    u128 refill = (u128)dt * r->tokens;            /* < 2^127 */
    r->missing = refill >= r->missing ? 0 : r->missing - refill;
    r->last = t;
}

/*
 * Take the state for a locked operation (lock held): swap the word for NOFAST, so fast
 * paths queue on the lock, turn it into the locked form, and bring that to @now (a clock
 * reading taken by the caller). Returns the bucket's time.
 */
static band_time enter_locked(band_rate *r, band_time now)
{
    uint64_t w = atomic_exchange_explicit(&r->word, W_NOFAST, memory_order_acquire);
    band_time hint = atomic_load_explicit(&r->last_hint, RLX);
    if ((w & W_NOFAST) == 0) {
        /* The word holds the state; @last <= the base <= every time it was used at. */
        band_time at = hint > r->last ? hint : r->last;
        if (at < r->c_base)
            at = r->c_base;
        uint64_t x = w & W_X_MASK;
        u128 now_u = (u128)((uint64_t)at - (uint64_t)r->c_base) * r->c_unit;
        r->missing = x > now_u ? ((u128)x - now_u) * r->c_h : 0;
        r->last = at;
    } else {
        advance_to(r, hint); /* a reading a fast path took before it saw NOFAST */
    }
    advance_to(r, now);
    return r->last;
}

/* The locked form as a word under the current fast settings, or 0 (the settings do not
 * hold, or the bucket's time is past the middle of their window: time to rebase). */
static int encode_locked(const band_rate *r, uint64_t *word)
{
    if (!r->fast || r->last < r->c_base)
        return 0;
    uint64_t e = (uint64_t)r->last - (uint64_t)r->c_base;
    if (e > r->c_emax / 2)
        return 0;
    u128 q; /* missing / h, exact, without a 128-bit division in the common cases */
    if (r->c_h == 1) {
        q = r->missing;
    } else if (r->missing >> 64 == 0) {
        uint64_t m = (uint64_t)r->missing;
        if (m % r->c_h != 0)
            return 0;
        q = m / r->c_h;
    } else {
        if (r->missing % r->c_h != 0)
            return 0;
        q = r->missing / r->c_h;
    }
    u128 x = (u128)e * r->c_unit + q;
    if (x > r->c_fmax)
        return 0;
    *word = ((r->gen << W_X_BITS) & W_GEN_MASK) | (uint64_t)x;
    return 1;
}

/* New fast settings based at the bucket's time (lock held, the word NOFAST): 1 and the
 * word, or 0 when the settings or the state do not fit in the word. */
static int rebase_locked(band_rate *r, uint64_t *word)
{
    r->fast = 0;
    uint64_t g = gcd64(r->tokens, (uint64_t)r->period);
    uint64_t h = gcd64(g, (uint64_t)(r->missing % g));
    uint64_t unit = r->tokens / h, cost = (uint64_t)r->period / h;
    uint64_t depth = r->burst * cost; /* <= burst x period <= INT64_MAX */
    if (r->missing / h > W_X_MASK)
        return 0;
    uint64_t x = (uint64_t)(r->missing / h);
    /* Every slot the word can imply, base + ceil(x / unit), must be <= INT64_MAX. */
    uint64_t room = (uint64_t)INT64_MAX - (uint64_t)r->last;
    uint64_t fmax = room >= W_X_MASK / unit ? W_X_MASK : room * unit;
    if (depth > fmax || x > fmax || (fmax - depth) / unit < FAST_EMAX_MIN)
        return 0;
    r->gen++;
    r->fast = 1;
    r->c_base = r->last;
    r->c_unit = unit;
    r->c_cost = cost;
    r->c_depth = depth;
    r->c_emax = (fmax - depth) / unit; /* now_u + depth <= fmax for every e <= emax */
    r->c_fmax = fmax;
    r->c_h = h;
    atomic_store_explicit(&r->f_base, r->c_base, RLX);
    atomic_store_explicit(&r->f_unit, unit, RLX);
    atomic_store_explicit(&r->f_cost, cost, RLX);
    atomic_store_explicit(&r->f_depth, depth, RLX);
    atomic_store_explicit(&r->f_emax, r->c_emax, RLX);
    atomic_store_explicit(&r->f_burst, r->burst, RLX);
    *word = ((r->gen << W_X_BITS) & W_GEN_MASK) | x;
    return 1;
}

/* Give the state back (lock held): as a word when it fits, else NOFAST. The release store
 * publishes the fast settings to the fast paths that load the word. */
static void leave_locked(band_rate *r)
{
    atomic_store_explicit(&r->last_hint, r->last, RLX);
    uint64_t w = W_NOFAST;
    if (!r->closed && !encode_locked(r, &w) && !rebase_locked(r, &w))
        w = W_NOFAST;
    atomic_store_explicit(&r->word, w, memory_order_release);
}

/* ---------------------------------------------------------------- counters */

static void slot_add(_Atomic uint64_t *c, uint64_t v)
{
    /* Only the owning thread writes: a plain load and store, no locked instruction. */
    atomic_store_explicit(c, atomic_load_explicit(c, RLX) + v, RLX);
}

/* The calling thread's slot, or NULL when another live thread owns it. */
static struct rate_slot *slot_of(band_rate *r)
{
    uintptr_t self = (uintptr_t)pthread_self();
    uint64_t k = ((uint64_t)self * UINT64_C(0x9E3779B97F4A7C15)) >> 60; /* 16 slots */
    struct rate_slot *s = &r->slots[k];
    uintptr_t owner = atomic_load_explicit(&s->owner, RLX);
    if (owner == self)
        return s;
    /* A slot whose owner exited is taken over only by a thread with the same id: ids are
     * unique among live threads, so a slot never has two live writers. */
    if (owner == 0 && atomic_compare_exchange_strong(&s->owner, &owner, self))
        return s;
    return NULL;
}

/* Sums of the fast counts (lock held or not: a snapshot). */
static void fast_counts(const band_rate *r, uint64_t *granted, u128 *tokens, uint64_t *refused)
{
    uint64_t g = atomic_load_explicit(&r->shared.granted, RLX);
    u128 t = atomic_load_explicit(&r->shared.tokens, RLX);
    uint64_t f = atomic_load_explicit(&r->shared.refused, RLX);
    for (int i = 0; i < RATE_SLOTS; i++) {
        g += atomic_load_explicit(&r->slots[i].granted, RLX);
        t += atomic_load_explicit(&r->slots[i].tokens, RLX);
        f += atomic_load_explicit(&r->slots[i].refused, RLX);
    }
    *granted = g;
    *tokens = t;
    *refused = f;
}

/* Saturate the token count for good once the locked and the fast counts reach UINT64_MAX
 * together (lock held). */
static void settle_tokens_locked(band_rate *r, uint64_t more)
{
    if (r->granted_tokens == UINT64_MAX)
        return;
    if (r->granted_tokens < UINT64_C(1) << 62 && more < UINT64_C(1) << 62) {
        r->granted_tokens += more; /* + the fast counts (< 17 x 2^56) stays < UINT64_MAX */
        return;
    }
    uint64_t g, f;
    u128 t;
    fast_counts(r, &g, &t, &f);
    if ((u128)r->granted_tokens + t + more >= UINT64_MAX)
        r->granted_tokens = UINT64_MAX;
    else
        r->granted_tokens += more;
}

/* ---------------------------------------------------------------- settings */

static band_time default_clock(void *ctx)
{
    (void)ctx;
    return band_now();
}

static void default_sleep(void *ctx, band_time until)
{
    (void)ctx;
    struct timespec ts = {(time_t)(until / BAND_SEC), (long)(until % BAND_SEC)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

/* 0, BAND_EINVAL or BAND_EOVERFLOW for a setting. */
static int check_settings(uint64_t tokens, band_time period, uint64_t burst)
{
    if (tokens == 0 || period <= 0 || burst == 0 || tokens > (uint64_t)INT64_MAX)
        return BAND_EINVAL;
    if (depth_of(burst, period) > (u128)INT64_MAX)
        return BAND_EOVERFLOW; /* the bucket's depth in time must be representable */
    return 0;
}

int band_rate_create(band_rate **out, uint64_t tokens, band_time period, uint64_t burst,
                     const band_rate_opts *opts)
{
    static const band_rate_opts defaults;
    const band_rate_opts *o = opts != NULL ? opts : &defaults;
    if (out == NULL || (o->sleep != NULL && o->clock == NULL))
        return BAND_EINVAL;
    int rc = check_settings(tokens, period, burst);
    if (rc != 0)
        return rc;
    band_rate *r = calloc(1, sizeof(*r));
    if (r == NULL)
        return BAND_ENOMEM;
    if (pthread_mutex_init(&r->lock, NULL) != 0) {
        free(r);
        return BAND_ENOMEM;
    }
    r->clock = o->clock != NULL ? o->clock : default_clock;
    r->clock_ctx = o->clock_ctx;
    r->sleep = o->sleep != NULL ? o->sleep : (o->clock == NULL ? default_sleep : NULL);
    r->sleep_ctx = o->sleep_ctx;
    r->tokens = tokens;
    r->period = period;
    r->burst = burst;
    r->last = INT64_MIN; /* the first clock reading is at or after it */
    r->missing = 0;      /* the bucket starts full */
    atomic_init(&r->last_hint, INT64_MIN);
    uint64_t w = W_NOFAST;
    if (!rebase_locked(r, &w))
        w = W_NOFAST;
    atomic_init(&r->word, w);
    *out = r;
    return 0;
}

int band_rate_destroy(band_rate *r)
{
    if (r == NULL)
        return 0;
    pthread_mutex_destroy(&r->lock);
    free(r);
    return 0;
}

int band_rate_set_name(band_rate *r, const char *name)
{
    if (r == NULL)
        return BAND_EINVAL;
    return band__set_name(r->name, name, &r->lock);
}

int band_rate_set(band_rate *r, uint64_t tokens, band_time period, uint64_t burst)
{
    if (r == NULL)
        return BAND_EINVAL;
    int rc = check_settings(tokens, period, burst);
    if (rc != 0)
        return rc;
    pthread_mutex_lock(&r->lock);
    band_time now = enter_locked(r, r->clock(r->clock_ctx));
    /* Tokens missing under the new burst, times the old period: what the bucket holds is
     * kept, and a lower burst clamps it (the bucket cannot be more than full). */
    u128 gap = r->missing + depth_of(burst, r->period); /* < 2^126 + 2^127 */
    u128 old_depth = depth_of(r->burst, r->period);
    gap = gap > old_depth ? gap - old_depth : 0;
    u128 missing;
    if (muldiv_ceil(gap, (uint64_t)period, (uint64_t)r->period, &missing) != 0 ||
        !fits(missing, tokens, now)) {
        rc = BAND_EOVERFLOW; /* owed for longer than a band_time can say: nothing changes */
    } else {
        r->missing = missing;
        r->tokens = tokens;
        r->period = period;
        r->burst = burst;
        r->fast = 0; /* new fast settings */
    }
    leave_locked(r);
    pthread_mutex_unlock(&r->lock);
    return rc;
}

int band_rate_close(band_rate *r)
{
    if (r == NULL)
        return BAND_EINVAL;
    pthread_mutex_lock(&r->lock);
    (void)enter_locked(r, r->clock(r->clock_ctx));
    r->closed = 1;
    leave_locked(r); /* NOFAST for good: every later request takes the lock and is refused */
    pthread_mutex_unlock(&r->lock);
    return 0;
}

int band_rate_is_closed(const band_rate *cr)
{
    if (cr == NULL)
        return 0;
    band_rate *r = (band_rate *)cr; /* the lock is logically const */
    pthread_mutex_lock(&r->lock);
    int closed = r->closed;
    pthread_mutex_unlock(&r->lock);
    return closed;
}

/* ---------------------------------------------------------------- taking tokens */

/*
 * @n tokens at the bucket's time (lock held, advanced): *@after is @missing once they are
 * taken, *@wait the nanoseconds until they may start (0: now). 0, BAND_ECLOSED or
 * BAND_E2BIG; refusals are counted. *@wait always fits: it is at most the time until the
 * bucket is full now, since n × period <= depth.
 */
static int book_locked(band_rate *r, uint64_t n, u128 *after, band_time *wait)
{
    if (r->closed) {
        r->refused_closed++;
        return BAND_ECLOSED;
    }
    if (n > r->burst) {
        r->refused_too_big++;
        return BAND_E2BIG;
    }
    u128 depth = depth_of(r->burst, r->period);
    *after = r->missing + (u128)n * (uint64_t)r->period;
    *wait = *after > depth ? (band_time)ceil_div(*after - depth, r->tokens) : 0;
    return 0;
}

static void take_locked(band_rate *r, uint64_t n, u128 after)
{
    r->missing = after;
    r->granted++;
    /* Saturates: once it reaches UINT64_MAX it stays there (a cancel cannot tell how much
     * of it is real). */
    settle_tokens_locked(r, n);
}

/* try_acquire under the lock, at the clock reading @now. */
static int try_locked(band_rate *r, uint64_t n, band_time *retry_after, band_time now)
{
    pthread_mutex_lock(&r->lock);
    now = enter_locked(r, now);
    u128 after;
    band_time wait;
    int rc = book_locked(r, n, &after, &wait);
    if (rc == 0) {
        if (wait > 0) {
            r->refused_rate++;
            if (retry_after != NULL)
                *retry_after = wait;
            rc = BAND_EAGAIN;
        } else if (!fits(after, r->tokens, now)) {
            rc = BAND_EOVERFLOW; /* full again only after INT64_MAX */
        } else {
            take_locked(r, n, after);
        }
    }
    leave_locked(r);
    pthread_mutex_unlock(&r->lock);
    return rc;
}

#define FAST_LOCK   1 /* try_fast(): take the lock */
#define FAST_REREAD 2 /* try_fast(): read the clock again and retry */

#define FAST_RETRY 3 /* fast_step(): the CAS failed; *@w is the word it found */

/* One attempt of try_fast() on the word *@w, with the calling thread's slot @s (NULL: the
 * shared one). A failed CAS stores the word it found in *@w. */
static inline int fast_step(band_rate *r, uint64_t n, band_time *retry_after, band_time now,
                            int fresh, struct rate_slot *s,
                            uint64_t *w) // NOLINT(readability-non-const-parameter)
{
    /* The settings that go with *@w (see the design notes). */
    uint64_t e = (uint64_t)now - (uint64_t)atomic_load_explicit(&r->f_base, RLX);
    uint64_t unit = atomic_load_explicit(&r->f_unit, RLX);
    uint64_t cost = atomic_load_explicit(&r->f_cost, RLX);
    uint64_t depth = atomic_load_explicit(&r->f_depth, RLX);
    if (e > atomic_load_explicit(&r->f_emax, RLX) || n > atomic_load_explicit(&r->f_burst, RLX))
        return FAST_LOCK;
    uint64_t now_u = e * unit; /* <= fmax - depth < 2^47 */
    uint64_t x = *w & W_X_MASK;
    uint64_t f = (x > now_u ? x : now_u) + n * cost; /* n x cost <= depth */
    uint64_t owed = f - now_u;
    if (owed > depth) {
        uint64_t over = owed - depth;
        if (!fresh && over > n * cost)
            return FAST_REREAD;
        if (s != NULL)
            slot_add(&s->refused, 1);
        else
            atomic_fetch_add_explicit(&r->shared.refused, 1, RLX);
        if (retry_after != NULL)
            *retry_after = (band_time)(unit == 1 ? over : over / unit + (over % unit != 0));
        return BAND_EAGAIN;
    }
    struct rate_slot *c = s != NULL ? s : &r->shared;
    if (n >= SLOT_TOKENS_MAX - atomic_load_explicit(&c->tokens, RLX))
        return FAST_LOCK;
#ifdef BAND_TESTING
    if (r->cas_hook != NULL) {
        void (*hook)(void *) = r->cas_hook;
        r->cas_hook = NULL;
        hook(r->cas_hook_ctx);
    }
#endif
    /* f <= now_u + depth <= fmax: it fits, and so does its slot. */
    if (!atomic_compare_exchange_weak_explicit(&r->word, w, (*w & ~W_X_MASK) | f,
                                               memory_order_acq_rel, memory_order_acquire))
        return (*w & W_NOFAST) ? FAST_LOCK : FAST_RETRY;
    if (s != NULL) {
        slot_add(&s->granted, 1);
        slot_add(&s->tokens, n);
    } else {
        atomic_fetch_add_explicit(&r->shared.granted, 1, RLX);
        atomic_fetch_add_explicit(&r->shared.tokens, n, RLX);
    }
    return 0;
}

/* The attempts after a failed CAS, out of line so that the first keeps its registers. */
__attribute__((noinline)) static int fast_retry(band_rate *r, uint64_t n, band_time *retry_after,
                                                band_time now, int fresh, struct rate_slot *s,
                                                uint64_t w)
{
    int rc;
    do
        rc = fast_step(r, n, retry_after, now, fresh, s, &w);
    while (rc == FAST_RETRY);
    return rc;
}

/*
 * try_acquire without the lock, at the clock reading @now: 0, BAND_EAGAIN, FAST_LOCK (the
 * word holds no state, the time is outside the base's window or before it, @n is above
 * the burst, or a count would grow too large: the lock handles it, exactly), or
 * FAST_REREAD (only without @fresh: the wait is longer than @n tokens take to refill, so
 * bookings run ahead or this thread stalled after it read the clock while others took
 * tokens; the caller answers from a fresh reading, so a stall never inflates the
 * retry-after). No call but pthread_self(), so the first attempt keeps its registers.
 */
static inline int try_fast(band_rate *r, uint64_t n, band_time *retry_after, band_time now,
                           int fresh)
{
    uint64_t w = atomic_load_explicit(&r->word, memory_order_acquire);
    if (w & W_NOFAST)
        return FAST_LOCK;
    band_time last = atomic_load_explicit(&r->last_hint, RLX);
    if (now > last)
        atomic_store_explicit(&r->last_hint, now, RLX);
    else
        now = last; /* the clock stepped back, or another thread read it later */
    struct rate_slot *s = slot_of(r);
    int rc = fast_step(r, n, retry_after, now, fresh, s, &w);
    if (rc == FAST_RETRY)
        rc = fast_retry(r, n, retry_after, now, fresh, s, w);
    return rc;
}

int band_rate_try_acquire(band_rate *r, uint64_t n, band_time *retry_after)
{
    if (retry_after != NULL)
        *retry_after = 0;
    if (r == NULL || n == 0)
        return BAND_EINVAL;
    band_time now = r->clock(r->clock_ctx);
    int rc = try_fast(r, n, retry_after, now, 0);
    if (rc == FAST_REREAD) {
        band_time again = r->clock(r->clock_ctx);
        if (again > now)
            now = again;
        rc = try_fast(r, n, retry_after, now, 1);
    }
    if (rc == FAST_LOCK)
        return try_locked(r, n, retry_after, now);
    return rc;
}

int band_rate_reserve(band_rate *r, uint64_t n, band_rate_ticket *t, band_time *delay,
                      band_time deadline)
{
    if (delay != NULL)
        *delay = 0;
    if (r == NULL || t == NULL || t->rate != NULL || n == 0)
        return BAND_EINVAL;
    pthread_mutex_lock(&r->lock);
    band_time now = enter_locked(r, r->clock(r->clock_ctx));
    u128 after;
    band_time wait;
    int rc = book_locked(r, n, &after, &wait);
    if (rc == 0 && !fits(after, r->tokens, now))
        rc = BAND_EOVERFLOW; /* nothing booked */
    if (rc == 0) {
        band_time at = now + wait; /* fits() bounds it by INT64_MAX */
        if (delay != NULL)
            *delay = wait;
        if (wait > 0 && at > deadline) { /* a past deadline still takes what is there */
            r->refused_deadline++;
            rc = BAND_ETIMEDOUT; /* nothing booked; *delay is the retry-after */
        } else {
            take_locked(r, n, after);
            r->delayed += wait > 0;
            t->rate = r;
            t->at = at;
            t->_n = n;
        }
    }
    leave_locked(r);
    pthread_mutex_unlock(&r->lock);
    return rc;
}

int band_rate_ticket_cancel(band_rate_ticket *t)
{
    if (t == NULL || t->rate == NULL)
        return BAND_EINVAL;
    band_rate *r = t->rate;
    int rc = 0;
    pthread_mutex_lock(&r->lock);
    band_time now = enter_locked(r, r->clock(r->clock_ctx));
    if (t->at <= now) {
        rc = BAND_EALREADY; /* due: the work may start, the tokens stay spent */
    } else {
        /* Not due, so it was delayed when it was booked (the bucket's time never goes
         * back). Its tokens go back at the current rate: a change of settings keeps
         * tokens, not time. Never beyond full. */
        u128 back = (u128)t->_n * (uint64_t)r->period;
        r->missing = back >= r->missing ? 0 : r->missing - back;
        r->cancelled++;
        r->granted--;
        settle_tokens_locked(r, 0);
        if (r->granted_tokens != UINT64_MAX)
            r->granted_tokens -= t->_n; /* a booking counts in the locked part */
        r->delayed--;
    }
    leave_locked(r);
    pthread_mutex_unlock(&r->lock);
    t->rate = NULL;
    t->at = 0;
    t->_n = 0;
    return rc;
}

int band_rate_acquire(band_rate *r, uint64_t n, band_time *retry_after, band_time deadline,
                      band_cancel *cancel)
{
    if (retry_after != NULL)
        *retry_after = 0;
    if (r == NULL || n == 0 || r->sleep == NULL)
        return BAND_EINVAL;
    band_rate_ticket t = BAND_RATE_TICKET_INIT;
    band_time delay = 0;
    /* A requested token means "do not wait", as a past deadline does. */
    int cancelled = band_cancel_is_requested(cancel);
    int rc = band_rate_reserve(r, n, &t, &delay, cancelled ? 0 : deadline);
    if (rc == BAND_ETIMEDOUT && retry_after != NULL)
        *retry_after = delay;
    if (rc == BAND_ETIMEDOUT && cancelled)
        rc = BAND_ECANCELED;
    if (rc != 0)
        return rc;
    if (delay <= 0)
        return 0;
    if (r->sleep != default_sleep || cancel == NULL) {
        r->sleep(r->sleep_ctx, t.at);
        return 0;
    }
    if (band__sleep_until(t.at, cancel) == 0)
        return 0;
    /* Cancelled before the slot came: give the booking back, as a cancelled ticket does. */
    (void)band_rate_ticket_cancel(&t);
    return BAND_ECANCELED;
}

/* ---------------------------------------------------------------- observability */

/* Whole tokens in the bucket (lock held, advanced). */
static uint64_t available_locked(const band_rate *r)
{
    u128 depth = depth_of(r->burst, r->period);
    if (r->missing >= depth)
        return 0;
    return (uint64_t)((depth - r->missing) / (uint64_t)r->period); /* <= burst */
}

uint64_t band_rate_available(const band_rate *cr)
{
    if (cr == NULL)
        return 0;
    band_rate *r = (band_rate *)cr; /* the lock and the refill are logically const */
    pthread_mutex_lock(&r->lock);
    (void)enter_locked(r, r->clock(r->clock_ctx));
    uint64_t n = available_locked(r);
    leave_locked(r);
    pthread_mutex_unlock(&r->lock);
    return n;
}

int band_rate_get_stats(const band_rate *cr, band_rate_stats *out)
{
    if (cr == NULL || out == NULL)
        return BAND_EINVAL;
    band_rate *r = (band_rate *)cr;
    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&r->lock);
    (void)enter_locked(r, r->clock(r->clock_ctx));
    settle_tokens_locked(r, 0);
    uint64_t fg, fr;
    u128 ft;
    fast_counts(r, &fg, &ft, &fr);
    memcpy(out->name, r->name, sizeof(out->name));
    out->tokens = r->tokens;
    out->burst = r->burst;
    out->period = r->period;
    out->available = available_locked(r);
    out->granted = r->granted + fg;
    out->granted_tokens =
        r->granted_tokens == UINT64_MAX ? UINT64_MAX : r->granted_tokens + (uint64_t)ft;
    out->delayed = r->delayed;
    out->refused_rate = r->refused_rate + fr;
    out->refused_deadline = r->refused_deadline;
    out->refused_too_big = r->refused_too_big;
    out->refused_closed = r->refused_closed;
    out->cancelled = r->cancelled;
    out->closed = r->closed;
    leave_locked(r);
    pthread_mutex_unlock(&r->lock);
    return 0;
}

#ifdef BAND_TESTING
void band__rate_cas_hook(band_rate *r, void (*fn)(void *ctx), void *ctx)
{
    r->cas_hook = fn;
    r->cas_hook_ctx = ctx;
}
#endif
