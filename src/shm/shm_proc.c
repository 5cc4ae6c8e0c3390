/* SPDX-License-Identifier: MIT */
/*
 * shm_proc.c - who this process is, whether another one is still alive, and futex words
 * shared between processes.
 *
 * A process is named by its PID and its start time (field 22 of /proc/<pid>/stat, clock
 * ticks since boot): a PID reused by a later process has a later start time, so a record
 * is never taken for its successor's. The liveness check pins the PID with a pidfd where
 * the kernel has them, so the start time it reads belongs to the process it asked about,
 * and treats a zombie as dead: its units are of no use to anybody.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "shm/shm_internal.h"

uint64_t band__shm_gen = 1;
static pthread_once_t band__shm_once = PTHREAD_ONCE_INIT;
static uint32_t band__self_pid;
static uint64_t band__self_start;
static uint64_t band__self_gen; /* the generation band__self_* belong to */
static pthread_mutex_t band__self_mu = PTHREAD_MUTEX_INITIALIZER;

static void band__shm_child(void)
{
    __atomic_add_fetch(&band__shm_gen, 1, __ATOMIC_RELEASE);
    /* The parent's other threads do not exist here; a lock one of them held is free. */
    pthread_mutex_init(&band__self_mu, NULL);
}

static void band__shm_install(void)
{
    (void)pthread_atfork(NULL, NULL, band__shm_child);
}

static int band__shm_installed;

uint64_t band__shm_generation(void)
{
    if (band__unlikely(!__atomic_load_n(&band__shm_installed, __ATOMIC_ACQUIRE))) {
        (void)pthread_once(&band__shm_once, band__shm_install);
        __atomic_store_n(&band__shm_installed, 1, __ATOMIC_RELEASE);
    }
    return __atomic_load_n(&band__shm_gen, __ATOMIC_ACQUIRE);
}

/* Parse /proc/<pid>/stat: its state letter and start time. 0, or -1 when unreadable. */
static int band__proc_stat(uint32_t pid, char *state, uint64_t *start)
{
    char path[64];
    char buf[1024];
    (void)snprintf(path, sizeof path, "/proc/%u/stat", (unsigned)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    (void)close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    /* The command name may hold spaces and parentheses: fields resume after the last ')'. */
    char *p = strrchr(buf, ')');
    if (p == NULL || p[1] != ' ')
        return -1;
    p += 2;
    *state = *p;
    /* Field 3 is the state; the start time is field 22, 19 fields further on. */
    for (int field = 3; field < 22; field++) {
        p = strchr(p, ' ');
        if (p == NULL)
            return -1;
        p++;
    }
    uint64_t v = 0;
    if (*p < '0' || *p > '9')
        return -1;
    while (*p >= '0' && *p <= '9')
        v = v * 10 + (uint64_t)(*p++ - '0');
    *start = v;
    return 0;
}

int band__shm_self_identity(uint32_t *pid, uint64_t *start)
{
    uint64_t gen = band__shm_generation();
    int rc = 0;
    pthread_mutex_lock(&band__self_mu);
    if (band__self_gen != gen) {
        char st;
        uint32_t me = (uint32_t)getpid();
        uint64_t t;
        if (band__proc_stat(me, &st, &t) != 0) {
            rc = BAND_EACCES; /* /proc is not mounted or not readable */
        } else {
            band__self_pid = me;
            band__self_start = t;
            band__self_gen = gen;
        }
    }
    *pid = band__self_pid;
    *start = band__self_start;
    pthread_mutex_unlock(&band__self_mu);
    return rc;
}

#ifdef SYS_pidfd_open
static int band__pidfd_open(uint32_t pid)
{
    return (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
}
#endif

int band__shm_alive(uint32_t pid, uint64_t start)
{
    if (pid == 0)
        return 0;
    int pidfd = -1;
#ifdef SYS_pidfd_open
    pidfd = band__pidfd_open(pid);
    if (pidfd < 0 && errno == ESRCH)
        return 0;
#endif
    if (pidfd < 0 && kill((pid_t)pid, 0) != 0 && errno == ESRCH)
        return 0;
    char st;
    uint64_t t;
    /* Dead: gone between the two looks, a successor with the same PID, or a zombie. */
    int alive = band__proc_stat(pid, &st, &t) == 0 && t == start && st != 'Z' && st != 'X';
    if (pidfd >= 0) {
        /* The pidfd refers to the process that existed when it was opened: readable
         * means that one has exited, whatever /proc shows for the PID now. */
        struct pollfd p = {.fd = pidfd, .events = POLLIN};
        if (poll(&p, 1, 0) == 1 && (p.revents & POLLIN))
            alive = 0;
        (void)close(pidfd);
    }
    return alive;
}

void band__shm_futex_wake_only(uint32_t *word)
{
    /* Shared, not FUTEX_PRIVATE_FLAG: the sleeper may be another process. */
    (void)syscall(SYS_futex, word, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
}

void band__shm_futex_wake(uint32_t *word)
{
    __atomic_add_fetch(word, BAND__FUTEX_BUMP, __ATOMIC_ACQ_REL);
    band__shm_futex_wake_only(word);
}

int band__shm_futex_sleep(uint32_t *word, uint32_t seen, band_time timeout_ns)
{
    /* Say so before sleeping; a bump in between fails the swap and nobody sleeps. */
    if ((seen & BAND__FUTEX_SLEEPER) == 0) {
        if (!__atomic_compare_exchange_n(word, &seen, seen | BAND__FUTEX_SLEEPER, 0,
                                         __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            return 0;
        seen |= BAND__FUTEX_SLEEPER;
    }
    return band__shm_futex_wait(word, seen, timeout_ns);
}

int band__shm_futex_wait(uint32_t *word, uint32_t val, band_time timeout_ns)
{
    if (timeout_ns <= 0)
        return BAND_ETIMEDOUT;
    struct timespec ts = {.tv_sec = (time_t)(timeout_ns / BAND_SEC),
                          .tv_nsec = (long)(timeout_ns % BAND_SEC)};
    long rc = syscall(SYS_futex, word, FUTEX_WAIT, val, &ts, NULL, 0);
    if (rc != 0 && errno == ETIMEDOUT)
        return BAND_ETIMEDOUT;
    return 0;
}
