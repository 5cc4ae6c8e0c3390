/* SPDX-License-Identifier: MIT */
/*
 * bench/bench_shm.h - budgets shared by the processes of a host (band_shm) beside the
 * semaphores a program would otherwise share between processes, in the same run. A
 * self-contained section for band_bench (section m; every function static):
 *
 *     #include "bench_shm.h"
 *     ...
 *     if (want('m'))
 *         g_failures += bench_shm_section(cfg.quick, cfg.reps);
 *
 * Four variants of one permit, each measured the same way:
 *   band_shm   an anonymous segment (memfd) with one bound; the workers are forked
 *              processes that use the parent's handle (each gets its own record)
 *   SysV       one semaphore of a semget() set, every semop() with SEM_UNDO (the kernel's
 *              own crash safety: a dead process's operations are undone)
 *   POSIX      a named sem_t (sem_open() in /dev/shm, unlinked at once; the children
 *              inherit the mapping), sem_trywait/sem_wait + sem_post
 *   band_sem   the in-process semaphore, with threads instead of processes: the floor
 *              band_shm is compared with
 * Workloads:
 *   M1  uncontended: one thread loops try_acquire(1) + release(1) (SysV: semop -1 with
 *       IPC_NOWAIT, then +1), ns per pair.
 *   M2  two processes (band_sem: threads) contend on one permit: each loops blocking
 *       acquire(1) + release(1) until told to stop; total M ops/s from the first start to
 *       the last end. Each acquisition also takes a ticket from a shared counter just
 *       before the call and, once it holds the permit, counts an overtake when the other
 *       worker's call is still pending with an earlier ticket - a call made later returned
 *       first (the few instructions between the ticket and the call can make a rare false
 *       count). SysV and POSIX barge by design; band_shm queues in FIFO order but only
 *       once its caller holds the segment's lock, so a caller still waiting for that lock
 *       can be overtaken. The bookkeeping (one shared fetch_add and two stores) is in every
 *       variant's loop. Printed beside: every round's figure of band_shm with the share of
 *       its acquisitions that queued (band_shm_get_stats()), and POSIX's rounds, because
 *       the workload is bimodal.
 *   M3  ping-pong: two processes (threads) pass a turn through two objects at 0: worker 0
 *       signals B and waits on A, worker 1 waits on B and signals A, so every wait sleeps
 *       or spins until the other side's signal: ns per round trip (two hand-offs). A
 *       band_shm handle can only release what it holds, so its signal is
 *       band_shm_grow(1) of the bound the other waits on (capacity and holdings rise by
 *       one a round; the workers' destroy returns them); a bound "at 0" has capacity 1
 *       and its unit drained by the parent, because a request above the capacity fails
 *       at once instead of waiting. SysV's SEM_UNDO keeps a per-process adjustment that a
 *       one-way wait moves by one a round and that saturates at 32767, so its runs stop
 *       after BENCH_SHM_SYSV_ROUNDS round trips; the workers wait for each other before
 *       they exit, because a SysV process's exit undoes its last signal.
 * M2 and M3 run for a fixed time (full 200 ms, quick 10 ms), not a count: a FIFO
 * hand-off can be hundreds of times slower than a barging one on a loaded machine.
 * Every figure is the median of @reps rounds; within a round the variants run in an
 * order that rotates, after one short warm-up run of each. The ratio column is
 * band_shm's time per operation / the row's, the median of the per-round ratios (> 1:
 * band_shm slower). Checks (counted as failures): every call succeeds, the permit is back
 * after every run (1 available, nothing held), both ping-pong workers made the same
 * number of round trips, and no worker process hangs (10 s after the stop it is killed).
 */
#ifndef BAND_BENCH_SHM_H
#define BAND_BENCH_SHM_H

#include "bench_util.h"

#include <band/sem.h>
#include <band/shm.h>

#include <errno.h>
#include <fcntl.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/sem.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define BENCH_SHM_REPS        64
#define BENCH_SHM_SYSV_ROUNDS 30000 /* below SEMAEM, 32767: the most a semadj can hold */
#define BENCH_SHM_KILL_NS     (UINT64_C(10) * 1000000000u)

enum { BENCH_SHM_BAND, BENCH_SHM_SYSV, BENCH_SHM_POSIX, BENCH_SHM_BSEM, BENCH_SHM_NMECH };
enum { BENCH_SHM_CONTEND, BENCH_SHM_PINGPONG };

static const char *const bench_shm_names[3][BENCH_SHM_NMECH] = {
    {"band_shm_try_acquire(1) + band_shm_release(1)", "SysV semop -1 NOWAIT|UNDO, +1 UNDO",
     "POSIX named sem_trywait + sem_post", "(in-process) band_sem try_acquire + release"},
    {"band_shm acquire(FOREVER) + release, 2 procs", "SysV semop -1 UNDO, +1 UNDO, 2 procs",
     "POSIX named sem_wait + sem_post, 2 procs", "(in-process) band_sem, 2 threads"},
    {"band_shm acquire(A) / grow(B), 2 procs", "SysV semop wait A / post B, UNDO, 2 procs",
     "POSIX named sem_wait A / sem_post B, 2 procs", "(in-process) band_sem, 2 threads"},
};

/* The objects of one run: one permit (M1, M2) or two turns at 0 (M3). */
struct bench_shm_obj {
    int mech;
    band_shm *shm; /* bounds 0 and 1 */
    int semid;     /* SysV: semaphores 0 and 1 */
    sem_t *psem[2];
    band_sem *bsem[2];
};

/* What the workers and the parent share: a MAP_SHARED mapping, also for threads. */
struct bench_shm_ctl {
    _Alignas(BENCH_CACHELINE) _Atomic int ready;
    _Alignas(BENCH_CACHELINE) _Atomic int go;
    _Alignas(BENCH_CACHELINE) _Atomic int stop;
    _Alignas(BENCH_CACHELINE) _Atomic int done;     /* M3: worker 0 has stopped */
    _Alignas(BENCH_CACHELINE) _Atomic int finished; /* workers past their loop */
    _Alignas(BENCH_CACHELINE) _Atomic uint64_t ticket;
    struct {
        _Alignas(BENCH_CACHELINE) _Atomic uint64_t pending; /* M2: the ticket of a pending call */
    } p[2];
    struct {
        _Alignas(BENCH_CACHELINE) uint64_t t_start, t_end;
        uint64_t ops, overtakes, fails;
    } w[2];
    /* the run's parameters */
    int workload;
    uint64_t max_rounds; /* M3: 0 for no limit */
    struct bench_shm_obj obj;
};

/* ---------------------------------------------------------------- objects */

static int bench_shm_sysv_op(int id, unsigned short num, short delta, short flags)
{
    struct sembuf b;
    b.sem_num = num;
    b.sem_op = delta;
    b.sem_flg = flags;
    int rc;
    do {
        rc = semop(id, &b, 1);
    } while (rc != 0 && errno == EINTR);
    return rc;
}

/* Create the objects with @initial (0 or 1) units in object 0 and 0 in object 1 (@two:
 * both exist). Returns 0, or -1 (message printed). */
static int bench_shm_obj_create(struct bench_shm_obj *o, int mech, unsigned initial, int two)
{
    memset(o, 0, sizeof *o);
    o->mech = mech;
    o->semid = -1;
    switch (mech) {
    case BENCH_SHM_BAND: {
        /* A request above a bound's capacity fails (BAND_E2BIG) instead of waiting, so an
         * object "at 0" is a bound of capacity 1 whose unit this process drains. */
        band_shm_bound b[2] = {{"a", 1, BAND_SHM_UNITS}, {"b", 1, BAND_SHM_UNITS}};
        unsigned nb = two ? 2u : 1u;
        int rc = band_shm_create(&o->shm, NULL, b, nb, NULL);
        if (rc != 0) {
            fprintf(stderr, "bench_shm: band_shm_create: %d\n", rc);
            return -1;
        }
        for (unsigned k = 0; k < nb; k++) {
            uint64_t want = 1u - (k == 0 ? (initial != 0) : 0u);
            if (band_shm_drain(o->shm, k, want) != want) {
                fprintf(stderr, "bench_shm: band_shm_drain failed\n");
                (void)band_shm_destroy(o->shm);
                o->shm = NULL;
                return -1;
            }
        }
        return 0;
    }
    case BENCH_SHM_SYSV:
        o->semid = semget(IPC_PRIVATE, 2, IPC_CREAT | 0600);
        if (o->semid < 0) {
            perror("bench_shm: semget");
            return -1;
        }
        /* the initial value, without SEM_UNDO, so it stays when this process exits */
        if (initial != 0 && bench_shm_sysv_op(o->semid, 0, (short)initial, 0) != 0) {
            perror("bench_shm: semop");
            (void)semctl(o->semid, 0, IPC_RMID);
            return -1;
        }
        return 0;
    case BENCH_SHM_POSIX:
        for (int k = 0; k < (two ? 2 : 1); k++) {
            char name[64];
            (void)snprintf(name, sizeof name, "/band_bench_%ld_%d", (long)getpid(), k);
            o->psem[k] = sem_open(name, O_CREAT | O_EXCL, 0600, k == 0 ? initial : 0u);
            if (o->psem[k] == SEM_FAILED) {
                perror("bench_shm: sem_open");
                o->psem[k] = NULL;
                if (k == 1)
                    (void)sem_close(o->psem[0]);
                return -1;
            }
            (void)sem_unlink(name); /* the mappings stay, the name goes: nothing is left behind */
        }
        return 0;
    default:
        for (int k = 0; k < (two ? 2 : 1); k++) {
            if (band_sem_create(&o->bsem[k], k == 0 ? initial : 0u, NULL) != 0) {
                fprintf(stderr, "bench_shm: band_sem_create failed\n");
                if (k == 1)
                    band_sem_destroy(o->bsem[0]);
                o->bsem[0] = NULL;
                return -1;
            }
        }
        return 0;
    }
}

/* Units available in object 0 (-1 when it cannot be read). */
static long bench_shm_obj_value(const struct bench_shm_obj *o)
{
    int v = -1;
    switch (o->mech) {
    case BENCH_SHM_BAND:
        return (long)band_shm_available(o->shm, 0);
    case BENCH_SHM_SYSV:
        return (long)semctl(o->semid, 0, GETVAL);
    case BENCH_SHM_POSIX:
        return sem_getvalue(o->psem[0], &v) == 0 ? (long)v : -1;
    default:
        return (long)band_sem_available(o->bsem[0]);
    }
}

static void bench_shm_obj_destroy(struct bench_shm_obj *o)
{
    if (o->shm != NULL)
        (void)band_shm_destroy(o->shm);
    if (o->semid >= 0)
        (void)semctl(o->semid, 0, IPC_RMID);
    for (int k = 0; k < 2; k++) {
        if (o->psem[k] != NULL)
            (void)sem_close(o->psem[k]);
        if (o->bsem[k] != NULL)
            (void)band_sem_destroy(o->bsem[k]);
    }
    memset(o, 0, sizeof *o);
    o->semid = -1;
}

/* Blocking acquire of one unit of object @k: 0 or -1. */
static int bench_shm_wait(struct bench_shm_obj *o, int k)
{
    switch (o->mech) {
    case BENCH_SHM_BAND:
        return band_shm_acquire(o->shm, (unsigned)k, 1, BAND_FOREVER, NULL) == 0 ? 0 : -1;
    case BENCH_SHM_SYSV:
        return bench_shm_sysv_op(o->semid, (unsigned short)k, -1, SEM_UNDO);
    case BENCH_SHM_POSIX: {
        int rc;
        do {
            rc = sem_wait(o->psem[k]);
        } while (rc != 0 && errno == EINTR);
        return rc;
    }
    default:
        return band_sem_acquire(o->bsem[k], 1, BAND_FOREVER, NULL) == 0 ? 0 : -1;
    }
}

/* Give one unit of object @k back (@grow: band_shm grows it instead, M3). 0 or -1. */
static int bench_shm_post(struct bench_shm_obj *o, int k, int grow)
{
    switch (o->mech) {
    case BENCH_SHM_BAND:
        return (grow ? band_shm_grow(o->shm, (unsigned)k, 1)
                     : band_shm_release(o->shm, (unsigned)k, 1)) == 0
                   ? 0
                   : -1;
    case BENCH_SHM_SYSV:
        return bench_shm_sysv_op(o->semid, (unsigned short)k, 1, SEM_UNDO);
    case BENCH_SHM_POSIX:
        return sem_post(o->psem[k]);
    default:
        return band_sem_release(o->bsem[k], 1) == 0 ? 0 : -1;
    }
}

/* ---------------------------------------------------------------- M1 uncontended */

static double bench_shm_uncontended(int mech, long iters, long *failures)
{
    struct bench_shm_obj o;
    long bad = 0;
    if (bench_shm_obj_create(&o, mech, 1, 0) != 0) {
        ++*failures;
        return 0;
    }
    uint64_t t0 = bench_now();
    switch (mech) {
    case BENCH_SHM_BAND:
        for (long i = 0; i < iters; i++) {
            bad += band_shm_try_acquire(o.shm, 0, 1) != 0;
            bad += band_shm_release(o.shm, 0, 1) != 0;
        }
        break;
    case BENCH_SHM_SYSV:
        for (long i = 0; i < iters; i++) {
            bad += bench_shm_sysv_op(o.semid, 0, -1, IPC_NOWAIT | SEM_UNDO) != 0;
            bad += bench_shm_sysv_op(o.semid, 0, 1, SEM_UNDO) != 0;
        }
        break;
    case BENCH_SHM_POSIX:
        for (long i = 0; i < iters; i++) {
            bad += sem_trywait(o.psem[0]) != 0;
            bad += sem_post(o.psem[0]) != 0;
        }
        break;
    default:
        for (long i = 0; i < iters; i++) {
            bad += band_sem_try_acquire(o.bsem[0], 1) != 0;
            bad += band_sem_release(o.bsem[0], 1) != 0;
        }
        break;
    }
    double ns = (double)(bench_now() - t0) / (double)iters;
    if (bench_shm_obj_value(&o) != 1)
        bad++;
    if (mech == BENCH_SHM_BAND && band_shm_held(o.shm, 0) != 0)
        bad++;
    bench_shm_obj_destroy(&o);
    if (bad != 0)
        fprintf(stderr, "bench_shm: FAILED: M1 %s: %ld failed calls or checks\n",
                bench_shm_names[0][mech], bad);
    *failures += bad;
    return ns;
}

/* ---------------------------------------------------------------- M2, M3 two workers */

static void bench_shm_worker(struct bench_shm_ctl *c, int id)
{
    struct bench_shm_obj *o = &c->obj;
    uint64_t ops = 0, over = 0, fails = 0;
    /* A forked child's first use of the handle registers its record: not in the timing. */
    if (o->mech == BENCH_SHM_BAND && band_shm_try_acquire(o->shm, 0, 0) != 0)
        fails++;
    atomic_fetch_add(&c->ready, 1);
    while (atomic_load_explicit(&c->go, memory_order_acquire) == 0)
        sched_yield();
    c->w[id].t_start = bench_now();
    if (c->workload == BENCH_SHM_CONTEND) {
        /* at least one acquisition each, however late the scheduler starts the worker */
        do {
            uint64_t t = atomic_fetch_add_explicit(&c->ticket, 1, memory_order_relaxed) + 1;
            atomic_store_explicit(&c->p[id].pending, t, memory_order_relaxed);
            if (bench_shm_wait(o, 0) != 0) {
                fails++;
                break;
            }
            uint64_t other = atomic_load_explicit(&c->p[1 - id].pending, memory_order_relaxed);
            if (other != 0 && other < t)
                over++;
            atomic_store_explicit(&c->p[id].pending, 0, memory_order_relaxed);
            if (bench_shm_post(o, 0, 0) != 0) {
                fails++;
                break;
            }
            ops++;
        } while (atomic_load_explicit(&c->stop, memory_order_relaxed) == 0);
    } else if (id == 0) {
        for (;;) { /* at least one round trip */
            if (bench_shm_post(o, 1, 1) != 0 || bench_shm_wait(o, 0) != 0) {
                fails++;
                atomic_store_explicit(&c->done, 1, memory_order_release);
                (void)bench_shm_post(o, 1, 1);
                break;
            }
            ops++;
            if (atomic_load_explicit(&c->stop, memory_order_relaxed) != 0 ||
                (c->max_rounds != 0 && ops >= c->max_rounds)) {
                atomic_store_explicit(&c->done, 1, memory_order_release);
                fails += bench_shm_post(o, 1, 1) != 0; /* lets worker 1 see done */
                break;
            }
        }
    } else {
        for (;;) {
            if (bench_shm_wait(o, 1) != 0) {
                fails++;
                break;
            }
            if (atomic_load_explicit(&c->done, memory_order_acquire) != 0)
                break;
            if (bench_shm_post(o, 0, 1) != 0) {
                fails++;
                break;
            }
            ops++;
        }
    }
    c->w[id].t_end = bench_now();
    if (o->mech == BENCH_SHM_BAND && c->workload == BENCH_SHM_CONTEND &&
        band_shm_held(o->shm, 0) != 0)
        fails++;
    c->w[id].ops = ops;
    c->w[id].overtakes = over;
    c->w[id].fails = fails;
    /* Neither exits before both are done: a SysV process's exit undoes its operations
     * (SEM_UNDO), which would take back the last signal before the other has seen it. */
    atomic_fetch_add(&c->finished, 1);
    while (atomic_load(&c->finished) < 2)
        sched_yield();
}

struct bench_shm_targ {
    struct bench_shm_ctl *c;
    int id;
};

static void *bench_shm_thread(void *p)
{
    struct bench_shm_targ *a = p;
    bench_shm_worker(a->c, a->id);
    return NULL;
}

/* A shared anonymous mapping under strict POSIX (no MAP_ANONYMOUS): a shm object that is
 * unlinked as soon as it is mapped. */
static void *bench_shm_map(size_t size)
{
    char name[64];
    (void)snprintf(name, sizeof name, "/band_bench_ctl_%ld", (long)getpid());
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0)
        return NULL;
    (void)shm_unlink(name);
    void *p = NULL;
    if (ftruncate(fd, (off_t)size) == 0)
        p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    (void)close(fd);
    return p == MAP_FAILED ? NULL : p;
}

/* Wait for child @pid until @deadline (bench_now()), then kill it. 0 when it exited
 * normally in time, -1 otherwise. */
static int bench_shm_reap(pid_t pid, uint64_t deadline)
{
    int st = 0;
    for (;;) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
        if (r < 0 && errno != EINTR)
            return -1;
        if (bench_now() > deadline) {
            (void)kill(pid, SIGKILL);
            (void)waitpid(pid, &st, 0);
            return -1;
        }
        bench_sleep_ms(1);
    }
}

struct bench_shm_out {
    double ns;        /* ns per operation (M2) or per round trip (M3) */
    double overtaken; /* M2: share of acquisitions that overtook a pending earlier call */
    double queued;    /* band_shm: share of acquisitions that queued (its own counters) */
};

/* One run of @workload on @mech for @ms milliseconds. */
static struct bench_shm_out bench_shm_duo(int mech, int workload, long ms, long *failures)
{
    struct bench_shm_out out = {0, 0, 0};
    struct bench_shm_ctl *c = bench_shm_map(sizeof *c);
    long bad = 0;
    if (c == NULL) {
        perror("bench_shm: shared control block");
        ++*failures;
        return out;
    }
    memset(c, 0, sizeof *c);
    c->workload = workload;
    c->max_rounds =
        workload == BENCH_SHM_PINGPONG && mech == BENCH_SHM_SYSV ? BENCH_SHM_SYSV_ROUNDS : 0;
    if (bench_shm_obj_create(&c->obj, mech, workload == BENCH_SHM_CONTEND ? 1u : 0u,
                             workload == BENCH_SHM_PINGPONG) != 0) {
        (void)munmap(c, sizeof *c);
        ++*failures;
        return out;
    }
    pthread_t th[2];
    pid_t pid[2] = {-1, -1};
    struct bench_shm_targ args[2] = {{c, 0}, {c, 1}};
    int started = 0;
    fflush(stdout);
    fflush(stderr);
    for (int i = 0; i < 2; i++) {
        if (mech == BENCH_SHM_BSEM) {
            if (pthread_create(&th[i], NULL, bench_shm_thread, &args[i]) != 0)
                break;
        } else {
            pid[i] = fork();
            if (pid[i] < 0)
                break;
            if (pid[i] == 0) {
                bench_shm_worker(c, i);
                if (c->obj.shm != NULL && band_shm_destroy(c->obj.shm) != 0)
                    c->w[i].fails++;
                _exit(0);
            }
        }
        started++;
    }
    if (started == 2) {
        while (atomic_load(&c->ready) < 2)
            sched_yield();
        atomic_store_explicit(&c->go, 1, memory_order_release);
        bench_sleep_ms(ms);
    } else {
        fprintf(stderr, "bench_shm: could not start the workers\n");
        bad++;
        atomic_store(&c->go, 1); /* a started worker runs, sees the stop, ends */
    }
    atomic_store(&c->stop, 1);
    uint64_t kill_at = bench_now() + BENCH_SHM_KILL_NS;
    for (int i = 0; i < started; i++) {
        if (mech == BENCH_SHM_BSEM)
            pthread_join(th[i], NULL);
        else if (bench_shm_reap(pid[i], kill_at) != 0) {
            fprintf(stderr, "bench_shm: FAILED: %s worker %d hung or died\n",
                    bench_shm_names[workload + 1][mech], i);
            bad++;
        }
    }
    if (started == 2) {
        uint64_t s = c->w[0].t_start < c->w[1].t_start ? c->w[0].t_start : c->w[1].t_start;
        uint64_t e = c->w[0].t_end > c->w[1].t_end ? c->w[0].t_end : c->w[1].t_end;
        double ops;
        const char *what = bench_shm_names[workload + 1][mech];
        if (c->w[0].fails + c->w[1].fails != 0) {
            fprintf(stderr, "bench_shm: %s: %llu failed calls in the workers\n", what,
                    (unsigned long long)(c->w[0].fails + c->w[1].fails));
            bad += (long)(c->w[0].fails + c->w[1].fails);
        }
        if (workload == BENCH_SHM_CONTEND) {
            ops = (double)(c->w[0].ops + c->w[1].ops);
            long left = bench_shm_obj_value(&c->obj);
            if (left != 1) {
                fprintf(stderr, "bench_shm: %s: %ld units available after the run, not 1\n", what,
                        left);
                bad++;
            }
            out.overtaken = ops > 0 ? (double)(c->w[0].overtakes + c->w[1].overtakes) / ops : 0;
        } else {
            ops = (double)c->w[0].ops; /* round trips */
            if (c->w[1].ops != c->w[0].ops) {
                fprintf(stderr, "bench_shm: %s: %llu round trips by worker 0, %llu by 1\n", what,
                        (unsigned long long)c->w[0].ops, (unsigned long long)c->w[1].ops);
                bad++;
            }
            e = c->w[0].t_end; /* worker 1's end waits for worker 0's last signal */
            s = c->w[0].t_start;
        }
        out.ns = ops > 0 ? (double)(e - s) / ops : 0;
        if (ops <= 0) {
            fprintf(stderr, "bench_shm: %s: no operations\n", what);
            bad++;
        }
        band_shm_stats st;
        if (mech == BENCH_SHM_BAND && ops > 0 && band_shm_get_stats(c->obj.shm, &st) == 0) {
            double q = (double)st.bounds[0].queued;
            if (workload == BENCH_SHM_PINGPONG)
                q += (double)st.bounds[1].queued;
            /* M3: two acquisitions a round trip */
            out.queued = q / (workload == BENCH_SHM_PINGPONG ? 2.0 * ops : ops);
        }
    }
    bench_shm_obj_destroy(&c->obj);
    (void)munmap(c, sizeof *c);
    if (bad != 0)
        fprintf(stderr, "bench_shm: FAILED: %s: %ld failed calls or checks\n",
                bench_shm_names[workload + 1][mech], bad);
    *failures += bad;
    return out;
}

/* ---------------------------------------------------------------- the section */

/* Print one workload's rows (median, range, band_shm / row) and write them to the TSV
 * file; returns band_shm's ratio to each variant in @x. @per_s: M ops/s from ns/op. */
static void bench_shm_print(int wl, const char *tsv_wl, int threads, double ns[][BENCH_SHM_REPS],
                            const double *extra, int reps, int per_s, const char *unit, double *x)
{
    printf("  %-48s %9s %9s %9s   %s\n", "variant", unit, "min", "max",
           "band_shm time / row time [range]");
    for (int m = 0; m < BENCH_SHM_NMECH; m++) {
        double v[BENCH_SHM_REPS], q[BENCH_SHM_REPS];
        double qlo = 1e300, qhi = 0;
        for (int r = 0; r < reps; r++) {
            v[r] = per_s ? (ns[m][r] > 0 ? 1e3 / ns[m][r] : 0) : ns[m][r];
            q[r] = ns[m][r] > 0 ? ns[BENCH_SHM_BAND][r] / ns[m][r] : 0;
            qlo = q[r] < qlo ? q[r] : qlo;
            qhi = q[r] > qhi ? q[r] : qhi;
        }
        double med = bench_median(v, reps); /* sorts v */
        x[m] = bench_median(q, reps);
        bench_tsv_row_as(m == BENCH_SHM_BAND ? "band" : "baseline", 'm', tsv_wl,
                         bench_shm_names[wl][m], threads, unit, med, v[0], v[reps - 1], x[m]);
        printf("  %-48s %9.2f %9.2f %9.2f   %5.2fx [%.2f-%.2f]", bench_shm_names[wl][m], med, v[0],
               v[reps - 1], x[m], qlo, qhi);
        if (extra != NULL)
            printf("  overtaken %.1f%%", 100.0 * extra[m]);
        printf("\n");
    }
}

/* One variant's figure in every round, in round order (@queued: band_shm's queued share),
 * so that a bimodal workload shows. */
static void bench_shm_per_round(const char *what, const double *ns, const double *queued, int reps,
                                int per_s)
{
    printf("  %s:", what);
    for (int r = 0; r < reps; r++) {
        double v = per_s ? (ns[r] > 0 ? 1e3 / ns[r] : 0) : ns[r];
        printf(per_s ? " %.2f" : " %.0f", v);
        if (queued != NULL)
            printf(" (%.0f%%)", 100.0 * queued[r]);
    }
    printf("\n");
}

/* Section (m). Returns the number of failed calls or checks. */
static long bench_shm_section(int quick, int reps)
{
    static double un[BENCH_SHM_NMECH][BENCH_SHM_REPS], co[BENCH_SHM_NMECH][BENCH_SHM_REPS],
        pp[BENCH_SHM_NMECH][BENCH_SHM_REPS], ov[BENCH_SHM_NMECH][BENCH_SHM_REPS],
        qc[BENCH_SHM_REPS], qp[BENCH_SHM_REPS];
    long failures = 0;
    long un_iters = quick ? 20000 : 2000000;
    long ms = quick ? 10 : 200;
    double xu[BENCH_SHM_NMECH], xc[BENCH_SHM_NMECH], xp[BENCH_SHM_NMECH];
    double ovm[BENCH_SHM_NMECH];
    if (reps > BENCH_SHM_REPS)
        reps = BENCH_SHM_REPS;
    if (reps < 1)
        reps = 1;
    /* SysV pays two system calls a pair: a tenth of the count gives it as long a run */
    long un_div[BENCH_SHM_NMECH] = {1, 10, 1, 1};

    for (int m = 0; m < BENCH_SHM_NMECH; m++) { /* warm-up */
        (void)bench_shm_uncontended(m, un_iters / un_div[m] / 10, &failures);
        (void)bench_shm_duo(m, BENCH_SHM_CONTEND, ms / 10 + 1, &failures);
        (void)bench_shm_duo(m, BENCH_SHM_PINGPONG, ms / 10 + 1, &failures);
    }
    for (int r = 0; r < reps; r++)
        for (int i = 0; i < BENCH_SHM_NMECH; i++) {
            int m = (i + r) % BENCH_SHM_NMECH;
            un[m][r] = bench_shm_uncontended(m, un_iters / un_div[m], &failures);
            struct bench_shm_out o = bench_shm_duo(m, BENCH_SHM_CONTEND, ms, &failures);
            co[m][r] = o.ns;
            ov[m][r] = o.overtaken;
            if (m == BENCH_SHM_BAND)
                qc[r] = o.queued;
            o = bench_shm_duo(m, BENCH_SHM_PINGPONG, ms, &failures);
            pp[m][r] = o.ns;
            if (m == BENCH_SHM_BAND)
                qp[r] = o.queued;
        }

    printf("\n(m) budgets shared by processes (band_shm, anonymous segment) beside SysV semop "
           "(SEM_UNDO),\n    a POSIX named sem_t and the in-process band_sem; %d rounds, medians\n",
           reps);
    printf("  M1 uncontended try_acquire(1) + release(1), one handle: ns per pair "
           "(%ld pairs/run, SysV %ld)\n",
           un_iters, un_iters / un_div[BENCH_SHM_SYSV]);
    bench_shm_print(0, "shm uncontended", 1, un, NULL, reps, 0, "ns/op", xu);
    for (int m = 0; m < BENCH_SHM_NMECH; m++)
        ovm[m] = bench_median(ov[m], reps);
    printf("  M2 two processes (band_sem: threads), one permit, blocking acquire + release: "
           "M ops/s (%ld ms/run)\n",
           ms);
    bench_shm_print(1, "shm 2 procs 1 permit", 2, co, ovm, reps, 1, "M ops/s", xc);
    printf("    (overtaken: acquisitions that returned while the other worker's earlier call "
           "was pending, median)\n");
    bench_shm_per_round("band_shm per round, M ops/s (queued%)", co[BENCH_SHM_BAND], qc, reps, 1);
    bench_shm_per_round("POSIX per round, M ops/s", co[BENCH_SHM_POSIX], NULL, reps, 1);
    printf("  M3 ping-pong through two objects at 0, two processes (band_sem: threads): ns per "
           "round trip (%ld ms/run, SysV at most %d round trips)\n",
           ms, BENCH_SHM_SYSV_ROUNDS);
    bench_shm_print(2, "shm ping-pong", 2, pp, NULL, reps, 0, "ns/rt", xp);
    bench_shm_per_round("band_shm per round, ns/rt (queued%)", pp[BENCH_SHM_BAND], qp, reps, 0);
    bench_shm_per_round("POSIX per round, ns/rt", pp[BENCH_SHM_POSIX], NULL, reps, 0);

    bench_target('m', xu[BENCH_SHM_BSEM] <= 1.5, xu[BENCH_SHM_BSEM], "x", "<= 1.50",
                 "shm uncontended pair / in-process band_sem pair");
    {
        double worst =
            xu[BENCH_SHM_SYSV] > xu[BENCH_SHM_POSIX] ? xu[BENCH_SHM_SYSV] : xu[BENCH_SHM_POSIX];
        bench_target('m', worst < 1.0, worst, "x", "< 1.00",
                     "shm uncontended faster than SysV (%.2fx) and POSIX (%.2fx): worst ratio",
                     xu[BENCH_SHM_SYSV], xu[BENCH_SHM_POSIX]);
    }
    bench_target('m', xc[BENCH_SHM_POSIX] <= 1.0, xc[BENCH_SHM_POSIX], "x", "<= 1.00",
                 "shm 2 procs 1 permit >= POSIX throughput: time ratio (overtaken %.1f%% vs "
                 "%.1f%%)",
                 100.0 * ovm[BENCH_SHM_BAND], 100.0 * ovm[BENCH_SHM_POSIX]);
    if (failures != 0)
        fprintf(stderr, "bench_shm: FAILED: %ld failed calls or checks\n", failures);
    return failures;
}

#endif /* BAND_BENCH_SHM_H */
