/* SPDX-License-Identifier: MIT */
/*
 * main.c - the download example: many transfers, one eight-slot band semaphore.
 *
 * Sets up a real HTTP server (nginx on 127.0.0.1, started here with a generated
 * configuration) over a generated tree of files from 1 KiB to 16 MiB, then downloads every
 * file twice with libcurl's multi interface on libuv: four independent clients, each with
 * its own files and its own window of outstanding downloads, all sharing ONE band_sem of
 * eight transfer slots (fetch.c has the life of a download).
 *
 *   slots only         a slot is held from before the request until the body has been
 *                      consumed: at most eight transfers, but the bodies' memory is
 *                      bounded only by eight times the largest file;
 *   slots + budget     each body's Content-Length is also reserved from a band_budget
 *                      before its buffer is allocated: the memory held by bodies stays
 *                      within the budget.
 *
 * Prints a table (files, bytes, seconds, throughput, peak transfers in flight against the
 * limit, peak bytes buffered against the budget, failures) and a per-second timeline of
 * each variant. The server limits each connection's rate (--rate) so that transfers
 * overlap as they would over a network; on loopback they would otherwise end in a blink.
 *
 * Usage: band_download [--quick] [--check] [options]   (--help lists them)
 * Exit status: 0 when every file arrived intact and no bound was exceeded; 1 otherwise
 * (the reason is printed); 2 on a usage error. --check (the ctest mode) also requires the
 * in-flight peak to have reached the slot limit, so the semaphore was really the bound.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <band/band.h>
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "fetch.h"
#include "nginx.h"
#include "tree.h"

#define KIB ((uint64_t)1024)
#define MIB (1024 * KIB)

struct options {
    int quick, check, keep;
    size_t files;
    uint64_t min_size, max_size, max_total;
    uint64_t budget, rate, seed;
    unsigned clients, window, slots;
    unsigned timeout_s;
};

static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
    (void)sig;
    g_stop = 1;
}

static double mib(uint64_t bytes)
{
    return (double)bytes / (double)MIB;
}

/* "1.5 MiB", "12.0 KiB", "300 B" */
static const char *human(char *buf, size_t len, uint64_t bytes)
{
    if (bytes >= MIB)
        snprintf(buf, len, "%.1f MiB", mib(bytes));
    else if (bytes >= KIB)
        snprintf(buf, len, "%.1f KiB", (double)bytes / (double)KIB);
    else
        snprintf(buf, len, "%" PRIu64 " B", bytes);
    return buf;
}

/* Parses "123", "64K", "16M", "1G" (binary units). Returns 0 or -1. */
static int parse_size(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || end == s || s[0] == '-')
        return -1;
    uint64_t mult = 1;
    if (*end == 'K' || *end == 'k')
        mult = KIB;
    else if (*end == 'M' || *end == 'm')
        mult = MIB;
    else if (*end == 'G' || *end == 'g')
        mult = 1024 * MIB;
    if (mult != 1)
        end++;
    if (*end != '\0' || v > UINT64_MAX / mult)
        return -1;
    *out = (uint64_t)v * mult;
    return 0;
}

static int parse_uint(const char *s, unsigned long long max, unsigned long long *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno != 0 || end == s || *end != '\0' || s[0] == '-' || v > max)
        return -1;
    *out = v;
    return 0;
}

/* A count option: 1 .. 100000. */
static int take_count(const char *s, unsigned *out)
{
    unsigned long long v;
    if (parse_uint(s, 100000, &v) != 0 || v == 0)
        return -1;
    *out = (unsigned)v;
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: band_download [--quick] [--check] [options]\n"
               "  --quick          24 files of 1 KiB..4 MiB (at most 20 MiB), budget 6 MiB\n"
               "                   (default: 48 files of 1 KiB..16 MiB, at most 96 MiB, budget "
               "24 MiB)\n"
               "  --check          test mode: also require the in-flight peak to reach the slots\n"
               "  --budget SIZE    byte budget of the second variant (K/M/G suffixes)\n"
               "  --rate SIZE      nginx's limit per connection, bytes/s (0: none; default 8M)\n"
               "  --files N        number of files        --seed N      generator seed\n"
               "  --clients N      clients (default 4)    --window N    downloads each client\n"
               "                                                        keeps outstanding (6)\n"
               "  --slots N        transfer slots (8)     --timeout S   time limit per variant "
               "(120)\n"
               "  --keep           keep the temporary directory (its path is printed)\n");
}

/* Returns 0, 1 for --help, or 2 on a usage error. */
static int parse_args(int argc, char **argv, struct options *o)
{
    memset(o, 0, sizeof(*o));
    o->files = 48;
    o->min_size = KIB;
    o->max_size = 16 * MIB;
    o->max_total = 96 * MIB;
    o->budget = 24 * MIB;
    o->rate = 8 * MIB;
    o->seed = UINT64_C(0x62616e64); /* "band" */
    o->clients = 4;
    o->window = 6;
    o->slots = 8;
    o->timeout_s = 120;
    int budget_set = 0, files_set = 0;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        unsigned long long u;
        if (strcmp(a, "--quick") == 0) {
            o->quick = 1;
        } else if (strcmp(a, "--check") == 0) {
            o->check = 1;
        } else if (strcmp(a, "--keep") == 0) {
            o->keep = 1;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            return 1;
        } else if (v == NULL) {
            fprintf(stderr, "band_download: unknown option or missing value: %s\n", a);
            return 2;
        } else if (strcmp(a, "--budget") == 0) {
            if (parse_size(v, &o->budget) != 0 || o->budget == 0)
                return 2;
            budget_set = 1;
            i++;
        } else if (strcmp(a, "--rate") == 0) {
            if (parse_size(v, &o->rate) != 0)
                return 2;
            i++;
        } else if (strcmp(a, "--files") == 0) {
            if (parse_uint(v, 100000, &u) != 0 || u < 2)
                return 2;
            o->files = (size_t)u;
            files_set = 1;
            i++;
        } else if (strcmp(a, "--seed") == 0) {
            if (parse_uint(v, ULLONG_MAX, &u) != 0)
                return 2;
            o->seed = (uint64_t)u;
            i++;
        } else if (strcmp(a, "--clients") == 0) {
            if (take_count(v, &o->clients) != 0)
                return 2;
            i++;
        } else if (strcmp(a, "--window") == 0) {
            if (take_count(v, &o->window) != 0)
                return 2;
            i++;
        } else if (strcmp(a, "--slots") == 0) {
            if (take_count(v, &o->slots) != 0)
                return 2;
            i++;
        } else if (strcmp(a, "--timeout") == 0) {
            if (take_count(v, &o->timeout_s) != 0)
                return 2;
            i++;
        } else {
            fprintf(stderr, "band_download: unknown option: %s\n", a);
            return 2;
        }
    }
    if (o->quick) {
        if (!files_set)
            o->files = 24;
        o->max_size = 4 * MIB;
        o->max_total = 20 * MIB;
        if (!budget_set)
            o->budget = 6 * MIB;
    }
    return 0;
}

/* ---- the report ----------------------------------------------------------------------- */

static void print_row(const char *name, const struct fetch_result *r, unsigned slots,
                      uint64_t budget)
{
    char buffered[32], limit[32];
    human(buffered, sizeof(buffered), r->peak_buffered);
    if (budget > 0)
        human(limit, sizeof(limit), budget);
    else
        snprintf(limit, sizeof(limit), "-");
    printf("%-24s %6" PRIu64 " %5" PRIu64 " %8" PRIu64 " %8.1f %7.2f %7.1f %5" PRIu64
           " / %-4u %10s / %s\n",
           name, r->files, r->failed + r->bad_checksum, r->refused, mib(r->bytes), r->seconds,
           r->seconds > 0 ? mib(r->bytes) / r->seconds : 0.0, r->peak_in_flight, slots, buffered,
           limit);
}

static void print_timeline(const char *name, const struct fetch_result *r, unsigned slots)
{
    printf("\ntimeline, %s (one row per second)\n", name);
    printf("  %4s  %-28s %6s %8s %12s\n", "s", "transfers in flight (peak)", "done", "MiB",
           "buffered");
    for (size_t i = 0; i < r->nticks; i++) {
        const struct fetch_tick *t = &r->timeline[i];
        char bar[40], buffered[32];
        size_t width = slots < 24 ? slots : 24;
        size_t fill = (size_t)(t->in_flight_peak * width / (slots ? slots : 1));
        if (fill > width)
            fill = width;
        memset(bar, '#', fill);
        memset(bar + fill, '.', width - fill);
        bar[width] = '\0';
        printf("  %4zu  %3" PRIu64 " %-24s %6" PRIu64 " %8.1f %12s\n", i + 1, t->in_flight_peak,
               bar, t->done, mib(t->bytes), human(buffered, sizeof(buffered), t->buffered_peak));
    }
}

/* ---- checks --------------------------------------------------------------------------- */

struct checker {
    int verbose; /* --check: print every check, not only failures */
    int failed;
};

static void check(struct checker *c, int ok, const char *variant, const char *what, uint64_t got,
                  uint64_t want)
{
    if (!ok)
        c->failed = 1;
    if (!ok || c->verbose)
        printf("check %-6s %-22s %-52s got %" PRIu64 ", want %" PRIu64 "\n", ok ? "ok" : "FAILED",
               variant, what, got, want);
}

static void check_variant(struct checker *c, const char *name, const struct fetch_result *r,
                          const struct options *o, uint64_t budget, uint64_t files,
                          uint64_t want_refused)
{
    check(c, !r->stopped, name, "the run was not stopped early", (uint64_t)r->stopped, 0);
    check(c, r->files == files, name, "every file was requested", r->files, files);
    check(c, r->failed == 0, name, "no transfer failed", r->failed, 0);
    check(c, r->bad_checksum == 0, name, "no body differs from its file", r->bad_checksum, 0);
    check(c, r->refused == want_refused, name, "bodies refused as larger than the budget",
          r->refused, want_refused);
    check(c, r->ok == files - want_refused, name, "files that arrived intact (checksums)", r->ok,
          files - want_refused);
    check(c, r->peak_in_flight <= o->slots, name, "peak transfers in flight <= slots",
          r->peak_in_flight, o->slots);
    check(c, r->peak_slots_held <= o->slots, name, "peak slots held (band_sem) <= slots",
          r->peak_slots_held, o->slots);
    if (o->check && files >= o->slots && (uint64_t)o->clients * o->window >= o->slots)
        check(c, r->peak_in_flight == o->slots, name, "peak transfers in flight reached slots",
              r->peak_in_flight, o->slots);
    check(c, r->bytes_outside_slot == 0, name, "body bytes received without a slot",
          r->bytes_outside_slot, 0);
    check(c, r->slots_left == o->slots, name, "slots available after the run", r->slots_left,
          o->slots);
    if (budget > 0) {
        check(c, r->peak_buffered <= budget, name, "peak bytes buffered <= budget",
              r->peak_buffered, budget);
        check(c, r->peak_budget_in_use <= budget, name, "peak budget in use <= budget",
              r->peak_budget_in_use, budget);
        check(c, r->budget_left == budget, name, "budget available after the run", r->budget_left,
              budget);
    }
    check(c, r->internal == 0, name, "band or loop errors", r->internal, 0);
    for (unsigned i = 0; i < r->errors && i < FETCH_ERRORS_KEPT; i++)
        printf("  %s: %s\n", name, r->error[i]);
    if (r->errors > FETCH_ERRORS_KEPT)
        printf("  %s: ... and %u more\n", name, r->errors - FETCH_ERRORS_KEPT);
    if (r->stopped)
        printf("  %s: stopped early: %s\n", name, r->why);
}

/* ---- main ----------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    struct options o;
    int pa = parse_args(argc, argv, &o);
    if (pa != 0) {
        usage(pa == 1 ? stdout : stderr);
        return pa == 1 ? 0 : 2;
    }

    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);

    int failed = 0, setup_failed = 0, nginx_failed = 0;
    char tmp[TREE_PATH_MAX], path[TREE_PATH_MAX + 16], base_url[64];
    struct tree tree;
    struct nginx ng;
    memset(&tree, 0, sizeof(tree));
    memset(&ng, 0, sizeof(ng));
    struct fetch_result res[2];
    memset(res, 0, sizeof(res));
    int ran = 0;
    double gen_s = 0;
    uv_loop_t loop;
    int rc;

    if (make_temp_dir("band-download-", tmp, sizeof(tmp)) != 0)
        return 1;

    /* The files. */
    struct tree_spec spec = {o.files, o.min_size, o.max_size, o.max_total, o.seed};
    snprintf(path, sizeof(path), "%s/files", tmp);
    band_time tg = band_now();
    if (tree_create(&tree, path, &spec) != 0 || g_stop) {
        setup_failed = 1;
        goto cleanup;
    }
    gen_s = (double)(band_now() - tg) / (double)BAND_SEC;

    /* The server. */
    snprintf(path, sizeof(path), "%s/nginx", tmp);
    struct nginx_opts nopts = {.conn_rate = o.rate};
    char nerr[1024];
    if (nginx_start(&ng, path, tree.root, &nopts, nerr, sizeof(nerr)) != 0) {
        fprintf(stderr, "band_download: %s\n", nerr);
        if (ng.dir[0] != '\0')
            nginx_print_log(&ng);
        setup_failed = 1;
        goto cleanup;
    }
    snprintf(base_url, sizeof(base_url), "http://127.0.0.1:%u/", ng.port);

    /* The two variants, one loop. */
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fprintf(stderr, "band_download: curl_global_init failed\n");
        setup_failed = 1;
        goto cleanup;
    }
    rc = uv_loop_init(&loop);
    if (rc != 0) {
        fprintf(stderr, "band_download: uv_loop_init: %s\n", uv_strerror(rc));
        curl_global_cleanup();
        setup_failed = 1;
        goto cleanup;
    }
    for (int v = 0; v < 2 && !g_stop; v++) {
        struct fetch_config cfg = {
            .tree = &tree,
            .base_url = base_url,
            .clients = o.clients,
            .window = o.window,
            .slots = o.slots,
            .budget = v == 0 ? 0 : o.budget, /* the first run has no byte budget */
            .timeout = (band_time)o.timeout_s * BAND_SEC,
            .stop = &g_stop,
        };
        if (fetch_run(&loop, &cfg, &res[v]) != 0) {
            setup_failed = 1;
            break;
        }
        ran = v + 1;
    }
    rc = uv_loop_close(&loop);
    if (rc != 0) {
        fprintf(stderr, "band_download: uv_loop_close: %s (a handle was left open)\n",
                uv_strerror(rc));
        failed = 1;
    }
    curl_global_cleanup();

cleanup:
    if (nginx_stop(&ng) != 0) {
        nginx_print_log(&ng);
        nginx_failed = 1;
    }
    if (o.keep)
        printf("kept %s\n", tmp);
    else if (tree_remove_dir(tmp) != 0)
        failed = 1;
    if (setup_failed || ran < 2 || g_stop) {
        for (int v = 0; v < 2; v++)
            fetch_result_free(&res[v]);
        tree_free(&tree);
        fprintf(stderr, "band_download: %s\n",
                g_stop ? "interrupted" : "FAILED: could not set up or run the downloads");
        return 1;
    }

    /* The report. */
    char lo[32], hi[32], all[32], rate[32], budget[32];
    printf("band %s: downloads from nginx on 127.0.0.1 with libcurl on libuv\n", band_version());
    printf("%zu files of %s .. %s, %s in all (generated in %.2f s); %u clients x %u downloads "
           "outstanding share one band_sem of %u slots\n",
           tree.n, human(lo, sizeof(lo), tree.min), human(hi, sizeof(hi), tree.max),
           human(all, sizeof(all), tree.total), gen_s, o.clients, o.window, o.slots);
    if (o.rate > 0)
        printf("nginx sends each connection at most %s/s (a stand-in for a network)\n",
               human(rate, sizeof(rate), o.rate));
    printf("\n%-24s %6s %5s %8s %8s %7s %7s %12s %21s\n", "variant", "files", "fail", "refused",
           "MiB", "s", "MiB/s", "in flight", "buffered peak");
    char name1[64];
    snprintf(name1, sizeof(name1), "slots + %s budget", human(budget, sizeof(budget), o.budget));
    print_row("slots only", &res[0], o.slots, 0);
    print_row(name1, &res[1], o.slots, o.budget);

    uint64_t intact = res[0].ok + res[1].ok;
    printf("\nchecksums (FNV-1a 64): %" PRIu64 " of %" PRIu64 " bodies intact", intact,
           res[0].files + res[1].files);
    if (res[1].refused > 0)
        printf(" (%" PRIu64 " bodies larger than the budget were refused with BAND_E2BIG)",
               res[1].refused);
    printf("\nqueued for a slot: %" PRIu64 " of %" PRIu64 " downloads (longest wait %.0f ms), "
           "%" PRIu64 " of %" PRIu64 " with the budget (%.0f ms)\n",
           res[0].slot_stats.queued, res[0].files, (double)res[0].slot_stats.wait_ns_max / 1e6,
           res[1].slot_stats.queued, res[1].files, (double)res[1].slot_stats.wait_ns_max / 1e6);
    printf("queued for budget bytes: %" PRIu64 " of %" PRIu64 " bodies (longest wait %.0f ms)\n",
           res[1].budget_stats.queued, res[1].files, (double)res[1].budget_stats.wait_ns_max / 1e6);
    print_timeline("slots only", &res[0], o.slots);
    print_timeline(name1, &res[1], o.slots);
    printf("\n");

    /* The checks. */
    uint64_t too_big = 0;
    for (size_t i = 0; i < tree.n; i++)
        too_big += tree.files[i].size > o.budget;
    struct checker ck = {o.check, 0};
    check_variant(&ck, "slots only", &res[0], &o, 0, tree.n, 0);
    check_variant(&ck, name1, &res[1], &o, o.budget, tree.n, too_big);
    check(&ck, !nginx_failed, "nginx", "the server stopped cleanly", (uint64_t)nginx_failed, 0);
    failed |= ck.failed;

    for (int v = 0; v < 2; v++)
        fetch_result_free(&res[v]);
    tree_free(&tree);
    fflush(stdout);
    if (failed)
        fprintf(stderr, "band_download: FAILED: a check above did not hold\n");
    else if (o.check)
        printf("band_download: all checks passed\n");
    return failed ? 1 : 0;
}
