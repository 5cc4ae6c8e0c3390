/* SPDX-License-Identifier: MIT */
/*
 * permit_transfer.c - keep the permit with the resource it pays for.
 *
 * start_request() returns a response whose body is still to be read, on another thread.
 * The permit it took for the request moves into the response, so the slot stays taken
 * until the body is done and the response is freed, not merely until start_request()
 * returns. BAND_SCOPED_PERMIT gives the permit back on every early return before the move.
 *
 * Exits 0 when every step behaved as described, 1 otherwise.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <band/band.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef BAND_SCOPED_PERMIT
#error "this example uses BAND_SCOPED_PERMIT, which needs GCC or Clang"
#endif

struct response {
    band_permit permit; /* the slot this response occupies until it is freed */
    int id;
};

static void response_free(struct response *r)
{
    band_permit_release(&r->permit); /* the slot comes back with the resource */
    free(r);
}

/* Sends request @id within one of @slots. Returns a response that owns its slot, or NULL
 * (and holds nothing) when no slot came free by @deadline or memory ran out. */
static struct response *start_request(band_sem *slots, int id, band_time deadline)
{
    BAND_SCOPED_PERMIT band_permit p = BAND_PERMIT_INIT;
    if (band_permit_acquire(&p, slots, 1, deadline, NULL) != 0)
        return NULL; /* p is empty: nothing to give back */
    struct response *r = malloc(sizeof(*r));
    if (r == NULL)
        return NULL; /* p is released on the way out */
    r->id = id;
    r->permit = p;                     /* move: the response owns the slot now ... */
    p = (band_permit)BAND_PERMIT_INIT; /* ... so leaving this scope releases nothing */
    return r;
}

/* Reads a body on its own thread, then frees the response and with it the slot. */
static void *read_body(void *arg)
{
    struct response *r = arg;
    printf("response %d: body read on another thread\n", r->id);
    response_free(r);
    return NULL;
}

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "permit_transfer: check failed: %s\n", #cond);                         \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

int main(void)
{
    band_sem *slots;
    CHECK(band_sem_create(&slots, 2, NULL) == 0); /* at most two requests in flight */

    struct response *a = start_request(slots, 1, BAND_FOREVER);
    struct response *b = start_request(slots, 2, BAND_FOREVER);
    CHECK(a != NULL && b != NULL);
    /* Both functions returned, but both bodies are unread: both slots are still taken. */
    CHECK(band_sem_available(slots) == 0);
    printf("two responses out, slots available: %llu\n",
           (unsigned long long)band_sem_available(slots));

    /* A third request cannot start yet; a past deadline means "do not wait". */
    CHECK(start_request(slots, 3, band_now() - 1) == NULL);
    CHECK(band_sem_available(slots) == 0);

    /* Hand response 1 to a reader thread; the slot returns when that thread frees it. */
    pthread_t reader;
    CHECK(pthread_create(&reader, NULL, read_body, a) == 0);
    pthread_join(reader, NULL);
    CHECK(band_sem_available(slots) == 1);

    /* Now request 3 gets the freed slot. */
    struct response *c = start_request(slots, 3, BAND_FOREVER);
    CHECK(c != NULL && band_sem_available(slots) == 0);

    response_free(b);
    response_free(c);
    CHECK(band_sem_available(slots) == 2);
    printf("all responses freed, slots available: %llu\n",
           (unsigned long long)band_sem_available(slots));
    CHECK(band_sem_destroy(slots) == 0);
    return 0;
}
