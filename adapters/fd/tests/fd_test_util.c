/* SPDX-License-Identifier: MIT */
/*
 * fd_test_util.c - helpers behind fd_test_util.h.
 */
#include "fd_test_util.h"

#include <poll.h>
#include <sched.h>
#include <sys/epoll.h>
#include <unistd.h>

int fdt_readable(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN, .revents = 0};
    int rc = poll(&p, 1, 0);
    if (rc < 0)
        return -1;
    return rc == 1 && (p.revents & POLLIN) != 0;
}

int fdt_epoll_open(band_fd_queue *q, int edge)
{
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0)
        return -1;
    struct epoll_event ev = {.events = EPOLLIN | (edge ? (uint32_t)EPOLLET : 0u),
                             .data = {.ptr = q}};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, band_fd_queue_fd(q), &ev) != 0) {
        close(ep);
        return -1;
    }
    return ep;
}

size_t fdt_epoll_collect(int ep, band_fd_queue *q, band_fd_queue_op **got, size_t want,
                         size_t batch, band_time budget_ns, unsigned *wakeups)
{
    band_time end = band_deadline_after(budget_ns);
    size_t n = 0;
    unsigned woke = 0;
    while (n < want && band_now() < end) {
        int ms = band_fd_queue_timeout_ms(q);
        if (ms < 0 || ms > 50)
            ms = 50;
        struct epoll_event ev;
        int rc = epoll_wait(ep, &ev, 1, ms);
        if (rc > 0)
            woke++;
        /* Reap after a wake-up and after a timeout alike: a timeout may be a deadline. */
        size_t room = want - n < batch ? want - n : batch;
        n += band_fd_queue_reap(q, got + n, room);
    }
    if (wakeups != NULL)
        *wakeups = woke;
    return n;
}

int fdt_close_reap_destroy(band_fd_queue *q, band_fd_queue_op **got, size_t max)
{
    if (band_fd_queue_close(q) != 0)
        return -1;
    band_time end = band_deadline_after(5 * BAND_SEC);
    size_t n = 0;
    while (band_fd_queue_count(q) > 0 && band_now() < end) {
        struct pollfd p = {.fd = band_fd_queue_fd(q), .events = POLLIN, .revents = 0};
        (void)poll(&p, 1, 10);
        band_fd_queue_op *one[8];
        size_t k = band_fd_queue_reap(q, one, 8);
        for (size_t i = 0; i < k; i++, n++)
            if (n < max)
                got[n] = one[i];
    }
    if (band_fd_queue_count(q) != 0 || band_fd_queue_destroy(q) != 0)
        return -1;
    return (int)n;
}

static int releaser_main(void *arg)
{
    struct fdt_releaser *r = arg;
    uint64_t left = r->n;
    while (left > 0) {
        uint64_t k = left < r->step ? left : r->step;
        if (band_sem_release(r->sem, k) != 0)
            return -1;
        left -= k;
        sched_yield();
    }
    return 0;
}

int fdt_releaser_start(struct fdt_releaser *r, band_sem *s, uint64_t n, uint64_t step)
{
    r->sem = s;
    r->n = n;
    r->step = step == 0 ? 1 : step;
    return test_thread_start(&r->t, releaser_main, r);
}

/* The three steps of every operation: bind the primitive's waiter, submit, start. */

int fdt_acquire_tok(band_fd_queue *q, band_fd_queue_op *op, band_waiter *w, band_sem *s, uint64_t n,
                    band_time deadline, band_cancel *token)
{
    int rc = band_fd_queue_bind(q, op, w, deadline, token);
    if (rc != 0)
        return rc;
    return band_fd_queue_start(op, band_sem_acquire_async(s, n, w));
}

int fdt_acquire(band_fd_queue *q, band_fd_queue_op *op, band_waiter *w, band_sem *s, uint64_t n,
                band_time deadline)
{
    return fdt_acquire_tok(q, op, w, s, n, deadline, NULL);
}

int fdt_send(band_fd_queue *q, band_fd_queue_op *op, struct band_chan_send_op *so, band_chan *c,
             const void *elem, uint64_t bytes, band_time deadline)
{
    int rc = band_fd_queue_bind(q, op, &so->w, deadline, NULL);
    if (rc != 0)
        return rc;
    return band_fd_queue_start(op, band_chan_send_async(c, elem, bytes, so));
}

int fdt_recv(band_fd_queue *q, band_fd_queue_op *op, struct band_chan_recv_op *ro, band_chan *c,
             void *out, band_time deadline)
{
    int rc = band_fd_queue_bind(q, op, &ro->w, deadline, NULL);
    if (rc != 0)
        return rc;
    ro->bytes = 12345; /* the channel clears it at submission and sets it on success */
    return band_fd_queue_start(op, band_chan_recv_async(c, out, ro));
}
