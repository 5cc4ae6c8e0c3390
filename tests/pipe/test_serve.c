/* SPDX-License-Identifier: MIT */
/*
 * test_serve.c - serve.c and tools/common/nginx.c against a real nginx: urls.txt from the
 * manifest, 200 / 404 / 429 with Retry-After and RateLimit-Policy, the access-log counts,
 * and the refusals of bad datasets. Skipped when nginx is not installed.
 *
 * The request limit used is 1 per second with no burst: of two requests sent back to back
 * the second is refused unless a whole second passes between them (nginx measures the
 * interval in milliseconds, and a request it admits uses the allowance of a second).
 */
#define _XOPEN_SOURCE 700 /* mkdtemp, nftw */

#include <setjmp.h> /* cmocka needs these four first */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "nginx.h"
#include "serve.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ftw.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define TILE_BYTES 5000

struct reply {
    int status;
    char head[2048]; /* the header block */
    size_t body;     /* body bytes received */
};

/* GET http://127.0.0.1:port/path over HTTP/1.0. Returns 0 or -1. */
static int http_get(unsigned port, const char *path, struct reply *r)
{
    memset(r, 0, sizeof(*r));
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons((uint16_t)port);
    char req[512];
    int n = snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", path);
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0 || n < 0 ||
        send(fd, req, (size_t)n, 0) != (ssize_t)n) {
        close(fd);
        return -1;
    }
    static char buf[1 << 16];
    size_t got = 0;
    ssize_t k;
    while (got < sizeof(buf) && (k = recv(fd, buf + got, sizeof(buf) - got, 0)) > 0)
        got += (size_t)k;
    close(fd);
    const char *end = NULL;
    for (size_t i = 0; i + 3 < got; i++) {
        if (memcmp(buf + i, "\r\n\r\n", 4) == 0) {
            end = buf + i;
            break;
        }
    }
    if (end == NULL || sscanf(buf, "HTTP/1.%*d %d", &r->status) != 1)
        return -1;
    size_t hl = (size_t)(end - buf);
    if (hl >= sizeof(r->head))
        hl = sizeof(r->head) - 1;
    memcpy(r->head, buf, hl);
    r->head[hl] = '\0';
    r->body = got - (size_t)(end + 4 - buf);
    return 0;
}

static int has_header(const struct reply *r, const char *line)
{
    char want[256];
    snprintf(want, sizeof(want), "\r\n%s\r", line);
    char head[sizeof(r->head) + 2];
    snprintf(head, sizeof(head), "%s\r\n", r->head);
    return strstr(head, want) != NULL;
}

static int rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    return type == FTW_DP ? rmdir(path) : unlink(path);
}

static void write_file(const char *path, const char *text, size_t bytes)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    if (text != NULL)
        assert_true(fputs(text, f) >= 0);
    for (size_t i = 0; i < bytes; i++)
        assert_true(fputc('a' + (int)(i % 26), f) != EOF);
    assert_int_equal(fclose(f), 0);
}

/* A dataset in a new temporary directory: tiles a, b.tif (present), gone (missing). */
static void make_dataset(char *dir, size_t len, const char *manifest)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, len, "%s/band-test-serve-XXXXXX", tmp != NULL && tmp[0] ? tmp : "/tmp");
    assert_non_null(mkdtemp(dir));
    char path[1024];
    snprintf(path, sizeof(path), "%s/tiles", dir);
    assert_int_equal(mkdir(path, 0755), 0);
    snprintf(path, sizeof(path), "%s/tiles/a.tif", dir);
    write_file(path, NULL, TILE_BYTES);
    snprintf(path, sizeof(path), "%s/tiles/b.tif", dir);
    write_file(path, NULL, 10);
    if (manifest != NULL) {
        snprintf(path, sizeof(path), "%s/manifest.tsv", dir);
        write_file(path, manifest, 0);
    }
}

static int have_nginx(void)
{
    char bin[NGINX_PATH_MAX];
    return nginx_find(bin, sizeof(bin)) == 0;
}

static const char good_manifest[] = "name\tkind\tbytes\twidth\theight\n"
                                    "a\tsmall\t5000\t10\t10\n"
                                    "# a comment line\n"
                                    "\n"
                                    "b.tif\tsmall\t10\t1\t1\n"
                                    "gone\tmissing\t0\t0\t0\n";

static void test_serve_limits_and_counts(void **state)
{
    (void)state;
    if (!have_nginx())
        skip();
    char dir[512], err[1024], path[1024];
    make_dataset(dir, sizeof(dir), good_manifest);

    struct serve s;
    struct serve_opts o;
    serve_opts_default(&o);
    assert_int_equal(o.req_rate, 200);
    assert_int_equal(o.req_burst, 20);
    assert_int_equal(o.retry_after, 1);
    o.req_rate = 1;
    o.req_burst = 0;
    o.retry_after = 7;
    int rc = serve_start(&s, dir, &o, err, sizeof(err));
    if (rc != 0)
        fail_msg("serve_start: %s", err);
    assert_int_equal(s.url_count, 3);

    /* urls.txt: one URL per tile line, in order, .tif added where it was missing. */
    char want[1024];
    snprintf(want, sizeof(want), "%sa.tif\n%sb.tif\n%sgone.tif\n", serve_base_url(&s),
             serve_base_url(&s), serve_base_url(&s));
    snprintf(path, sizeof(path), "%s/urls.txt", dir);
    assert_string_equal(serve_urls_path(&s), path);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char got[1024];
    size_t n = fread(got, 1, sizeof(got) - 1, f);
    got[n] = '\0';
    fclose(f);
    assert_string_equal(got, want);
    snprintf(path, sizeof(path), "%s/urls.txt.tmp", dir);
    assert_int_equal(access(path, F_OK), -1);

    /* Back to back: the first is served whole, the second is throttled. */
    struct reply r1, r2, r3;
    assert_int_equal(http_get(s.ng.port, "/a.tif", &r1), 0);
    assert_int_equal(http_get(s.ng.port, "/a.tif", &r2), 0);
    assert_int_equal(r1.status, 200);
    assert_int_equal(r1.body, TILE_BYTES);
    assert_false(has_header(&r1, "Retry-After: 7"));
    assert_true(has_header(&r1, "RateLimit-Policy: 1;w=1")); /* stated before any 429 */
    assert_int_equal(r2.status, 429);
    assert_true(has_header(&r2, "Retry-After: 7"));
    assert_true(has_header(&r2, "RateLimit-Policy: 1;w=1"));

    /* After the allowance refilled, a missing tile is 404 (not throttled). */
    struct timespec ts = {1, 200000000L};
    nanosleep(&ts, NULL);
    assert_int_equal(http_get(s.ng.port, "/gone.tif", &r3), 0);
    assert_int_equal(r3.status, 404);
    assert_false(has_header(&r3, "Retry-After: 7"));

    assert_int_equal(serve_count_status(&s, 200), 1); /* the readiness probe is not logged */
    assert_int_equal(serve_count_status(&s, 429), 1);
    assert_int_equal(serve_count_status(&s, 404), 1);
    assert_int_equal(serve_count_status(&s, 500), 0);
    assert_int_equal(serve_count_status(&s, 42), 0);
    assert_int_equal(serve_count_status(&s, 600), 0);

    char tmp[NGINX_PATH_MAX];
    snprintf(tmp, sizeof(tmp), "%s", s.tmp);
    assert_int_equal(serve_stop(&s), 0);
    assert_int_equal(access(tmp, F_OK), -1); /* its private directory is gone */
    assert_string_equal(serve_base_url(&s), "");
    assert_string_equal(serve_access_log(&s), "");
    assert_int_equal(serve_count_status(&s, 200), 0);
    assert_int_equal(serve_stop(&s), 0); /* again: nothing to do */
    snprintf(path, sizeof(path), "%s/urls.txt", dir);
    assert_int_equal(access(path, F_OK), 0); /* urls.txt stays */
    assert_int_equal(nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS), 0);
}

static void test_serve_unlimited(void **state)
{
    (void)state;
    if (!have_nginx())
        skip();
    char dir[512], err[1024];
    make_dataset(dir, sizeof(dir), good_manifest);
    struct serve s;
    struct serve_opts o;
    serve_opts_default(&o);
    o.req_rate = 0; /* no request limit: the burst and Retry-After are ignored */
    if (serve_start(&s, dir, &o, err, sizeof(err)) != 0)
        fail_msg("serve_start: %s", err);
    for (int i = 0; i < 30; i++) {
        struct reply r;
        assert_int_equal(http_get(s.ng.port, "/b.tif", &r), 0);
        assert_int_equal(r.status, 200);
        assert_int_equal(r.body, 10);
    }
    assert_int_equal(serve_count_status(&s, 200), 30);
    assert_int_equal(serve_count_status(&s, 429), 0);
    assert_int_equal(serve_stop(&s), 0);
    assert_int_equal(nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS), 0);
}

static void test_serve_burst(void **state)
{
    (void)state;
    if (!have_nginx())
        skip();
    char dir[512], err[1024];
    make_dataset(dir, sizeof(dir), good_manifest);
    struct serve s;
    struct serve_opts o;
    serve_opts_default(&o);
    o.req_rate = 1;
    o.req_burst = 2; /* the first request and two more at once, then 429 */
    if (serve_start(&s, dir, &o, err, sizeof(err)) != 0)
        fail_msg("serve_start: %s", err);
    int want[] = {200, 200, 200, 429};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        struct reply r;
        assert_int_equal(http_get(s.ng.port, "/b.tif", &r), 0);
        assert_int_equal(r.status, want[i]);
    }
    assert_int_equal(serve_count_status(&s, 200), 3);
    assert_int_equal(serve_count_status(&s, 429), 1);
    assert_int_equal(serve_stop(&s), 0);
    assert_int_equal(nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS), 0);
}

/* serve_start() on @manifest (NULL: none) fails with a message containing @want. */
static void refused(const char *manifest, int with_tiles, const char *want)
{
    char dir[512], err[1024], path[1024];
    make_dataset(dir, sizeof(dir), manifest);
    if (!with_tiles) {
        snprintf(path, sizeof(path), "%s/tiles", dir);
        assert_int_equal(nftw(path, rm_entry, 8, FTW_DEPTH | FTW_PHYS), 0);
    }
    struct serve s;
    assert_int_equal(serve_start(&s, dir, NULL, err, sizeof(err)), -1);
    if (strstr(err, want) == NULL)
        fail_msg("expected '%s' in: %s", want, err);
    assert_int_equal(s.ng.pid, 0);
    assert_int_equal(serve_stop(&s), 0);
    snprintf(path, sizeof(path), "%s/urls.txt", dir);
    assert_int_equal(access(path, F_OK), -1);
    assert_int_equal(nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS), 0);
}

static void test_serve_refuses_bad_datasets(void **state)
{
    (void)state;
    refused(good_manifest, 0, "tiles is not a directory");
    refused(NULL, 1, "manifest.tsv");
    refused("", 1, "no header line");
    refused("tile\tkind\n", 1, "manifest.tsv:1: expected the header line");
    refused("name\tkind\nok\tsmall\n../up\tsmall\n", 1, "manifest.tsv:3: '../up' is not");
    refused("name\tkind\n..\tsmall\n", 1, "manifest.tsv:2: '..' is not");
    refused("name\tkind\n\tsmall\n", 1, "manifest.tsv:2: '' is not");
    char err[64];
    struct serve s;
    assert_int_equal(serve_start(&s, "", NULL, err, sizeof(err)), -1);
    assert_string_equal(err, "serve: no dataset directory given");
    assert_int_equal(serve_start(&s, NULL, NULL, err, sizeof(err)), -1);
}

static void test_nginx_refuses_unsafe_paths(void **state)
{
    (void)state;
    if (!have_nginx())
        skip();
    struct nginx ng;
    struct nginx_opts o = {.access_log = "/tmp/log$x"};
    char err[512];
    assert_int_equal(nginx_start(&ng, "/tmp/band-test-unused", "/tmp", &o, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "'/tmp/log$x' has a character"));
    assert_int_equal(ng.pid, 0);
    assert_int_equal(access("/tmp/band-test-unused", F_OK), -1); /* nothing was created */
    assert_int_equal(nginx_start(&ng, "/tmp/band\"x", "/tmp", NULL, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "has a character"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_serve_limits_and_counts),
        cmocka_unit_test(test_serve_unlimited),
        cmocka_unit_test(test_serve_burst),
        cmocka_unit_test(test_serve_refuses_bad_datasets),
        cmocka_unit_test(test_nginx_refuses_unsafe_paths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
