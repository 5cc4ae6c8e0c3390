/* SPDX-License-Identifier: MIT */
/*
 * byte_budget.c - charge for the size of the work.
 *
 * A budget of 1 MiB of payload. Every buffer reserves its bytes, in one acquisition,
 * before it is allocated, and carries the reservation until it is freed. The steps: a
 * request that could never fit fails at once; a request that does not fit yet waits in
 * FIFO order and gets the bytes when another buffer is freed; try never barges past it;
 * growing a buffer reserves the difference first; the capacity shrinks at run time
 * without revoking anything and grows back.
 *
 * Exits 0 when every step behaved as described, 1 otherwise.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <band/band.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define KIB ((size_t)1024)

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "byte_budget: check failed: %s\n", #cond);                             \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

struct big_job {
    band_budget *budget;
    void *buf; /* out: the 800 KiB buffer, owned by whoever joins the thread */
    int rc;
};

/* Waits for 800 KiB of the budget, as long as it takes. */
static void *big_job_main(void *arg)
{
    struct big_job *job = arg;
    job->rc = band_budget_alloc(job->budget, 800 * KIB, &job->buf, BAND_FOREVER, NULL);
    return NULL;
}

static void show(const char *what, band_budget *b)
{
    band_budget_stats st;
    if (band_budget_get_stats(b, &st) != 0)
        return;
    printf("%-40s capacity %5llu KiB  available %5llu KiB  debt %4llu KiB  waiting %llu\n", what,
           (unsigned long long)(st.capacity / KIB), (unsigned long long)(st.available / KIB),
           (unsigned long long)(st.debt / KIB), (unsigned long long)st.waiters);
}

/* Polls until @b has one queued request (the big job), for at most five seconds. */
static int wait_for_waiter(band_budget *b)
{
    band_time give_up = band_deadline_after(5 * BAND_SEC);
    struct timespec ms = {0, 1000000};
    band_budget_stats st;
    while (band_budget_get_stats(b, &st) == 0 && st.waiters == 0) {
        if (band_now() > give_up)
            return -1;
        nanosleep(&ms, NULL);
    }
    return 0;
}

int main(void)
{
    band_budget *b;
    void *small = NULL, *never = NULL;
    CHECK(band_budget_create(&b, 1024 * KIB, NULL) == 0);
    show("a budget of 1 MiB", b);

    /* More than the whole capacity: refused at once, since waiting could never help. */
    CHECK(band_budget_alloc(b, 2048 * KIB, &never, BAND_FOREVER, NULL) == BAND_E2BIG);
    CHECK(never == NULL);

    CHECK(band_budget_alloc(b, 600 * KIB, &small, BAND_FOREVER, NULL) == 0);
    memset(small, 1, 600 * KIB);
    show("600 KiB buffer allocated", b);

    /* 800 KiB does not fit next to it: that job waits, holding nothing meanwhile. */
    struct big_job job = {b, NULL, 0};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, big_job_main, &job) == 0);
    CHECK(wait_for_waiter(b) == 0);
    show("an 800 KiB request is queued", b);

    /* 424 KiB are free, but a newcomer may not pass the queued request. */
    CHECK(band_budget_try_acquire(b, 100 * KIB) == BAND_EAGAIN);

    /* Freeing the first buffer returns its bytes, and the queued job gets them. */
    band_budget_free(small);
    pthread_join(t, NULL);
    CHECK(job.rc == 0 && band_budget_buf_size(job.buf) == 800 * KIB);
    show("600 KiB freed, the 800 KiB job runs", b);

    /* Growing a buffer reserves the difference before it reallocates. */
    CHECK(band_budget_realloc(&job.buf, 1024 * KIB, BAND_FOREVER, NULL) == 0);
    show("buffer grown to 1 MiB", b);
    /* 2 MiB can never fit, even though the 1 MiB more it needs equals the capacity. */
    CHECK(band_budget_realloc(&job.buf, 2048 * KIB, band_deadline_after(BAND_SEC), NULL) ==
          BAND_E2BIG);
    CHECK(band_budget_buf_size(job.buf) == 1024 * KIB); /* unchanged, still valid */

    /* Shrink the capacity while it is all in use: nothing is revoked, a debt remains. */
    CHECK(band_budget_shrink(b, 512 * KIB) == 0);
    show("capacity shrunk by 512 KiB", b);
    CHECK(band_budget_capacity(b) == 512 * KIB && band_budget_available(b) == 0);

    /* Returned bytes repay the debt before they become available again. */
    CHECK(band_budget_realloc(&job.buf, 256 * KIB, BAND_FOREVER, NULL) == 0);
    show("buffer shrunk to 256 KiB", b);
    CHECK(band_budget_available(b) == 256 * KIB);
    band_budget_free(job.buf);
    CHECK(band_budget_grow(b, 512 * KIB) == 0);
    show("buffer freed, capacity grown back", b);
    CHECK(band_budget_available(b) == 1024 * KIB);

    CHECK(band_budget_destroy(b) == 0);
    return 0;
}
