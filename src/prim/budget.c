/* SPDX-License-Identifier: MIT */
/*
 * budget.c - byte budgets and the buffers that carry their reservations.
 *
 * A budget is a semaphore whose release limit is its capacity; the semaphore does the
 * capacity check on every acquisition (BAND_E2BIG), so permits taken through
 * band_budget_sem() keep it too. Buffers carry a small header in front of the payload
 * recording their budget and size; only the payload is charged.
 */
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include "prim/sem_priv.h"

struct band_budget {
    band_sem sem; /* first: a budget is usable wherever its semaphore is */
};

/* The header in front of every budgeted buffer, padded to keep the payload aligned for
 * any type. */
union buf_header {
    struct {
        band_budget *budget;
        size_t len;
    } h;
    max_align_t align;
};

int band_budget_create(band_budget **out, uint64_t capacity, const band_budget_opts *opts)
{
    band_budget_opts o = {0};
    if (opts != NULL)
        o = *opts;
    if (out == NULL || capacity == 0 || capacity > BAND_MAX_UNITS ||
        band__sem_check_opts(o.deadline_aware) != 0)
        return BAND_EINVAL;
    band_budget *b = aligned_alloc(BAND__CACHELINE, sizeof(*b));
    if (b == NULL)
        return BAND_ENOMEM;
    int rc = band__sem_init(&b->sem, capacity, 1);
    if (rc != 0) {
        free(b);
        return rc;
    }
    band__sem_apply_opts(&b->sem, o.deadline_aware, o.wait_histo);
    *out = b;
    return 0;
}

int band_budget_destroy(band_budget *b)
{
    if (b == NULL)
        return 0;
    int rc = band__sem_busy(&b->sem); /* queued requests, or admissions watching */
    if (rc != 0)
        return rc;
    band__sem_fini(&b->sem);
    free(b);
    return 0;
}

band_sem *band_budget_sem(band_budget *b)
{
    return b == NULL ? NULL : &b->sem;
}

int band_budget_set_name(band_budget *b, const char *name)
{
    return band_sem_set_name(band_budget_sem(b), name);
}

int band_budget_try_acquire(band_budget *b, uint64_t n)
{
    return band_sem_try_acquire(band_budget_sem(b), n);
}

int band_budget_acquire(band_budget *b, uint64_t n, band_time deadline, band_cancel *cancel)
{
    return band_sem_acquire(band_budget_sem(b), n, deadline, cancel);
}

int band_budget_acquire_async(band_budget *b, uint64_t n, band_waiter *w)
{
    return band_sem_acquire_async(band_budget_sem(b), n, w);
}

int band_budget_release(band_budget *b, uint64_t n)
{
    return band_sem_release(band_budget_sem(b), n);
}

int band_budget_close(band_budget *b)
{
    return band_sem_close(band_budget_sem(b));
}

int band_budget_is_closed(const band_budget *b)
{
    return b == NULL ? 0 : band_sem_is_closed(&b->sem);
}

uint64_t band_budget_capacity(const band_budget *b)
{
    return b == NULL ? 0
                     : atomic_load_explicit(&((band_budget *)b)->sem.limit, memory_order_relaxed);
}

uint64_t band_budget_available(const band_budget *b)
{
    return b == NULL ? 0 : band_sem_available(&b->sem);
}

int band_budget_grow(band_budget *b, uint64_t n)
{
    if (b == NULL)
        return BAND_EINVAL;
    if (n == 0)
        return 0;
    return band__sem_grow(&b->sem, n);
}

int band_budget_shrink(band_budget *b, uint64_t n)
{
    if (b == NULL)
        return BAND_EINVAL;
    return band__sem_shrink(&b->sem, n);
}

int band_budget_get_stats(const band_budget *b, band_budget_stats *out)
{
    if (b == NULL || out == NULL)
        return BAND_EINVAL;
    band_sem_stats st;
    int rc = band_sem_get_stats(&b->sem, &st);
    if (rc != 0)
        return rc;
    memset(out, 0, sizeof(*out));
    memcpy(out->name, st.name, sizeof(out->name));
    out->closed = st.closed;
    out->capacity = st.capacity;
    out->in_use = st.in_use;
    out->available = st.available;
    out->debt = st.debt;
    out->waiters = st.waiters;
    out->waiting_units = st.waiting_units;
    out->head_granted = st.head_granted;
    out->queued = st.queued;
    out->grants = st.grants;
    out->timeouts = st.timeouts;
    out->cancels = st.cancels;
    out->closed_fails = st.closed_fails;
    out->try_refusals = st.try_refusals;
    out->too_big = st.too_big;
    out->wait_ns_total = st.wait_ns_total;
    out->wait_ns_max = st.wait_ns_max;
    out->refused_deadline = st.refused_deadline;
    out->grant_pace_ns = st.grant_pace_ns;
    return 0;
}

/* ---------------------------------------------------------------- buffers */

static union buf_header *header_of(const void *buf)
{
    return (union buf_header *)(void *)((char *)(uintptr_t)buf - sizeof(union buf_header));
}

/* Return @n units of a buffer's reservation. A refusal means other code released units it
 * never held; these would then exceed the capacity, so they are dropped. */
static void return_units(band_budget *b, uint64_t n)
{
    (void)band_sem_release(&b->sem, n);
}

/* BAND_E2BIG, counted, when @len exceeds @limit; else 0. Checked before any allocation,
 * so that a size no budget could charge is never mistaken for a lack of memory. */
static int refuse_too_big(band_budget *b, size_t len, uint64_t limit)
{
    if ((uint64_t)len <= limit)
        return 0;
    atomic_fetch_add_explicit(&b->sem.too_big, 1, memory_order_relaxed);
    return BAND_E2BIG;
}

/* The header in front, for @len payload bytes charged to @b. */
static int buf_alloc(band_budget *b, size_t len, void **out)
{
    if (len > SIZE_MAX - sizeof(union buf_header))
        return BAND_ENOMEM;
    union buf_header *hdr = malloc(sizeof(*hdr) + len);
    if (hdr == NULL)
        return BAND_ENOMEM;
    hdr->h.budget = b;
    hdr->h.len = len;
    *out = hdr + 1;
    return 0;
}

int band_budget_alloc_reserved(band_budget *b, size_t len, void **out)
{
    if (b == NULL || out == NULL)
        return BAND_EINVAL;
    /* Callers hold at most the capacity plus what a shrink left owed: anything larger was
     * never reserved. */
    int rc = band__sem_check_holdable(&b->sem, (uint64_t)len);
    if (rc != 0)
        return rc;
    return buf_alloc(b, len, out);
}

int band_budget_alloc(band_budget *b, size_t len, void **out, band_time deadline,
                      band_cancel *cancel)
{
    if (b == NULL || out == NULL)
        return BAND_EINVAL;
    int rc = refuse_too_big(b, len, band_budget_capacity(b));
    if (rc != 0)
        return rc;
    rc = len > 0                       ? band_sem_acquire(&b->sem, (uint64_t)len, deadline, cancel)
         : band_sem_is_closed(&b->sem) ? BAND_ECLOSED
                                       : 0;
    if (rc != 0)
        return rc;
    rc = buf_alloc(b, len, out);
    if (rc != 0 && len > 0)
        return_units(b, (uint64_t)len);
    return rc;
}

int band_budget_realloc(void **buf, size_t len, band_time deadline, band_cancel *cancel)
{
    if (buf == NULL || *buf == NULL)
        return BAND_EINVAL;
    union buf_header *hdr = header_of(*buf);
    band_budget *b = hdr->h.budget;
    size_t old = hdr->h.len;
    if (len > old) {
        /* A size above the capacity is E2BIG, however large, before the size is checked
         * against what the allocator can represent and before anything is reserved. */
        int rc = refuse_too_big(b, len, band_budget_capacity(b));
        if (rc != 0)
            return rc;
        if (len > SIZE_MAX - sizeof(union buf_header))
            return BAND_ENOMEM;
        rc = band_sem_acquire(&b->sem, (uint64_t)(len - old), deadline, cancel);
        if (rc != 0)
            return rc;
    }
    union buf_header *nh = realloc(hdr, sizeof(*hdr) + len);
    if (nh == NULL) {
        if (len > old)
            return_units(b, (uint64_t)(len - old));
        return BAND_ENOMEM;
    }
    nh->h.len = len;
    if (len < old)
        return_units(b, (uint64_t)(old - len));
    *buf = nh + 1;
    return 0;
}

void band_budget_free(void *buf)
{
    if (buf == NULL)
        return;
    union buf_header *hdr = header_of(buf);
    band_budget *b = hdr->h.budget;
    size_t len = hdr->h.len;
    free(hdr);
    if (len > 0)
        return_units(b, (uint64_t)len);
}

size_t band_budget_buf_size(const void *buf)
{
    return buf == NULL ? 0 : header_of(buf)->h.len;
}

band_budget *band_budget_buf_owner(const void *buf)
{
    return buf == NULL ? NULL : header_of(buf)->h.budget;
}
