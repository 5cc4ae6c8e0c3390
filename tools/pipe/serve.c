/* SPDX-License-Identifier: MIT */
/*
 * serve.c - the dataset's private nginx and its list of URLs (see serve.h).
 *
 * The manifest is read before anything starts, so a bad one costs no server. urls.txt is
 * written only once the server answers, under a temporary name renamed into place: a
 * script that waits for the file to appear may use the URLs at once.
 */
#define _XOPEN_SOURCE 700 /* nftw, mkdtemp, realpath */

#include "serve.h"

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "errtext.h"

/* Formats the reason into @err (always terminated when @errlen > 0). */
static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (err == NULL || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    /* ap is initialised. clang-tidy 14's va_list check reports this call only when one
     * clang-tidy run analyses the file more than once (once per target compiling it). */
    // NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized)
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

void serve_opts_default(struct serve_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->req_rate = SERVE_DEFAULT_REQ_RATE;
    o->req_burst = SERVE_DEFAULT_REQ_BURST;
    o->retry_after = SERVE_DEFAULT_RETRY_AFTER;
}

/* The manifest's tile names, in order. */
struct names {
    char **v;
    size_t n, cap;
};

static void names_free(struct names *nm)
{
    for (size_t i = 0; i < nm->n; i++)
        free(nm->v[i]);
    free(nm->v);
    memset(nm, 0, sizeof(*nm));
}

static int names_add(struct names *nm, const char *name, size_t len)
{
    if (nm->n == nm->cap) {
        size_t cap = nm->cap != 0 ? nm->cap * 2 : 64;
        char **v = realloc(nm->v, cap * sizeof(*v));
        if (v == NULL)
            return -1;
        nm->v = v;
        nm->cap = cap;
    }
    char *copy = malloc(len + 1);
    if (copy == NULL)
        return -1;
    memcpy(copy, name, len);
    copy[len] = '\0';
    nm->v[nm->n++] = copy;
    return 0;
}

static int ends_with(const char *s, size_t len, const char *suffix)
{
    size_t sl = strlen(suffix);
    return len >= sl && memcmp(s + len - sl, suffix, sl) == 0;
}

/* Reads the names of @path (see serve_start()). Returns 0 or -1 with @err set. */
static int read_manifest(const char *path, struct names *nm, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        set_err(err, errlen, "serve: cannot open %s: %s", path, errtext(errno));
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    unsigned long lineno = 0;
    int header = 0, rc = 0;
    while ((got = getline(&line, &cap, f)) >= 0) {
        lineno++;
        size_t len = (size_t)got;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = '\0';
        if (len == 0 || line[0] == '#')
            continue;
        size_t nlen = strcspn(line, "\t");
        if (!header) {
            if (nlen != 4 || memcmp(line, "name", 4) != 0) {
                set_err(err, errlen,
                        "serve: %s:%lu: expected the header line (name<TAB>kind<TAB>bytes"
                        "<TAB>width<TAB>height)",
                        path, lineno);
                rc = -1;
                break;
            }
            header = 1;
            continue;
        }
        if (nlen == 0 || (nlen == 1 && line[0] == '.') ||
            (nlen == 2 && line[0] == '.' && line[1] == '.') || memchr(line, '/', nlen) != NULL ||
            memchr(line, '\0', nlen) != NULL) {
            set_err(err, errlen, "serve: %s:%lu: '%.*s' is not a tile name", path, lineno,
                    (int)(nlen < 80 ? nlen : 80), line);
            rc = -1;
            break;
        }
        if (names_add(nm, line, nlen) != 0) {
            set_err(err, errlen, "serve: out of memory reading %s", path);
            rc = -1;
            break;
        }
    }
    if (rc == 0 && ferror(f)) {
        set_err(err, errlen, "serve: reading %s failed", path);
        rc = -1;
    }
    if (rc == 0 && !header) {
        set_err(err, errlen, "serve: %s is empty (no header line)", path);
        rc = -1;
    }
    free(line);
    fclose(f);
    if (rc != 0)
        names_free(nm);
    return rc;
}

/* Writes @name to @f percent-encoded (every byte but A-Z a-z 0-9 - . _ ~). */
static void put_encoded(FILE *f, const char *name)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)name; *p != '\0'; p++) {
        unsigned char c = *p;
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '.' || c == '_' || c == '~') {
            fputc(c, f);
        } else {
            fputc('%', f);
            fputc(hex[c >> 4], f);
            fputc(hex[c & 15], f);
        }
    }
}

static int write_urls(const struct serve *s, const struct names *nm, char *err, size_t errlen)
{
    char tmp[NGINX_PATH_MAX + 16];
    snprintf(tmp, sizeof(tmp), "%s.tmp", s->urls);
    FILE *f = fopen(tmp, "w");
    if (f == NULL) {
        set_err(err, errlen, "serve: cannot create %s: %s", tmp, errtext(errno));
        return -1;
    }
    for (size_t i = 0; i < nm->n; i++) {
        const char *name = nm->v[i];
        size_t len = strlen(name);
        fputs(s->base_url, f);
        put_encoded(f, name);
        if (!ends_with(name, len, ".tif") && !ends_with(name, len, ".tiff"))
            fputs(".tif", f);
        fputc('\n', f);
    }
    int ok = !ferror(f);
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, s->urls) != 0) {
        set_err(err, errlen, "serve: writing %s failed: %s", s->urls, errtext(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

static int rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    int rc = (type == FTW_DP) ? rmdir(path) : unlink(path);
    if (rc != 0 && errno != ENOENT) {
        fprintf(stderr, "serve: cannot remove %s: %s\n", path, errtext(errno));
        return -1;
    }
    return 0;
}

static int remove_tree(const char *dir)
{
    /* nftw keeps no static state (glibc, musl); without FTW_CHDIR it leaves the working
     * directory alone, so other threads are not disturbed. */
    // NOLINTNEXTLINE(concurrency-mt-unsafe)
    return nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS) == 0 ? 0 : -1;
}

int serve_start(struct serve *s, const char *dataset_dir, const struct serve_opts *o, char *err,
                size_t errlen)
{
    memset(s, 0, sizeof(*s));
    set_err(err, errlen, "%s", "");
    struct serve_opts def;
    if (o == NULL) {
        serve_opts_default(&def);
        o = &def;
    }
    if (dataset_dir == NULL || dataset_dir[0] == '\0') {
        set_err(err, errlen, "serve: no dataset directory given");
        return -1;
    }

    char path[NGINX_PATH_MAX + 32], docroot[PATH_MAX];
    snprintf(path, sizeof(path), "%s/tiles", dataset_dir);
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
        set_err(err, errlen, "serve: %s is not a directory (make a dataset with --generate)", path);
        return -1;
    }
    if (realpath(path, docroot) == NULL) {
        set_err(err, errlen, "serve: %s: %s", path, errtext(errno));
        return -1;
    }
    if (snprintf(s->urls, sizeof(s->urls), "%s/urls.txt", dataset_dir) >= (int)sizeof(s->urls)) {
        set_err(err, errlen, "serve: path too long: %s", dataset_dir);
        s->urls[0] = '\0';
        return -1;
    }

    struct names nm = {NULL, 0, 0};
    snprintf(path, sizeof(path), "%s/manifest.tsv", dataset_dir);
    if (read_manifest(path, &nm, err, errlen) != 0) {
        s->urls[0] = '\0';
        return -1;
    }

    // NOLINTNEXTLINE(concurrency-mt-unsafe): band-pipe sets no environment variables
    const char *tmpdir = getenv("TMPDIR");
    if (tmpdir == NULL || tmpdir[0] == '\0')
        tmpdir = "/tmp";
    if (snprintf(s->tmp, sizeof(s->tmp), "%s/band-serve-XXXXXX", tmpdir) >= (int)sizeof(s->tmp) ||
        mkdtemp(s->tmp) == NULL) {
        set_err(err, errlen, "serve: cannot create a directory in %s: %s", tmpdir, errtext(errno));
        s->tmp[0] = s->urls[0] = '\0';
        names_free(&nm);
        return -1;
    }
    s->keep = o->keep;

    struct nginx_opts no = {
        .conn_rate = o->conn_rate,
        .req_rate = o->req_rate,
        .req_burst = o->req_burst,
        .retry_after = o->retry_after,
        .policy = o->policy,
        .access_log = NULL, /* in the server's directory */
    };
    snprintf(path, sizeof(path), "%s/nginx", s->tmp);
    int rc = nginx_start(&s->ng, path, docroot, &no, err, errlen);
    if (rc == 0) {
        snprintf(s->base_url, sizeof(s->base_url), "http://127.0.0.1:%u/", s->ng.port);
        rc = write_urls(s, &nm, err, errlen);
    }
    if (rc == 0)
        s->url_count = nm.n;
    names_free(&nm);
    if (rc != 0) {
        nginx_stop(&s->ng);
        if (s->tmp[0] != '\0' && remove_tree(s->tmp) != 0)
            fprintf(stderr, "serve: %s was left behind\n", s->tmp);
        memset(s, 0, sizeof(*s));
        return -1;
    }
    return 0;
}

int serve_stop(struct serve *s)
{
    int rc = nginx_stop(&s->ng);
    if (s->tmp[0] != '\0' && !s->keep && remove_tree(s->tmp) != 0)
        rc = -1;
    if (!s->keep)
        s->ng.access_log[0] = '\0'; /* removed with the directory */
    s->tmp[0] = '\0';
    s->base_url[0] = '\0';
    return rc;
}

const char *serve_base_url(const struct serve *s)
{
    return s->base_url;
}

const char *serve_urls_path(const struct serve *s)
{
    return s->urls;
}

const char *serve_access_log(const struct serve *s)
{
    return s->ng.access_log;
}

unsigned long serve_count_status(const struct serve *s, int status)
{
    if (status < 100 || status > 599 || s->ng.access_log[0] == '\0')
        return 0;
    FILE *f = fopen(s->ng.access_log, "r");
    if (f == NULL)
        return 0;
    char want[8];
    snprintf(want, sizeof(want), "%d ", status);
    char line[512];
    unsigned long count = 0;
    int at_start = 1; /* whether the next fgets() starts a new line */
    while (fgets(line, sizeof(line), f) != NULL) {
        if (at_start && strncmp(line, want, 4) == 0)
            count++;
        at_start = strchr(line, '\n') != NULL;
    }
    fclose(f);
    return count;
}
