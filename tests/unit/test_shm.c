/* SPDX-License-Identifier: MIT */
/*
 * test_shm.c - budgets shared by processes (shm.h): argument checks and every return code
 * of create, open, open_fd, destroy, unlink, fd, bound_index; try, blocking and async
 * acquisitions; release beyond what is held; E2BIG; reduce with a debt that releases
 * repay before waiters; grow; drain; close; strict FIFO across processes; multi-bound
 * requests (all or none, FIFO per bound only); deadlines and cancellation tokens; the
 * record a forked child gets; destroy returning units; async waits woken into a POSIX
 * semaphore and withdrawn with band_waiter_cancel(); recovery of processes SIGKILLed
 * while holding or while queued; the exact output of stats, list_holders, list_waiters.
 *
 * Children are forked and report through their exit status (never through cmocka, whose
 * asserts belong to the main thread of the parent) and through a small MAP_SHARED block.
 * Every wait for another process to reach a state polls that state with a bound.
 */
#define _GNU_SOURCE /* MAP_ANONYMOUS, usleep, fcntl seals */

#include "test.h"

#include <errno.h>
#include <fcntl.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "band/shm.h"
#include "shm/shm_internal.h" /* to die holding the segment's lock; to race a release */

/* ---------------------------------------------------------------------------------- */
/* Helpers                                                                             */

/* The state each test shares with the children it forks. */
struct shared {
    atomic_int step;    /* the parent's instructions to children */
    atomic_int ready;   /* children report having reached a point */
    atomic_int order;   /* next position in the grant log */
    atomic_int log[16]; /* ids of the children in the order they were granted */
    atomic_int rc[16];  /* results children saw */
};

struct fixture {
    char name[64];
    struct shared *sh;
};

static unsigned name_counter;

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    if (f == NULL)
        return -1;
    snprintf(f->name, sizeof(f->name), "/band_test_shm_%d_%u", (int)getpid(), name_counter++);
    f->sh = mmap(NULL, sizeof(*f->sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (f->sh == MAP_FAILED) {
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    (void)band_shm_unlink(f->name);
    munmap(f->sh, sizeof(*f->sh));
    free(f);
    return 0;
}

/* Fork a child that runs @fn(@arg) and exits with its result. */
static pid_t spawn(int (*fn)(void *), void *arg)
{
    fflush(NULL);
    pid_t p = fork();
    if (p == 0) {
        /* The child dies of its own faults: cmocka's handlers would longjmp it back into
         * the parent's test. */
        static const int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
        for (size_t i = 0; i < TEST_COUNTOF(sigs); i++)
            signal(sigs[i], SIG_DFL);
        _exit(fn(arg));
    }
    return p;
}

/* The child's exit status, or 128 + the signal that ended it. */
static int reap(pid_t p)
{
    int st = 0;
    while (waitpid(p, &st, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static band_shm_stats stats_of(const band_shm *s)
{
    band_shm_stats st;
    memset(&st, 0xee, sizeof(st));
    assert_int_equal(band_shm_get_stats(s, &st), 0);
    return st;
}

struct waiters_cond {
    const band_shm *s;
    uint32_t n;
};

static bool cond_waiters(void *arg)
{
    struct waiters_cond *c = arg;
    band_shm_stats st;
    return band_shm_get_stats(c->s, &st) == 0 && st.waiters == c->n;
}

/* Wait (bounded) until the segment has exactly @n queued requests. */
static void wait_waiters(const band_shm *s, uint32_t n)
{
    struct waiters_cond c = {s, n};
    assert_true(test_wait_until(cond_waiters, &c, 5 * BAND_SEC));
}

static bool cond_ready(void *arg)
{
    struct shared *sh = ((void **)arg)[0];
    int want = (int)(intptr_t)((void **)arg)[1];
    return atomic_load(&sh->ready) >= want;
}

static void wait_ready(struct shared *sh, int n)
{
    void *a[2] = {sh, (void *)(intptr_t)n};
    assert_true(test_wait_until(cond_ready, a, 5 * BAND_SEC));
}

/* For children: spin (bounded, 10 s) until the parent sets step >= @n. */
static int child_wait_step(struct shared *sh, int n)
{
    band_time end = band_now() + 10 * BAND_SEC;
    while (atomic_load(&sh->step) < n) {
        if (band_now() > end)
            return 0;
        usleep(200);
    }
    return 1;
}

static const band_shm_bound one_bound[] = {{"units", 10, BAND_SHM_UNITS}};

static band_shm *make(struct fixture *f, const band_shm_bound *b, unsigned n)
{
    band_shm *s = NULL;
    assert_int_equal(band_shm_create(&s, f->name, b, n, NULL), 0);
    assert_non_null(s);
    return s;
}

/* ---------------------------------------------------------------------------------- */
/* create, open, destroy, unlink, names                                                */

static void test_create_args(void **state)
{
    struct fixture *f = *state;
    band_shm *const sentinel = (band_shm *)(uintptr_t)0x1234;
    band_shm *s = sentinel;
    band_shm_bound b2[2] = {{"a", 1, BAND_SHM_UNITS}, {"a", 1, BAND_SHM_UNITS}};
    band_shm_bound b9[9];
    for (int i = 0; i < 9; i++)
        b9[i] = (band_shm_bound){"x", 1, BAND_SHM_UNITS};
    char longname[BAND_NAME_MAX + 1];
    memset(longname, 'n', sizeof(longname) - 1);
    longname[BAND_NAME_MAX] = 0;

    assert_int_equal(band_shm_create(NULL, f->name, one_bound, 1, NULL), BAND_EINVAL);
    assert_int_equal(band_shm_create(&s, f->name, NULL, 1, NULL), BAND_EINVAL);
    assert_int_equal(band_shm_create(&s, f->name, one_bound, 0, NULL), BAND_EINVAL);
    assert_int_equal(band_shm_create(&s, f->name, b9, 9, NULL), BAND_EINVAL);
    assert_int_equal(band_shm_create(&s, f->name, b2, 2, NULL), BAND_EINVAL); /* repeated */
    band_shm_bound bad = {"", 1, BAND_SHM_UNITS};
    assert_int_equal(band_shm_create(&s, f->name, &bad, 1, NULL), BAND_EINVAL);
    bad.name = NULL;
    assert_int_equal(band_shm_create(&s, f->name, &bad, 1, NULL), BAND_EINVAL);
    bad.name = longname; /* BAND_NAME_MAX bytes: one too many */
    assert_int_equal(band_shm_create(&s, f->name, &bad, 1, NULL), BAND_EINVAL);
    bad = (band_shm_bound){"b", BAND_MAX_UNITS + 1, BAND_SHM_UNITS};
    assert_int_equal(band_shm_create(&s, f->name, &bad, 1, NULL), BAND_EINVAL);
    bad = (band_shm_bound){"b", 1, 2};
    assert_int_equal(band_shm_create(&s, f->name, &bad, 1, NULL), BAND_EINVAL);
    band_shm_opts o = {.max_handles = 4097};
    assert_int_equal(band_shm_create(&s, f->name, one_bound, 1, &o), BAND_EINVAL);
    o = (band_shm_opts){.max_waiters = 65537};
    assert_int_equal(band_shm_create(&s, f->name, one_bound, 1, &o), BAND_EINVAL);
    o = (band_shm_opts){.mode = 04600}; /* a mode is permission bits only */
    assert_int_equal(band_shm_create(&s, f->name, one_bound, 1, &o), BAND_EINVAL);
    static const char *const badnames[] = {"noslash", "/a/b", "/", "", "//x"};
    for (size_t i = 0; i < TEST_COUNTOF(badnames); i++)
        assert_int_equal(band_shm_create(&s, badnames[i], one_bound, 1, NULL), BAND_EINVAL);
    assert_ptr_equal(s, sentinel);
    struct stat stt;
    assert_int_equal(stat("/dev/shm/noslash", &stt), -1); /* nothing left behind */

    /* The largest names and limits are fine. */
    longname[BAND_NAME_MAX - 1] = 0; /* BAND_NAME_MAX - 1 bytes: the longest */
    band_shm_bound big = {longname, BAND_MAX_UNITS, BAND_SHM_BYTES};
    o = (band_shm_opts){.max_handles = 4096, .max_waiters = 65536};
    assert_int_equal(band_shm_create(&s, f->name, &big, 1, &o), 0);
    assert_u64_equal(band_shm_available(s, 0), BAND_MAX_UNITS);
    unsigned idx = 99;
    assert_int_equal(band_shm_bound_index(s, longname, &idx), 0);
    assert_int_equal(idx, 0);
    band_shm_stats st = stats_of(s);
    assert_int_equal(st.max_handles, 4096);
    assert_int_equal(st.max_waiters, 65536);
    assert_int_equal(st.bounds[0].kind, BAND_SHM_BYTES);
    assert_int_equal(band_shm_destroy(s), 0);
    assert_int_equal(band_shm_unlink(f->name), 0);

    /* Eight bounds, the most. */
    band_shm_bound b8[8];
    char names[8][4];
    for (int i = 0; i < 8; i++) {
        snprintf(names[i], sizeof(names[i]), "b%d", i);
        b8[i] = (band_shm_bound){names[i], (uint64_t)i, BAND_SHM_UNITS};
    }
    assert_int_equal(band_shm_create(&s, f->name, b8, 8, NULL), 0);
    assert_int_equal(band_shm_bound_count(s), 8);
    for (unsigned i = 0; i < 8; i++) {
        assert_int_equal(band_shm_bound_index(s, names[i], &idx), 0);
        assert_int_equal(idx, i);
        assert_u64_equal(band_shm_available(s, i), i);
    }
    assert_int_equal(band_shm_destroy(s), 0);
}

static void test_create_open_unlink(void **state)
{
    struct fixture *f = *state;
    band_shm *s = NULL, *t = NULL;
    char path[96];
    snprintf(path, sizeof(path), "/dev/shm/%s", f->name + 1);

    mode_t old = umask(0077);
    band_shm_opts o = {.mode = 0640};
    assert_int_equal(band_shm_create(&s, f->name, one_bound, 1, &o), 0);
    umask(old);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0640); /* exactly, whatever the umask */

    band_shm *const sentinel = (band_shm *)(uintptr_t)0x5678;
    t = sentinel;
    assert_int_equal(band_shm_create(&t, f->name, one_bound, 1, NULL), BAND_EEXIST);
    assert_ptr_equal(t, sentinel);

    assert_int_equal(band_shm_open(&t, f->name, NULL), 0);
    assert_int_equal(band_shm_bound_count(t), 1);
    assert_true(band_shm_fd(t) >= 0);
    assert_true(band_shm_fd(s) >= 0);
    assert_int_equal(band_shm_fd(NULL), -1);
    /* Both handles share the bound. */
    assert_int_equal(band_shm_try_acquire(t, 0, 4), 0);
    assert_u64_equal(band_shm_available(s, 0), 6);
    assert_u64_equal(band_shm_held(s, 0), 0);
    assert_u64_equal(band_shm_held(t, 0), 4);
    assert_int_equal(band_shm_get_stats(s, &(band_shm_stats){0}), 0);
    assert_int_equal(stats_of(s).handles, 2);

    /* Unlink: the name goes, the handles keep working. */
    assert_int_equal(band_shm_unlink(f->name), 0);
    assert_int_equal(stat(path, &st), -1);
    assert_int_equal(band_shm_unlink(f->name), BAND_ENOENT);
    assert_int_equal(band_shm_destroy(t), 0); /* its 4 units go back */
    assert_u64_equal(band_shm_available(s, 0), 10);
    t = sentinel;
    band_shm *u = sentinel;
    assert_int_equal(band_shm_open(&u, f->name, NULL), BAND_ENOENT);
    assert_ptr_equal(u, sentinel);
    assert_int_equal(band_shm_release(s, 0, 1), BAND_EOVERFLOW);
    assert_int_equal(band_shm_try_acquire(s, 0, 10), 0);
    assert_int_equal(band_shm_destroy(s), 0);
    assert_int_equal(band_shm_destroy(NULL), 0);

    /* Bad arguments. */
    assert_int_equal(band_shm_open(NULL, f->name, NULL), BAND_EINVAL);
    assert_int_equal(band_shm_open(&u, NULL, NULL), BAND_EINVAL);
    assert_int_equal(band_shm_open(&u, "noslash", NULL), BAND_EINVAL);
    assert_int_equal(band_shm_open(&u, "/a/b", NULL), BAND_EINVAL);
    assert_int_equal(band_shm_open(&u, "/band_test_shm_never_created", NULL), BAND_ENOENT);
    assert_int_equal(band_shm_unlink(NULL), BAND_EINVAL);
    assert_int_equal(band_shm_unlink("noslash"), BAND_EINVAL);
    assert_ptr_equal(u, sentinel);
    assert_int_equal(band_shm_open_fd(&u, -1, NULL), BAND_EINVAL);
    assert_int_equal(band_shm_open_fd(&u, 1000000, NULL), BAND_EINVAL);
    assert_int_equal(band_shm_open_fd(NULL, 0, NULL), BAND_EINVAL);
    assert_ptr_equal(u, sentinel);
    (void)t;
}

static int child_anon(void *arg)
{
    int fd = (int)(intptr_t)arg;
    band_shm *c = NULL;
    if (band_shm_open_fd(&c, fd, NULL) != 0)
        return 10;
    if (band_shm_try_acquire(c, 0, 3) != 0)
        return 11;
    if (band_shm_held(c, 0) != 3 || band_shm_available(c, 0) != 4)
        return 12;
    if (band_shm_release(c, 0, 3) != 0)
        return 13;
    return band_shm_destroy(c) == 0 ? 0 : 14;
}

static void test_anonymous(void **state)
{
    (void)state;
    band_shm *s = NULL;
    assert_int_equal(band_shm_create(&s, NULL, one_bound, 1, NULL), 0);
    int fd = band_shm_fd(s);
    assert_true(fd >= 0);
    /* Sealed: it cannot be resized. */
    assert_int_equal(ftruncate(fd, 4096), -1);
    assert_int_equal(band_shm_try_acquire(s, 0, 3), 0);

    /* open_fd duplicates: the caller's descriptor stays open and its own. */
    int dup = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    assert_true(dup >= 0);
    band_shm *t = NULL;
    assert_int_equal(band_shm_open_fd(&t, dup, NULL), 0);
    assert_int_not_equal(band_shm_fd(t), dup);
    assert_int_equal(close(dup), 0);
    assert_u64_equal(band_shm_available(t, 0), 7);
    assert_int_equal(band_shm_destroy(t), 0);

    pid_t p = spawn(child_anon, (void *)(intptr_t)fd);
    assert_int_equal(reap(p), 0);
    assert_u64_equal(band_shm_available(s, 0), 7);
    assert_u64_equal(band_shm_held(s, 0), 3);

    /* A descriptor of something else is not a segment. */
    int pipefd[2];
    assert_int_equal(pipe(pipefd), 0);
    band_shm *u = NULL;
    int rc = band_shm_open_fd(&u, pipefd[0], NULL);
    assert_true(rc == BAND_EBADSEG || rc == BAND_EINVAL);
    assert_null(u);
    close(pipefd[0]);
    close(pipefd[1]);
    assert_int_equal(band_shm_destroy(s), 0);
}

static void test_bound_index(void **state)
{
    struct fixture *f = *state;
    band_shm_bound b[3] = {
        {"conns", 5, BAND_SHM_UNITS}, {"bytes", 100, BAND_SHM_BYTES}, {"io", 0, BAND_SHM_UNITS}};
    band_shm *s = make(f, b, 3);
    unsigned idx = 77;
    assert_int_equal(band_shm_bound_index(s, "bytes", &idx), 0);
    assert_int_equal(idx, 1);
    assert_int_equal(band_shm_bound_index(s, "io", &idx), 0);
    assert_int_equal(idx, 2);
    assert_int_equal(band_shm_bound_index(s, "conns", &idx), 0);
    assert_int_equal(idx, 0);
    idx = 77;
    assert_int_equal(band_shm_bound_index(s, "con", &idx), BAND_ENOENT);
    assert_int_equal(band_shm_bound_index(s, "", &idx), BAND_ENOENT);
    assert_int_equal(band_shm_bound_index(s, NULL, &idx), BAND_EINVAL);
    assert_int_equal(band_shm_bound_index(s, "io", NULL), BAND_EINVAL);
    assert_int_equal(band_shm_bound_index(NULL, "io", &idx), BAND_EINVAL);
    assert_int_equal(idx, 77);
    assert_int_equal(band_shm_bound_count(s), 3);
    assert_int_equal(band_shm_bound_count(NULL), 0);
    /* Bad indices everywhere. */
    assert_int_equal(band_shm_try_acquire(s, 3, 1), BAND_EINVAL);
    assert_int_equal(band_shm_acquire(s, 3, 1, BAND_FOREVER, NULL), BAND_EINVAL);
    assert_int_equal(band_shm_release(s, 3, 0), BAND_EINVAL);
    assert_int_equal(band_shm_reduce(s, 3, 0), BAND_EINVAL);
    assert_int_equal(band_shm_grow(s, 3, 0), BAND_EINVAL);
    assert_u64_equal(band_shm_drain(s, 3, 1), 0);
    assert_u64_equal(band_shm_available(s, 3), 0);
    assert_u64_equal(band_shm_held(s, 3), 0);
    band_waiter w;
    band_waiter_init(&w, NULL, NULL);
    assert_int_equal(band_shm_acquire_async(s, 3, 1, &w), BAND_EINVAL);
    assert_int_equal(band_shm_acquire_async(s, 0, 1, NULL), BAND_EINVAL);
    /* NULL handles. */
    assert_int_equal(band_shm_try_acquire(NULL, 0, 1), BAND_EINVAL);
    assert_int_equal(band_shm_acquire(NULL, 0, 1, BAND_FOREVER, NULL), BAND_EINVAL);
    assert_int_equal(band_shm_acquire_async(NULL, 0, 1, &w), BAND_EINVAL);
    assert_int_equal(band_shm_release(NULL, 0, 1), BAND_EINVAL);
    assert_int_equal(band_shm_reduce(NULL, 0, 1), BAND_EINVAL);
    assert_int_equal(band_shm_grow(NULL, 0, 1), BAND_EINVAL);
    assert_u64_equal(band_shm_drain(NULL, 0, 1), 0);
    assert_u64_equal(band_shm_available(NULL, 0), 0);
    assert_u64_equal(band_shm_held(NULL, 0), 0);
    assert_int_equal(band_shm_close(NULL), BAND_EINVAL);
    assert_int_equal(band_shm_is_closed(NULL), 0);
    assert_int_equal(band_shm_reclaim(NULL, NULL), BAND_EINVAL);
    assert_int_equal(band_shm_get_stats(NULL, &(band_shm_stats){0}), BAND_EINVAL);
    assert_int_equal(band_shm_get_stats(s, NULL), BAND_EINVAL);
    size_t cnt;
    assert_int_equal(band_shm_list_holders(NULL, NULL, 0, &cnt), BAND_EINVAL);
    assert_int_equal(band_shm_list_waiters(NULL, NULL, 0, &cnt), BAND_EINVAL);
    assert_int_equal(band_shm_list_holders(s, NULL, 0, NULL), BAND_EINVAL);
    assert_int_equal(band_shm_list_waiters(s, NULL, 0, NULL), BAND_EINVAL);
    assert_int_equal(band_shm_list_holders(s, NULL, 1, &cnt), BAND_EINVAL);
    assert_int_equal(band_shm_list_waiters(s, NULL, 1, &cnt), BAND_EINVAL);
    assert_int_equal(band_shm_destroy(s), 0);
}

/* ---------------------------------------------------------------------------------- */
/* try, release, E2BIG, reduce, grow, drain                                            */

static void test_try_release(void **state)
{
    struct fixture *f = *state;
    band_shm *s = make(f, one_bound, 1);
    assert_int_equal(band_shm_try_acquire(s, 0, 0), 0);
    assert_int_equal(band_shm_try_acquire(s, 0, 4), 0);
    assert_int_equal(band_shm_try_acquire(s, 0, 6), 0);
    assert_int_equal(band_shm_try_acquire(s, 0, 1), BAND_EAGAIN);
    assert_int_equal(band_shm_try_acquire(s, 0, 11), BAND_E2BIG);
    assert_int_equal(band_shm_try_acquire(s, 0, BAND_MAX_UNITS), BAND_E2BIG);
    assert_int_equal(band_shm_try_acquire(s, 0, BAND_MAX_UNITS + 1), BAND_EINVAL);
    assert_int_equal(band_shm_acquire(s, 0, 11, BAND_FOREVER, NULL), BAND_E2BIG);
    assert_u64_equal(band_shm_held(s, 0), 10);
    assert_u64_equal(band_shm_available(s, 0), 0);

    /* Releasing more than held changes nothing. */
    assert_int_equal(band_shm_release(s, 0, 11), BAND_EOVERFLOW);
    assert_int_equal(band_shm_release(s, 0, UINT64_MAX), BAND_EOVERFLOW);
    assert_u64_equal(band_shm_held(s, 0), 10);
    assert_int_equal(band_shm_release(s, 0, 0), 0);
    assert_int_equal(band_shm_release(s, 0, 7), 0);
    assert_u64_equal(band_shm_held(s, 0), 3);
    assert_u64_equal(band_shm_available(s, 0), 7);

    /* Another handle cannot release this one's units. */
    band_shm *t = NULL;
    assert_int_equal(band_shm_open(&t, f->name, NULL), 0);
    assert_int_equal(band_shm_release(t, 0, 1), BAND_EOVERFLOW);
    assert_u64_equal(band_shm_available(s, 0), 7);
    assert_int_equal(band_shm_destroy(t), 0);

    band_shm_stats st = stats_of(s);
    assert_u64_equal(st.bounds[0].try_refusals, 1);
    assert_u64_equal(st.bounds[0].too_big, 3);
    assert_u64_equal(st.bounds[0].in_use, 3);
    assert_u64_equal(st.bounds[0].queued, 0);
    assert_int_equal(band_shm_release(s, 0, 3), 0);
    assert_int_equal(band_shm_destroy(s), 0);
}

struct wake_sem {
    band_waiter w;
    sem_t sem;
    atomic_int wakes;
    atomic_int status;
};

static void wake_sem_fn(band_waiter *w)
{
    struct wake_sem *ws = w->data; /* also the waiter of a band_shm_req */
    atomic_store(&ws->status, band_waiter_status(w));
    atomic_fetch_add(&ws->wakes, 1);
    sem_post(&ws->sem);
}

static void wake_sem_init(struct wake_sem *ws)
{
    memset(ws, 0, sizeof(*ws));
    band_waiter_init(&ws->w, wake_sem_fn, ws);
    sem_init(&ws->sem, 0, 0);
    atomic_store(&ws->status, 12345);
}

/* Wait up to 5 s for the wake; 1 when it came. */
static int wake_sem_wait(struct wake_sem *ws)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 5;
    while (sem_timedwait(&ws->sem, &ts) != 0)
        if (errno != EINTR)
            return 0;
    return 1;
}

/* 1 when no wake came within 20 ms (used only after the outcome is known to be final). */
static int wake_sem_none(struct wake_sem *ws)
{
    usleep(20000);
    return sem_trywait(&ws->sem) != 0 && atomic_load(&ws->wakes) == 0;
}

static void test_reduce_debt(void **state)
{
    struct fixture *f = *state;
    band_shm *s = make(f, one_bound, 1);
    assert_int_equal(band_shm_try_acquire(s, 0, 8), 0);
    /* Two available go first; the other three become a debt. */
    assert_int_equal(band_shm_reduce(s, 0, 5), 0);
    band_shm_stats st = stats_of(s);
    assert_u64_equal(st.bounds[0].capacity, 5);
    assert_u64_equal(st.bounds[0].available, 0);
    assert_u64_equal(st.bounds[0].debt, 3);
    assert_u64_equal(st.bounds[0].in_use, 8);
    assert_int_equal(band_shm_reduce(s, 0, 6), BAND_EINVAL); /* above the capacity */

    /* A waiter for 2: the first release repays the debt before it. */
    struct wake_sem ws;
    wake_sem_init(&ws);
    assert_int_equal(band_shm_acquire_async(s, 0, 2, &ws.w), BAND_PENDING);
    assert_int_equal(band_shm_release(s, 0, 4), 0);
    st = stats_of(s);
    assert_u64_equal(st.bounds[0].debt, 0);
    assert_u64_equal(st.bounds[0].available, 1);
    assert_u64_equal(st.bounds[0].waiters, 1);
    assert_int_equal(band_shm_release(s, 0, 1), 0);
    assert_true(wake_sem_wait(&ws));
    assert_int_equal(atomic_load(&ws.status), 0);
    assert_u64_equal(band_shm_held(s, 0), 3 + 2);
    assert_u64_equal(band_shm_available(s, 0), 0);

    /* A queued request larger than the new capacity fails with E2BIG. */
    wake_sem_init(&ws);
    assert_int_equal(band_shm_acquire_async(s, 0, 4, &ws.w), BAND_PENDING);
    assert_int_equal(band_shm_reduce(s, 0, 2), 0); /* capacity 3 */
    assert_true(wake_sem_wait(&ws));
    assert_int_equal(atomic_load(&ws.status), BAND_E2BIG);
    st = stats_of(s);
    assert_u64_equal(st.bounds[0].capacity, 3);
    assert_u64_equal(st.bounds[0].debt, 2);
    assert_u64_equal(st.bounds[0].waiters, 0);
    assert_u64_equal(st.bounds[0].too_big, 1);
    assert_int_equal(band_shm_release(s, 0, 5), 0);
    st = stats_of(s);
    assert_u64_equal(st.bounds[0].available, 3);
    assert_u64_equal(st.bounds[0].debt, 0);
    assert_int_equal(band_shm_destroy(s), 0);
}

static void test_grow(void **state)
{
    struct fixture *f = *state;
    band_shm_bound b = {"g", 2, BAND_SHM_UNITS};
    band_shm *s = make(f, &b, 1);
    assert_int_equal(band_shm_try_acquire(s, 0, 2), 0);
    assert_int_equal(band_shm_reduce(s, 0, 2), 0); /* capacity 0, debt 2 */
    struct wake_sem ws;
    wake_sem_init(&ws);
    /* capacity 0: a request for 3 is too big now. */
    assert_int_equal(band_shm_acquire_async(s, 0, 3, &ws.w), BAND_E2BIG);
    assert_int_equal(band_shm_grow(s, 0, 3), 0); /* debt 2 repaid, 1 available */
    band_shm_stats st = stats_of(s);
    assert_u64_equal(st.bounds[0].capacity, 3);
    assert_u64_equal(st.bounds[0].debt, 0);
    assert_u64_equal(st.bounds[0].available, 1);
    assert_int_equal(band_shm_acquire_async(s, 0, 3, &ws.w), BAND_PENDING);
    assert_int_equal(band_shm_grow(s, 0, 2), 0); /* capacity 5: the waiter gets 3 */
    assert_true(wake_sem_wait(&ws));
    assert_int_equal(atomic_load(&ws.status), 0);
    assert_u64_equal(band_shm_held(s, 0), 5);
    assert_u64_equal(band_shm_available(s, 0), 0);
    assert_int_equal(band_shm_grow(s, 0, BAND_MAX_UNITS - 4), BAND_EOVERFLOW);
    assert_u64_equal(stats_of(s).bounds[0].capacity, 5);
    assert_int_equal(band_shm_grow(s, 0, BAND_MAX_UNITS - 5), 0);
    assert_u64_equal(band_shm_available(s, 0), BAND_MAX_UNITS - 5);
    assert_int_equal(band_shm_grow(s, 0, 1), BAND_EOVERFLOW);
    assert_int_equal(band_shm_grow(s, 0, 0), 0);
    assert_int_equal(band_shm_release(s, 0, 5), 0);
    assert_int_equal(band_shm_destroy(s), 0);
}

static void test_drain(void **state)
{
    struct fixture *f = *state;
    band_shm *s = make(f, one_bound, 1);
    assert_u64_equal(band_shm_drain(s, 0, 3), 3);
    assert_u64_equal(band_shm_held(s, 0), 3);
    assert_u64_equal(band_shm_drain(s, 0, 100), 7);
    assert_u64_equal(band_shm_drain(s, 0, 100), 0);
    assert_u64_equal(band_shm_held(s, 0), 10);
    band_shm_stats st = stats_of(s);
    assert_u64_equal(st.bounds[0].debt, 0);
    assert_u64_equal(st.bounds[0].available, 0);
    assert_int_equal(band_shm_release(s, 0, 4), 0);
    assert_int_equal(band_shm_close(s), 0);
    assert_u64_equal(band_shm_drain(s, 0, 1), 1); /* works after close */
    assert_u64_equal(band_shm_held(s, 0), 7);
    assert_int_equal(band_shm_release(s, 0, 7), 0);
    assert_int_equal(band_shm_destroy(s), 0);
}

/* ---------------------------------------------------------------------------------- */
/* close                                                                               */

struct blocker {
    band_shm *s;
    unsigned bound;
    uint64_t n;
    band_time deadline;
    band_cancel *cancel;
    atomic_int rc;
    band_time took;
};

static int blocker_fn(void *arg)
{
    struct blocker *b = arg;
    band_time t0 = band_now();
    int rc = band_shm_acquire(b->s, b->bound, b->n, b->deadline, b->cancel);
    b->took = band_now() - t0;
    atomic_store(&b->rc, rc);
    return rc;
}

static int child_close_waiter(void *arg)
{
    struct fixture *f = arg;
    band_shm *c = NULL;
    if (band_shm_open(&c, f->name, NULL) != 0)
        return 10;
    atomic_fetch_add(&f->sh->ready, 1);
    int rc = band_shm_acquire(c, 0, 5, band_deadline_after(10 * BAND_SEC), NULL);
    if (rc != BAND_ECLOSED)
        return 20;
    if (band_shm_is_closed(c) != 1)
        return 21;
    if (band_shm_try_acquire(c, 0, 0) != BAND_ECLOSED)
        return 22;
    return band_shm_destroy(c) == 0 ? 0 : 23;
}

static void test_close(void **state)
{
    struct fixture *f = *state;
    band_shm *s = make(f, one_bound, 1);
    assert_int_equal(band_shm_try_acquire(s, 0, 8), 0);
    /* A waiter in another process, one on a thread, one async. */
    pid_t p = spawn(child_close_waiter, f);
    wait_waiters(s, 1);
    struct blocker b = {.s = s, .n = 5, .deadline = band_deadline_after(10 * BAND_SEC)};
    struct test_thread th;
    assert_int_equal(test_thread_start(&th, blocker_fn, &b), 0);
    wait_waiters(s, 2);
    struct wake_sem ws;
    wake_sem_init(&ws);
    assert_int_equal(band_shm_acquire_async(s, 0, 5, &ws.w), BAND_PENDING);
    assert_int_equal(band_shm_is_closed(s), 0);

    assert_int_equal(band_shm_close(s), 0);
    assert_int_equal(band_shm_close(s), 0); /* harmless twice */
    assert_int_equal(band_shm_is_closed(s), 1);
    assert_true(wake_sem_wait(&ws));
    assert_int_equal(atomic_load(&ws.status), BAND_ECLOSED);
    assert_int_equal(test_thread_join(&th), BAND_ECLOSED);
    assert_int_equal(reap(p), 0);

    assert_int_equal(band_shm_try_acquire(s, 0, 1), BAND_ECLOSED);
    assert_int_equal(band_shm_acquire(s, 0, 1, BAND_FOREVER, NULL), BAND_ECLOSED);
    assert_int_equal(band_shm_acquire_async(s, 0, 1, &ws.w), BAND_ECLOSED);
    /* Releases still work. */
    assert_int_equal(band_shm_release(s, 0, 8), 0);
    band_shm_stats st = stats_of(s);
    assert_int_equal(st.closed, 1);
    assert_u64_equal(st.bounds[0].available, 10);
    assert_u64_equal(st.bounds[0].closed_fails, 3);
    assert_u64_equal(st.bounds[0].waiters, 0);
    assert_int_equal(st.waiters, 0);
    /* A new handle sees it closed. */
    band_shm *t = NULL;
    assert_int_equal(band_shm_open(&t, f->name, NULL), 0);
    assert_int_equal(band_shm_is_closed(t), 1);
    assert_int_equal(band_shm_destroy(t), 0);
    assert_int_equal(band_shm_destroy(s), 0);
}

/* ---------------------------------------------------------------------------------- */
/* FIFO across processes; multi-bound requests                                         */

struct fifo_arg {
    struct fixture *f;
    int id;
    uint64_t n;
};

struct order_cond {
    struct shared *sh;
    int n;
};

static bool cond_order(void *arg)
{
    struct order_cond *c = arg;
    return atomic_load(&c->sh->order) >= c->n;
}

static int child_fifo(void *arg)
{
    struct fifo_arg *a = arg;
    band_shm *c = NULL;
    if (band_shm_open(&c, a->f->name, NULL) != 0)
        return 10;
    int rc = band_shm_acquire(c, 0, a->n, band_deadline_after(10 * BAND_SEC), NULL);
    atomic_store(&a->f->sh->rc[a->id], rc);
    if (rc != 0)
        return 20;
    atomic_store(&a->f->sh->log[atomic_fetch_add(&a->f->sh->order, 1)], a->id);
    if (band_shm_held(c, 0) != a->n)
        return 21;
    /* Hold until the parent has looked at the queue: a release here would grant the
     * next waiter behind its back. */
    for (int i = 0; i < 10000 && atomic_load(&a->f->sh->step) < a->id; i++)
        usleep(1000);
    return band_shm_destroy(c) == 0 ? 0 : 22; /* gives the units back */
}

static void test_fifo_processes(void **state)
{
    struct fixture *f = *state;
    band_shm_bound b = {"f", 4, BAND_SHM_UNITS};
    band_shm *s = make(f, &b, 1);
    assert_int_equal(band_shm_try_acquire(s, 0, 4), 0);
    struct fifo_arg a1 = {f, 1, 3}, a2 = {f, 2, 1};
    pid_t p1 = spawn(child_fifo, &a1);
    wait_waiters(s, 1);
    pid_t p2 = spawn(child_fifo, &a2);
    wait_waiters(s, 2);

    band_shm_waiter_info wi[4];
    size_t cnt = 99;
    memset(wi, 0, sizeof(wi));
    assert_int_equal(band_shm_list_waiters(s, wi, 4, &cnt), 0);
    assert_int_equal(cnt, 2);
    assert_int_equal(wi[0].pid, p1);
    assert_int_equal(wi[1].pid, p2);
    assert_true(wi[0].seq < wi[1].seq);
    assert_u64_equal(wi[0].want[0], 3);
    assert_u64_equal(wi[1].want[0], 1);
    assert_int_equal(wi[0].async, 0);

    /* One free unit: the head needs 3, and the later request for 1 must not overtake. */
    assert_int_equal(band_shm_release(s, 0, 1), 0);
    assert_int_equal(band_shm_try_acquire(s, 0, 1), BAND_EAGAIN); /* no barging either */
    band_shm_stats st = stats_of(s);
    assert_u64_equal(st.bounds[0].available, 1);
    assert_int_equal(st.waiters, 2);
    assert_int_equal(band_shm_release(s, 0, 2), 0); /* the head is granted at once */
    st = stats_of(s);
    assert_int_equal(st.waiters, 1);
    assert_u64_equal(st.bounds[0].available, 0);
    assert_int_equal(band_shm_list_waiters(s, wi, 4, &cnt), 0);
    assert_int_equal(cnt, 1);
    assert_int_equal(wi[0].pid, p2);
    /* The first child logs its grant before the second can be granted. */
    struct order_cond oc = {f->sh, 1};
    assert_true(test_wait_until(cond_order, &oc, 5 * BAND_SEC));
    atomic_store(&f->sh->step, 2); /* both children may give their units back now */
    assert_int_equal(band_shm_release(s, 0, 1), 0);
    assert_int_equal(reap(p1), 0);
    assert_int_equal(reap(p2), 0);
    assert_int_equal(atomic_load(&f->sh->order), 2);
    assert_int_equal(atomic_load(&f->sh->log[0]), 1);
    assert_int_equal(atomic_load(&f->sh->log[1]), 2);
    st = stats_of(s);
    assert_u64_equal(st.bounds[0].available, 4);
    assert_u64_equal(st.bounds[0].queued, 2);
    assert_u64_equal(st.bounds[0].grants, 2);
    assert_u64_equal(st.bounds[0].reclaimed, 4); /* destroyed while holding */
    assert_int_equal(band_shm_destroy(s), 0);
}

static int child_req_b(void *arg)
{
    struct fixture *f = arg;
    band_shm *c = NULL;
    if (band_shm_open(&c, f->name, NULL) != 0)
        return 10;
    band_shm_req r = {0};
    if (band_shm_req_init(&r, NULL, NULL) != 0 || band_shm_req_add(&r, 1, 1) != 0)
        return 11;
    int rc = band_shm_admit(c, &r, band_deadline_after(10 * BAND_SEC), NULL);
    if (rc != 0)
        return 20;
    if (band_shm_held(c, 1) != 1 || band_shm_held(c, 0) != 0)
        return 21;
    if (band_shm_release_req(c, &r) != 0)
        return 22;
    return band_shm_destroy(c) == 0 ? 0 : 23;
}

static void test_req_multi(void **state)
{
    struct fixture *f = *state;
    band_shm_bound b[2] = {{"a", 2, BAND_SHM_UNITS}, {"b", 2, BAND_SHM_UNITS}};
    band_shm *s = make(f, b, 2);
    band_shm_req r = {0};

    /* Building requests. */
    assert_int_equal(band_shm_req_init(NULL, NULL, NULL), BAND_EINVAL);
    assert_int_equal(band_shm_req_init(&r, NULL, NULL), 0);
    assert_int_equal(r.n, 0);
    assert_int_equal(band_shm_req_add(NULL, 0, 1), BAND_EINVAL);
    assert_int_equal(band_shm_req_add(&r, BAND_SHM_MAX_BOUNDS, 1), BAND_EINVAL);
    assert_int_equal(band_shm_req_add(&r, 0, BAND_MAX_UNITS + 1), BAND_EOVERFLOW);
    assert_int_equal(band_shm_req_add(&r, 0, 1), 0);
    assert_int_equal(band_shm_req_add(&r, 0, 1), 0); /* adds up */
    assert_int_equal(r.n, 1);
    assert_u64_equal(r.units[0], 2);
    assert_int_equal(band_shm_req_add(&r, 0, BAND_MAX_UNITS - 1), BAND_EOVERFLOW);
    assert_int_equal(band_shm_req_init(&r, NULL, NULL), 0);
    for (unsigned i = 0; i < BAND_SHM_REQ_MAX; i++)
        assert_int_equal(band_shm_req_add(&r, i, 0), 0);
    assert_int_equal(r.n, BAND_SHM_REQ_MAX);
    /* a bound beyond this segment's two */
    assert_int_equal(band_shm_try_admit(s, &r), BAND_EINVAL);
    assert_int_equal(band_shm_try_admit(NULL, &r), BAND_EINVAL);
    assert_int_equal(band_shm_try_admit(s, NULL), BAND_EINVAL);

    /* All or none. */
    assert_int_equal(band_shm_req_init(&r, NULL, NULL), 0);
    assert_int_equal(band_shm_req_add(&r, 0, 1), 0);
    assert_int_equal(band_shm_req_add(&r, 1, 3), 0);
    assert_int_equal(band_shm_try_admit(s, &r), BAND_E2BIG);
    assert_int_equal(band_shm_admit(s, &r, BAND_FOREVER, NULL), BAND_E2BIG);
    assert_u64_equal(band_shm_available(s, 0), 2);
    assert_int_equal(band_shm_try_acquire(s, 1, 2), 0); /* b is all taken */
    band_shm_req ab = {0};
    assert_int_equal(band_shm_req_init(&ab, NULL, NULL), 0);
    assert_int_equal(band_shm_req_add(&ab, 0, 1), 0);
    assert_int_equal(band_shm_req_add(&ab, 1, 1), 0);
    assert_int_equal(band_shm_try_admit(s, &ab), BAND_EAGAIN);
    assert_u64_equal(band_shm_available(s, 0), 2); /* nothing of a was taken */
    assert_u64_equal(band_shm_held(s, 0), 0);
    assert_int_equal(band_shm_release_req(s, &ab), BAND_EOVERFLOW); /* holds no a */
    assert_u64_equal(band_shm_held(s, 1), 2);

    /* FIFO per bound: a waiter of b does not hold back a request for a alone. */
    pid_t p = spawn(child_req_b, f);
    wait_waiters(s, 1);
    band_shm_req ra = {0};
    assert_int_equal(band_shm_req_init(&ra, NULL, NULL), 0);
    assert_int_equal(band_shm_req_add(&ra, 0, 1), 0);
    assert_int_equal(band_shm_try_admit(s, &ra), 0);
    assert_u64_equal(band_shm_held(s, 0), 1);
    /* ... but one that also names b queues behind it. */
    struct wake_sem ws;
    wake_sem_init(&ws);
    assert_int_equal(band_shm_req_init(&ab, wake_sem_fn, &ws), 0);
    assert_int_equal(band_shm_req_add(&ab, 0, 1), 0);
    assert_int_equal(band_shm_req_add(&ab, 1, 1), 0);
    assert_int_equal(band_shm_admit_async(s, &ab), BAND_PENDING);
    assert_int_equal(band_shm_req_add(&ab, 0, 1), BAND_EINVAL); /* pending */
    assert_int_equal(band_shm_try_admit(s, &ra), BAND_EAGAIN);  /* the async one waits on a */
    assert_int_equal(band_shm_release(s, 1, 1), 0);             /* to the child, first in line */
    assert_int_equal(reap(p), 0);                               /* it released its unit: now ours */
    assert_true(wake_sem_wait(&ws));
    assert_int_equal(atomic_load(&ws.status), 0);
    assert_u64_equal(band_shm_held(s, 0), 2);
    assert_u64_equal(band_shm_held(s, 1), 2);
    assert_int_equal(band_shm_release_req(s, &ab), 0);
    assert_int_equal(band_shm_release_req(s, &ra), 0);
    assert_int_equal(band_shm_release(s, 1, 1), 0);
    assert_u64_equal(band_shm_available(s, 0), 2);
    assert_u64_equal(band_shm_available(s, 1), 2);
    assert_int_equal(band_shm_destroy(s), 0);
}

/* band_shm_req_init() is how a request is made ready ("Build it with band_shm_req_init()"),
 * so it must accept memory that never held a request: a stack variable's garbage. */
static void test_req_init_fresh(void **state)
{
    (void)state;
    band_shm_req r;
    memset(&r, 0x55, sizeof(r)); /* garbage whose waiter state bits read "queued" */
    assert_int_equal(band_shm_req_init(&r, NULL, NULL), 0);
    assert_int_equal(r.n, 0);
}

/* ---------------------------------------------------------------------------------- */
/* deadline, cancellation                                                              */

static void test_deadline_cancel(void **state)
{
    struct fixture *f = *state;
    band_shm *s = make(f, one_bound, 1);
    assert_int_equal(band_shm_try_acquire(s, 0, 10), 0);

    /* A past deadline does not wait (but grants when it can). */
    assert_int_equal(band_shm_acquire(s, 0, 1, 0, NULL), BAND_ETIMEDOUT);
    assert_int_equal(band_shm_release(s, 0, 1), 0);
    assert_int_equal(band_shm_acquire(s, 0, 1, 0, NULL), 0);

    band_time t0 = band_now();
    assert_int_equal(band_shm_acquire(s, 0, 1, t0 + 100 * BAND_MSEC, NULL), BAND_ETIMEDOUT);
    band_time took = band_now() - t0;
    assert_true(took >= 100 * BAND_MSEC);
    assert_true(took < 3 * BAND_SEC);
    band_shm_stats st = stats_of(s);
    assert_u64_equal(st.bounds[0].timeouts, 1);
    assert_u64_equal(st.bounds[0].queued, 1);
    assert_int_equal(st.waiters, 0);

    band_cancel *c = NULL;
    assert_int_equal(band_cancel_create(&c, NULL), 0);
    struct blocker b = {
        .s = s, .n = 2, .deadline = band_deadline_after(10 * BAND_SEC), .cancel = c};
    struct test_thread th;
    assert_int_equal(test_thread_start(&th, blocker_fn, &b), 0);
    wait_waiters(s, 1);
    assert_int_equal(band_cancel_request(c), 0);
    assert_int_equal(test_thread_join(&th), BAND_ECANCELED);
    assert_true(b.took < 3 * BAND_SEC);
    st = stats_of(s);
    assert_u64_equal(st.bounds[0].cancels, 1);
    assert_int_equal(st.waiters, 0);
    /* A requested token, nothing free: refused at once. */
    assert_int_equal(band_shm_acquire(s, 0, 1, BAND_FOREVER, c), BAND_ECANCELED);
    assert_int_equal(band_cancel_destroy(c), 0);
    assert_u64_equal(band_shm_held(s, 0), 10);
    assert_int_equal(band_shm_destroy(s), 0);
}

/* ---------------------------------------------------------------------------------- */
/* fork, destroy                                                                       */

static int child_own_record(void *arg)
{
    band_shm *s = arg;
    if (band_shm_held(s, 0) != 0)
        return 10;
    if (band_shm_release(s, 0, 1) != BAND_EOVERFLOW)
        return 11;
    if (band_shm_try_acquire(s, 0, 2) != 0)
        return 12;
    if (band_shm_held(s, 0) != 2 || band_shm_available(s, 0) != 5)
        return 13;
    size_t cnt = 0;
    if (band_shm_list_holders(s, NULL, 0, &cnt) != 0 || cnt != 2)
        return 14;
    if (band_shm_release(s, 0, 2) != 0)
        return 15;
    if (band_shm_try_acquire(s, 0, 1) != 0)
        return 16;
    return 0; /* exits holding 1: recovered as dead */
}

static void test_fork_own_record(void **state)
{
    struct fixture *f = *state;
    band_shm *s = make(f, one_bound, 1);
    assert_int_equal(band_shm_try_acquire(s, 0, 3), 0);
    pid_t p = spawn(child_own_record, s);
    assert_int_equal(reap(p), 0);
    assert_u64_equal(band_shm_held(s, 0), 3);
    unsigned dead = 99;
    assert_int_equal(band_shm_reclaim(s, &dead), 0);
    assert_int_equal(dead, 1);
    assert_u64_equal(band_shm_available(s, 0), 7);
    band_shm_stats st = stats_of(s);
    assert_int_equal(st.handles, 1);
    assert_u64_equal(st.dead_handles, 1);
    assert_u64_equal(st.bounds[0].reclaimed, 1);
    assert_int_equal(band_shm_reclaim(s, &dead), 0);
    assert_int_equal(dead, 0);
    assert_int_equal(band_shm_reclaim(s, NULL), 0);
    assert_u64_equal(band_shm_held(s, 0), 3);
    assert_int_equal(band_shm_release(s, 0, 3), 0);
    assert_int_equal(band_shm_destroy(s), 0);
}

static int child_finish_unused(void *arg)
{
    /* A forked child's fast paths are off until it uses the handle: it never adds. */
    return band_shm_release_finish(arg, 0, 1) == BAND_EINVAL ? 0 : 1;
}

/* band_shm_release_finish(): its refusals, and the release it takes back out. */
static void test_release_finish(void **state)
{
    struct fixture *f = *state;
    band_shm *s = make(f, one_bound, 1);
    assert_int_equal(band_shm_release_finish(NULL, 0, 1), BAND_EINVAL);
    assert_int_equal(band_shm_release_finish(s, 1, 1), BAND_EINVAL);
    assert_int_equal(band_shm_release_finish(s, 0, 0), BAND_EINVAL);
    assert_int_equal(band_shm_release_finish(s, 0, BAND_SHM_CACHE_ADD_MAX + 1), BAND_EINVAL);
    band_shm_opts look = {.inspect = 1};
    band_shm *t = NULL;
    assert_int_equal(band_shm_open(&t, f->name, &look), 0);
    assert_int_equal(band_shm_release_finish(t, 0, 1), BAND_EINVAL);
    assert_int_equal(band_shm_destroy(t), 0);
    assert_int_equal(reap(spawn(child_finish_unused, s)), 0);
    assert_int_equal(band_shm_reclaim(s, NULL), 0);

    /* Two threads of one process release 3 and 1 units of the 3 it holds, both checked
     * before either adds: the adds leave 4 cached, and the second one is taken back. */
    assert_int_equal(band_shm_try_acquire(s, 0, 3), 0);
    uint64_t *word = &s->rec[s->self].cache[0];
    __atomic_fetch_add(word, UINT64_C(3) << BAND_SHM_CACHE_SHIFT, __ATOMIC_RELEASE);
    __atomic_fetch_add(word, UINT64_C(1) << BAND_SHM_CACHE_SHIFT, __ATOMIC_RELEASE);
    assert_int_equal(band_shm_release_finish(s, 0, 1), BAND_EOVERFLOW);
    assert_u64_equal(band_shm_held(s, 0), 0);
    assert_u64_equal(__atomic_load_n(word, __ATOMIC_ACQUIRE), UINT64_C(3) << BAND_SHM_CACHE_SHIFT);
    band_shm_stats st = stats_of(s);
    assert_u64_equal(st.bounds[0].available, 10);
    assert_u64_equal(st.bounds[0].in_use, 0);
    assert_u64_equal(st.bounds[0].debt, 0);
    assert_int_equal(band_shm_try_acquire(s, 0, 10), 0);
    assert_int_equal(band_shm_release(s, 0, 10), 0);
    assert_int_equal(band_shm_destroy(s), 0);
}

/* A release into a cache another handle took units from: counted once, in the pool. */
static void test_release_after_steal(void **state)
{
    struct fixture *f = *state;
    band_shm *s = make(f, one_bound, 1);
    band_shm *t = NULL;
    assert_int_equal(band_shm_open(&t, f->name, NULL), 0);
    assert_int_equal(band_shm_try_acquire(s, 0, 4), 0);
    assert_int_equal(band_shm_release(s, 0, 2), 0); /* 2 in use, 2 idle in its cache */
    assert_u64_equal(band_shm_held(s, 0), 2);
    assert_int_equal(band_shm_try_acquire(t, 0, 8), 0); /* the pool's 6 and the idle 2 */
    assert_u64_equal(s->rec[s->self].stolen[0], 2);
    assert_u64_equal(band_shm_held(s, 0), 2);
    assert_int_equal(band_shm_release(s, 0, 3), BAND_EOVERFLOW);
    assert_int_equal(band_shm_release(s, 0, 1), 0);
    assert_int_equal(band_shm_release(s, 0, 1), 0);
    assert_u64_equal(band_shm_held(s, 0), 0);
    band_shm_stats st = stats_of(s);
    assert_u64_equal(st.bounds[0].in_use, 8);
    assert_u64_equal(st.bounds[0].available, 2);
    assert_int_equal(band_shm_try_acquire(s, 0, 2), 0);
    assert_int_equal(band_shm_try_acquire(s, 0, 1), BAND_EAGAIN);
    assert_int_equal(band_shm_release(t, 0, 8), 0);
    assert_int_equal(band_shm_release(s, 0, 2), 0);
    /* Both released into their caches; taking all 10 empties t's, so s's stays frozen. */
    uint64_t *word = &s->rec[s->self].cache[0];
    assert_int_equal(band_shm_try_acquire(s, 0, 10), 0);
    assert_u64_equal(s->rec[s->self].stolen[0], 2);
    assert_u64_equal(__atomic_load_n(word, __ATOMIC_ACQUIRE),
                     (UINT64_C(2) << BAND_SHM_CACHE_SHIFT) | BAND_SHM_CACHE_FROZEN);
    /* The release adds to the frozen word and finishes under the lock: the bound is
     * quiet, so the units stay cached and the thaw takes stolen out of the word first. */
    assert_int_equal(band_shm_release(s, 0, 10), 0);
    assert_u64_equal(s->rec[s->self].stolen[0], 0);
    assert_u64_equal(__atomic_load_n(word, __ATOMIC_ACQUIRE), UINT64_C(10) << BAND_SHM_CACHE_SHIFT);
    assert_u64_equal(band_shm_held(s, 0), 0);
    assert_int_equal(band_shm_try_acquire(s, 0, 10), 0); /* from its cache, all of it */
    assert_int_equal(band_shm_release(s, 0, 10), 0);
    st = stats_of(s);
    assert_u64_equal(st.bounds[0].in_use, 0);
    assert_u64_equal(st.bounds[0].available, 10);
    assert_int_equal(band_shm_destroy(t), 0);
    assert_int_equal(band_shm_destroy(s), 0);
}

static void test_destroy_returns(void **state)
{
    struct fixture *f = *state;
    band_shm *s = make(f, one_bound, 1);
    band_shm *t = NULL;
    assert_int_equal(band_shm_open(&t, f->name, NULL), 0);
    assert_int_equal(band_shm_try_acquire(t, 0, 4), 0);
    struct wake_sem ws;
    wake_sem_init(&ws);
    assert_int_equal(band_shm_try_acquire(s, 0, 6), 0);
    assert_int_equal(band_shm_acquire_async(s, 0, 3, &ws.w), BAND_PENDING);
    assert_int_equal(band_shm_destroy(s), BAND_EBUSY); /* pending async: nothing changes */
    assert_u64_equal(band_shm_held(s, 0), 6);
    assert_int_equal(band_shm_destroy(t), 0); /* its 4 go back: 3 to the waiter */
    assert_true(wake_sem_wait(&ws));
    assert_int_equal(atomic_load(&ws.status), 0);
    band_shm_stats st = stats_of(s);
    assert_u64_equal(st.bounds[0].reclaimed, 4);
    assert_u64_equal(st.bounds[0].available, 1);
    assert_int_equal(st.handles, 1);
    assert_u64_equal(band_shm_held(s, 0), 9);
    assert_int_equal(band_shm_destroy(s), 0);
    /* Closed handle's units are back for the next opener. */
    assert_int_equal(band_shm_open(&t, f->name, NULL), 0);
    assert_u64_equal(band_shm_available(t, 0), 10);
    st = stats_of(t);
    assert_u64_equal(st.bounds[0].reclaimed, 4 + 9);
    assert_int_equal(band_shm_destroy(t), 0);
}

/* ---------------------------------------------------------------------------------- */
/* async                                                                               */

static int child_hold_then_release(void *arg)
{
    struct fixture *f = arg;
    band_shm *c = NULL;
    if (band_shm_open(&c, f->name, NULL) != 0)
        return 10;
    if (band_shm_try_acquire(c, 0, 10) != 0)
        return 11;
    atomic_fetch_add(&f->sh->ready, 1);
    if (!child_wait_step(f->sh, 1))
        return 12;
    if (band_shm_release(c, 0, 10) != 0)
        return 13;
    return band_shm_destroy(c) == 0 ? 0 : 14;
}

static void test_async_other_process(void **state)
{
    struct fixture *f = *state;
    band_shm *s = make(f, one_bound, 1);
    pid_t p = spawn(child_hold_then_release, f);
    wait_ready(f->sh, 1);
    struct wake_sem ws;
    wake_sem_init(&ws);
    assert_int_equal(band_shm_acquire_async(s, 0, 0, &ws.w), 0); /* 0 units: at once */
    assert_int_equal(band_shm_acquire_async(s, 0, 11, &ws.w), BAND_E2BIG);
    assert_int_equal(band_shm_acquire_async(s, 0, 6, &ws.w), BAND_PENDING);
    assert_int_equal(band_waiter_is_pending(&ws.w), 1);
    size_t cnt = 0;
    band_shm_waiter_info wi;
    assert_int_equal(band_shm_list_waiters(s, &wi, 1, &cnt), 0);
    assert_int_equal(cnt, 1);
    assert_int_equal(wi.async, 1);
    assert_int_equal(wi.pid, getpid());
    atomic_store(&f->sh->step, 1);
    assert_true(wake_sem_wait(&ws));
    assert_int_equal(atomic_load(&ws.status), 0);
    assert_int_equal(band_waiter_status(&ws.w), 0);
    assert_int_equal(atomic_load(&ws.wakes), 1);
    assert_u64_equal(band_shm_held(s, 0), 6);
    assert_int_equal(reap(p), 0);
    assert_u64_equal(band_shm_available(s, 0), 4);
    /* Resubmitted: granted at once, no wake. */
    assert_int_equal(band_shm_acquire_async(s, 0, 4, &ws.w), 0);
    usleep(20000);
    assert_int_equal(atomic_load(&ws.wakes), 1);
    assert_u64_equal(band_shm_held(s, 0), 10);
    assert_int_equal(band_shm_release(s, 0, 10), 0);
    assert_int_equal(band_shm_destroy(s), 0);
}

static void test_async_cancel(void **state)
{
    struct fixture *f = *state;
    band_shm *s = make(f, one_bound, 1);
    assert_int_equal(band_shm_try_acquire(s, 0, 8), 0);
    struct wake_sem ws;
    wake_sem_init(&ws);
    assert_int_equal(band_shm_acquire_async(s, 0, 5, &ws.w), BAND_PENDING);
    assert_int_equal(band_shm_acquire_async(s, 0, 5, &ws.w), BAND_EINVAL); /* pending */
    assert_int_equal(band_waiter_cancel(&ws.w, BAND_EAGAIN), BAND_EINVAL);
    assert_int_equal(band_waiter_cancel(&ws.w, BAND_ECANCELED), 0);
    assert_int_equal(band_waiter_status(&ws.w), BAND_ECANCELED);
    assert_int_equal(band_waiter_cancel(&ws.w, BAND_ECANCELED), BAND_EINVAL);
    assert_u64_equal(band_shm_held(s, 0), 8);
    band_shm_stats st = stats_of(s);
    assert_int_equal(st.waiters, 0);
    assert_u64_equal(st.bounds[0].cancels, 1);
    assert_u64_equal(st.bounds[0].available, 2);
    /* A later grant does not reach it. */
    assert_int_equal(band_shm_release(s, 0, 8), 0);
    assert_true(wake_sem_none(&ws));
    assert_u64_equal(band_shm_held(s, 0), 0);
    assert_u64_equal(band_shm_available(s, 0), 10);

    /* Timed-out reason counts as a timeout. */
    assert_int_equal(band_shm_try_acquire(s, 0, 10), 0);
    assert_int_equal(band_shm_acquire_async(s, 0, 1, &ws.w), BAND_PENDING);
    assert_int_equal(band_waiter_cancel(&ws.w, BAND_ETIMEDOUT), 0);
    assert_int_equal(band_waiter_status(&ws.w), BAND_ETIMEDOUT);
    assert_u64_equal(stats_of(s).bounds[0].timeouts, 1);
    assert_int_equal(band_shm_release(s, 0, 10), 0);
    assert_true(wake_sem_none(&ws));
    assert_u64_equal(band_shm_held(s, 0), 0);
    assert_int_equal(band_shm_destroy(s), 0);
}

/* Many cancels racing with grants: either the wake runs once with 0 and the units are
 * held, or cancel returns 0 and nothing is held - never both, never neither. */
static void test_async_cancel_race(void **state)
{
    struct fixture *f = *state;
    band_shm *s = make(f, one_bound, 1);
    band_shm *t = NULL;
    assert_int_equal(band_shm_open(&t, f->name, NULL), 0);
    unsigned got = 0, cancelled = 0;
    for (int i = 0; i < 300; i++) {
        assert_int_equal(band_shm_try_acquire(t, 0, 10), 0);
        struct wake_sem ws;
        wake_sem_init(&ws);
        assert_int_equal(band_shm_acquire_async(s, 0, 3, &ws.w), BAND_PENDING);
        assert_int_equal(band_shm_release(t, 0, 10), 0); /* granted in the segment */
        if (i % 3 == 0)
            usleep(50);
        int rc = band_waiter_cancel(&ws.w, BAND_ECANCELED);
        if (rc == 0) {
            cancelled++;
            assert_u64_equal(band_shm_held(s, 0), 0);
            assert_true(wake_sem_none(&ws));
        } else {
            assert_int_equal(rc, BAND_EALREADY);
            assert_true(wake_sem_wait(&ws));
            assert_int_equal(atomic_load(&ws.status), 0);
            assert_u64_equal(band_shm_held(s, 0), 3);
            assert_int_equal(band_shm_release(s, 0, 3), 0);
            got++;
        }
        assert_u64_equal(band_shm_available(s, 0), 10);
        sem_destroy(&ws.sem);
    }
    print_message("cancel race: %u cancelled after the grant, %u delivered\n", cancelled, got);
    assert_int_equal(band_shm_destroy(t), 0);
    assert_int_equal(band_shm_destroy(s), 0);
}

/* ---------------------------------------------------------------------------------- */
/* SIGKILL                                                                             */

static int child_hold_forever(void *arg)
{
    struct fixture *f = arg;
    band_shm *c = NULL;
    if (band_shm_open(&c, f->name, NULL) != 0)
        return 10;
    if (band_shm_try_acquire(c, 0, 10) != 0)
        return 11;
    atomic_fetch_add(&f->sh->ready, 1);
    for (;;)
        pause();
}

static void test_kill_holder(void **state)
{
    struct fixture *f = *state;
    band_shm *s = make(f, one_bound, 1);
    pid_t p = spawn(child_hold_forever, f);
    wait_ready(f->sh, 1);
    assert_u64_equal(band_shm_available(s, 0), 0);
    struct blocker b = {.s = s, .n = 10, .deadline = band_deadline_after(10 * BAND_SEC)};
    struct test_thread th;
    assert_int_equal(test_thread_start(&th, blocker_fn, &b), 0);
    wait_waiters(s, 1);
    band_time t0 = band_now();
    assert_int_equal(kill(p, SIGKILL), 0);
    assert_int_equal(reap(p), 128 + SIGKILL);
    assert_int_equal(test_thread_join(&th), 0);
    band_time took = band_now() - t0;
    print_message("units of a SIGKILLed holder reached the waiter after %.1f ms\n",
                  (double)took / 1e6);
    assert_true(took < BAND_SEC);
    assert_u64_equal(band_shm_held(s, 0), 10);
    band_shm_stats st = stats_of(s);
    assert_u64_equal(st.dead_handles, 1);
    assert_u64_equal(st.bounds[0].reclaimed, 10);
    assert_int_equal(st.handles, 1);
    assert_int_equal(band_shm_release(s, 0, 10), 0);
    assert_int_equal(band_shm_destroy(s), 0);
}

static int child_queue_forever(void *arg)
{
    struct fifo_arg *a = arg;
    band_shm *c = NULL;
    if (band_shm_open(&c, a->f->name, NULL) != 0)
        return 10;
    if (band_shm_acquire(c, 0, a->n, BAND_FOREVER, NULL) != 0)
        return 20;
    for (;;) /* holding */
        pause();
}

static void test_kill_waiter(void **state)
{
    struct fixture *f = *state;
    band_shm *s = make(f, one_bound, 1);
    assert_int_equal(band_shm_try_acquire(s, 0, 10), 0);
    struct fifo_arg a1 = {f, 1, 4};
    pid_t p1 = spawn(child_queue_forever, &a1);
    wait_waiters(s, 1);
    struct wake_sem ws;
    wake_sem_init(&ws);
    pid_t p2 = spawn(child_queue_forever, &(struct fifo_arg){f, 2, 2});
    wait_waiters(s, 2);
    band_shm *t = NULL;
    assert_int_equal(band_shm_open(&t, f->name, NULL), 0);
    assert_int_equal(band_shm_acquire_async(t, 0, 1, &ws.w), BAND_PENDING);
    wait_waiters(s, 3);

    assert_int_equal(kill(p1, SIGKILL), 0);
    assert_int_equal(reap(p1), 128 + SIGKILL);
    unsigned dead = 99;
    assert_int_equal(band_shm_reclaim(s, &dead), 0);
    assert_int_equal(dead, 1);
    band_shm_stats st = stats_of(s);
    assert_int_equal(st.waiters, 2);
    assert_u64_equal(st.dead_waiters, 1);
    assert_u64_equal(st.dead_handles, 1);
    band_shm_waiter_info wi[4];
    size_t cnt = 0;
    assert_int_equal(band_shm_list_waiters(s, wi, 4, &cnt), 0);
    assert_int_equal(cnt, 2);
    assert_int_equal(wi[0].pid, p2); /* the living keep their order */
    assert_int_equal(wi[1].pid, getpid());
    assert_int_equal(wi[1].async, 1);
    /* The grants follow that order: 2 units only fit the head. */
    assert_int_equal(band_shm_release(s, 0, 2), 0);
    assert_int_equal(stats_of(s).waiters, 1);
    assert_int_equal(band_shm_release(s, 0, 1), 0);
    assert_true(wake_sem_wait(&ws));
    assert_int_equal(atomic_load(&ws.status), 0);
    assert_u64_equal(band_shm_held(t, 0), 1);

    /* The child granted 2 now holds them; killed without a reclaim, the next waiter's
     * own periodic check finds it. */
    assert_int_equal(kill(p2, SIGKILL), 0);
    assert_int_equal(reap(p2), 128 + SIGKILL);
    band_time t0 = band_now();
    assert_int_equal(band_shm_acquire(s, 0, 2, band_deadline_after(5 * BAND_SEC), NULL), 0);
    assert_true(band_now() - t0 < BAND_SEC);
    assert_u64_equal(band_shm_held(s, 0), 7 + 2);
    assert_int_equal(band_shm_destroy(t), 0);
    assert_int_equal(band_shm_release(s, 0, 9), 0);
    assert_int_equal(band_shm_destroy(s), 0);
}

static int child_die_locked(void *arg)
{
    struct fixture *f = arg;
    band_shm *c = NULL;
    if (band_shm_open(&c, f->name, NULL) != 0)
        return 10;
    if (band_shm_try_acquire(c, 0, 2) != 0)
        return 11;
    struct band__shm_op op;
    if (band__shm_lock(&op, c) != 0)
        return 12;
    raise(SIGKILL); /* dies holding the robust lock */
    return 13;
}

/* A process killed holding the lock: the next call takes the lock over (EOWNERDEAD),
 * recovers the dead record, and band_shm_reclaim() reports it. */
static void test_reclaim_after_lock_recovery(void **state)
{
    struct fixture *f = *state;
    band_shm *s = make(f, one_bound, 1);
    pid_t p = spawn(child_die_locked, f);
    assert_int_equal(reap(p), 128 + SIGKILL);
    unsigned dead = 99;
    assert_int_equal(band_shm_reclaim(s, &dead), 0);
    band_shm_stats st = stats_of(s);
    assert_u64_equal(st.recoveries, 1);
    assert_u64_equal(st.dead_handles, 1);
    assert_int_equal(st.handles, 1);
    assert_u64_equal(st.bounds[0].available, 10);
    assert_u64_equal(st.bounds[0].reclaimed, 2);
    assert_int_equal(band_shm_destroy(s), 0);
    /* The record was recovered inside this call, by the lock's takeover: counted. */
    assert_int_equal(dead, 1);
}

/* ---------------------------------------------------------------------------------- */
/* limits, stats, lists                                                                */

static void test_limits(void **state)
{
    struct fixture *f = *state;
    band_shm_opts o = {.max_handles = 2, .max_waiters = 1};
    band_shm *s = NULL, *t = NULL, *u = (band_shm *)(uintptr_t)0x99;
    assert_int_equal(band_shm_create(&s, f->name, one_bound, 1, &o), 0);
    assert_int_equal(band_shm_open(&t, f->name, NULL), 0);
    assert_int_equal(band_shm_open(&u, f->name, NULL), BAND_EBUSY);
    assert_ptr_equal(u, (band_shm *)(uintptr_t)0x99);
    assert_int_equal(band_shm_try_acquire(s, 0, 10), 0);
    struct wake_sem ws, ws2;
    wake_sem_init(&ws);
    wake_sem_init(&ws2);
    assert_int_equal(band_shm_acquire_async(t, 0, 1, &ws.w), BAND_PENDING);
    assert_int_equal(band_shm_acquire_async(t, 0, 1, &ws2.w), BAND_EBUSY);
    assert_int_equal(band_shm_acquire(s, 0, 1, BAND_FOREVER, NULL), BAND_EBUSY);
    assert_int_equal(band_waiter_cancel(&ws.w, BAND_ECANCELED), 0);
    assert_int_equal(band_shm_acquire(s, 0, 1, band_deadline_after(BAND_MSEC), NULL),
                     BAND_ETIMEDOUT);
    assert_int_equal(band_shm_destroy(t), 0);
    assert_int_equal(band_shm_open(&u, f->name, NULL), 0); /* the record is free again */
    assert_int_equal(band_shm_destroy(u), 0);
    assert_int_equal(band_shm_release(s, 0, 10), 0);
    assert_int_equal(band_shm_destroy(s), 0);
}

static void test_stats_lists(void **state)
{
    struct fixture *f = *state;
    band_shm_bound b[2] = {{"conns", 10, BAND_SHM_UNITS}, {"bytes", 1000, BAND_SHM_BYTES}};
    band_shm_opts o = {.max_handles = 8, .max_waiters = 4};
    band_shm *s = NULL;
    assert_int_equal(band_shm_create(&s, f->name, b, 2, &o), 0);
    assert_int_equal(band_shm_try_acquire(s, 0, 3), 0);
    assert_int_equal(band_shm_try_acquire(s, 1, 100), 0);
    assert_int_equal(band_shm_try_acquire(s, 0, 8), BAND_EAGAIN);
    struct wake_sem ws;
    wake_sem_init(&ws);
    band_shm_req r = {0};
    assert_int_equal(band_shm_req_init(&r, wake_sem_fn, &ws), 0);
    assert_int_equal(band_shm_req_add(&r, 0, 8), 0);
    assert_int_equal(band_shm_req_add(&r, 1, 50), 0);
    band_time t0 = band_now();
    assert_int_equal(band_shm_admit_async(s, &r), BAND_PENDING);

    band_shm_stats st = stats_of(s);
    struct stat fst;
    assert_int_equal(fstat(band_shm_fd(s), &fst), 0);
    assert_int_equal(st.version, BAND_SHM_VERSION);
    assert_int_equal(st.nbounds, 2);
    assert_int_equal(st.max_handles, 8);
    assert_int_equal(st.max_waiters, 4);
    assert_int_equal(st.handles, 1);
    assert_int_equal(st.waiters, 1);
    assert_int_equal(st.closed, 0);
    assert_u64_equal(st.size, (uint64_t)fst.st_size);
    assert_u64_equal(st.recoveries, 0);
    assert_u64_equal(st.dead_handles, 0);
    assert_u64_equal(st.dead_waiters, 0);
    assert_string_equal(st.bounds[0].name, "conns");
    assert_string_equal(st.bounds[1].name, "bytes");
    assert_int_equal(st.bounds[0].kind, BAND_SHM_UNITS);
    assert_int_equal(st.bounds[1].kind, BAND_SHM_BYTES);
    const uint64_t exp[2][13] = {
        /* capacity available debt in_use waiters waiting queued grants timeouts cancels
           closed_fails try_refusals too_big */
        {10, 7, 0, 3, 1, 8, 1, 0, 0, 0, 0, 1, 0},
        {1000, 900, 0, 100, 1, 50, 1, 0, 0, 0, 0, 0, 0},
    };
    for (int i = 0; i < 2; i++) {
        const band_shm_bound_stats *bs = &st.bounds[i];
        const uint64_t got[13] = {
            bs->capacity,      bs->available,    bs->debt,   bs->in_use,   bs->waiters,
            bs->waiting_units, bs->queued,       bs->grants, bs->timeouts, bs->cancels,
            bs->closed_fails,  bs->try_refusals, bs->too_big};
        for (int k = 0; k < 13; k++) {
            if (got[k] != exp[i][k])
                print_error("bound %d field %d: %llu, expected %llu\n", i, k,
                            (unsigned long long)got[k], (unsigned long long)exp[i][k]);
            assert_u64_equal(got[k], exp[i][k]);
        }
        assert_u64_equal(bs->reclaimed, 0);
    }

    band_shm_holder h[2];
    memset(h, 0, sizeof(h));
    size_t cnt = 99;
    assert_int_equal(band_shm_list_holders(s, NULL, 0, &cnt), 0);
    assert_int_equal(cnt, 1);
    assert_int_equal(band_shm_list_holders(s, h, 2, &cnt), 0);
    assert_int_equal(cnt, 1);
    assert_int_equal(h[0].pid, getpid());
    assert_true(h[0].start_time > 0);
    assert_int_equal(h[0].alive, 1);
    assert_u64_equal(h[0].held[0], 3);
    assert_u64_equal(h[0].held[1], 100);
    for (int i = 2; i < BAND_SHM_MAX_BOUNDS; i++)
        assert_u64_equal(h[0].held[i], 0);
    band_shm *t = NULL;
    assert_int_equal(band_shm_open(&t, f->name, NULL), 0);
    assert_int_equal(band_shm_list_holders(s, h, 1, &cnt), 0); /* room for one of two */
    assert_int_equal(cnt, 2);
    assert_int_equal(band_shm_destroy(t), 0);

    usleep(2000);
    band_shm_waiter_info wi[2];
    memset(wi, 0, sizeof(wi));
    assert_int_equal(band_shm_list_waiters(s, NULL, 0, &cnt), 0);
    assert_int_equal(cnt, 1);
    assert_int_equal(band_shm_list_waiters(s, wi, 2, &cnt), 0);
    assert_int_equal(cnt, 1);
    assert_int_equal(wi[0].pid, getpid());
    assert_int_equal(wi[0].async, 1);
    assert_u64_equal(wi[0].want[0], 8);
    assert_u64_equal(wi[0].want[1], 50);
    for (int i = 2; i < BAND_SHM_MAX_BOUNDS; i++)
        assert_u64_equal(wi[0].want[i], 0);
    assert_true(wi[0].waited >= 2 * BAND_MSEC);
    assert_true(wi[0].waited <= band_now() - t0);

    assert_int_equal(band_shm_release(s, 0, 1), 0);
    assert_true(wake_sem_wait(&ws));
    assert_int_equal(atomic_load(&ws.status), 0);
    st = stats_of(s);
    assert_u64_equal(st.bounds[0].grants, 1);
    assert_u64_equal(st.bounds[1].grants, 1);
    assert_u64_equal(st.bounds[0].available, 0);
    assert_u64_equal(st.bounds[1].available, 850);
    assert_u64_equal(st.bounds[0].waiters, 0);
    assert_u64_equal(st.bounds[0].waiting_units, 0);
    assert_int_equal(band_shm_list_holders(s, h, 2, &cnt), 0);
    assert_u64_equal(h[0].held[0], 10);
    assert_u64_equal(h[0].held[1], 150);
    assert_int_equal(band_shm_release_req(s, &r), 0);
    assert_int_equal(band_shm_release(s, 0, 2), 0);
    assert_int_equal(band_shm_release(s, 1, 100), 0);
    assert_int_equal(band_shm_release_req(s, &r), BAND_EOVERFLOW);
    assert_int_equal(band_shm_destroy(s), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_create_args, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_open_unlink, setup, teardown),
        cmocka_unit_test_setup_teardown(test_anonymous, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bound_index, setup, teardown),
        cmocka_unit_test_setup_teardown(test_try_release, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reduce_debt, setup, teardown),
        cmocka_unit_test_setup_teardown(test_grow, setup, teardown),
        cmocka_unit_test_setup_teardown(test_drain, setup, teardown),
        cmocka_unit_test_setup_teardown(test_close, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fifo_processes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_req_multi, setup, teardown),
        cmocka_unit_test_setup_teardown(test_req_init_fresh, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deadline_cancel, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fork_own_record, setup, teardown),
        cmocka_unit_test_setup_teardown(test_release_finish, setup, teardown),
        cmocka_unit_test_setup_teardown(test_release_after_steal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_destroy_returns, setup, teardown),
        cmocka_unit_test_setup_teardown(test_async_other_process, setup, teardown),
        cmocka_unit_test_setup_teardown(test_async_cancel, setup, teardown),
        cmocka_unit_test_setup_teardown(test_async_cancel_race, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kill_holder, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kill_waiter, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reclaim_after_lock_recovery, setup, teardown),
        cmocka_unit_test_setup_teardown(test_limits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stats_lists, setup, teardown),
    };
    return cmocka_run_group_tests_name("test_shm", tests, NULL, NULL);
}
