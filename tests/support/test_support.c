/* SPDX-License-Identifier: MIT */
/*
 * test_support.c - helpers behind test.h: wake recorders, worker threads, bounded polling.
 */
#include "test.h"

#include <dirent.h>
#include <stdio.h>

#include <sched.h>
#include <time.h>

void wake_log_init(struct wake_log *log)
{
    atomic_init(&log->len, 0);
    for (size_t i = 0; i < WAKE_LOG_MAX; i++) {
        log->ids[i] = -1;
        log->statuses[i] = 0;
    }
}

void wake_rec_init(struct wake_rec *r, int id, struct wake_log *log)
{
    band_waiter_init(&r->w, wake_rec_fn, r);
    r->id = id;
    atomic_init(&r->count, 0);
    atomic_init(&r->status, 12345);
    atomic_init(&r->pending_in, -1);
    r->log = log;
    r->hook = NULL;
    r->ctx = NULL;
    r->hook_rc = 12345;
    r->hook_u64 = 0;
}

void wake_rec_fn(band_waiter *w)
{
    struct wake_rec *r = (struct wake_rec *)w->data;
    int st = band_waiter_status(w);
    atomic_store(&r->status, st);
    atomic_store(&r->pending_in, band_waiter_is_pending(w));
    r->thread = pthread_self();
    if (r->log != NULL) {
        unsigned i = atomic_fetch_add(&r->log->len, 1u);
        if (i < WAKE_LOG_MAX) {
            r->log->ids[i] = r->id;
            r->log->statuses[i] = st;
        }
    }
    if (r->hook != NULL)
        r->hook(r);
    /* Last: a test may treat count != 0 as "the wake has finished with everything". */
    atomic_fetch_add(&r->count, 1);
}

static void *test_thread_main(void *arg)
{
    struct test_thread *t = arg;
    t->rc = t->fn(t->arg);
    atomic_store(&t->done, 1);
    return NULL;
}

int test_thread_start(struct test_thread *t, int (*fn)(void *), void *arg)
{
    t->fn = fn;
    t->arg = arg;
    t->rc = 0;
    atomic_init(&t->done, 0);
    return pthread_create(&t->tid, NULL, test_thread_main, t);
}

int test_thread_join(struct test_thread *t)
{
    pthread_join(t->tid, NULL);
    return t->rc;
}

bool test_wait_until(bool (*cond)(void *arg), void *arg, band_time timeout_ns)
{
    band_time deadline = band_deadline_after(timeout_ns);
    unsigned spins = 0;
    while (!cond(arg)) {
        if (band_now() >= deadline)
            return cond(arg);
        if (++spins < 1000) {
            sched_yield();
        } else {
            struct timespec ts = {0, 100000}; /* 0.1 ms: only to avoid burning a core */
            nanosleep(&ts, NULL);
        }
    }
    return true;
}

bool test_cond_sem_waiters(void *arg)
{
    struct sem_waiters_cond *c = arg;
    band_sem_stats st;
    if (band_sem_get_stats(c->sem, &st) != 0)
        return false;
    return st.waiters >= c->waiters;
}

int test_under_tsan(void)
{
#if defined(__SANITIZE_THREAD__)
    return 1;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
    return 1;
#else
    return 0;
#endif
#else
    return 0;
#endif
}

int test_under_sanitizer(void)
{
#if defined(__SANITIZE_ADDRESS__)
    return 1;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    return 1;
#else
    return test_under_tsan();
#endif
#else
    return test_under_tsan();
#endif
}

unsigned test_replay_corpus(char **dirs, int ndirs, test_corpus_fn *run, void *ctx, unsigned *files)
{
    static uint8_t buf[1 << 20];
    unsigned failures = 0;
    *files = 0;
    for (int a = 0; a < ndirs; a++) {
        DIR *d = opendir(dirs[a]);
        if (d == NULL) {
            print_error("cannot open corpus directory %s\n", dirs[a]);
            failures++;
            continue;
        }
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.')
                continue;
            char path[4096];
            snprintf(path, sizeof(path), "%s/%s", dirs[a], e->d_name);
            FILE *fp = fopen(path, "rb");
            if (fp == NULL)
                continue;
            size_t n = fread(buf, 1, sizeof(buf), fp);
            fclose(fp);
            if (run(buf, n, path, ctx) != 0)
                failures++;
            (*files)++;
        }
        closedir(d);
    }
    return failures;
}
