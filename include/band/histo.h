/* SPDX-License-Identifier: MIT */
/**
 * @file band/histo.h
 * @brief A small lock-free, log-bucketed histogram of durations (or any uint64_t).
 *
 * The executor records queue time and service time with it; anything else that wants a
 * latency distribution (metrics, the concurrency limit's tests) can use it the same way.
 * It is self-contained: it depends on nothing in band but the export macro.
 *
 *  - Buckets: values 0..7 have one bucket each; above that every power of two [2^e, 2^e+1)
 *    is split into 8 equal sub-buckets, so a bucket's width is at most 1/8 of its lower
 *    bound (12.5 % relative precision) over the whole uint64_t range. BAND_HISTO_BUCKETS
 *    (496) counters of 8 bytes: about 4 KiB per histogram, embedded by the caller.
 *  - Recording is wait-free: two relaxed atomic adds (bucket, sum), two relaxed loads (min,
 *    max) and, rarely, a relaxed compare-and-swap on one of them. No lock, no allocation,
 *    no system call. The count is not a separate counter: it is the sum of the buckets.
 *    Threads recording into one histogram still share its sum's cache line; a hot path
 *    with many recording threads keeps one histogram per thread and merges snapshots
 *    (band_histo_merge()), as the executor does.
 *  - A snapshot copies the counters one by one while recording goes on. It is therefore
 *    not one instant: a value recorded during the copy may be in some counters and not in
 *    others. The snapshot's count is the sum of its buckets, so percentiles are always
 *    consistent with the buckets; sum, min and max are read separately.
 *  - Percentiles are answered from a snapshot, as the upper bound of the bucket holding the
 *    requested rank, clamped to the largest recorded value: never below the true value, at
 *    most 12.5 % above it.
 *
 * Every function is MT-safe except band_histo_init() and band_histo_reset(), which must
 * not race with band_histo_record() on the same histogram (reset while recording loses or
 * keeps the racing values, never corrupts memory, but min/max may then disagree).
 */
#ifndef BAND_HISTO_H
#define BAND_HISTO_H

#include "band/core.h"
#include "band/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief Sub-buckets per power of two, as a power of two (8). */
#define BAND_HISTO_SUB_BITS 3
/** @brief The number of buckets: 8 exact small values + 8 sub-buckets for each exponent 3..63. */
#define BAND_HISTO_BUCKETS (8 + 61 * 8)

/**
 * @brief The recording side; embed it (or allocate it) and band_histo_init().
 *
 * Every field is private: read it through band_histo_read().
 */
typedef struct band_histo {
    /** @privatesection */
    uint64_t _sum; /* saturates at UINT64_MAX instead of wrapping */
    uint64_t _min; /* UINT64_MAX while empty */
    uint64_t _max;
    uint64_t _buckets[BAND_HISTO_BUCKETS];
} band_histo;

/** @brief A copy that can be read at leisure (plain fields). */
typedef struct band_histo_snapshot {
    uint64_t count; /**< the sum of buckets[] */
    uint64_t sum;   /**< the sum of recorded values, saturating at UINT64_MAX */
    uint64_t min;   /**< 0 when empty */
    uint64_t max;   /**< 0 when empty */
    uint64_t buckets[BAND_HISTO_BUCKETS]; /**< values per bucket (band_histo_bucket_of()) */
} band_histo_snapshot;

/**
 * @brief Make @p h empty.
 *
 * Not MT-safe for the same @p h. NULL is ignored.
 *
 * @param h  The histogram, embedded or allocated by the caller; NULL is ignored.
 */
BAND_API void band_histo_init(band_histo *h);

/**
 * @brief Make @p h empty again; see the header note on racing records.
 *
 * NULL is ignored.
 *
 * @param h  The histogram; NULL is ignored.
 */
BAND_API void band_histo_reset(band_histo *h);

/**
 * @brief Add one value @p v to @p h.
 *
 * Wait-free, relaxed atomics only; never fails (NULL is ignored). MT-safe.
 *
 * @param h  The histogram; NULL is ignored.
 * @param v  The value, any uint64_t (a duration in ns, say).
 */
BAND_API void band_histo_record(band_histo *h, uint64_t v);

/**
 * @brief Copy @p h into *@p out (see the header note on consistency).
 *
 * Returns 0, or BAND_EINVAL for a NULL argument. MT-safe with recording.
 *
 * @param h         The histogram; must not be NULL.
 * @param[out] out  Receives the snapshot; must not be NULL.
 * @return 0, or BAND_EINVAL for a NULL argument.
 */
BAND_API int band_histo_read(const band_histo *h, band_histo_snapshot *out);

/**
 * @brief Add the snapshot @p src into the snapshot @p dst (counts, sums saturating, min
 *        and max).
 *
 * Returns 0 or BAND_EINVAL (NULL argument). Not MT-safe for the same @p dst (a snapshot
 * has one owner).
 *
 * @param[in,out] dst  The snapshot added to; must not be NULL.
 * @param src          The snapshot to add; must not be NULL; only read.
 * @return 0, or BAND_EINVAL for a NULL argument.
 */
BAND_API int band_histo_merge(band_histo_snapshot *dst, const band_histo_snapshot *src);

/**
 * @brief The value at or below which a fraction @p p (0..1) of the snapshot's values lie.
 *
 * Returns the upper bound of the bucket that holds rank ceil(@p p * count) (at least rank
 * 1), clamped to the snapshot's max: never below the true percentile and at most 12.5 %
 * above it. p <= 0 gives the min, p >= 1 the max. Returns 0 for an empty snapshot or NULL.
 * MT-safe (it only reads @p s).
 *
 * @param s  The snapshot, or NULL (gives 0).
 * @param p  The fraction, 0 to 1 (0.99 for the 99th percentile); values outside are
 *           clamped: p <= 0 gives the min, p >= 1 the max.
 * @return The percentile value, 0 for an empty snapshot or NULL.
 */
BAND_API uint64_t band_histo_percentile(const band_histo_snapshot *s, double p);

/**
 * @brief sum / count of the snapshot.
 *
 * MT-safe (it only reads @p s).
 *
 * @param s  The snapshot, or NULL.
 * @return The mean, 0 when empty or NULL.
 */
BAND_API double band_histo_mean(const band_histo_snapshot *s);

/**
 * @brief The index of the bucket that holds @p v.
 *
 * Pure: MT-safe.
 *
 * @param v  Any value.
 * @return The bucket index, below BAND_HISTO_BUCKETS.
 */
BAND_API unsigned band_histo_bucket_of(uint64_t v);

/**
 * @brief The smallest value of bucket @p i.
 *
 * Pure: MT-safe.
 *
 * @param i  The bucket index, below BAND_HISTO_BUCKETS.
 * @return The smallest value of the bucket; UINT64_MAX for an @p i beyond the last.
 */
BAND_API uint64_t band_histo_bucket_low(unsigned i);

/**
 * @brief The largest value of bucket @p i.
 *
 * Pure: MT-safe.
 *
 * @param i  The bucket index, below BAND_HISTO_BUCKETS.
 * @return The largest value of the bucket; UINT64_MAX for the last bucket and beyond.
 */
BAND_API uint64_t band_histo_bucket_high(unsigned i);

#ifdef __cplusplus
}
#endif
#endif /* BAND_HISTO_H */
