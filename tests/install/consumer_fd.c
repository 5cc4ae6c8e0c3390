/*
 * consumer_fd.c - a program built against an installed libband-fd, through
 * `pkg-config band-fd` and through find_package(band COMPONENTS fd). It checks that
 * band/fd.h compiles on its own (-std=c11 -Wall -Wextra -Wpedantic -Werror), that
 * libband-fd and libband link and load, and that a grant made by a release comes back
 * through the eventfd and band_fdq_reap().
 */
#define _POSIX_C_SOURCE 200809L

#include <band/fd.h>

#include <poll.h>
#include <stdio.h>

int main(void)
{
    band_fdq *q = NULL;
    band_sem *s = NULL;
    band_fdq_op op;
    band_fdq_op *done[1];

    if (band_fdq_create(&q) != 0 || band_sem_create(&s, 0, NULL) != 0)
        return 1;
    band_fdq_op_init(&op, NULL);
    if (band_fdq_acquire(q, &op, s, 1, BAND_FOREVER) != 0 || band_sem_release(s, 1) != 0)
        return 1;
    struct pollfd p = {band_fdq_fd(q), POLLIN, 0};
    if (poll(&p, 1, 5000) != 1 || band_fdq_reap(q, done, 1) != 1 || done[0] != &op ||
        op.status != 0) {
        fprintf(stderr, "consumer_fd: the grant did not come back through the eventfd\n");
        return 1;
    }
    band_permit permit = BAND_PERMIT_INIT;
    if (band_fdq_op_take_permit(&op, &permit) != 0 || band_permit_release(&permit) != 0 ||
        band_sem_available(s) != 1)
        return 1;
    if (band_fdq_destroy(q, NULL, NULL) != 0 || band_sem_destroy(s) != 0)
        return 1;
    printf("consumer_fd: band %s, libband-fd: a grant came back through the eventfd\n",
           band_version());
    return 0;
}
