/* SPDX-License-Identifier: MIT */
/*
 * nginx.h - run a private nginx on 127.0.0.1 for the programs and examples.
 *
 * The server is a child process of its caller (never a daemon), with a generated
 * configuration and every file it writes (pid, logs, temp paths) inside one directory that
 * the caller owns. It listens on a free port of 127.0.0.1 and serves one document root.
 */
#ifndef BAND_TOOLS_NGINX_H
#define BAND_TOOLS_NGINX_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define NGINX_PATH_MAX 4096

/* What the server limits, and where it logs each request. All zero: no limits, and the
 * access log in the server's own directory. */
enum nginx_policy { NGINX_POLICY_ALL = 0, NGINX_POLICY_THROTTLED = 1, NGINX_POLICY_NONE = 2 };

struct nginx_opts {
    /* Bytes per second sent on each response (nginx's limit_rate); 0: no limit. */
    uint64_t conn_rate;
    /* Requests per second for the whole server, every client sharing one allowance
     * (limit_req with a single zone key); 0: no limit, and the next two are ignored. */
    unsigned req_rate;
    /* Requests beyond the rate admitted at once without delay (limit_req burst=,
     * nodelay); those beyond the burst are answered 429. */
    unsigned req_burst;
    /* Seconds sent in the Retry-After header of each 429 (0 is sent as 0). */
    unsigned retry_after;
    /* Where "RateLimit-Policy: <req_rate>;w=1" is sent: NGINX_POLICY_ALL (every answer,
     * as rate-limited APIs state their quota; the default, 0), NGINX_POLICY_THROTTLED
     * (only with the 429s) or NGINX_POLICY_NONE (never: only Retry-After). */
    int policy;
    /* The access log's path (a relative one is taken from the server's directory); NULL:
     * "access.log" in the server's directory. It is appended to, one line per request:
     * <status> <body bytes> <request time, s> "<request line>". The readiness probe is
     * not logged. */
    const char *access_log;
};

struct nginx {
    pid_t pid;     /* the master process; 0 when not running */
    unsigned port; /* the port it listens on, on 127.0.0.1 */
    char bin[NGINX_PATH_MAX];
    char dir[NGINX_PATH_MAX];        /* its private directory: nginx.conf, logs, temp paths */
    char access_log[NGINX_PATH_MAX]; /* the access log it writes */
};

/**
 * nginx_find() - the nginx binary: the first on $PATH, else /usr/sbin/nginx, else
 * /sbin/nginx (Debian installs it in /usr/sbin, which is not on a user's PATH).
 *
 * Stores the path in @out. Returns 0, or -1 (not found; nothing printed).
 */
int nginx_find(char *out, size_t outlen);

/**
 * nginx_start() - start nginx serving the directory @docroot, with its files under the
 * new directory @dir (created here; its parent must exist), limited as @opts says (NULL:
 * all zero, no limits).
 *
 * Picks a free port, writes @dir/nginx.conf, starts the server in the foreground as a
 * child (its own process group; on Linux it is sent SIGTERM if the caller dies) and waits
 * until it serves a probe file from @dir (so @docroot is only read, never written).
 * Retries with another port if the one it picked was taken meanwhile. A file missing from
 * @docroot is answered 404.
 *
 * Returns 0 with @ng->pid, @ng->port and @ng->access_log set, or -1 with the reason in
 * @err (@errlen bytes, always terminated; the last line of the server's error log when it
 * failed to start, nginx_print_log() prints more); no server is left running then. One
 * thread at a time per @ng; the child only calls async-signal-safe functions before exec,
 * so other threads may run meanwhile.
 */
int nginx_start(struct nginx *ng, const char *dir, const char *docroot,
                const struct nginx_opts *opts, char *err, size_t errlen);

/**
 * nginx_stop() - stop the server started by nginx_start() and reap it.
 *
 * Sends SIGTERM (nginx's fast shutdown), waits up to ten seconds, then kills its process
 * group. Returns 0 when it exited cleanly, -1 otherwise (after printing why to stderr).
 * Does nothing and returns 0 when no server runs, so it is safe on every exit path. Leaves
 * @ng->dir and the logs in place: removing them is the caller's.
 */
int nginx_stop(struct nginx *ng);

/** nginx_print_log() - copy the tail of the server's error log to stderr. */
void nginx_print_log(const struct nginx *ng);

#endif /* BAND_TOOLS_NGINX_H */
