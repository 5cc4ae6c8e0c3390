/* SPDX-License-Identifier: MIT */
/*
 * histo.c - the log-bucketed histogram (band/histo.h).
 *
 * Design notes
 * ------------
 * Bucket index of v: v < 8 -> v. Otherwise e = floor(log2 v) (3..63) and the three bits
 * below the leading one select the sub-bucket: index = (e - 2) * 8 + ((v >> (e - 3)) & 7).
 * Index 8 is therefore [8, 9), the first bucket of e = 3, and the last index is
 * 61 * 8 + 7 = 495. Every counter is updated with relaxed atomics: a histogram carries
 * no ordering, and readers only need each counter to be read whole.
 */
#include <string.h>

#include "band/histo.h"

#define SUB   (1u << BAND_HISTO_SUB_BITS)
#define RELAX __ATOMIC_RELAXED

unsigned band_histo_bucket_of(uint64_t v)
{
    if (v < SUB)
        return (unsigned)v;
    unsigned e = 63u - (unsigned)__builtin_clzll(v);
    unsigned sub = (unsigned)(v >> (e - BAND_HISTO_SUB_BITS)) & (SUB - 1u);
    return (e - BAND_HISTO_SUB_BITS + 1u) * SUB + sub;
}

uint64_t band_histo_bucket_low(unsigned i)
{
    if (i < SUB)
        return i;
    if (i >= BAND_HISTO_BUCKETS)
        return UINT64_MAX;
    unsigned e = i / SUB + BAND_HISTO_SUB_BITS - 1u;
    uint64_t sub = i % SUB;
    return (SUB + sub) << (e - BAND_HISTO_SUB_BITS);
}

uint64_t band_histo_bucket_high(unsigned i)
{
    if (i < SUB)
        return i;
    if (i >= BAND_HISTO_BUCKETS - 1u)
        return UINT64_MAX;
    return band_histo_bucket_low(i + 1u) - 1u;
}

void band_histo_init(band_histo *h)
{
    if (h == NULL)
        return;
    memset(h, 0, sizeof(*h));
    h->_min = UINT64_MAX;
}

void band_histo_reset(band_histo *h)
{
    if (h == NULL)
        return;
    for (unsigned i = 0; i < BAND_HISTO_BUCKETS; i++)
        __atomic_store_n(&h->_buckets[i], 0, RELAX);
    __atomic_store_n(&h->_sum, 0, RELAX);
    __atomic_store_n(&h->_min, UINT64_MAX, RELAX);
    __atomic_store_n(&h->_max, 0, RELAX);
}

void band_histo_record(band_histo *h, uint64_t v)
{
    if (h == NULL)
        return;
    __atomic_fetch_add(&h->_buckets[band_histo_bucket_of(v)], 1, RELAX);
    /* The sum saturates: add, and if that wrapped, pin it at the maximum. */
    uint64_t old = __atomic_fetch_add(&h->_sum, v, RELAX);
    if (old + v < old)
        __atomic_store_n(&h->_sum, UINT64_MAX, RELAX);
    uint64_t cur = __atomic_load_n(&h->_min, RELAX);
    while (v < cur && !__atomic_compare_exchange_n(&h->_min, &cur, v, 1, RELAX, RELAX)) {
    }
    cur = __atomic_load_n(&h->_max, RELAX);
    while (v > cur && !__atomic_compare_exchange_n(&h->_max, &cur, v, 1, RELAX, RELAX)) {
    }
}

int band_histo_read(const band_histo *h, band_histo_snapshot *out)
{
    if (h == NULL || out == NULL)
        return BAND_EINVAL;
    uint64_t n = 0;
    for (unsigned i = 0; i < BAND_HISTO_BUCKETS; i++) {
        out->buckets[i] = __atomic_load_n(&h->_buckets[i], RELAX);
        n += out->buckets[i];
    }
    out->count = n;
    out->sum = __atomic_load_n(&h->_sum, RELAX);
    uint64_t mn = __atomic_load_n(&h->_min, RELAX);
    uint64_t mx = __atomic_load_n(&h->_max, RELAX);
    if (n == 0) {
        out->min = 0;
        out->max = 0;
    } else {
        /* A value still being recorded may be counted without its min/max yet: fall back
         * to the buckets' bounds so that min <= max and both frame the buckets. */
        unsigned lo = 0, hi = BAND_HISTO_BUCKETS - 1u;
        while (out->buckets[lo] == 0)
            lo++;
        while (out->buckets[hi] == 0)
            hi--;
        if (mn == UINT64_MAX || mn > band_histo_bucket_high(lo))
            mn = band_histo_bucket_low(lo);
        if (mx < band_histo_bucket_low(hi))
            mx = band_histo_bucket_high(hi);
        out->min = mn;
        out->max = mx;
    }
    return 0;
}

int band_histo_merge(band_histo_snapshot *dst, const band_histo_snapshot *src)
{
    if (dst == NULL || src == NULL)
        return BAND_EINVAL;
    if (src->count == 0)
        return 0;
    for (unsigned i = 0; i < BAND_HISTO_BUCKETS; i++)
        dst->buckets[i] += src->buckets[i];
    dst->min = dst->count == 0 || src->min < dst->min ? src->min : dst->min;
    dst->max = dst->count == 0 || src->max > dst->max ? src->max : dst->max;
    dst->count += src->count;
    dst->sum = dst->sum + src->sum < dst->sum ? UINT64_MAX : dst->sum + src->sum;
    return 0;
}

uint64_t band_histo_percentile(const band_histo_snapshot *s, double p)
{
    if (s == NULL || s->count == 0)
        return 0;
    if (!(p > 0.0))
        return s->min;
    if (p >= 1.0)
        return s->max;
    double r = p * (double)s->count;
    uint64_t rank = (uint64_t)r;
    if ((double)rank < r)
        rank++;
    if (rank == 0)
        rank = 1;
    uint64_t seen = 0;
    for (unsigned i = 0; i < BAND_HISTO_BUCKETS; i++) {
        seen += s->buckets[i];
        if (seen >= rank) {
            uint64_t hi = band_histo_bucket_high(i);
            if (hi > s->max)
                hi = s->max;
            if (hi < s->min)
                hi = s->min;
            return hi;
        }
    }
    return s->max;
}

double band_histo_mean(const band_histo_snapshot *s)
{
    if (s == NULL || s->count == 0)
        return 0.0;
    return (double)s->sum / (double)s->count;
}
