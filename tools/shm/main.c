/* SPDX-License-Identifier: MIT */
/*
 * band-shm - create, list, inspect, repair and remove band's shared-memory segments
 * (band/shm.h), in the manner of ipcs/ipcrm. docs/shm-tool.md is its reference.
 *
 * Only the public API is used. Every command that looks at a segment opens a handle on
 * it, which takes one handle record of the segment; the handle is closed again before the
 * command prints, so a command never keeps a record longer than it needs, and the record
 * of band-shm itself is left out of what it shows.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <band/band.h>
#include <band/shm.h>

#include "json.h"
#include "text_table.h"

#define PROG "band-shm"

/* Where the named segments live (shm_open's directory on Linux). */
#define SHM_DIR "/dev/shm"

/* The longest object name band-shm handles, slash included. */
#define SHM_NAME_MAX 256

/* Exit statuses. */
enum { EXIT_OK = 0, EXIT_FAILED = 1, EXIT_USAGE = 2 };

static void usage(FILE *out)
{
    fputs("usage: band-shm COMMAND [ARGS]\n"
          "\n"
          "  create NAME --bound BOUND=CAP[,bytes|,units] ... [--mode MODE]\n"
          "         [--max-handles N] [--max-waiters N]\n"
          "                        create a segment with up to 8 bounds; CAP of a bytes bound\n"
          "                        may end in K, M or G (powers of 1024); MODE is octal\n"
          "                        (default 0600), exactly the file's mode\n"
          "  list [--json] [PATTERN ...]\n"
          "                        every band segment under /dev/shm (or those whose names\n"
          "                        match a glob PATTERN): name, version, size, handles and\n"
          "                        bounds; a damaged one or one of another version is listed\n"
          "                        with its error; other files are skipped, never opened\n"
          "  show NAME [--json]    each bound's state and counters, the holders (pid, alive,\n"
          "                        units held) and the queued requests in FIFO order\n"
          "  reclaim NAME          recover the handles of dead processes now; prints how many\n"
          "  grow NAME BOUND N     raise BOUND's capacity by N\n"
          "  reduce NAME BOUND N   lower BOUND's capacity by N (what is held becomes a debt)\n"
          "  remove NAME           remove the name (open handles keep working)\n"
          "\n"
          "NAME is a shared-memory object name, with or without its leading slash (\"/conns\"\n"
          "or \"conns\"). band-shm leaves its own handle out of the counts it prints.\n"
          "\n"
          "exit status: 0 done, 1 the operation failed (the message names the band error),\n"
          "2 bad usage.\n",
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
    fputs("\n" PROG ": try 'band-shm --help'\n", stderr);
    return EXIT_USAGE;
}

/* A failed band call: "band-shm: <what> <name>: <message> (<BAND_E...>)". */
static int band_error(const char *what, const char *name, int rc)
{
    fprintf(stderr, PROG ": %s %s: %s (%s)\n", what, name, band_strerror(rc), band_err_name(rc));
    return EXIT_FAILED;
}

/* The object name of @arg: a leading slash added when missing. 0, or -1 (usage) for an
 * empty name, one with a slash inside, or one too long. */
static int object_name(const char *arg, char *out, size_t outlen)
{
    const char *base = arg[0] == '/' ? arg + 1 : arg;
    if (base[0] == '\0' || strchr(base, '/') != NULL || strlen(base) + 2 > outlen ||
        strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
        return -1;
    (void)snprintf(out, outlen, "/%s", base);
    return 0;
}

/* An unsigned decimal number with an optional K, M or G suffix (powers of 1024) when
 * @suffixes; at most @max. 0 or -1. */
static int parse_u64(const char *s, int suffixes, uint64_t max, uint64_t *out)
{
    char *end;
    if (s[0] < '0' || s[0] > '9')
        return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0)
        return -1;
    uint64_t mul = 1;
    if (suffixes && *end != '\0' && end[1] == '\0') {
        switch (*end) {
        case 'k':
        case 'K':
            mul = UINT64_C(1) << 10;
            break;
        case 'm':
        case 'M':
            mul = UINT64_C(1) << 20;
            break;
        case 'g':
        case 'G':
            mul = UINT64_C(1) << 30;
            break;
        default:
            return -1;
        }
        end++;
    }
    if (*end != '\0')
        return -1;
    if ((uint64_t)v > max / mul)
        return -1;
    *out = (uint64_t)v * mul;
    return 0;
}

static const char *kind_name(int kind)
{
    return kind == BAND_SHM_BYTES ? "bytes" : "units";
}

/* ---------------------------------------------------------------------------------------
 * A snapshot of one segment: its stats, holders and waiters, taken through a handle that
 * is closed again at once. */

struct snapshot {
    band_shm_stats st;
    band_shm_holder *holders;
    size_t nholders;
    band_shm_waiter_info *waiters; /* FIFO order */
    size_t nwaiters;
};

static void snapshot_free(struct snapshot *sn)
{
    free(sn->holders);
    free(sn->waiters);
    memset(sn, 0, sizeof(*sn));
}

/* The holders of @s into @sn (band-shm opens to look only, so none is its own). */
static int take_holders(band_shm *s, struct snapshot *sn)
{
    size_t cap = 0;
    for (int tries = 0; tries < 8; tries++) {
        size_t count = 0;
        int rc = band_shm_list_holders(s, sn->holders, cap, &count);
        if (rc != 0)
            return rc;
        if (count <= cap) {
            sn->nholders = count;
            return 0;
        }
        cap = count + 16; /* more may open meanwhile */
        void *p = realloc(sn->holders, cap * sizeof(*sn->holders));
        if (!p)
            return BAND_ENOMEM;
        sn->holders = p;
    }
    return BAND_EBUSY;
}

static int take_waiters(band_shm *s, struct snapshot *sn)
{
    size_t cap = 0;
    for (int tries = 0; tries < 8; tries++) {
        size_t count = 0;
        int rc = band_shm_list_waiters(s, sn->waiters, cap, &count);
        if (rc != 0)
            return rc;
        if (count <= cap) {
            sn->nwaiters = count;
            return 0;
        }
        cap = count + 64;
        void *p = realloc(sn->waiters, cap * sizeof(*sn->waiters));
        if (!p)
            return BAND_ENOMEM;
        sn->waiters = p;
    }
    return BAND_EBUSY;
}

/* Open @name, take what @full asks (stats always; holders and waiters when @full) and
 * close the handle. Returns 0 or a band error. */
static int snapshot_take(const char *name, int full, struct snapshot *sn)
{
    band_shm *s = NULL;
    memset(sn, 0, sizeof(*sn));
    /* Looking changes nothing: no record of our own, no recovery of the dead. */
    const band_shm_opts look = {.inspect = 1};
    int rc = band_shm_open(&s, name, &look);
    if (rc != 0)
        return rc;
    rc = band_shm_get_stats(s, &sn->st);
    if (rc == 0 && full)
        rc = take_holders(s, sn);
    if (rc == 0 && full)
        rc = take_waiters(s, sn);
    (void)band_shm_destroy(s);
    if (rc != 0) {
        snapshot_free(sn);
        return rc;
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------
 * create */

static int cmd_create(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"bound", required_argument, NULL, 'b'},
        {"mode", required_argument, NULL, 'm'},
        {"max-handles", required_argument, NULL, 'H'},
        {"max-waiters", required_argument, NULL, 'W'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    band_shm_bound bounds[BAND_SHM_MAX_BOUNDS];
    char names[BAND_SHM_MAX_BOUNDS][BAND_NAME_MAX];
    unsigned nbounds = 0;
    band_shm_opts opts = {0};
    int c;
    // NOLINTNEXTLINE(concurrency-mt-unsafe): getopt's globals; band-shm has one thread
    while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        uint64_t v;
        switch (c) {
        case 'b': {
            if (nbounds == BAND_SHM_MAX_BOUNDS)
                return usage_error("create: at most %d bounds", BAND_SHM_MAX_BOUNDS);
            const char *eq = strchr(optarg, '=');
            if (!eq || eq == optarg)
                return usage_error("create: --bound %s: expected BOUND=CAP[,bytes]", optarg);
            size_t nlen = (size_t)(eq - optarg);
            if (nlen >= BAND_NAME_MAX)
                return usage_error("create: --bound %s: a bound name has at most %d bytes", optarg,
                                   BAND_NAME_MAX - 1);
            memcpy(names[nbounds], optarg, nlen);
            names[nbounds][nlen] = '\0';
            char cap[64];
            const char *comma = strchr(eq + 1, ',');
            size_t clen = comma ? (size_t)(comma - (eq + 1)) : strlen(eq + 1);
            if (clen >= sizeof(cap))
                return usage_error("create: --bound %s: bad capacity", optarg);
            memcpy(cap, eq + 1, clen);
            cap[clen] = '\0';
            int kind = BAND_SHM_UNITS;
            if (comma) {
                if (strcmp(comma + 1, "bytes") == 0)
                    kind = BAND_SHM_BYTES;
                else if (strcmp(comma + 1, "units") != 0)
                    return usage_error("create: --bound %s: the kind is bytes or units", optarg);
            }
            if (parse_u64(cap, kind == BAND_SHM_BYTES, BAND_MAX_UNITS, &v) != 0)
                return usage_error("create: --bound %s: the capacity is a number from 0 to "
                                   "%" PRIu64 "%s",
                                   optarg, (uint64_t)BAND_MAX_UNITS,
                                   kind == BAND_SHM_BYTES ? " (K, M, G allowed)" : "");
            bounds[nbounds].name = names[nbounds];
            bounds[nbounds].capacity = v;
            bounds[nbounds].kind = kind;
            nbounds++;
            break;
        }
        case 'm': {
            char *end;
            errno = 0;
            unsigned long m = strtoul(optarg, &end, 8);
            if (errno != 0 || *end != '\0' || optarg[0] == '\0' || optarg[0] == '-' || m > 0777 ||
                m == 0)
                return usage_error("create: --mode %s: an octal mode from 1 to 777", optarg);
            opts.mode = (unsigned)m;
            break;
        }
        case 'H':
            if (parse_u64(optarg, 0, 4096, &v) != 0 || v == 0)
                return usage_error("create: --max-handles %s: a number from 1 to 4096", optarg);
            opts.max_handles = (uint32_t)v;
            break;
        case 'W':
            if (parse_u64(optarg, 0, 65536, &v) != 0 || v == 0)
                return usage_error("create: --max-waiters %s: a number from 1 to 65536", optarg);
            opts.max_waiters = (uint32_t)v;
            break;
        case 'h':
            usage(stdout);
            return EXIT_OK;
        case ':':
            return usage_error("create: %s needs a value", argv[optind - 1]);
        default:
            return usage_error("create: unknown option %s", argv[optind - 1]);
        }
    }
    if (optind + 1 != argc)
        return usage_error("create: expected one NAME");
    if (nbounds == 0)
        return usage_error("create: at least one --bound is needed");
    char name[SHM_NAME_MAX];
    if (object_name(argv[optind], name, sizeof(name)) != 0)
        return usage_error("create: bad segment name '%s'", argv[optind]);
    band_shm *s = NULL;
    int rc = band_shm_create(&s, name, bounds, nbounds, &opts);
    if (rc != 0)
        return band_error("create", name, rc);
    (void)band_shm_destroy(s);
    return EXIT_OK;
}

/* ---------------------------------------------------------------------------------------
 * list */

/* The first bytes of a band segment, as a fresh anonymous segment has them: the header
 * begins with the layout's magic, which tells a damaged segment from a foreign file
 * without band-shm knowing the layout. */
#define MAGIC_PREFIX 8

struct magic {
    int have;
    unsigned char bytes[MAGIC_PREFIX];
};

static void magic_learn(struct magic *m)
{
    static const band_shm_bound b = {"probe", 1, BAND_SHM_UNITS};
    band_shm *s = NULL;
    m->have = 0;
    if (band_shm_create(&s, NULL, &b, 1, NULL) != 0)
        return;
    if (pread(band_shm_fd(s), m->bytes, MAGIC_PREFIX, 0) == MAGIC_PREFIX)
        m->have = 1;
    (void)band_shm_destroy(s);
}

/* 1 when the file @path begins as a band segment does. */
static int magic_matches(const struct magic *m, const char *path)
{
    unsigned char buf[MAGIC_PREFIX];
    if (!m->have)
        return 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return 0;
    ssize_t n = pread(fd, buf, sizeof(buf), 0);
    (void)close(fd);
    return n == MAGIC_PREFIX && memcmp(buf, m->bytes, MAGIC_PREFIX) == 0;
}

struct entry {
    char name[SHM_NAME_MAX];
    int rc; /* 0, or why it could not be opened */
    struct snapshot sn;
};

static int entry_cmp(const void *a, const void *b)
{
    return strcmp(((const struct entry *)a)->name, ((const struct entry *)b)->name);
}

/* 1 when @name ("/x") matches one of the @npat glob patterns, or there are none. */
static int name_matches(const char *name, char **pat, int npat)
{
    if (npat == 0)
        return 1;
    for (int i = 0; i < npat; i++) {
        char full[SHM_NAME_MAX + 1];
        /* A pattern may leave out the leading slash, as NAME may. */
        (void)snprintf(full, sizeof(full), "%s%s", pat[i][0] == '/' ? "" : "/", pat[i]);
        if (fnmatch(full, name, 0) == 0)
            return 1;
    }
    return 0;
}

/* Every band segment under SHM_DIR whose name matches one of the @npat patterns (all
 * when none) into *@out, sorted by name. A file is opened only when it begins with a
 * segment's magic, so other programs' objects are never touched. 0 or -1 (printed). */
static int scan(char **pat, int npat, struct entry **out, size_t *count)
{
    DIR *d = opendir(SHM_DIR);
    if (!d) {
        int e = errno;
        // NOLINTNEXTLINE(concurrency-mt-unsafe): band-shm has one thread
        fprintf(stderr, PROG ": list: %s: %s\n", SHM_DIR, strerror(e));
        return -1;
    }
    struct magic magic;
    magic_learn(&magic);
    struct entry *v = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) { // NOLINT(concurrency-mt-unsafe): d is ours alone
        struct stat st;
        if (de->d_name[0] == '.')
            continue;
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (strlen(de->d_name) + 2 > SHM_NAME_MAX)
            continue;
        char name[SHM_NAME_MAX];
        char path[sizeof(SHM_DIR) + SHM_NAME_MAX];
        int nn = snprintf(name, sizeof(name), "/%s", de->d_name);
        int np = snprintf(path, sizeof(path), "%s%s", SHM_DIR, name);
        if (nn < 0 || (size_t)nn >= sizeof(name) || np < 0 || (size_t)np >= sizeof(path))
            continue;
        if (!name_matches(name, pat, npat))
            continue;
        /* Without the magic (no memfd here) every file is opened and the library judges. */
        if (magic.have && !magic_matches(&magic, path))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            void *p = realloc(v, cap * sizeof(*v));
            if (!p) {
                fprintf(stderr, PROG ": list: out of memory\n");
                for (size_t i = 0; i < n; i++)
                    snapshot_free(&v[i].sn);
                free(v);
                closedir(d);
                return -1;
            }
            v = p;
        }
        struct entry *e = &v[n];
        memset(e, 0, sizeof(*e));
        memcpy(e->name, name, sizeof(e->name));
        e->rc = snapshot_take(e->name, 0, &e->sn);
        if (e->rc == BAND_ENOENT)
            continue; /* removed meanwhile */
        if (!magic.have && e->rc == BAND_EBADSEG)
            continue;
        n++;
    }
    closedir(d);
    if (n > 1)
        qsort(v, n, sizeof(*v), entry_cmp);
    *out = v;
    *count = n;
    return 0;
}

static void list_text(const struct entry *v, size_t n)
{
    struct text_table t = {0};
    if (text_table_row(&t) != 0)
        return;
    text_table_set(&t, 0, "NAME");
    text_table_set(&t, 1, "VERSION");
    text_table_set(&t, 2, "SIZE");
    text_table_set(&t, 3, "HANDLES");
    text_table_set(&t, 4, "WAITERS");
    text_table_set(&t, 5, "BOUNDS (available/capacity)");
    for (size_t i = 0; i < n; i++) {
        const struct entry *e = &v[i];
        if (text_table_row(&t) != 0)
            break;
        text_table_set(&t, 0, "%s", e->name);
        if (e->rc != 0) {
            for (size_t c = 1; c < 5; c++)
                text_table_set(&t, c, "-");
            text_table_set(&t, 5, "error: %s (%s)", band_err_name(e->rc), band_strerror(e->rc));
            continue;
        }
        const band_shm_stats *st = &e->sn.st;
        text_table_set(&t, 1, "%" PRIu32, st->version);
        text_table_set(&t, 2, "%" PRIu64, st->size);
        text_table_set(&t, 3, "%" PRIu32, st->handles);
        text_table_set(&t, 4, "%" PRIu32, st->waiters);
        /* The bounds column is the last one, so it is built in one buffer of its own. */
        char line[TEXT_TABLE_COLS * TEXT_TABLE_CELL];
        size_t len = 0;
        for (uint32_t b = 0; b < st->nbounds && len < sizeof(line); b++) {
            const band_shm_bound_stats *bs = &st->bounds[b];
            int k = snprintf(line + len, sizeof(line) - len, "%s%s=%" PRIu64 "/%" PRIu64 "%s",
                             b ? " " : "", bs->name, bs->available, bs->capacity,
                             bs->kind == BAND_SHM_BYTES ? "B" : "");
            if (k < 0)
                break;
            len += (size_t)k;
        }
        if (st->closed && len < sizeof(line))
            (void)snprintf(line + len, sizeof(line) - len, " (closed)");
        text_table_set(&t, 5, "%.*s", TEXT_TABLE_CELL - 1, line);
    }
    text_table_print(&t, "", stdout);
    text_table_free(&t);
}

static void json_error(struct json *j, int rc)
{
    json_object(j, "error");
    json_str(j, "code", band_err_name(rc));
    json_i64(j, "value", rc);
    json_str(j, "message", band_strerror(rc));
    json_end_object(j);
}

static void json_bound_brief(struct json *j, const band_shm_bound_stats *bs)
{
    json_str(j, "name", bs->name);
    json_str(j, "kind", kind_name(bs->kind));
    json_u64(j, "capacity", bs->capacity);
    json_u64(j, "available", bs->available);
}

static void list_json(const struct entry *v, size_t n)
{
    struct json j;
    json_init(&j, stdout);
    json_object(&j, NULL);
    json_array(&j, "segments");
    for (size_t i = 0; i < n; i++) {
        const struct entry *e = &v[i];
        json_object(&j, NULL);
        json_str(&j, "name", e->name);
        if (e->rc != 0) {
            json_error(&j, e->rc);
            json_end_object(&j);
            continue;
        }
        const band_shm_stats *st = &e->sn.st;
        json_u64(&j, "version", st->version);
        json_u64(&j, "size", st->size);
        json_u64(&j, "handles", st->handles);
        json_u64(&j, "waiting", st->waiters);
        json_bool(&j, "closed", st->closed);
        json_array(&j, "bounds");
        for (uint32_t b = 0; b < st->nbounds; b++) {
            json_object(&j, NULL);
            json_bound_brief(&j, &st->bounds[b]);
            json_end_object(&j);
        }
        json_end_array(&j);
        json_end_object(&j);
    }
    json_end_array(&j);
    json_end_object(&j);
}

/* Options of list and show: --json and --help only. Returns -1 to go on, else an exit
 * status. */
static int parse_view_opts(const char *cmd, int argc, char **argv, int *json)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    *json = 0;
    // NOLINTNEXTLINE(concurrency-mt-unsafe): getopt's globals; band-shm has one thread
    while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        switch (c) {
        case 'j':
            *json = 1;
            break;
        case 'h':
            usage(stdout);
            return EXIT_OK;
        default:
            return usage_error("%s: unknown option %s", cmd, argv[optind - 1]);
        }
    }
    return -1;
}

static int cmd_list(int argc, char **argv)
{
    int json;
    int rc = parse_view_opts("list", argc, argv, &json);
    if (rc >= 0)
        return rc;
    struct entry *v = NULL;
    size_t n = 0;
    if (scan(argv + optind, argc - optind, &v, &n) != 0)
        return EXIT_FAILED;
    if (json)
        list_json(v, n);
    else
        list_text(v, n);
    for (size_t i = 0; i < n; i++)
        snapshot_free(&v[i].sn);
    free(v);
    return fflush(stdout) == 0 ? EXIT_OK : EXIT_FAILED;
}

/* ---------------------------------------------------------------------------------------
 * show */

static void show_text(const char *name, const struct snapshot *sn)
{
    const band_shm_stats *st = &sn->st;
    printf("%s: version %" PRIu32 ", %" PRIu64 " bytes, %s\n", name, st->version, st->size,
           st->closed ? "closed" : "open");
    printf("  handles %" PRIu32 " (max %" PRIu32 "), waiting %" PRIu32 " (max %" PRIu32 ")"
           "; lock recoveries %" PRIu64 ", dead handles recovered %" PRIu64
           ", dead waiters removed %" PRIu64 "\n",
           st->handles, st->max_handles, st->waiters, st->max_waiters, st->recoveries,
           st->dead_handles, st->dead_waiters);

    struct text_table t = {0};
    static const char *const head[] = {"BOUND", "KIND",   "CAPACITY", "AVAILABLE",
                                       "DEBT",  "IN USE", "WAITERS",  "WAITING UNITS"};
    (void)text_table_row(&t);
    for (size_t c = 0; c < sizeof(head) / sizeof(head[0]); c++)
        text_table_set(&t, c, "%s", head[c]);
    for (uint32_t b = 0; b < st->nbounds; b++) {
        const band_shm_bound_stats *bs = &st->bounds[b];
        if (text_table_row(&t) != 0)
            break;
        text_table_set(&t, 0, "%s", bs->name);
        text_table_set(&t, 1, "%s", kind_name(bs->kind));
        text_table_set(&t, 2, "%" PRIu64, bs->capacity);
        text_table_set(&t, 3, "%" PRIu64, bs->available);
        text_table_set(&t, 4, "%" PRIu64, bs->debt);
        text_table_set(&t, 5, "%" PRIu64, bs->in_use);
        text_table_set(&t, 6, "%" PRIu64, bs->waiters);
        text_table_set(&t, 7, "%" PRIu64, bs->waiting_units);
    }
    fputc('\n', stdout);
    text_table_print(&t, "", stdout);
    text_table_free(&t);

    static const char *const chead[] = {"COUNTERS", "QUEUED",   "GRANTS",  "TIMEOUTS", "CANCELS",
                                        "CLOSED",   "REFUSALS", "TOO BIG", "RECLAIMED"};
    (void)text_table_row(&t);
    for (size_t c = 0; c < sizeof(chead) / sizeof(chead[0]); c++)
        text_table_set(&t, c, "%s", chead[c]);
    for (uint32_t b = 0; b < st->nbounds; b++) {
        const band_shm_bound_stats *bs = &st->bounds[b];
        if (text_table_row(&t) != 0)
            break;
        text_table_set(&t, 0, "%s", bs->name);
        text_table_set(&t, 1, "%" PRIu64, bs->queued);
        text_table_set(&t, 2, "%" PRIu64, bs->grants);
        text_table_set(&t, 3, "%" PRIu64, bs->timeouts);
        text_table_set(&t, 4, "%" PRIu64, bs->cancels);
        text_table_set(&t, 5, "%" PRIu64, bs->closed_fails);
        text_table_set(&t, 6, "%" PRIu64, bs->try_refusals);
        text_table_set(&t, 7, "%" PRIu64, bs->too_big);
        text_table_set(&t, 8, "%" PRIu64, bs->reclaimed);
    }
    fputc('\n', stdout);
    text_table_print(&t, "", stdout);
    text_table_free(&t);

    printf("\nholders: %zu\n", sn->nholders);
    if (sn->nholders > 0) {
        (void)text_table_row(&t);
        text_table_set(&t, 0, "PID");
        text_table_set(&t, 1, "ALIVE");
        for (uint32_t b = 0; b < st->nbounds; b++)
            text_table_set(&t, 2 + b, "%s", st->bounds[b].name);
        for (size_t i = 0; i < sn->nholders; i++) {
            const band_shm_holder *h = &sn->holders[i];
            if (text_table_row(&t) != 0)
                break;
            text_table_set(&t, 0, "%" PRId32, h->pid);
            text_table_set(&t, 1, "%s", h->alive ? "yes" : "dead");
            for (uint32_t b = 0; b < st->nbounds; b++)
                text_table_set(&t, 2 + b, "%" PRIu64, h->held[b]);
        }
        text_table_print(&t, "  ", stdout);
        text_table_free(&t);
    }

    printf("\nwaiters (first in line first): %zu\n", sn->nwaiters);
    if (sn->nwaiters > 0) {
        (void)text_table_row(&t);
        text_table_set(&t, 0, "SEQ");
        text_table_set(&t, 1, "PID");
        text_table_set(&t, 2, "WAITED");
        text_table_set(&t, 3, "MODE");
        for (uint32_t b = 0; b < st->nbounds; b++)
            text_table_set(&t, 4 + b, "%s", st->bounds[b].name);
        for (size_t i = 0; i < sn->nwaiters; i++) {
            const band_shm_waiter_info *w = &sn->waiters[i];
            if (text_table_row(&t) != 0)
                break;
            text_table_set(&t, 0, "%" PRIu64, w->seq);
            text_table_set(&t, 1, "%" PRId32, w->pid);
            text_table_set(&t, 2, "%.3fs", (double)w->waited / (double)BAND_SEC);
            text_table_set(&t, 3, "%s", w->async ? "async" : "blocking");
            for (uint32_t b = 0; b < st->nbounds; b++)
                text_table_set(&t, 4 + b, "%" PRIu64, w->want[b]);
        }
        text_table_print(&t, "  ", stdout);
        text_table_free(&t);
    }
}

/* Units per bound as an object keyed by bound name. */
static void json_units(struct json *j, const char *key, const band_shm_stats *st,
                       const uint64_t *units)
{
    json_object(j, key);
    for (uint32_t b = 0; b < st->nbounds; b++)
        json_u64(j, st->bounds[b].name, units[b]);
    json_end_object(j);
}

static void show_json(const char *name, const struct snapshot *sn)
{
    const band_shm_stats *st = &sn->st;
    struct json j;
    json_init(&j, stdout);
    json_object(&j, NULL);
    json_str(&j, "name", name);
    json_u64(&j, "version", st->version);
    json_u64(&j, "size", st->size);
    json_bool(&j, "closed", st->closed);
    json_u64(&j, "handles", st->handles);
    json_u64(&j, "max_handles", st->max_handles);
    json_u64(&j, "waiting", st->waiters);
    json_u64(&j, "max_waiters", st->max_waiters);
    json_u64(&j, "recoveries", st->recoveries);
    json_u64(&j, "dead_handles", st->dead_handles);
    json_u64(&j, "dead_waiters", st->dead_waiters);
    json_array(&j, "bounds");
    for (uint32_t b = 0; b < st->nbounds; b++) {
        const band_shm_bound_stats *bs = &st->bounds[b];
        json_object(&j, NULL);
        json_bound_brief(&j, bs);
        json_u64(&j, "debt", bs->debt);
        json_u64(&j, "in_use", bs->in_use);
        json_u64(&j, "waiters", bs->waiters);
        json_u64(&j, "waiting_units", bs->waiting_units);
        json_object(&j, "counters");
        json_u64(&j, "queued", bs->queued);
        json_u64(&j, "grants", bs->grants);
        json_u64(&j, "timeouts", bs->timeouts);
        json_u64(&j, "cancels", bs->cancels);
        json_u64(&j, "closed_fails", bs->closed_fails);
        json_u64(&j, "try_refusals", bs->try_refusals);
        json_u64(&j, "too_big", bs->too_big);
        json_u64(&j, "reclaimed", bs->reclaimed);
        json_end_object(&j);
        json_end_object(&j);
    }
    json_end_array(&j);
    json_array(&j, "holders");
    for (size_t i = 0; i < sn->nholders; i++) {
        const band_shm_holder *h = &sn->holders[i];
        json_object(&j, NULL);
        json_i64(&j, "pid", h->pid);
        json_u64(&j, "start_time", h->start_time);
        json_bool(&j, "alive", h->alive);
        json_units(&j, "held", st, h->held);
        json_end_object(&j);
    }
    json_end_array(&j);
    json_array(&j, "waiters");
    for (size_t i = 0; i < sn->nwaiters; i++) {
        const band_shm_waiter_info *w = &sn->waiters[i];
        json_object(&j, NULL);
        json_i64(&j, "pid", w->pid);
        json_u64(&j, "seq", w->seq);
        json_i64(&j, "waited_ns", w->waited);
        json_bool(&j, "async", w->async);
        json_units(&j, "want", st, w->want);
        json_end_object(&j);
    }
    json_end_array(&j);
    json_end_object(&j);
}

/* The NAME argument of a command that takes exactly @nargs operands. */
static int operands(const char *cmd, int argc, char **argv, int nargs, char *name, size_t namelen)
{
    if (argc - optind != nargs)
        return usage_error("%s: expected %s", cmd, nargs == 1 ? "NAME" : "NAME BOUND N");
    if (object_name(argv[optind], name, namelen) != 0)
        return usage_error("%s: bad segment name '%s'", cmd, argv[optind]);
    return -1;
}

static int cmd_show(int argc, char **argv)
{
    int json;
    int rc = parse_view_opts("show", argc, argv, &json);
    if (rc >= 0)
        return rc;
    char name[SHM_NAME_MAX];
    rc = operands("show", argc, argv, 1, name, sizeof(name));
    if (rc >= 0)
        return rc;
    struct snapshot sn;
    rc = snapshot_take(name, 1, &sn);
    if (rc != 0)
        return band_error("show", name, rc);
    if (json)
        show_json(name, &sn);
    else
        show_text(name, &sn);
    snapshot_free(&sn);
    return fflush(stdout) == 0 ? EXIT_OK : EXIT_FAILED;
}

/* ---------------------------------------------------------------------------------------
 * remove, reclaim, grow, reduce */

/* Options of the commands that take none but --help. */
static int parse_no_opts(const char *cmd, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    // NOLINTNEXTLINE(concurrency-mt-unsafe): getopt's globals; band-shm has one thread
    while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        if (c == 'h') {
            usage(stdout);
            return EXIT_OK;
        }
        return usage_error("%s: unknown option %s", cmd, argv[optind - 1]);
    }
    return -1;
}

static int cmd_remove(int argc, char **argv)
{
    int rc = parse_no_opts("remove", argc, argv);
    if (rc >= 0)
        return rc;
    char name[SHM_NAME_MAX];
    rc = operands("remove", argc, argv, 1, name, sizeof(name));
    if (rc >= 0)
        return rc;
    /* Only a band segment is removed: a foreign file under /dev/shm is left alone. */
    struct snapshot sn;
    rc = snapshot_take(name, 0, &sn);
    snapshot_free(&sn);
    if (rc == BAND_EBADSEG || rc == BAND_EACCES) {
        struct magic magic;
        char path[sizeof(SHM_DIR) + SHM_NAME_MAX];
        magic_learn(&magic);
        (void)snprintf(path, sizeof(path), "%s%s", SHM_DIR, name);
        if (magic_matches(&magic, path))
            rc = 0; /* a damaged segment: removing it is what it needs */
    }
    if (rc != 0 && rc != BAND_EVERSION && rc != BAND_EBUSY)
        return band_error("remove", name, rc);
    rc = band_shm_unlink(name);
    if (rc != 0)
        return band_error("remove", name, rc);
    return EXIT_OK;
}

static int cmd_reclaim(int argc, char **argv)
{
    int rc = parse_no_opts("reclaim", argc, argv);
    if (rc >= 0)
        return rc;
    char name[SHM_NAME_MAX];
    rc = operands("reclaim", argc, argv, 1, name, sizeof(name));
    if (rc >= 0)
        return rc;
    band_shm *s = NULL;
    const band_shm_opts look = {.inspect = 1};
    rc = band_shm_open(&s, name, &look);
    if (rc != 0)
        return band_error("reclaim", name, rc);
    unsigned dead = 0;
    rc = band_shm_reclaim(s, &dead);
    band_shm_stats st;
    if (rc == 0)
        rc = band_shm_get_stats(s, &st);
    (void)band_shm_destroy(s);
    if (rc != 0)
        return band_error("reclaim", name, rc);
    /* Other processes' own liveness checks may have recovered some of the dead before
     * this one looked: the total since the segment's creation tells those too. */
    printf("%s: %u dead handle%s recovered (%" PRIu64 " since creation)\n", name, dead,
           dead == 1 ? "" : "s", st.dead_handles);
    return fflush(stdout) == 0 ? EXIT_OK : EXIT_FAILED;
}

static int cmd_resize(const char *cmd, int grow, int argc, char **argv)
{
    int rc = parse_no_opts(cmd, argc, argv);
    if (rc >= 0)
        return rc;
    char name[SHM_NAME_MAX];
    rc = operands(cmd, argc, argv, 3, name, sizeof(name));
    if (rc >= 0)
        return rc;
    const char *bound = argv[optind + 1];
    uint64_t n;
    if (parse_u64(argv[optind + 2], 1, BAND_MAX_UNITS, &n) != 0)
        return usage_error("%s: %s: a number from 0 to %" PRIu64 " (K, M, G allowed)", cmd,
                           argv[optind + 2], (uint64_t)BAND_MAX_UNITS);
    band_shm *s = NULL;
    const band_shm_opts look = {.inspect = 1};
    rc = band_shm_open(&s, name, &look);
    if (rc != 0)
        return band_error(cmd, name, rc);
    unsigned idx;
    rc = band_shm_bound_index(s, bound, &idx);
    if (rc == 0)
        rc = grow ? band_shm_grow(s, idx, n) : band_shm_reduce(s, idx, n);
    band_shm_bound_stats after;
    band_shm_stats st;
    memset(&after, 0, sizeof(after));
    if (rc == 0 && band_shm_get_stats(s, &st) == 0)
        after = st.bounds[idx];
    (void)band_shm_destroy(s);
    if (rc != 0) {
        fprintf(stderr, PROG ": %s %s %s: %s (%s)\n", cmd, name, bound, band_strerror(rc),
                band_err_name(rc));
        return EXIT_FAILED;
    }
    printf("%s %s: capacity %" PRIu64 ", available %" PRIu64 ", debt %" PRIu64 "\n", name, bound,
           after.capacity, after.available, after.debt);
    return fflush(stdout) == 0 ? EXIT_OK : EXIT_FAILED;
}

static int cmd_grow(int argc, char **argv)
{
    return cmd_resize("grow", 1, argc, argv);
}

static int cmd_reduce(int argc, char **argv)
{
    return cmd_resize("reduce", 0, argc, argv);
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        int (*fn)(int, char **);
    } cmds[] = {
        {"create", cmd_create}, {"list", cmd_list},       {"show", cmd_show},
        {"remove", cmd_remove}, {"reclaim", cmd_reclaim}, {"grow", cmd_grow},
        {"reduce", cmd_reduce},
    };
    if (argc < 2)
        return usage_error("a command is needed");
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return EXIT_OK;
    }
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
        if (strcmp(argv[1], cmds[i].name) == 0) {
            /* The command's own argv: its name stands where getopt expects the program's. */
            opterr = 0;
            optind = 1;
            return cmds[i].fn(argc - 1, argv + 1);
        }
    }
    return usage_error("unknown command '%s'", argv[1]);
}
