/* SPDX-License-Identifier: MIT */
/*
 * test_cancel.c - the cancellation token: request, hooks, nesting, the blocking path that
 * honours it, and requests from a signal handler.
 *
 * The blocking-path tests queue a semaphore acquisition through the core's one blocking
 * wait (core/block.h), which is what every blocking call in band uses.
 */
#include "test.h"

#include <signal.h>
#include <string.h>

#include "core/block.h"

/* ------------------------------------------------------------------ object and hooks */

static void test_create_request(void **state)
{
    (void)state;
    band_cancel *c = NULL;
    assert_int_equal(band_cancel_create(NULL, NULL), BAND_EINVAL);
    assert_int_equal(band_cancel_create(&c, NULL), 0);
    assert_non_null(c);
    assert_int_equal(band_cancel_is_requested(c), 0);
    assert_int_equal(band_cancel_is_requested(NULL), 0);
    assert_int_equal(band_cancel_request(c), 0);
    assert_int_equal(band_cancel_is_requested(c), 1);
    assert_int_equal(band_cancel_request(c), BAND_EALREADY);
    assert_int_equal(band_cancel_request(NULL), BAND_EINVAL);
    assert_int_equal(band_cancel_destroy(c), 0);
    assert_int_equal(band_cancel_destroy(NULL), 0);
}

static void count_fire(band_cancel_hook *h)
{
    atomic_fetch_add((atomic_int *)h->data, 1);
}

static void test_hooks_fire_once(void **state)
{
    (void)state;
    band_cancel *c;
    assert_int_equal(band_cancel_create(&c, NULL), 0);
    atomic_int fired = 0;
    band_cancel_hook a, b, late;
    band_cancel_hook_init(&a, count_fire, &fired);
    band_cancel_hook_init(&b, count_fire, &fired);
    band_cancel_hook_init(&late, count_fire, &fired);
    assert_int_equal(band_cancel_hook_add(NULL, &a), BAND_EINVAL);
    assert_int_equal(band_cancel_hook_add(c, NULL), BAND_EINVAL);
    assert_int_equal(band_cancel_hook_add(c, &a), 0);
    assert_int_equal(band_cancel_hook_add(c, &a), BAND_EINVAL); /* already added */
    assert_int_equal(band_cancel_hook_add(c, &b), 0);
    assert_int_equal(band_cancel_destroy(c), BAND_EBUSY); /* hooks still added */
    assert_int_equal(band_cancel_hook_remove(&b), 0);     /* never fires */
    assert_int_equal(band_cancel_hook_remove(&b), BAND_EINVAL);
    assert_int_equal(atomic_load(&fired), 0);

    assert_int_equal(band_cancel_request(c), 0);
    assert_int_equal(atomic_load(&fired), 1); /* a only */
    assert_int_equal(band_cancel_request(c), BAND_EALREADY);
    assert_int_equal(atomic_load(&fired), 1);
    assert_int_equal(band_cancel_hook_add(c, &late), BAND_ECANCELED); /* not added */
    assert_int_equal(band_cancel_hook_remove(&late), BAND_EINVAL);
    assert_int_equal(band_cancel_hook_remove(&a), BAND_EALREADY);
    assert_int_equal(band_cancel_hook_remove(NULL), BAND_EINVAL);
    /* A removed hook may be added again, to another token. */
    band_cancel *d;
    assert_int_equal(band_cancel_create(&d, NULL), 0);
    assert_int_equal(band_cancel_hook_add(d, &a), 0);
    assert_int_equal(band_cancel_request(d), 0);
    assert_int_equal(atomic_load(&fired), 2);
    assert_int_equal(band_cancel_hook_remove(&a), BAND_EALREADY);
    assert_int_equal(band_cancel_destroy(c), 0);
    assert_int_equal(band_cancel_destroy(d), 0);
}

static void test_nesting(void **state)
{
    (void)state;
    band_cancel *root, *mid, *leaf, *other;
    assert_int_equal(band_cancel_create(&root, NULL), 0);
    band_cancel_opts o = {.parent = root};
    assert_int_equal(band_cancel_create(&mid, &o), 0);
    assert_int_equal(band_cancel_create(&other, &o), 0);
    o.parent = mid;
    assert_int_equal(band_cancel_create(&leaf, &o), 0);
    atomic_int fired = 0;
    band_cancel_hook h;
    band_cancel_hook_init(&h, count_fire, &fired);
    assert_int_equal(band_cancel_hook_add(leaf, &h), 0);

    /* A child's request stays below it. */
    assert_int_equal(band_cancel_request(other), 0);
    assert_int_equal(band_cancel_is_requested(root), 0);
    assert_int_equal(band_cancel_is_requested(mid), 0);
    assert_int_equal(band_cancel_destroy(root), BAND_EBUSY); /* children exist */

    /* A parent's request reaches every descendant, and their hooks. */
    assert_int_equal(band_cancel_request(root), 0);
    assert_int_equal(band_cancel_is_requested(mid), 1);
    assert_int_equal(band_cancel_is_requested(leaf), 1);
    assert_int_equal(atomic_load(&fired), 1);
    assert_int_equal(band_cancel_request(leaf), BAND_EALREADY);
    assert_int_equal(band_cancel_hook_remove(&h), BAND_EALREADY);

    /* A child created under a requested parent starts requested. */
    band_cancel *late;
    o.parent = root;
    assert_int_equal(band_cancel_create(&late, &o), 0);
    assert_int_equal(band_cancel_is_requested(late), 1);

    assert_int_equal(band_cancel_destroy(late), 0);
    assert_int_equal(band_cancel_destroy(leaf), 0);
    assert_int_equal(band_cancel_destroy(mid), 0);
    assert_int_equal(band_cancel_destroy(other), 0);
    assert_int_equal(band_cancel_destroy(root), 0);
}

/* A hook that fired still refers to its token until it is removed, and a child that was
 * requested through its parent still refers to the parent until it is destroyed: destroy
 * refuses in both cases, so removing the hook (or destroying the child) never touches
 * freed memory. */
static void test_destroy_waits_for_fired_hooks(void **state)
{
    (void)state;
    band_cancel *c, *child;
    assert_int_equal(band_cancel_create(&c, NULL), 0);
    band_cancel_opts o = {.parent = c};
    assert_int_equal(band_cancel_create(&child, &o), 0);
    atomic_int fired = 0;
    band_cancel_hook h;
    band_cancel_hook_init(&h, count_fire, &fired);
    assert_int_equal(band_cancel_hook_add(c, &h), 0);
    assert_int_equal(band_cancel_request(c), 0);
    assert_int_equal(atomic_load(&fired), 1);
    assert_int_equal(band_cancel_is_requested(child), 1);
    assert_int_equal(band_cancel_destroy(c), BAND_EBUSY); /* h and the child's hook */
    assert_int_equal(band_cancel_hook_remove(&h), BAND_EALREADY);
    assert_int_equal(band_cancel_destroy(c), BAND_EBUSY); /* the child */
    assert_int_equal(band_cancel_destroy(child), 0);
    assert_int_equal(band_cancel_destroy(c), 0);
}

/* A child made under a parent that was requested already has no hook on it, and still
 * keeps the parent from being destroyed first. */
static void test_child_of_requested_parent(void **state)
{
    (void)state;
    band_cancel *root, *child;
    assert_int_equal(band_cancel_create(&root, NULL), 0);
    assert_int_equal(band_cancel_request(root), 0);
    band_cancel_opts o = {.parent = root};
    assert_int_equal(band_cancel_create(&child, &o), 0);
    assert_int_equal(band_cancel_is_requested(child), 1);
    assert_int_equal(band_cancel_destroy(root), BAND_EBUSY);
    assert_int_equal(band_cancel_destroy(child), 0);
    assert_int_equal(band_cancel_destroy(root), 0);
}

static void test_wait_refusal(void **state)
{
    (void)state;
    band_cancel *c;
    assert_int_equal(band_cancel_create(&c, NULL), 0);
    assert_int_equal(band__wait_refusal(BAND_FOREVER, NULL), 0);
    assert_int_equal(band__wait_refusal(BAND_FOREVER, c), 0);
    assert_int_equal(band__wait_refusal(band_now() + BAND_SEC, c), 0);
    assert_int_equal(band__wait_refusal(band_now() - 1, c), BAND_ETIMEDOUT);
    assert_int_equal(band__wait_refusal(0, NULL), BAND_ETIMEDOUT);
    assert_true(band__deadline_passed(band_now()));
    assert_false(band__deadline_passed(BAND_FOREVER));
    assert_int_equal(band_cancel_request(c), 0);
    /* Cancellation is reported before an expired deadline. */
    assert_int_equal(band__wait_refusal(0, c), BAND_ECANCELED);
    assert_int_equal(band__wait_refusal(BAND_FOREVER, c), BAND_ECANCELED);
    assert_int_equal(band_cancel_destroy(c), 0);
}

/* -------------------------------------------------------------- the blocking path */

struct blocked {
    band_sem *sem;
    uint64_t n;
    band_cancel *cancel;
    band_time deadline;
    atomic_int queued;
};

/* One blocking acquisition through the core's blocking wait. */
static int blocked_acquire(void *arg)
{
    struct blocked *b = arg;
    struct band__blocker bl;
    band__blocker_init(&bl);
    int rc = band_sem_acquire_async(b->sem, b->n, &bl.w);
    if (rc != BAND_PENDING) {
        band__blocker_done(&bl);
        return rc == 0 ? 1 : rc; /* 1: completed at once (unexpected here) */
    }
    atomic_store(&b->queued, 1);
    return band__blocker_wait_cancel(&bl, b->deadline, b->cancel);
}

static void test_block_cancelled(void **state)
{
    (void)state;
    band_sem *s;
    band_cancel *c;
    assert_int_equal(band_sem_create(&s, 1, NULL), 0);
    assert_int_equal(band_cancel_create(&c, NULL), 0);
    struct blocked b = {.sem = s, .n = 3, .cancel = c, .deadline = BAND_FOREVER};
    struct test_thread t;
    assert_int_equal(test_thread_start(&t, blocked_acquire, &b), 0);
    struct sem_waiters_cond cond = {s, 1};
    assert_true(test_wait_until(test_cond_sem_waiters, &cond, 10 * BAND_SEC));
    assert_int_equal(band_sem_release(s, 1), 0); /* a partial grant to the head: 2 of 3 */
    assert_int_equal(band_cancel_request(c), 0);
    assert_int_equal(test_thread_join(&t), BAND_ECANCELED);
    /* It holds nothing: the partial grant went back. */
    assert_u64_equal(band_sem_available(s), 2);
    assert_int_equal(band_cancel_destroy(c), 0); /* its hook was removed */
    assert_int_equal(band_sem_destroy(s), 0);
}

static void test_block_requested_before(void **state)
{
    (void)state;
    band_sem *s;
    band_cancel *c;
    assert_int_equal(band_sem_create(&s, 0, NULL), 0);
    assert_int_equal(band_cancel_create(&c, NULL), 0);
    assert_int_equal(band_cancel_request(c), 0);
    struct blocked b = {.sem = s, .n = 1, .cancel = c, .deadline = BAND_FOREVER};
    assert_int_equal(blocked_acquire(&b), BAND_ECANCELED);
    assert_u64_equal(band_sem_available(s), 0);
    assert_int_equal(band_sem_release(s, 1), 0);
    assert_u64_equal(band_sem_available(s), 1); /* nobody took it */
    assert_int_equal(band_cancel_destroy(c), 0);
    assert_int_equal(band_sem_destroy(s), 0);
}

static void test_block_deadline_with_token(void **state)
{
    (void)state;
    band_sem *s;
    band_cancel *c;
    assert_int_equal(band_sem_create(&s, 0, NULL), 0);
    assert_int_equal(band_cancel_create(&c, NULL), 0);
    struct blocked b = {
        .sem = s, .n = 1, .cancel = c, .deadline = band_deadline_after(20 * BAND_MSEC)};
    assert_int_equal(blocked_acquire(&b), BAND_ETIMEDOUT);
    assert_int_equal(band_cancel_destroy(c), 0);
    assert_int_equal(band_sem_destroy(s), 0);
}

static void test_block_grant_wins(void **state)
{
    (void)state;
    band_sem *s;
    band_cancel *c;
    assert_int_equal(band_sem_create(&s, 0, NULL), 0);
    assert_int_equal(band_cancel_create(&c, NULL), 0);
    struct blocked b = {.sem = s, .n = 1, .cancel = c, .deadline = BAND_FOREVER};
    struct test_thread t;
    assert_int_equal(test_thread_start(&t, blocked_acquire, &b), 0);
    struct sem_waiters_cond cond = {s, 1};
    assert_true(test_wait_until(test_cond_sem_waiters, &cond, 10 * BAND_SEC));
    assert_int_equal(band_sem_release(s, 1), 0); /* granted first */
    (void)band_cancel_request(c);                /* too late to matter */
    assert_int_equal(test_thread_join(&t), 0);
    assert_int_equal(band_sem_release(s, 1), 0);
    assert_u64_equal(band_sem_available(s), 1);
    assert_int_equal(band_cancel_destroy(c), 0);
    assert_int_equal(band_sem_destroy(s), 0);
}

/* A parent's request stops threads blocked under its children. */
static void test_block_nested(void **state)
{
    (void)state;
    enum { N = 4 };
    band_sem *s;
    band_cancel *root, *child[N];
    assert_int_equal(band_sem_create(&s, 0, NULL), 0);
    assert_int_equal(band_cancel_create(&root, NULL), 0);
    struct blocked b[N];
    struct test_thread t[N];
    for (int i = 0; i < N; i++) {
        band_cancel_opts o = {.parent = root};
        assert_int_equal(band_cancel_create(&child[i], &o), 0);
        b[i] = (struct blocked){.sem = s, .n = 1, .cancel = child[i], .deadline = BAND_FOREVER};
        assert_int_equal(test_thread_start(&t[i], blocked_acquire, &b[i]), 0);
    }
    struct sem_waiters_cond cond = {s, N};
    assert_true(test_wait_until(test_cond_sem_waiters, &cond, 10 * BAND_SEC));
    assert_int_equal(band_cancel_request(root), 0);
    for (int i = 0; i < N; i++) {
        assert_int_equal(test_thread_join(&t[i]), BAND_ECANCELED);
        assert_int_equal(band_cancel_destroy(child[i]), 0);
    }
    assert_int_equal(band_cancel_destroy(root), 0);
    assert_int_equal(band_sem_destroy(s), 0);
}

/* ------------------------------------------------------------- from a signal handler */

static band_cancel *signal_token;

static void on_sigusr1(int sig)
{
    (void)sig;
    (void)band_cancel_request(signal_token);
}

static int signal_worker(void *arg)
{
    return blocked_acquire(arg);
}

/*
 * A thread blocked under a token is stopped by a signal handler that requests it, whether
 * the handler runs on another thread or on the blocked thread itself (interrupting it in
 * the middle of adding or removing its hook, or while parked). Rounds are bounded by count
 * and by time.
 */
static void test_signal_handler(void **state)
{
    (void)state;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_sigusr1;
    sigemptyset(&sa.sa_mask);
    struct sigaction old;
    assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
    band_sem *s;
    assert_int_equal(band_sem_create(&s, 0, NULL), 0);
    band_time until = band_deadline_after(2 * BAND_SEC);
    int rounds = 0;
    for (; rounds < 300 && band_now() < until; rounds++) {
        band_cancel *c;
        assert_int_equal(band_cancel_create(&c, NULL), 0);
        signal_token = c;
        struct blocked b = {.sem = s, .n = 1, .cancel = c, .deadline = BAND_FOREVER};
        struct test_thread t;
        assert_int_equal(test_thread_start(&t, signal_worker, &b), 0);
        if (rounds % 2 == 0) {
            /* At an arbitrary moment: the worker may not have queued yet. */
            while (!atomic_load(&b.queued) && rounds % 4 == 0)
                band__cpu_relax();
            assert_int_equal(pthread_kill(t.tid, SIGUSR1), 0); /* on the worker itself */
        } else {
            (void)raise(SIGUSR1); /* on this thread */
        }
        assert_int_equal(test_thread_join(&t), BAND_ECANCELED);
        assert_int_equal(band_cancel_destroy(c), 0);
    }
    assert_true(rounds > 0);
    assert_u64_equal(band_sem_available(s), 0);
    assert_int_equal(band_sem_destroy(s), 0);
    assert_int_equal(sigaction(SIGUSR1, &old, NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_request),
        cmocka_unit_test(test_hooks_fire_once),
        cmocka_unit_test(test_nesting),
        cmocka_unit_test(test_destroy_waits_for_fired_hooks),
        cmocka_unit_test(test_child_of_requested_parent),
        cmocka_unit_test(test_wait_refusal),
        cmocka_unit_test(test_block_cancelled),
        cmocka_unit_test(test_block_requested_before),
        cmocka_unit_test(test_block_deadline_with_token),
        cmocka_unit_test(test_block_grant_wins),
        cmocka_unit_test(test_block_nested),
        cmocka_unit_test(test_signal_handler),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
