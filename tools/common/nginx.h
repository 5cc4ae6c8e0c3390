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

#include <stdint.h>
#include <sys/types.h>

#define NGINX_PATH_MAX 4096

struct nginx {
    pid_t pid;     /* the master process; 0 when not running */
    unsigned port; /* the port it listens on, on 127.0.0.1 */
    char bin[NGINX_PATH_MAX];
    char dir[NGINX_PATH_MAX]; /* its private directory: nginx.conf, logs, temp paths */
};

/**
 * nginx_find() - the nginx binary: the first on $PATH, else /usr/sbin/nginx, else
 * /sbin/nginx (Debian installs it in /usr/sbin, which is not on a user's PATH).
 *
 * Stores the path in @out. Returns 0, or -1 (not found; nothing printed).
 */
int nginx_find(char *out, size_t outlen);

/**
 * nginx_start() - start nginx serving @docroot, with its files under the new directory
 * @dir, each connection limited to @rate bytes per second (0: no limit).
 *
 * Picks a free port, writes @dir/nginx.conf, starts the server in the foreground as a
 * child (its own process group; on Linux it is sent SIGTERM if the caller dies) and waits
 * until it serves a probe file from @docroot. Retries with another port if the one it
 * picked was taken meanwhile. Returns 0 with @ng->pid and @ng->port set, or -1 after
 * printing why (with the server's error log); no server is left running then.
 */
int nginx_start(struct nginx *ng, const char *dir, const char *docroot, uint64_t rate);

/**
 * nginx_stop() - stop the server started by nginx_start() and reap it.
 *
 * Sends SIGTERM (nginx's fast shutdown), waits up to ten seconds, then kills its process
 * group. Returns 0 when it exited cleanly, -1 otherwise (after printing why). Does nothing
 * and returns 0 when no server runs, so it is safe on every exit path.
 */
int nginx_stop(struct nginx *ng);

/** nginx_print_log() - copy the tail of the server's error log to stderr. */
void nginx_print_log(const struct nginx *ng);

#endif /* BAND_TOOLS_NGINX_H */
