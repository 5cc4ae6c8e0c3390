/* SPDX-License-Identifier: MIT */
/*
 * prefork.c - a prefork server whose workers share two budgets through one segment.
 *
 * The parent creates a segment (band/shm.h) with a "connections" bound and a "memory"
 * bytes bound, opens a listening socket on 127.0.0.1 and forks the workers; they inherit
 * both and accept connections in turn. A request is one line, the bytes it needs; the
 * worker admits 1 connection and those bytes in one band_shm_req (all or nothing, strict
 * FIFO across every worker), allocates and touches the memory, answers, and releases.
 * A client process keeps a few connections busy meanwhile.
 *
 * Mid-run the parent SIGKILLs a worker that holds units, calls band_shm_reclaim() so its
 * units go back at once, and forks a replacement. At the end the workers stop, and the
 * books must balance: available == capacity for both bounds, nothing in use. The exit
 * status says whether they did (0), or not (1).
 *
 *   prefork [--workers N] [--clients N] [--seconds S] [--name /NAME]
 *
 * With --name the segment is a named one, so `band-shm show NAME` can watch it while the
 * example runs (it is removed at the end); without, it is anonymous and goes with the
 * last process.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <band/band.h>
#include <band/shm.h>

#define WORKERS_MAX 32
#define CLIENTS_MAX 64

/* The budgets: fewer connections than workers, so admission is what bounds the work. */
#define CONNECTIONS 3
#define MEMORY      (256u * 1024u)
/* A request needs 16 KiB to 96 KiB and holds it this long. */
#define REQ_MIN  (16u * 1024u)
#define REQ_SPAN (80u * 1024u)
#define WORK_NS  (4 * BAND_MSEC)

enum { B_CONN = 0, B_MEM = 1 };

static volatile sig_atomic_t stop_flag;

static void on_term(int sig)
{
    (void)sig;
    stop_flag = 1;
}

static void sleep_ns(band_time ns)
{
    struct timespec ts = {(time_t)(ns / BAND_SEC), (long)(ns % BAND_SEC)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR && !stop_flag)
        ;
}

/* Read one line (at most @cap - 1 bytes) from @fd into @buf. 0 or -1. */
static int read_line(int fd, char *buf, size_t cap)
{
    size_t n = 0;
    while (n + 1 < cap) {
        ssize_t k = read(fd, buf + n, 1);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        if (buf[n] == '\n') {
            buf[n] = '\0';
            return 0;
        }
        n++;
    }
    return -1;
}

static int write_all(int fd, const char *s, size_t len)
{
    while (len > 0) {
        ssize_t k = send(fd, s, len, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        s += k;
        len -= (size_t)k;
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------
 * A worker: accept, admit, work, answer, release; until SIGTERM. */

static void serve_one(band_shm *shm, int conn)
{
    char line[64];
    struct timeval tv = {2, 0};
    (void)setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    if (read_line(conn, line, sizeof(line)) != 0)
        return;
    unsigned long bytes = strtoul(line, NULL, 10);
    if (bytes == 0 || bytes > MEMORY) {
        (void)write_all(conn, "BAD\n", 4);
        return;
    }

    band_shm_req req;
    (void)band_shm_req_init(&req, NULL, NULL);
    (void)band_shm_req_add(&req, B_CONN, 1);
    (void)band_shm_req_add(&req, B_MEM, bytes);
    int rc = band_shm_admit(shm, &req, band_deadline_after(2 * BAND_SEC), NULL);
    if (rc != 0) {
        char msg[96];
        int len = snprintf(msg, sizeof(msg), "BUSY %s\n", band_err_name(rc));
        (void)write_all(conn, msg, (size_t)len);
        return;
    }
    /* The work: memory this request was admitted for, touched and summed. */
    unsigned char *mem = malloc(bytes);
    int worked = mem != NULL;
    uint64_t sum = 0;
    if (mem) {
        for (size_t i = 0; i < bytes; i++)
            mem[i] = (unsigned char)(i * 31u);
        for (size_t i = 0; i < bytes; i += 64)
            sum += mem[i];
        free(mem);
    }
    sleep_ns(WORK_NS);
    rc = band_shm_release_req(shm, &req);
    char msg[64];
    int len = snprintf(msg, sizeof(msg), "%s %" PRIu64 "\n", rc == 0 && worked ? "OK" : "ERR", sum);
    (void)write_all(conn, msg, (size_t)len);
}

static int worker_main(band_shm *shm, int lfd)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_term; /* no SA_RESTART: poll() returns to look at the flag */
    sigemptyset(&sa.sa_mask);
    (void)sigaction(SIGTERM, &sa, NULL);
    while (!stop_flag) {
        struct pollfd p = {lfd, POLLIN, 0};
        int r = poll(&p, 1, 100);
        if (r <= 0)
            continue;
        int conn = accept(lfd, NULL, NULL);
        if (conn < 0)
            continue; /* another worker took it, or EINTR */
        serve_one(shm, conn);
        (void)close(conn);
    }
    /* Holds nothing by now; destroying the handle frees its record for the others. */
    int held = band_shm_held(shm, B_CONN) != 0 || band_shm_held(shm, B_MEM) != 0;
    (void)band_shm_destroy(shm);
    return held ? 1 : 0;
}

static pid_t spawn_worker(band_shm *shm, int lfd)
{
    pid_t pid = fork();
    if (pid == 0)
        _exit(worker_main(shm, lfd));
    return pid;
}

/* ---------------------------------------------------------------------------------------
 * The client process: threads that each send requests one after another. */

struct client_totals {
    pthread_mutex_t mu;
    uint64_t ok, busy, dropped;
};

struct client_args {
    struct client_totals *tot;
    struct sockaddr_in addr;
    band_time until;
    unsigned seed;
};

static void *client_thread(void *arg)
{
    struct client_args *a = arg;
    uint64_t ok = 0, busy = 0, dropped = 0;
    while (band_now() < a->until) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            break;
        if (connect(fd, (const struct sockaddr *)&a->addr, sizeof(a->addr)) != 0) {
            (void)close(fd);
            dropped++;
            continue;
        }
        a->seed = a->seed * 1103515245u + 12345u;
        char msg[32], reply[64];
        int len = snprintf(msg, sizeof(msg), "%u\n", REQ_MIN + (a->seed >> 8) % REQ_SPAN);
        if (write_all(fd, msg, (size_t)len) != 0 || read_line(fd, reply, sizeof(reply)) != 0)
            dropped++; /* the killed worker's connection ends without an answer */
        else if (strncmp(reply, "OK ", 3) == 0)
            ok++;
        else
            busy++;
        (void)close(fd);
    }
    pthread_mutex_lock(&a->tot->mu);
    a->tot->ok += ok;
    a->tot->busy += busy;
    a->tot->dropped += dropped;
    pthread_mutex_unlock(&a->tot->mu);
    return NULL;
}

/* Runs in its own process; writes "ok busy dropped" to @out. */
static int client_main(const struct sockaddr_in *addr, unsigned clients, band_time until, int out)
{
    struct client_totals tot = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0};
    struct client_args args[CLIENTS_MAX];
    pthread_t th[CLIENTS_MAX];
    unsigned started = 0;
    for (unsigned i = 0; i < clients; i++) {
        args[i].tot = &tot;
        args[i].addr = *addr;
        args[i].until = until;
        args[i].seed = 7919u * (i + 1);
        if (pthread_create(&th[i], NULL, client_thread, &args[i]) != 0)
            break;
        started++;
    }
    for (unsigned i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    char msg[96];
    int len = snprintf(msg, sizeof(msg), "%" PRIu64 " %" PRIu64 " %" PRIu64 "\n", tot.ok, tot.busy,
                       tot.dropped);
    return write(out, msg, (size_t)len) == len && started == clients ? 0 : 1;
}

/* ---------------------------------------------------------------------------------------
 * The parent. */

/* The first worker found holding units, or -1 after @wait_ns without one. */
static int find_busy_worker(band_shm *shm, const pid_t *workers, unsigned n, band_time wait_ns,
                            uint64_t *conn, uint64_t *mem)
{
    band_time until = band_now() + wait_ns;
    band_shm_holder h[WORKERS_MAX + 4];
    do {
        size_t count = 0;
        if (band_shm_list_holders(shm, h, sizeof(h) / sizeof(h[0]), &count) == 0) {
            if (count > sizeof(h) / sizeof(h[0]))
                count = sizeof(h) / sizeof(h[0]);
            for (size_t i = 0; i < count; i++)
                for (unsigned w = 0; w < n; w++)
                    if (h[i].pid == workers[w] && h[i].held[B_CONN] > 0) {
                        *conn = h[i].held[B_CONN];
                        *mem = h[i].held[B_MEM];
                        return (int)w;
                    }
        }
        sleep_ns(BAND_MSEC);
    } while (band_now() < until);
    return -1;
}

static int parse_uint(const char *s, unsigned lo, unsigned hi, unsigned *out)
{
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < lo || v > hi)
        return -1;
    *out = (unsigned)v;
    return 0;
}

int main(int argc, char **argv)
{
    unsigned nworkers = 4, nclients = 8, seconds = 2;
    const char *name = NULL;
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : "";
        if (strcmp(argv[i], "--workers") == 0 && parse_uint(v, 2, WORKERS_MAX, &nworkers) == 0)
            i++;
        else if (strcmp(argv[i], "--clients") == 0 && parse_uint(v, 1, CLIENTS_MAX, &nclients) == 0)
            i++;
        else if (strcmp(argv[i], "--seconds") == 0 && parse_uint(v, 1, 60, &seconds) == 0)
            i++;
        else if (strcmp(argv[i], "--name") == 0 && v[0] == '/')
            name = argv[++i];
        else {
            fprintf(stderr,
                    "usage: prefork [--workers 2-%d] [--clients 1-%d] [--seconds 1-60] "
                    "[--name /NAME]\n",
                    WORKERS_MAX, CLIENTS_MAX);
            return 2;
        }
    }

    static const band_shm_bound bounds[] = {
        {"connections", CONNECTIONS, BAND_SHM_UNITS},
        {"memory", MEMORY, BAND_SHM_BYTES},
    };
    band_shm *shm = NULL;
    int rc = band_shm_create(&shm, name, bounds, 2, NULL);
    if (rc != 0) {
        fprintf(stderr, "prefork: band_shm_create: %s (%s)\n", band_strerror(rc),
                band_err_name(rc));
        return 1;
    }

    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof(addr));
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t alen = sizeof(addr);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&addr, sizeof(addr)) != 0 || listen(lfd, 64) != 0 ||
        getsockname(lfd, (struct sockaddr *)&addr, &alen) != 0) {
        perror("prefork: listening socket");
        (void)band_shm_destroy(shm);
        if (name)
            (void)band_shm_unlink(name);
        return 1;
    }
    printf("prefork: %u workers on 127.0.0.1:%u, connections=%u, memory=%u bytes, %u clients "
           "for %u s\n",
           nworkers, (unsigned)ntohs(addr.sin_port), CONNECTIONS, MEMORY, nclients, seconds);
    fflush(stdout);

    pid_t workers[WORKERS_MAX];
    int failed = 0;
    for (unsigned i = 0; i < nworkers; i++)
        if ((workers[i] = spawn_worker(shm, lfd)) < 0)
            failed = 1;

    int pfd[2];
    pid_t client = -1;
    if (!failed && pipe(pfd) == 0) {
        band_time until = band_now() + (band_time)seconds * BAND_SEC;
        client = fork();
        if (client == 0) {
            (void)close(pfd[0]);
            (void)close(lfd);
            _exit(client_main(&addr, nclients, until, pfd[1]));
        }
        (void)close(pfd[1]);
    }
    if (client < 0)
        failed = 1;

    /* A third of the way in: kill a worker that holds units, recover, replace it. */
    unsigned dead = 0;
    int killed = 0;
    if (!failed) {
        sleep_ns((band_time)seconds * BAND_SEC / 3);
        uint64_t hc = 0, hm = 0;
        int w = find_busy_worker(shm, workers, nworkers, BAND_SEC, &hc, &hm);
        if (w < 0) {
            fprintf(stderr, "prefork: no worker held units within 1 s\n");
            failed = 1;
        } else {
            (void)kill(workers[w], SIGKILL);
            (void)waitpid(workers[w], NULL, 0);
            killed = 1;
            rc = band_shm_reclaim(shm, &dead);
            pid_t old = workers[w];
            workers[w] = spawn_worker(shm, lfd);
            printf("prefork: killed worker %d while it held connections=%" PRIu64 " memory=%" PRIu64
                   "; band_shm_reclaim: %s, %u dead handle%s; "
                   "replacement %d\n",
                   (int)old, hc, hm, band_err_name(rc), dead, dead == 1 ? "" : "s",
                   (int)workers[w]);
            fflush(stdout);
            if (rc != 0 || workers[w] < 0)
                failed = 1;
        }
    }

    /* The client ends by itself; its totals come through the pipe. */
    uint64_t ok = 0, busy = 0, dropped = 0;
    if (client > 0) {
        char buf[128] = {0};
        ssize_t n = read(pfd[0], buf, sizeof(buf) - 1);
        int st = 0;
        (void)waitpid(client, &st, 0);
        (void)close(pfd[0]);
        if (n <= 0 || sscanf(buf, "%" SCNu64 " %" SCNu64 " %" SCNu64, &ok, &busy, &dropped) != 3 ||
            !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            failed = 1;
    }
    for (unsigned i = 0; i < nworkers; i++)
        if (workers[i] > 0)
            (void)kill(workers[i], SIGTERM);
    for (unsigned i = 0; i < nworkers; i++) {
        int st = 0;
        if (workers[i] > 0 &&
            (waitpid(workers[i], &st, 0) != workers[i] || !WIFEXITED(st) || WEXITSTATUS(st) != 0)) {
            fprintf(stderr, "prefork: worker %d did not end cleanly\n", (int)workers[i]);
            failed = 1;
        }
    }
    (void)close(lfd);

    band_shm_stats st;
    rc = band_shm_get_stats(shm, &st);
    int balanced = rc == 0;
    printf("prefork: %" PRIu64 " requests served, %" PRIu64 " refused, %" PRIu64
           " dropped (the killed worker's)\n",
           ok, busy, dropped);
    if (rc == 0) {
        for (unsigned b = 0; b < 2; b++) {
            const band_shm_bound_stats *bs = &st.bounds[b];
            int ok_b = bs->available == bs->capacity && bs->in_use == 0 && bs->debt == 0;
            printf("prefork: %s available %" PRIu64 " of %" PRIu64 ", in use %" PRIu64
                   ", reclaimed %" PRIu64 ": %s\n",
                   bs->name, bs->available, bs->capacity, bs->in_use, bs->reclaimed,
                   ok_b ? "balanced" : "LEAKED");
            balanced = balanced && ok_b;
        }
        /* Every worker closed its handle or was recovered: the parent's is the last. */
        printf("prefork: dead handles recovered %" PRIu64 ", handles open %" PRIu32 "\n",
               st.dead_handles, st.handles);
        if ((killed && st.dead_handles < 1) || st.handles != 1)
            balanced = 0;
    }
    (void)band_shm_destroy(shm);
    if (name)
        (void)band_shm_unlink(name);
    if (ok == 0)
        failed = 1;
    printf("prefork: %s\n", balanced && !failed ? "the books balance" : "FAILED");
    return balanced && !failed ? 0 : 1;
}
