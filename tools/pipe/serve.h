/* SPDX-License-Identifier: MIT */
/*
 * serve.h - serve a generated dataset from a private nginx on 127.0.0.1.
 *
 * The dataset directory holds the tiles under tiles/ and a manifest, manifest.tsv: a
 * header line, then one line per tile, "name<TAB>kind<TAB>bytes<TAB>width<TAB>height".
 * serve_start() starts nginx (tools/common/nginx.h) on DIR/tiles with a request rate limit
 * that answers 429 with Retry-After, then writes DIR/urls.txt: one
 * http://127.0.0.1:PORT/<name>.tif per manifest line, in manifest order, the tiles missing
 * from tiles/ included (they are answered 404). The server's own files (configuration,
 * logs, temp paths) live in a private directory under $TMPDIR (default /tmp).
 */
#ifndef PIPE_SERVE_H
#define PIPE_SERVE_H

#include <stddef.h>
#include <stdint.h>

#include "nginx.h"

/* The demonstration's request limit: 200 requests per second, a burst of 20 beyond it,
 * and "Retry-After: 1" on each 429. */
#define SERVE_DEFAULT_REQ_RATE    200u
#define SERVE_DEFAULT_REQ_BURST   20u
#define SERVE_DEFAULT_RETRY_AFTER 1u

struct serve_opts {
    unsigned req_rate;    /* requests per second, every client together; 0: no limit */
    unsigned req_burst;   /* requests beyond the rate admitted at once (nodelay) */
    unsigned retry_after; /* seconds, sent in Retry-After with each 429 */
    uint64_t conn_rate;   /* bytes per second per response; 0: no limit */
    int policy;           /* where RateLimit-Policy is sent: enum nginx_policy (every answer) */
    int keep;             /* 1: serve_stop() leaves the private directory (logs) in place */
};

#define SERVE_URL_MAX 64

struct serve {
    struct nginx ng;              /* the server; ng.pid is 0 when not running */
    char tmp[NGINX_PATH_MAX];     /* the private directory; "" when none */
    char urls[NGINX_PATH_MAX];    /* DIR/urls.txt */
    char base_url[SERVE_URL_MAX]; /* "http://127.0.0.1:PORT/" */
    size_t url_count;             /* lines written to urls.txt */
    int keep;
};

/** serve_opts_default() - fill @o with the demonstration's defaults (SERVE_DEFAULT_*;
 *  no byte rate, keep 0). */
void serve_opts_default(struct serve_opts *o);

/**
 * serve_start() - serve @dataset_dir/tiles and write @dataset_dir/urls.txt.
 *
 * Reads @dataset_dir/manifest.tsv first (a header line whose first field is "name", then
 * tiles; empty lines and lines starting with '#' are skipped; a name already ending in
 * .tif or .tiff is used as it is). Then creates the private directory, starts nginx as
 * @o says (NULL: serve_opts_default()) and, once it answers, writes urls.txt under a
 * temporary name and renames it, so a reader that sees urls.txt finds it complete and the
 * server up.
 *
 * @s must not be serving already (it is overwritten). Returns 0 with the server running,
 * or -1 with the reason in @err (@errlen bytes): no
 * tiles/ directory, no or malformed manifest (the line number is given), a name that
 * cannot be a file name (empty, ".", "..", or with '/'), nginx missing or failing to
 * start, or urls.txt not writable. Nothing is left running and the private directory is
 * removed then. Not thread-safe; call it from the thread that lives as long as the server
 * (on Linux nginx is sent SIGTERM when the thread that started it ends).
 */
int serve_start(struct serve *s, const char *dataset_dir, const struct serve_opts *o, char *err,
                size_t errlen);

/**
 * serve_stop() - stop the server and remove its private directory (unless keep was set).
 *
 * urls.txt stays. Returns 0, or -1 when nginx did not stop cleanly or the directory could
 * not be removed (after printing why to stderr). Safe to call again, and after a failed
 * serve_start(): it does nothing then and returns 0.
 */
int serve_stop(struct serve *s);

/** serve_base_url() - "http://127.0.0.1:PORT/" while serving, "" otherwise. */
const char *serve_base_url(const struct serve *s);

/** serve_urls_path() - the urls.txt written by serve_start(), "" before. */
const char *serve_urls_path(const struct serve *s);

/** serve_access_log() - the server's access log (one line per request, the status first),
 *  "" when not started. Removed by serve_stop() unless keep was set. */
const char *serve_access_log(const struct serve *s);

/**
 * serve_count_status() - how many requests the server has answered with @status so far
 * (lines of the access log starting with it). Reads the whole log on each call; may be
 * called from any thread while the server runs. Returns 0 for a status outside 100..599,
 * or when the log cannot be read (not started, or already removed).
 */
unsigned long serve_count_status(const struct serve *s, int status);

#endif /* PIPE_SERVE_H */
