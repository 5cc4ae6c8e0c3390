/* SPDX-License-Identifier: MIT */
/*
 * consumer_fd.c - a program built against an installed libband-fd, through
 * `pkg-config band-fd` and through find_package(band COMPONENTS fd). It checks that
 * band/fd.h compiles on its own (-std=c11 -Wall -Wextra -Wpedantic -Werror), that
 * libband-fd and libband link and load, and that a grant made by a release and a due
 * time come back through the eventfd and band_fd_queue_reap().
 */
#define _POSIX_C_SOURCE 200809L

#include <band/fd.h>

#include <poll.h>
#include <stdio.h>

int main(void)
{
    band_fd_queue *q = NULL;
    band_sem *s = NULL;
    band_fd_queue_op op, due;
    band_waiter w = {0};
    band_fd_queue_op *done[2];

    if (band_fd_queue_create(&q) != 0 || band_sem_create(&s, 0, NULL) != 0)
        return 1;
    band_fd_queue_op_init(&op, NULL);
    band_fd_queue_op_init(&due, NULL);
    /* Bind the waiter to the queue, submit it to the semaphore, hand the answer over. */
    if (band_fd_queue_bind(q, &op, &w, BAND_FOREVER, NULL) != 0 ||
        band_fd_queue_start(&op, band_sem_acquire_async(s, 1, &w)) != 0 ||
        band_sem_release(s, 1) != 0)
        return 1;
    struct pollfd p = {band_fd_queue_fd(q), POLLIN, 0};
    if (poll(&p, 1, 5000) != 1 || band_fd_queue_reap(q, done, 2) != 1 || done[0] != &op ||
        op.status != 0) {
        fprintf(stderr, "consumer_fd: the grant did not come back through the eventfd\n");
        return 1;
    }
    band_permit permit = BAND_PERMIT_INIT; /* the grant's permit is the caller's */
    if (band_permit_adopt(&permit, s, 1) != 0 || band_permit_release(&permit) != 0 ||
        band_sem_available(s) != 1)
        return 1;
    if (band_fd_queue_at(q, &due, band_deadline_after(2 * BAND_MSEC), NULL) != 0 ||
        poll(&p, 1, band_fd_queue_timeout_ms(q)) < 0 || band_fd_queue_reap(q, done, 2) != 1 ||
        done[0] != &due || due.status != 0) {
        fprintf(stderr, "consumer_fd: the due time did not come back\n");
        return 1;
    }
    if (band_fd_queue_close(q) != 0 || band_fd_queue_destroy(q) != 0 || band_sem_destroy(s) != 0)
        return 1;
    printf("consumer_fd: band %s, libband-fd: a grant and a due time came back\n", band_version());
    return 0;
}
