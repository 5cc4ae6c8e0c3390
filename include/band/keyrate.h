/* SPDX-License-Identifier: MIT */
/**
 * @file band/keyrate.h
 * @brief Keyed rate budgets: one token bucket (exact GCRA) per key, in a bounded table.
 *
 * A band_rate limits one stream of work; a band_keyrate limits each tenant, client or
 * route separately, as nginx's `limit_req zone` or Envoy's rate-limit descriptors do. Every
 * key has its own bucket with the same settings: @p tokens per @p period, at most @p burst
 * (the meaning band_rate_create() gives them). A key seen for the first time starts full.
 *
 * The table is bounded (band_keyrate_opts.max_keys). A key whose bucket is full again is
 * *idle*: it answers every request exactly as a key never seen does, so the table drops it
 * whenever it needs the room (and band_keyrate_get_stats() sweeps them), and no answer
 * changes. When a new key meets a table full of keys that are not idle,
 * band_keyrate_opts.full says what happens: BAND_KEYRATE_FULL_EVICT (the default) drops
 * the key closest to full, which then starts full again (lenient: that key may get more
 * than its rate), and BAND_KEYRATE_FULL_REFUSE refuses the new key with BAND_ENOSPC (strict:
 * no key ever gets more than its rate, and a flood of new keys is refused instead).
 *
 * The table is split into shards, each with its own mutex and its own share of max_keys;
 * a key lives in the shard its hash picks (a hash seeded per table). A decision takes one
 * shard's mutex for a hash lookup and a few integer operations, and no allocation: the
 * table is allocated once, at creation. Time comes from a clock hook (default band_now()),
 * read once per call; a clock that steps back is read as no time elapsed, per shard.
 *
 * All arithmetic is integer and exact, as in band/rate.h; a key's state never needs more
 * than burst x period, so no request can overflow (no BAND_EOVERFLOW from try_acquire).
 */
#ifndef BAND_KEYRATE_H
#define BAND_KEYRATE_H

#include <stddef.h>

#include "band/core.h"
#include "band/error.h"
#include "band/rate.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief Keyed rate budgets (opaque): created with band_keyrate_create(). */
typedef struct band_keyrate band_keyrate;

/** @brief The default of band_keyrate_opts.max_keys. */
#define BAND_KEYRATE_MAX_KEYS_DEFAULT 10000
/** @brief The default of band_keyrate_opts.max_key_len, in bytes. */
#define BAND_KEYRATE_KEY_LEN_DEFAULT 64
/** @brief The largest band_keyrate_opts.max_key_len, in bytes. */
#define BAND_KEYRATE_KEY_LEN_MAX 4096
/** @brief The default of band_keyrate_opts.shards. */
#define BAND_KEYRATE_SHARDS_DEFAULT 16
/** @brief The largest band_keyrate_opts.shards. */
#define BAND_KEYRATE_SHARDS_MAX 1024

/** @brief band_keyrate_opts.full: a new key meets a full table: drop the key closest to
 *         full (the default). */
#define BAND_KEYRATE_FULL_EVICT 0
/** @brief band_keyrate_opts.full: a new key meets a full table: refuse it with
 *         BAND_ENOSPC. */
#define BAND_KEYRATE_FULL_REFUSE 1

/** @brief band_keyrate_opts.fail: a backend that fails refuses the request with
 *         BAND_EUNAVAIL (the default). */
#define BAND_KEYRATE_FAIL_CLOSED 0
/** @brief band_keyrate_opts.fail: a backend that fails grants the request (counted in
 *         band_keyrate_stats.failed_open). */
#define BAND_KEYRATE_FAIL_OPEN 1

/**
 * @brief Where the buckets live when they are not in this process (libband-redis fills
 *        one in; see docs/redis.md).
 *
 * With a backend, band_keyrate_try_acquire(), band_keyrate_available() and
 * band_keyrate_forget() check their arguments, the close and the burst here, then ask the
 * backend, passing the current settings; the in-process table is not used. Each function
 * returns 0, BAND_EAGAIN (try_acquire: refused, with *retry_after) or BAND_ENOENT (forget:
 * the key was full), or any other negative code when it could not decide (unreachable,
 * timed out, a protocol error): band_keyrate_opts.fail then says what the caller gets. The
 * functions are called without any band lock held, from any thread: the backend makes
 * itself MT-safe. It must outlive the table.
 */
typedef struct band_keyrate_backend {
    /** Take @p n tokens of @p key under the settings given, or refuse. */
    int (*try_acquire)(void *ctx, const void *key, size_t keylen, uint64_t n, uint64_t tokens,
                       band_time period, uint64_t burst, band_time *retry_after);
    /** The whole tokens @p key holds now, in *@p out. */
    int (*available)(void *ctx, const void *key, size_t keylen, uint64_t tokens, band_time period,
                     uint64_t burst, uint64_t *out);
    /** Make @p key full again: 0, or BAND_ENOENT when it was full already. */
    int (*forget)(void *ctx, const void *key, size_t keylen);
    void *ctx; /**< passed to each function */
} band_keyrate_backend;

/** @brief Creation options; NULL or a zero-initialised struct means the defaults. */
typedef struct band_keyrate_opts {
    size_t max_keys;           /**< keys the table holds at most; 0: 10000; at most 2^31 */
    size_t max_key_len;        /**< longest key in bytes; 0: 64; at most 4096 */
    unsigned shards;           /**< 0: 16; at most 1024; lowered to max_keys when above */
    int full;                  /**< BAND_KEYRATE_FULL_EVICT (0) or BAND_KEYRATE_FULL_REFUSE */
    band_rate_clock_fn *clock; /**< NULL: band_now() */
    void *clock_ctx;           /**< passed to clock */
    /** NULL: the buckets live in this process; else where they live (copied at creation;
     *  max_keys, max_key_len, shards, full and clock are then unused) */
    const band_keyrate_backend *backend;
    int fail; /**< BAND_KEYRATE_FAIL_CLOSED (0) or BAND_KEYRATE_FAIL_OPEN, with a backend */
} band_keyrate_opts;

/**
 * @brief A table of per-key buckets: @p tokens per @p period nanoseconds for each key,
 *        holding at most @p burst each (the most tokens one request can take).
 *
 * The table (max_keys entries and their key bytes) is allocated here, once. Shard s of S
 * holds max_keys / S keys, one more for the first max_keys % S shards, so the shards hold
 * max_keys in all; a new key meets a full table when its own shard is full. With
 * shards = 1 the bound is exact for every set of keys.
 *
 * Returns 0 and stores it in *@p out; BAND_EINVAL (NULL @p out, @p tokens, @p period or
 * @p burst 0, a negative @p period, @p tokens above INT64_MAX, an option out of range, a
 * backend without its three functions);
 * BAND_EOVERFLOW (@p burst x @p period does not fit in 63 bits); BAND_ENOMEM. On error
 * *@p out is untouched. MT-safe. Free it with band_keyrate_destroy().
 *
 * @param[out] out  Receives the table; must not be NULL. The caller owns it.
 * @param tokens    Tokens that flow into each key's bucket per @p period, 1 to INT64_MAX.
 * @param period    The period in nanoseconds, above 0.
 * @param burst     The most tokens a key's bucket holds, at least 1.
 * @param opts      The options, or NULL for the defaults; read during the call only.
 * @return 0, BAND_EINVAL, BAND_EOVERFLOW or BAND_ENOMEM as described above.
 */
BAND_API int band_keyrate_create(band_keyrate **out, uint64_t tokens, band_time period,
                                 uint64_t burst, const band_keyrate_opts *opts);

/**
 * @brief Free @p k and every key it holds (NULL is a no-op).
 *
 * Nothing ever waits on a band_keyrate. Not MT-safe against other calls on @p k.
 *
 * @param k  The table, or NULL.
 * @return 0.
 */
BAND_API int band_keyrate_destroy(band_keyrate *k);

/**
 * @brief Give @p k a name that band_keyrate_get_stats() reports.
 *
 * The name is copied. NULL clears it. Returns 0, or BAND_EINVAL when @p k is NULL or the
 * name does not fit in BAND_NAME_MAX bytes including its NUL (nothing changes). MT-safe.
 *
 * @param k     The table; must not be NULL.
 * @param name  The name, copied; NULL clears it.
 * @return 0, or BAND_EINVAL as described above.
 */
BAND_API int band_keyrate_set_name(band_keyrate *k, const char *name);

/**
 * @brief Change the rate and the burst of every key at run time.
 *
 * Each key is first brought to now under the old rate; then it keeps how many tokens it
 * is short of full (re-counted in the new units rounding up, by less than 1/@p period of a
 * token), at most the new burst, and from then on it refills at the new rate up to the
 * new burst. So a key that is full stays full, as a key not in the table does, and a
 * raise of the burst gives every key the extra tokens: a key 1 short of a burst of 3 is 1
 * short of 20 after a raise to 20 (holding 19), and a key 10 short of 10 is 4 short of 4
 * (empty) after a cut to 4. This differs from band_rate_set(), which keeps the tokens
 * held: a table cannot keep tokens for the keys it does not hold. The change takes every
 * shard's mutex (in order) and visits every key: O(max_keys).
 *
 * Returns 0, or BAND_EINVAL (also for a NULL @p k) or BAND_EOVERFLOW as
 * band_keyrate_create(); nothing changes on error. MT-safe.
 *
 * @param k       The table; must not be NULL.
 * @param tokens  Tokens that flow in per @p period, 1 to INT64_MAX.
 * @param period  The period in nanoseconds, above 0.
 * @param burst   The most tokens a key's bucket holds, at least 1.
 * @return 0, BAND_EINVAL or BAND_EOVERFLOW as described above.
 */
BAND_API int band_keyrate_set(band_keyrate *k, uint64_t tokens, band_time period, uint64_t burst);

/**
 * @brief Take @p n tokens from the bucket of @p key now, or refuse; never waits.
 *
 * @p key is @p keylen bytes, compared byte for byte (any bytes, NUL included); it is
 * copied into the table when the key is new.
 *
 * Returns 0 (taken); BAND_EAGAIN (the key's bucket holds fewer than @p n tokens; nothing
 * taken; *@p retry_after, when not NULL, is the wait in nanoseconds after which the same
 * request for the same key would succeed if nothing else took from it meanwhile: exact,
 * rounded up to the nanosecond); BAND_E2BIG (@p n > burst: it can never succeed);
 * BAND_ENOSPC (a new key met a full table and band_keyrate_opts.full is
 * BAND_KEYRATE_FULL_REFUSE; nothing changes); BAND_EUNAVAIL (only with a backend that could
 * not decide, under BAND_KEYRATE_FAIL_CLOSED; under FAIL_OPEN the answer is 0); BAND_ECLOSED;
 * BAND_EINVAL (NULL @p k, @p n 0, NULL @p key with @p keylen above 0, @p keylen above
 * max_key_len). *@p retry_after is 0 for every answer but BAND_EAGAIN. MT-safe: it takes
 * the mutex of the key's shard (with a backend, none during the backend's call).
 *
 * @param k                 The table; must not be NULL.
 * @param key               The key's bytes; read during the call only.
 * @param keylen            Its length in bytes, 0 to max_key_len.
 * @param n                 Tokens to take, 1 to the burst.
 * @param[out] retry_after  Receives the wait in nanoseconds after BAND_EAGAIN (0 for every
 *                          other answer), or NULL.
 * @return 0, BAND_EAGAIN, BAND_E2BIG, BAND_ENOSPC, BAND_EUNAVAIL, BAND_ECLOSED or
 *         BAND_EINVAL as described above.
 */
BAND_API int band_keyrate_try_acquire(band_keyrate *k, const void *key, size_t keylen, uint64_t n,
                                      band_time *retry_after);

/**
 * @brief Whole tokens in the bucket of @p key now (the burst for a key not in the table).
 *
 * Changes nothing a later answer could tell. With a backend that cannot decide: 0 under
 * BAND_KEYRATE_FAIL_CLOSED, the burst under FAIL_OPEN. MT-safe.
 *
 * @param k       The table, or NULL.
 * @param key     The key's bytes (NULL only with @p keylen 0).
 * @param keylen  Its length in bytes.
 * @return The whole tokens available to @p key now; 0 for NULL @p k or an invalid key.
 */
BAND_API uint64_t band_keyrate_available(const band_keyrate *k, const void *key, size_t keylen);

/**
 * @brief Forget @p key: its bucket is full again, as for a key never seen.
 *
 * For an operator who resets a client, or a tenant that was removed. Returns 0 (the key
 * was short of full and is now gone from the table), BAND_ENOENT (the key was already
 * full: not in the table, or idle; nothing changes that an answer could tell),
 * BAND_EUNAVAIL (a backend could not decide; whatever the fail option), or BAND_EINVAL
 * (NULL @p k, NULL @p key with @p keylen above 0, @p keylen above max_key_len). Works after
 * band_keyrate_close() too. MT-safe.
 *
 * @param k       The table; must not be NULL.
 * @param key     The key's bytes; read during the call only.
 * @param keylen  Its length in bytes.
 * @return 0, BAND_ENOENT, BAND_EUNAVAIL or BAND_EINVAL as described above.
 */
BAND_API int band_keyrate_forget(band_keyrate *k, const void *key, size_t keylen);

/**
 * @brief Refuse every later band_keyrate_try_acquire() with BAND_ECLOSED.
 *
 * A second close changes nothing. Returns 0 or BAND_EINVAL (NULL). MT-safe.
 *
 * @param k  The table; must not be NULL.
 * @return 0, or BAND_EINVAL for NULL.
 */
BAND_API int band_keyrate_close(band_keyrate *k);

/**
 * @brief Whether band_keyrate_close() was called.
 *
 * MT-safe.
 *
 * @param k  The table, or NULL.
 * @return 1 once band_keyrate_close() was called, 0 otherwise (0 for NULL).
 */
BAND_API int band_keyrate_is_closed(const band_keyrate *k);

/** @brief Counters; see band_keyrate_get_stats(). */
typedef struct band_keyrate_stats {
    char name[BAND_NAME_MAX]; /**< "" when unnamed */
    uint64_t tokens;          /**< the current settings: tokens per period */
    uint64_t burst;           /**< the current settings: the burst */
    band_time period;         /**< the current settings: the period in nanoseconds */
    uint64_t max_keys;        /**< the table's bound */
    unsigned shards;          /**< the shards the table is split into */
    uint64_t keys;            /**< keys short of full now (idle keys are swept first) */
    uint64_t granted;         /**< requests that took tokens */
    uint64_t granted_tokens;  /**< their tokens; saturates at UINT64_MAX */
    uint64_t refused_rate;    /**< BAND_EAGAIN */
    uint64_t refused_too_big; /**< BAND_E2BIG */
    uint64_t refused_full;    /**< BAND_ENOSPC: a new key met a full table (FULL_REFUSE) */
    uint64_t refused_closed;  /**< BAND_ECLOSED */
    uint64_t evicted_busy;    /**< keys short of full dropped for a new key (FULL_EVICT) */
    uint64_t evicted_idle;    /**< idle keys dropped (changes no answer; when they are
                                 dropped depends on the table's needs) */
    uint64_t forgotten;       /**< band_keyrate_forget() calls that returned 0 */
    uint64_t backend_errors;  /**< backend calls that could not decide */
    uint64_t failed_open;     /**< ... of which try_acquire granted (FAIL_OPEN; these count in
                                 granted too) */
    int closed;               /**< 1 after band_keyrate_close() */
} band_keyrate_stats;

/**
 * @brief A snapshot of the counters, summed shard by shard.
 *
 * It takes each shard's mutex in turn and drops that shard's idle keys on the way, so
 * @c keys counts the keys short of full; a decision in another shard may land between two
 * shards' readings. O(max_keys). MT-safe.
 *
 * @param k         The table; must not be NULL.
 * @param[out] out  Receives the snapshot; must not be NULL.
 * @return 0 or BAND_EINVAL (NULL argument).
 */
BAND_API int band_keyrate_get_stats(const band_keyrate *k, band_keyrate_stats *out);

#ifdef __cplusplus
}
#endif
#endif /* BAND_KEYRATE_H */
