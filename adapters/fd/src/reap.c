/* SPDX-License-Identifier: MIT */
/*
 * reap.c - handing completed operations back to the owner, timing out those whose
 * deadline passed, completing timed operations that fell due, cancelling those whose
 * token was requested, and telling the loop how long it may sleep.
 */
#include "fd_internal.h"

#include <limits.h>
#include <stdint.h>
#include <unistd.h>

/* Append the nodes of the FIFO chain @n to the owner's batch. */
static void batch_append(band_fd_queue *q, struct band__ready_node *n)
{
    while (n != NULL) {
        struct band__ready_node *next = n->next;
        n->next = NULL;
        *q->batch_tail = n;
        q->batch_tail = &n->next;
        n = next;
    }
}

static struct band__ready_node *batch_pop(band_fd_queue *q)
{
    struct band__ready_node *n = q->batch_head;
    if (n != NULL) {
        q->batch_head = n->next;
        if (q->batch_head == NULL)
            q->batch_tail = &q->batch_head;
        n->next = NULL;
    }
    return n;
}

/*
 * Time out every op whose deadline is at or before now, earliest first, and complete every
 * timed op that fell due. A cancel that returns 0 ends the op here: it is posted like any
 * completion, after the wakes that its returned units ran (so the ready list stays in
 * completion order). BAND_EALREADY means its wake won and brings the real result, so only
 * the deadline is dropped.
 */
static void expire(band_fd_queue *q)
{
    struct band__dl_node *min = band__dl_min(&q->heap);
    if (min == NULL || min->deadline == BAND_FOREVER)
        return;
    band_time now = band_now();
    while (min != NULL && min->deadline <= now) {
        band_fd_queue_op *op = band__fd_queue_op_of_dl(min);
        band__fd_queue_forget_deadline(q, op);
        if (op->_timed) {
            band__fd_queue_finish(q, op, 0); /* due */
            band__fd_queue_post(q, op);
        } else {
            (void)band__fd_queue_withdraw(q, op, BAND_ETIMEDOUT, 1);
        }
        min = band__dl_min(&q->heap);
    }
}

/* Cancel, with BAND_ECANCELED, every waiting op whose token was requested. Returns 1 when
 * it withdrew any (their posts signalled the eventfd). */
static int scan_tokens(band_fd_queue *q)
{
    int posted = 0;
    for (band_fd_queue_op *op = q->first; op != NULL; op = op->_next)
        if (op->_state == BAND__FD_QUEUE_WAITING && op->_hooked &&
            band_cancel_is_requested(op->_cancel))
            posted |= band__fd_queue_withdraw(q, op, BAND_ECANCELED, 1) == 0;
    return posted;
}

size_t band_fd_queue_reap(band_fd_queue *q, band_fd_queue_op **out, size_t max)
{
    if (q == NULL || (out == NULL && max > 0))
        return 0;
    /* Timeouts first: their posts (and their signal) are collected just below. */
    expire(q);
    /* Drain the signal BEFORE looking at the token flag and taking the list: a push or a
     * hook that they miss signals again. */
    uint64_t signals;
    ssize_t rd = read(q->efd, &signals, sizeof(signals));
    (void)rd; /* EAGAIN: nothing was signalled; the list is taken anyway */
    /* The withdrawals of a scan signalled for the list taken below: consume that signal
     * too, so the fd does not stay readable for nothing, and look at the flag again, since
     * that read may also have consumed a later hook's signal. */
    while (atomic_exchange_explicit(&q->cancel_scan, 0, memory_order_seq_cst))
        if (scan_tokens(q)) {
            rd = read(q->efd, &signals, sizeof(signals));
            (void)rd;
        }
    batch_append(q, band__ready_take(&q->ready));

    size_t n = 0;
    while (n < max) {
        struct band__ready_node *node = batch_pop(q);
        if (node == NULL)
            break;
        band_fd_queue_op *op = band__fd_queue_op_of_ready(node);
        band__fd_queue_hand_back(q, op);
        out[n++] = op;
    }
    if (q->batch_head != NULL)
        band__fd_queue_signal(q); /* more than @max: the loop must come back */
    return n;
}

band_time band_fd_queue_next_deadline(const band_fd_queue *q)
{
    if (q == NULL)
        return BAND_FOREVER;
    const struct band__dl_node *min = band__dl_min(&q->heap);
    return min == NULL ? BAND_FOREVER : min->deadline;
}

int band_fd_queue_timeout_ms(const band_fd_queue *q)
{
    band_time d = band_fd_queue_next_deadline(q);
    if (d == BAND_FOREVER)
        return -1;
    band_time now = band_now();
    if (d <= now)
        return 0;
    /* Round up: a wait of ms milliseconds must not end before d. */
    band_time left = d - now;
    band_time ms = left / BAND_MSEC + (left % BAND_MSEC != 0);
    return ms > INT_MAX ? INT_MAX : (int)ms;
}
