/* SPDX-License-Identifier: MIT */
/*
 * fd_test_util.h - helpers shared by libband-fd's tests: fd readability, an epoll loop
 * that waits for a number of completions, a releasing thread, and the bind / submit /
 * start steps for acquisitions, sends and receives.
 */
#ifndef BAND_FD_TEST_UTIL_H
#define BAND_FD_TEST_UTIL_H

#include "test.h"

#include "band/fd.h"

/* 1 when @fd is readable right now (poll with a zero timeout), 0 when not, -1 on error. */
int fdt_readable(int fd);

/* An epoll instance watching @q's fd; @edge selects EPOLLET. Returns the epoll fd or -1. */
int fdt_epoll_open(band_fd_queue *q, int edge);

/*
 * Run an epoll loop on @ep until @want ops were reaped from @q or @budget_ns passed:
 * sleeps in epoll_wait for band_fd_queue_timeout_ms() (capped at 50 ms), then reaps up to
 * @batch ops at a time into @got (room for @want). Returns how many it reaped; *@wakeups
 * (may be NULL) receives how many times epoll_wait reported the fd.
 */
size_t fdt_epoll_collect(int ep, band_fd_queue *q, band_fd_queue_op **got, size_t want,
                         size_t batch, band_time budget_ns, unsigned *wakeups);

/*
 * Close @q, reap until it owns no op (waiting on its fd, at most 5 s), storing the reaped
 * ops in @got in reap order (the first @max of them; @got may be NULL with @max 0), then
 * destroy it. Returns how many ops were reaped, or -1 when ops were still owned after
 * 5 s or destroy did not return 0.
 */
int fdt_close_reap_destroy(band_fd_queue *q, band_fd_queue_op **got, size_t max);

/* Add @n permits to @s from a worker thread, @step at a time with a yield in between. */
struct fdt_releaser {
    band_sem *sem;
    uint64_t n, step;
    struct test_thread t;
};
int fdt_releaser_start(struct fdt_releaser *r, band_sem *s, uint64_t n, uint64_t step);

/*
 * The three steps of an operation through @q: bind the primitive's waiter (with
 * @deadline and @token), submit it with the primitive's _async call, start with its
 * answer. Return bind's or start's code. fdt_recv() sets @ro->bytes to 12345 first, so a
 * test sees that the channel wrote it (0 at submission, the bytes on success).
 */
int fdt_acquire_tok(band_fd_queue *q, band_fd_queue_op *op, band_waiter *w, band_sem *s, uint64_t n,
                    band_time deadline, band_cancel *token);
int fdt_acquire(band_fd_queue *q, band_fd_queue_op *op, band_waiter *w, band_sem *s, uint64_t n,
                band_time deadline);
int fdt_send(band_fd_queue *q, band_fd_queue_op *op, struct band_chan_send_op *so, band_chan *c,
             const void *elem, uint64_t bytes, band_time deadline);
int fdt_recv(band_fd_queue *q, band_fd_queue_op *op, struct band_chan_recv_op *ro, band_chan *c,
             void *out, band_time deadline);

#endif /* BAND_FD_TEST_UTIL_H */
