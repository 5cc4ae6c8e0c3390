/* SPDX-License-Identifier: MIT */
/*
 * consumer_uv.c - a program built against an installed libband-uv, through
 * `pkg-config band-uv` and through find_package(band COMPONENTS uv). It checks that
 * band/uv.h compiles on its own (-std=c11 -Wall -Wextra -Wpedantic -Werror), that
 * libband-uv, libband and libuv link and load, and that one grant, one timeout and one
 * due time come back as callbacks on the loop, after which the adapter closes and the
 * loop can close.
 *
 * libuv's own <uv.h> needs POSIX declarations (pthread_rwlock_t): under -std=c11 a program
 * asks for them itself, before any system header.
 */
#define _POSIX_C_SOURCE 200809L

#include <band/uv.h>

#include <stdio.h>

static int calls, statuses[3], closed;

static void on_done(band_uv_op *op, int status)
{
    int *slot = op->data;
    *slot = status;
    calls++;
}

static void on_closed(void *data)
{
    (void)data;
    closed++;
}

int main(void)
{
    uv_loop_t loop;
    band_uv *u = NULL;
    band_sem *s = NULL;
    band_uv_op grant = {0}, timeout = {0}, due = {0};
    band_waiter gw = {0}, tw = {0}; /* bind takes a waiter in a known state */
    band_permit p = BAND_PERMIT_INIT;
    int rc;

    if (uv_loop_init(&loop) != 0 || band_sem_create(&s, 0, NULL) != 0)
        return 1;
    if ((rc = band_uv_create(&u, &loop)) != 0) {
        fprintf(stderr, "consumer_uv: band_uv_create: %s\n", band_strerror(rc));
        return 1;
    }
    grant.data = &statuses[0];
    timeout.data = &statuses[1];
    due.data = &statuses[2];
    /* Bind each waiter to the loop, submit it to the semaphore, hand the answer over. */
    if (band_uv_bind(u, &grant, &gw, on_done, BAND_FOREVER, NULL) != 0 ||
        band_uv_start(&grant, band_sem_acquire_async(s, 1, &gw)) != 0 ||
        band_uv_bind(u, &timeout, &tw, on_done, band_deadline_after(5 * BAND_MSEC), NULL) != 0 ||
        band_uv_start(&timeout, band_sem_acquire_async(s, 1, &tw)) != 0 ||
        band_uv_at(u, &due, on_done, band_deadline_after(2 * BAND_MSEC), NULL) != 0) {
        fprintf(stderr, "consumer_uv: the adapter refused an operation\n");
        return 1;
    }
    band_sem_release(s, 1); /* grants the first; the second times out */
    uv_run(&loop, UV_RUN_DEFAULT);
    if (calls != 3 || statuses[0] != 0 || statuses[1] != BAND_ETIMEDOUT || statuses[2] != 0) {
        fprintf(stderr, "consumer_uv: %d callbacks, statuses %d %d %d\n", calls, statuses[0],
                statuses[1], statuses[2]);
        return 1;
    }
    /* The grant's permit is the caller's. */
    if (band_permit_adopt(&p, s, 1) != 0 || band_permit_release(&p) != 0)
        return 1;
    band_uv_close(u, on_closed, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    if (closed != 1 || band_uv_destroy(u) != 0 || uv_loop_close(&loop) != 0) {
        fprintf(stderr, "consumer_uv: the adapter did not close cleanly\n");
        return 1;
    }
    if (band_sem_available(s) != 1 || band_sem_destroy(s) != 0)
        return 1;
    printf("band-uv %s consumer (libuv %s): ok\n", band_version(), uv_version_string());
    return 0;
}
