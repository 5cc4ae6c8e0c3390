/* SPDX-License-Identifier: MIT */
/*
 * band-dist - show and manage band's budgets on an etcd cluster (band/etcd.h): a budget's
 * capacity, holders and queue, a change of capacity, the removal of a dead holder's lease.
 * docs/dist-tool.md is its reference.
 *
 * Only the public API of libband-etcd is used, so the tool sees exactly what a program
 * using the library sees. Each run is one client: it takes a lease of its own (holding no
 * key under it) and revokes it when it ends.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text_table.h"
#include <band/band.h>
#include <band/etcd.h>
#include <jansson.h>

#define PROG "band-dist"

/* Where the cluster is when neither --endpoints nor $BAND_ETCD_ENDPOINTS says. */
#define DEFAULT_ENDPOINTS "http://127.0.0.1:2379"

/* Exit statuses (docs/dist-tool.md). */
enum { EXIT_OK = 0, EXIT_FAILED = 1, EXIT_USAGE = 2, EXIT_UNAVAIL = 3 };

static void usage(FILE *out)
{
    fputs("usage: band-dist [--endpoints URLS] [--prefix PREFIX] COMMAND [ARGS]\n"
          "\n"
          "  show NAME [--json]       the budget's capacity, units held, debt and units\n"
          "                           queued, its holders (request id, holder, units, lease,\n"
          "                           fencing token) and its waiting requests in FIFO order\n"
          "  set-capacity NAME N      set the budget's capacity to N (lowering it revokes\n"
          "                           nothing: what is held above N is a debt)\n"
          "  revoke LEASE             revoke a lease (hex, as show prints it): every request\n"
          "                           under it is deleted and its units go to the queue\n"
          "\n"
          "  --endpoints URLS         comma-separated base URLs of the cluster's members\n"
          "                           (default $BAND_ETCD_ENDPOINTS, else " DEFAULT_ENDPOINTS ")\n"
          "  --prefix PREFIX          the key prefix of the budgets (default /band/)\n"
          "\n"
          "exit status: 0 done, 1 the operation failed (the message names the band error),\n"
          "2 bad usage, 3 no endpoint of the cluster answered (BAND_EUNAVAIL).\n",
          out);
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int usage_error(const char *fmt, ...)
{
    va_list ap;
    fputs(PROG ": ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs("\n" PROG ": try 'band-dist --help'\n", stderr);
    return EXIT_USAGE;
}

/* A failed band call: "band-dist: <what> <name>: <message> (<BAND_E...>)". */
static int band_error(const char *what, const char *name, int rc)
{
    fprintf(stderr, PROG ": %s %s: %s (%s)\n", what, name, band_strerror(rc), band_err_name(rc));
    return rc == BAND_EUNAVAIL ? EXIT_UNAVAIL : EXIT_FAILED;
}

/* An unsigned decimal number, 1 to @max. 0 or -1. */
static int parse_count(const char *s, uint64_t max, uint64_t *out)
{
    char *end;
    if (s[0] < '0' || s[0] > '9')
        return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0' || v == 0 || (uint64_t)v > max)
        return -1;
    *out = (uint64_t)v;
    return 0;
}

/* A lease id as show prints it: hexadecimal, an optional 0x, positive. 0 or -1. */
static int parse_lease(const char *s, int64_t *out)
{
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
        s += 2;
    if (s[0] == '\0' || strspn(s, "0123456789abcdefABCDEF") != strlen(s) || strlen(s) > 16)
        return -1;
    unsigned long long v = strtoull(s, NULL, 16);
    if (v == 0 || v > (unsigned long long)INT64_MAX)
        return -1;
    *out = (int64_t)v;
    return 0;
}

/* The budget name rule of band_etcd_budget_create(), checked here so that a bad name is a
 * usage error rather than a failed call. */
static int valid_name(const char *s)
{
    size_t n = strlen(s);
    return n >= 1 && n <= BAND_ETCD_NAME_MAX &&
           strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

/* ---------------------------------------------------------------------------------------
 * The connection: one client and, for the budget commands, one handle. */

struct conn {
    const char *endpoints;
    const char *prefix; /* NULL: the library's default */
    band_etcd *e;
    band_etcd_budget *b;
};

static int conn_open(struct conn *c, const char *what, const char *name)
{
    band_etcd_opts o = {0};
    o.prefix = c->prefix;
    o.holder = PROG;
    int rc = band_etcd_create(&c->e, c->endpoints, &o);
    if (rc != 0)
        return band_error(what, c->endpoints, rc);
    if (name) {
        rc = band_etcd_budget_create(&c->b, c->e, name, 0);
        if (rc != 0) {
            (void)band_etcd_destroy(c->e);
            c->e = NULL;
            return band_error(what, name, rc);
        }
    }
    return -1;
}

static void conn_close(struct conn *c)
{
    (void)band_etcd_budget_destroy(c->b);
    (void)band_etcd_destroy(c->e);
    c->b = NULL;
    c->e = NULL;
}

/* ---------------------------------------------------------------------------------------
 * show */

struct snapshot {
    band_etcd_budget_stats st;
    band_etcd_entry *v; /* queue order: holders first */
    size_t n;
};

/* The stats, then the entries; the list is read again while it grows between the count
 * and the read. */
static int snapshot_take(band_etcd_budget *b, struct snapshot *sn)
{
    memset(sn, 0, sizeof(*sn));
    int rc = band_etcd_budget_get_stats(b, &sn->st);
    if (rc != 0)
        return rc;
    size_t cap = 16;
    for (;;) {
        band_etcd_entry *v = realloc(sn->v, cap * sizeof(*v));
        if (!v)
            return BAND_ENOMEM;
        sn->v = v;
        size_t n = 0;
        rc = band_etcd_budget_list(b, sn->v, cap, &n);
        if (rc != 0)
            return rc;
        if (n <= cap) {
            sn->n = n;
            return 0;
        }
        cap = n + 16;
    }
}

static size_t count_granted(const struct snapshot *sn)
{
    size_t k = 0;
    for (size_t i = 0; i < sn->n; i++)
        k += sn->v[i].granted ? 1 : 0;
    return k;
}

static void show_text(const char *name, const struct snapshot *sn)
{
    const band_etcd_budget_stats *st = &sn->st;
    printf("%s: capacity %" PRIu64 ", held %" PRIu64 ", debt %" PRIu64 ", queued %" PRIu64
           " (revision %" PRId64 ")\n",
           name, st->capacity, st->held, st->debt, st->queued, st->revision);

    struct text_table t = {0};
    size_t nh = count_granted(sn);
    printf("\nholders: %zu\n", nh);
    if (nh > 0) {
        (void)text_table_row(&t);
        text_table_set(&t, 0, "ID");
        text_table_set(&t, 1, "HOLDER");
        text_table_set(&t, 2, "UNITS");
        text_table_set(&t, 3, "LEASE");
        text_table_set(&t, 4, "TOKEN");
        for (size_t i = 0; i < sn->n; i++) {
            const band_etcd_entry *x = &sn->v[i];
            if (!x->granted || text_table_row(&t) != 0)
                continue;
            text_table_set(&t, 0, "%s", x->id);
            text_table_set(&t, 1, "%s", x->holder);
            text_table_set(&t, 2, "%" PRIu64, x->units);
            text_table_set(&t, 3, "%" PRIx64, (uint64_t)x->lease);
            text_table_set(&t, 4, "%" PRId64, x->token);
        }
        text_table_print(&t, "  ", stdout);
        text_table_free(&t);
    }

    printf("\nwaiters (first in line first): %zu\n", sn->n - nh);
    if (sn->n > nh) {
        (void)text_table_row(&t);
        text_table_set(&t, 0, "POS");
        text_table_set(&t, 1, "ID");
        text_table_set(&t, 2, "HOLDER");
        text_table_set(&t, 3, "UNITS");
        text_table_set(&t, 4, "LEASE");
        text_table_set(&t, 5, "CREATED");
        size_t pos = 0;
        for (size_t i = 0; i < sn->n; i++) {
            const band_etcd_entry *x = &sn->v[i];
            if (x->granted || text_table_row(&t) != 0)
                continue;
            text_table_set(&t, 0, "%zu", pos++);
            text_table_set(&t, 1, "%s", x->id);
            text_table_set(&t, 2, "%s", x->holder);
            text_table_set(&t, 3, "%" PRIu64, x->units);
            text_table_set(&t, 4, "%" PRIx64, (uint64_t)x->lease);
            text_table_set(&t, 5, "%" PRId64, x->created);
        }
        text_table_print(&t, "  ", stdout);
        text_table_free(&t);
    }
}

static json_t *json_entry(const band_etcd_entry *x)
{
    char hex[20];
    (void)snprintf(hex, sizeof(hex), "%" PRIx64, (uint64_t)x->lease);
    json_t *o = json_object();
    json_object_set_new(o, "id", json_string(x->id));
    /* json_string() refuses bytes that are not UTF-8: such a name is shown as "?". */
    json_t *holder = json_string(x->holder);
    json_object_set_new(o, "holder", holder ? holder : json_string("?"));
    json_object_set_new(o, "units", json_integer((json_int_t)x->units));
    json_object_set_new(o, "lease", json_string(hex));
    if (x->granted)
        json_object_set_new(o, "token", json_integer(x->token));
    json_object_set_new(o, "created", json_integer(x->created));
    return o;
}

/* Whole, in the order written; 0 or BAND_ENOMEM. */
static int show_json(const char *name, const struct snapshot *sn)
{
    const band_etcd_budget_stats *st = &sn->st;
    json_t *o = json_object(), *h = json_array(), *w = json_array();
    if (!o || !h || !w) {
        json_decref(o);
        json_decref(h);
        json_decref(w);
        return BAND_ENOMEM;
    }
    json_object_set_new(o, "name", json_string(name));
    json_object_set_new(o, "capacity", json_integer((json_int_t)st->capacity));
    json_object_set_new(o, "held", json_integer((json_int_t)st->held));
    json_object_set_new(o, "debt", json_integer((json_int_t)st->debt));
    json_object_set_new(o, "queued", json_integer((json_int_t)st->queued));
    json_object_set_new(o, "revision", json_integer(st->revision));
    for (size_t i = 0; i < sn->n; i++)
        json_array_append_new(sn->v[i].granted ? h : w, json_entry(&sn->v[i]));
    json_object_set_new(o, "holders", h);
    json_object_set_new(o, "waiters", w);
    int rc = json_dumpf(o, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(o);
    if (rc != 0)
        return BAND_ENOMEM;
    fputc('\n', stdout);
    return 0;
}

/* The options of show: --json. */
static int parse_show_opts(int argc, char **argv, int *json)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    *json = 0;
    // NOLINTNEXTLINE(concurrency-mt-unsafe): getopt's globals; band-dist has one thread
    while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        switch (c) {
        case 'j':
            *json = 1;
            break;
        case 'h':
            usage(stdout);
            return EXIT_OK;
        default:
            return usage_error("show: unknown option %s", argv[optind - 1]);
        }
    }
    return -1;
}

/* Options of the commands that take none but --help. */
static int parse_no_opts(const char *cmd, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    // NOLINTNEXTLINE(concurrency-mt-unsafe): getopt's globals; band-dist has one thread
    while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        if (c == 'h') {
            usage(stdout);
            return EXIT_OK;
        }
        return usage_error("%s: unknown option %s", cmd, argv[optind - 1]);
    }
    return -1;
}

static int cmd_show(struct conn *c, int argc, char **argv)
{
    int json;
    int rc = parse_show_opts(argc, argv, &json);
    if (rc >= 0)
        return rc;
    if (argc - optind != 1)
        return usage_error("show: expected NAME");
    const char *name = argv[optind];
    if (!valid_name(name))
        return usage_error("show: bad budget name '%s'", name);
    rc = conn_open(c, "show", name);
    if (rc >= 0)
        return rc;
    struct snapshot sn;
    rc = snapshot_take(c->b, &sn);
    conn_close(c);
    if (rc != 0) {
        free(sn.v);
        return band_error("show", name, rc);
    }
    rc = 0;
    if (json)
        rc = show_json(name, &sn);
    else
        show_text(name, &sn);
    free(sn.v);
    if (rc != 0)
        return band_error("show", name, rc);
    return fflush(stdout) == 0 ? EXIT_OK : EXIT_FAILED;
}

/* ---------------------------------------------------------------------------------------
 * set-capacity, revoke */

static int cmd_set_capacity(struct conn *c, int argc, char **argv)
{
    int rc = parse_no_opts("set-capacity", argc, argv);
    if (rc >= 0)
        return rc;
    if (argc - optind != 2)
        return usage_error("set-capacity: expected NAME N");
    const char *name = argv[optind];
    uint64_t cap;
    if (!valid_name(name))
        return usage_error("set-capacity: bad budget name '%s'", name);
    if (parse_count(argv[optind + 1], BAND_MAX_UNITS, &cap) != 0)
        return usage_error("set-capacity: N must be 1 to %" PRIu64 ", not '%s'",
                           (uint64_t)BAND_MAX_UNITS, argv[optind + 1]);
    rc = conn_open(c, "set-capacity", name);
    if (rc >= 0)
        return rc;
    band_etcd_budget_stats st;
    rc = band_etcd_budget_set_capacity(c->b, cap);
    if (rc == 0)
        rc = band_etcd_budget_get_stats(c->b, &st);
    conn_close(c);
    if (rc != 0)
        return band_error("set-capacity", name, rc);
    printf("%s: capacity %" PRIu64 ", held %" PRIu64 ", debt %" PRIu64 ", queued %" PRIu64 "\n",
           name, st.capacity, st.held, st.debt, st.queued);
    return fflush(stdout) == 0 ? EXIT_OK : EXIT_FAILED;
}

static int cmd_revoke(struct conn *c, int argc, char **argv)
{
    int rc = parse_no_opts("revoke", argc, argv);
    if (rc >= 0)
        return rc;
    if (argc - optind != 1)
        return usage_error("revoke: expected LEASE");
    int64_t lease;
    if (parse_lease(argv[optind], &lease) != 0)
        return usage_error("revoke: LEASE must be a positive hexadecimal lease id, not '%s'",
                           argv[optind]);
    rc = conn_open(c, "revoke", NULL);
    if (rc >= 0)
        return rc;
    rc = band_etcd_revoke(c->e, lease);
    conn_close(c);
    char hex[20];
    (void)snprintf(hex, sizeof(hex), "%" PRIx64, (uint64_t)lease);
    if (rc != 0)
        return band_error("revoke", hex, rc);
    printf("lease %s revoked\n", hex);
    return fflush(stdout) == 0 ? EXIT_OK : EXIT_FAILED;
}

/* ---------------------------------------------------------------------------------------
 * The global options, then the command. */

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        int (*fn)(struct conn *, int, char **);
    } cmds[] = {
        {"show", cmd_show},
        {"set-capacity", cmd_set_capacity},
        {"revoke", cmd_revoke},
    };
    struct conn c = {0};
    // NOLINTNEXTLINE(concurrency-mt-unsafe): read once, before any thread exists
    c.endpoints = getenv("BAND_ETCD_ENDPOINTS");
    if (!c.endpoints || c.endpoints[0] == '\0')
        c.endpoints = DEFAULT_ENDPOINTS;

    int i = 1;
    while (i < argc && argv[i][0] == '-') {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return EXIT_OK;
        }
        const char **dst = NULL;
        size_t len = 0;
        if (strncmp(a, "--endpoints", 11) == 0) {
            dst = &c.endpoints;
            len = 11;
        } else if (strncmp(a, "--prefix", 8) == 0) {
            dst = &c.prefix;
            len = 8;
        } else {
            return usage_error("unknown option %s", a);
        }
        if (a[len] == '=') {
            *dst = a + len + 1;
        } else if (a[len] == '\0' && i + 1 < argc) {
            *dst = argv[++i];
        } else {
            return usage_error("option %s needs a value", a);
        }
        if ((*dst)[0] == '\0')
            return usage_error("option %.*s needs a value", (int)len, a);
        i++;
    }
    if (i >= argc)
        return usage_error("a command is needed");
    if (strcmp(argv[i], "help") == 0) {
        usage(stdout);
        return EXIT_OK;
    }
    for (size_t k = 0; k < sizeof(cmds) / sizeof(cmds[0]); k++) {
        if (strcmp(argv[i], cmds[k].name) == 0) {
            /* The command's own argv: its name stands where getopt expects the program's. */
            opterr = 0;
            optind = 1;
            return cmds[k].fn(&c, argc - i, argv + i);
        }
    }
    return usage_error("unknown command '%s'", argv[i]);
}
