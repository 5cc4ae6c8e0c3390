/* SPDX-License-Identifier: MIT */
/*
 * report_test.c - band-pipe's observability modules without the pipeline: the state-time
 * integration of stats.c at scripted fake times, the verdict on constructed stats (each
 * symptom of the reading table and the cases beside them), the JSON lines log read back
 * (with jq when it is installed), the summary and progress text, the plot files, and the
 * --verify sampler. Exit 0 when every check holds, 1 otherwise.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "jlog.h"
#include "plot.h"
#include "procfs.h"
#include "progress.h"
#include "stats.h"
#include "summary.h"
#include "tile.h"
#include "verify.h"

static int failures;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);               \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

#define CHECK_EQ(a, b)                                                                             \
    do {                                                                                           \
        long long a_ = (long long)(a), b_ = (long long)(b);                                        \
        if (a_ != b_) {                                                                            \
            fprintf(stderr, "%s:%d: %s == %lld, expected %s == %lld\n", __FILE__, __LINE__, #a,    \
                    a_, #b, b_);                                                                   \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static char dir[64];

static void test_names(void)
{
    CHECK(strcmp(pipe_stage_name(STAGE_FETCH), "fetch") == 0);
    CHECK(strcmp(pipe_stage_name(STAGE_WRITE), "write") == 0);
    CHECK(strcmp(pipe_stage_name(STAGE_COUNT), "unknown") == 0);
    CHECK(strcmp(pipe_stage_name(-1), "unknown") == 0);
    CHECK(strcmp(pipe_budget_name(BUDGET_DESCRIPTORS), "descriptors") == 0);
    CHECK(strcmp(pipe_budget_name(BUDGET_DISK), "disk") == 0);
    CHECK(strcmp(pipe_budget_name(BUDGET_COUNT), "unknown") == 0);
    CHECK(strcmp(tile_result_name(TILE_ABANDONED), "abandoned") == 0);
    CHECK(strcmp(tile_result_name(5), "unknown") == 0);
    CHECK(strcmp(tile_reason_name(REASON_NO_LENGTH), "no_length") == 0);
    CHECK(strcmp(tile_reason_name(REASON_THROTTLED), "throttled") == 0);
    CHECK(strcmp(tile_reason_name(REASON_COUNT), "unknown") == 0);
}

static void test_stats(void)
{
    struct pipe_stats s;
    const band_time t0 = 1000, ms = BAND_MSEC;
    CHECK_EQ(stats_init(&s, 7, t0), 0);
    CHECK_EQ(s.total, 7);
    CHECK(strcmp(s.budget[BUDGET_CPU].name, "cpu") == 0);
    CHECK(s.samples_cap > 0);

    /* cpu: idle 10 ms, one slot 20 ms, two 5 ms, then waiters */
    stats_budget_change(&s, BUDGET_CPU, 1, 0, t0 + 10 * ms);
    stats_budget_change(&s, BUDGET_CPU, 1, 0, t0 + 30 * ms);
    stats_budget_change(&s, BUDGET_CPU, 0, 1, t0 + 35 * ms);
    stats_budget_change(&s, BUDGET_CPU, 0, 2, t0 + 40 * ms);
    stats_budget_change(&s, BUDGET_CPU, -1, 0, t0 + 50 * ms);
    stats_budget_change(&s, BUDGET_CPU, 1, -1, t0 + 50 * ms); /* a waiter granted */
    stats_budget_change(&s, BUDGET_CPU, -2, -2, t0 + 60 * ms);
    stats_settle(&s, t0 + 100 * ms);
    const struct stats_budget *c = &s.budget[BUDGET_CPU];
    CHECK_EQ(c->t_idle, 50 * ms);
    CHECK_EQ(c->t_busy, 25 * ms);
    CHECK_EQ(c->t_waiting, 25 * ms);
    CHECK_EQ(c->waited, (1 * 5 + 3 * 10 + 2 * 10) * ms);
    CHECK_EQ(c->in_use_integral, 1 * 20 + 2 * 5 + 2 * 5 + 2 * 10 + 2 * 10);
    CHECK_EQ(c->peak_in_use, 2);
    CHECK_EQ(c->peak_waiting, 3);
    CHECK_EQ(c->acquired, 3);
    CHECK_EQ(c->in_use, 0);
    CHECK_EQ(c->waiting, 0);
    CHECK_EQ(c->since, t0 + 100 * ms);
    /* every other budget was idle the whole time */
    CHECK_EQ(s.budget[BUDGET_DISK].t_idle, 100 * ms);
    CHECK_EQ(s.budget[BUDGET_DISK].t_busy + s.budget[BUDGET_DISK].t_waiting, 0);

    /* a change below zero stops at zero; a budget out of range and a clock going back are
     * ignored */
    stats_budget_change(&s, BUDGET_CPU, -5, -5, t0 + 100 * ms);
    CHECK_EQ(c->in_use, 0);
    CHECK_EQ(c->waiting, 0);
    stats_budget_change(&s, BUDGET_COUNT, 1, 1, t0 + 100 * ms);
    stats_budget_change(&s, -1, 1, 1, t0 + 100 * ms);
    stats_budget_change(&s, BUDGET_CPU, 1, 0, t0 + 90 * ms);
    CHECK_EQ(c->t_idle, 50 * ms);
    CHECK_EQ(c->since, t0 + 100 * ms);
    CHECK_EQ(c->in_use, 1);

    /* sub-millisecond intervals add up exactly: 3 units x 0.5 ms twice = 3 unit-ms */
    band_time m0 = t0 + 100 * ms;
    stats_budget_change(&s, BUDGET_CONNECTIONS, 3, 0, m0);
    stats_settle(&s, m0 + ms / 2);
    CHECK_EQ(s.budget[BUDGET_CONNECTIONS].in_use_integral, 1);
    stats_settle(&s, m0 + ms);
    CHECK_EQ(s.budget[BUDGET_CONNECTIONS].in_use_integral, 3);
    /* bytes x nanoseconds would overflow 64 bits: 4e9 bytes for 10 s = 4e13 byte-ms */
    stats_budget_change(&s, BUDGET_MEMORY, 4000000000, 0, m0 + ms);
    stats_settle(&s, m0 + ms + 10 * BAND_SEC);
    CHECK_EQ(s.budget[BUDGET_MEMORY].in_use_integral, 40000000000000LL);
    CHECK_EQ(s.budget[BUDGET_MEMORY].peak_in_use, 4000000000LL);

    /* samples grow by doubling and keep every row */
    for (size_t i = 0; i < 1000; i++) {
        struct stats_sample row = {0};
        row.done = i;
        row.open_fds = i == 500 ? 77 : 10;
        row.rss = 4096 * (uint64_t)i;
        CHECK_EQ(stats_sample_add(&s, &row), 0);
    }
    CHECK_EQ(s.nsamples, 1000);
    CHECK(s.samples_cap >= 1000);
    int rows_ok = 1;
    for (size_t i = 0; i < 1000; i++)
        rows_ok &= s.samples[i].done == i && s.samples[i].t >= 0;
    CHECK(rows_ok);
    CHECK_EQ(s.peak_fds, 77);
    CHECK_EQ(s.peak_rss, 4096 * 999);
    stats_free(&s);
    CHECK(s.samples == NULL);
    CHECK_EQ(s.nsamples, 0);
    stats_free(&s); /* twice is fine */
}

/* Stats of a run of @dur: every budget idle but @b, which waits @wait_pct % of the run
 * and is busy the rest. */
static void set_share(struct pipe_stats *s, int b, int wait_pct, band_time dur)
{
    struct stats_budget *bu = &s->budget[b];
    bu->t_waiting = dur * wait_pct / 100;
    bu->t_busy = dur - bu->t_waiting;
    bu->t_idle = 0;
}

static void run_stats(struct pipe_stats *s, size_t total, band_time dur)
{
    stats_init(s, total, 0);
    s->budget[BUDGET_DESCRIPTORS].limit = 100;
    s->budget[BUDGET_CONNECTIONS].limit = 8;
    s->budget[BUDGET_CPU].limit = 2;
    s->budget[BUDGET_DISK].limit = 3;
    s->budget[BUDGET_MEMORY].limit = 1 << 30;
    for (int b = 0; b < BUDGET_COUNT; b++)
        s->budget[b].t_idle = dur;
    s->t_end = dur;
}

static void test_verdict(void)
{
    struct pipe_stats s;
    char buf[512];
    const band_time dur = 10 * BAND_SEC;

    /* nothing recorded */
    stats_init(&s, 10, 0);
    CHECK_EQ(summary_verdict(&s, buf, sizeof buf), VERDICT_NO_DATA);
    stats_free(&s);

    /* one stage pinned at its limit while tiles wait: cpu, even though tiles also wait
     * for descriptor units (the back-pressure of the cpu bound) */
    run_stats(&s, 1000, dur);
    set_share(&s, BUDGET_CPU, 80, dur);
    set_share(&s, BUDGET_DESCRIPTORS, 95, dur);
    set_share(&s, BUDGET_CONNECTIONS, 10, dur);
    CHECK_EQ(summary_verdict(&s, buf, sizeof buf), VERDICT_BOTTLENECK);
    CHECK(strcmp(buf, "cpu is the bottleneck: it was at its limit 80% of the run while tiles "
                      "waited for it - raise it or shard") == 0);
    /* the same with a flat descriptor count well inside the budget: no climbing */
    for (size_t i = 0; i < 60; i++) {
        struct stats_sample row = {0};
        row.open_fds = 40 + (i % 2);
        stats_sample_add(&s, &row);
    }
    CHECK_EQ(summary_verdict(&s, buf, sizeof buf), VERDICT_BOTTLENECK);
    /* a cut buffer stays terminated */
    char small[8];
    CHECK_EQ(summary_verdict(&s, small, sizeof small), VERDICT_BOTTLENECK);
    CHECK(strcmp(small, "cpu is ") == 0);
    CHECK_EQ(summary_verdict(&s, NULL, 0), VERDICT_BOTTLENECK);
    stats_free(&s);

    /* disk at 55% beats memory at 52% */
    run_stats(&s, 1000, dur);
    set_share(&s, BUDGET_MEMORY, 52, dur);
    set_share(&s, BUDGET_DISK, 55, dur);
    CHECK_EQ(summary_verdict(&s, buf, sizeof buf), VERDICT_BOTTLENECK);
    CHECK(strncmp(buf, "disk is the bottleneck: it was at its limit 55% ", 48) == 0);
    stats_free(&s);

    /* every budget below its limit, nobody waiting: something outside serialises */
    run_stats(&s, 1000, dur);
    set_share(&s, BUDGET_CPU, 5, dur);
    set_share(&s, BUDGET_CONNECTIONS, 20, dur);
    CHECK_EQ(summary_verdict(&s, buf, sizeof buf), VERDICT_OUTSIDE);
    CHECK(strcmp(buf, "every budget was below its limit: something outside the budgets "
                      "serialises (look for a blocking call on the loop)") == 0);
    stats_free(&s);

    /* tiles wait for descriptor units while the units' holders sit between the stages:
     * outside; when the holders are busy inside the stages: the unit bound binds */
    run_stats(&s, 1000, dur);
    set_share(&s, BUDGET_DESCRIPTORS, 90, dur);
    s.budget[BUDGET_DESCRIPTORS].in_use_integral = 100 * 10000; /* 100 units for 10 s */
    s.budget[BUDGET_CPU].in_use_integral = 1 * 10000;           /* 1 slot for 10 s */
    CHECK_EQ(summary_verdict(&s, buf, sizeof buf), VERDICT_OUTSIDE);
    s.budget[BUDGET_CONNECTIONS].in_use_integral = 8 * 10000;
    s.budget[BUDGET_MEMORY].waited = 42 * 10 * BAND_SEC; /* 42 tiles waiting for 10 s */
    CHECK_EQ(summary_verdict(&s, buf, sizeof buf), VERDICT_BOTTLENECK);
    CHECK(strncmp(buf, "descriptors is the bottleneck: it was at its limit 90% ", 55) == 0);
    stats_free(&s);

    /* descriptors climbing to the budget: wins over a cpu bottleneck */
    run_stats(&s, 1000, dur);
    set_share(&s, BUDGET_CPU, 80, dur);
    s.fd_budget = 320;
    for (size_t i = 0; i < 30; i++) {
        struct stats_sample row = {0};
        row.open_fds = 10 + 10 * i; /* 10 .. 300 */
        stats_sample_add(&s, &row);
    }
    CHECK_EQ(summary_verdict(&s, buf, sizeof buf), VERDICT_FDS_CLIMBING);
    CHECK(strncmp(buf, "descriptors climbing: the unit bound is missing or too high", 59) == 0);
    /* the same climb far below the budget is not the symptom */
    s.fd_budget = 3000;
    CHECK_EQ(summary_verdict(&s, buf, sizeof buf), VERDICT_BOTTLENECK);
    /* without fd_budget, 2 per descriptor unit: 100 units = 200 fds, and 300 is beyond */
    s.fd_budget = 0;
    CHECK_EQ(summary_verdict(&s, buf, sizeof buf), VERDICT_FDS_CLIMBING);
    /* climbing early, flat in the last third: not climbing */
    for (size_t i = 20; i < 30; i++)
        s.samples[i].open_fds = 200 + (i % 2);
    CHECK_EQ(summary_verdict(&s, buf, sizeof buf), VERDICT_BOTTLENECK);
    stats_free(&s);

    /* a normal run near balance: some waiting, nowhere most of the run */
    run_stats(&s, 1000, dur);
    set_share(&s, BUDGET_CPU, 35, dur);
    set_share(&s, BUDGET_DISK, 25, dur);
    CHECK_EQ(summary_verdict(&s, buf, sizeof buf), VERDICT_MIXED);
    CHECK(strncmp(buf, "no single budget dominates: cpu had tiles waiting 35% of the run", 64) ==
          0);
    stats_free(&s);

    /* two tiles fit every stage at once: nothing could wait */
    run_stats(&s, 2, dur);
    CHECK_EQ(summary_verdict(&s, buf, sizeof buf), VERDICT_UNDERLOADED);
    stats_free(&s);
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            char *p = realloc(buf, 2 * cap + 1);
            if (p == NULL) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = p;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf) {
        buf[n] = '\0';
        if (len)
            *len = n;
    }
    return buf;
}

static int have_jq(void)
{
    return system("command -v jq >/dev/null 2>&1") == 0;
}

static void test_jlog(void)
{
    char path[128], err[256] = "";
    snprintf(path, sizeof path, "%s/run.jsonl", dir);

    char name[] = "we\"ird\\name\n\t\x01\xc3\xa9\xff";
    char source[] = "http://127.0.0.1/a.tif";
    struct tile t;
    memset(&t, 0, sizeof t);
    t.name = name;
    t.source = source;
    t.body_bytes = 12345;
    t.warped_bytes = 67890;
    t.reserved = 4096;
    t.attempts = 2;
    t.throttled = 1;
    t.waited[BUDGET_CPU] = 12345678;
    t.waited[BUDGET_DESCRIPTORS] = 7 * BAND_MSEC;

    struct jlog *j = jlog_open(path, err, sizeof err);
    CHECK(j != NULL);
    if (j == NULL)
        return;
    band_time t0 = band_now();
    jlog_event(j, &t, "tile_started", -1, t0, t0);
    jlog_event(j, &t, "stage_start", STAGE_FETCH, t0 + BAND_MSEC, t0);
    jlog_event(j, &t, "stage_end", STAGE_FETCH, t0 + 1500 * BAND_MSEC, t0);
    jlog_event(j, &t, "stage_end", STAGE_DECODE, t0 + 2 * BAND_SEC, t0);
    t.result = TILE_FAILED;
    t.reason = REASON_WRITE;
    snprintf(t.detail, sizeof t.detail, "disk \"full\"");
    jlog_event(j, &t, "tile_failed", STAGE_WRITE, t0 + 3 * BAND_SEC + 7 * BAND_MSEC, t0);
    jlog_event(j, NULL, "tile_started", -1, t0, t0);
    jlog_event(NULL, &t, "tile_started", -1, t0, t0); /* nothing */
    CHECK_EQ(jlog_close(j), 0);
    CHECK_EQ(jlog_close(NULL), 0);

    size_t len = 0;
    char *text = slurp(path, &len);
    CHECK(text != NULL);
    if (text == NULL)
        return;
    size_t lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += text[i] == '\n';
    CHECK_EQ(lines, 6);
    CHECK(strstr(text, "\"tile\":\"we\\\"ird\\\\name\\n\\t\\u0001\xc3\xa9\\ufffd\"") != NULL);
    CHECK(strstr(text, "\"detail\":\"disk \\\"full\\\"\"") != NULL);
    /* the first line, exactly but for the wall-clock time */
    const char *first_tail =
        "\",\"t\":0.000,\"event\":\"tile_started\",\"tile\":\"we\\\"ird\\\\name\\n\\t\\u0001"
        "\xc3\xa9\\ufffd\",\"source\":\"http://127.0.0.1/a.tif\",\"stage\":null,"
        "\"reserved\":4096,\"waited_ms\":{\"descriptors\":7.000,\"connections\":0.000,"
        "\"requests\":0.000,\"cpu\":12.345,\"memory\":0.000,\"disk\":0.000}}\n";
    CHECK(strncmp(text, "{\"ts\":\"", 7) == 0);
    /* "2026-12-02T05:31:07.123Z" */
    const char *ts = text + 7;
    CHECK(ts[4] == '-' && ts[7] == '-' && ts[10] == 'T' && ts[13] == ':' && ts[16] == ':' &&
          ts[19] == '.' && ts[23] == 'Z');
    CHECK(strncmp(ts + 24, first_tail, strlen(first_tail)) == 0);
    /* this year, from the wall clock */
    char year[8];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(year, sizeof year, "%Y-", &tm);
    CHECK(strncmp(ts, year, 5) == 0);
    CHECK(strstr(text, "\"t\":1.500,\"event\":\"stage_end\"") != NULL);
    CHECK(strstr(text, "\"stage\":\"fetch\",\"bytes\":12345,\"attempts\":2,\"throttled\":1,") !=
          NULL);
    CHECK(strstr(text, "\"stage\":\"decode\",\"bytes\":67890,\"reserved\"") != NULL);
    CHECK(strstr(text, "\"t\":3.007,\"event\":\"tile_failed\"") != NULL);
    CHECK(strstr(text, "\"result\":\"failed\",\"reason\":\"write\",\"detail\":") != NULL);
    CHECK(strstr(text, "\"tile\":null,\"source\":null,\"stage\":null}\n") != NULL);
    free(text);

    if (have_jq()) {
        char cmd[512];
        /* every line parses; the name decodes back to what went in (0xff as U+FFFD) */
        snprintf(cmd, sizeof cmd, "jq -e . '%s' >/dev/null", path);
        CHECK_EQ(system(cmd), 0);
        snprintf(cmd, sizeof cmd,
                 "test \"$(jq -r 'select(.source != null) | .tile' '%s' | head -c 11)\" = "
                 "'we\"ird\\name' && test \"$(jq -sr 'map(select(.tile != null)) | .[0].tile' "
                 "'%s' | od -An -tx1 | tr -d ' \\n')\" = "
                 "'7765226972645c6e616d650a0901c3a9efbfbd0a'",
                 path, path);
        CHECK_EQ(system(cmd), 0);
        /* the start-time histogram: two tile_started in one second */
        snprintf(cmd, sizeof cmd,
                 "test \"$(jq -r 'select(.event==\"tile_started\") | .ts' '%s' | cut -c1-19 | "
                 "uniq -c | awk '{print $1}')\" = 2",
                 path);
        CHECK_EQ(system(cmd), 0);
    } else {
        fprintf(stderr, "report_test: jq not installed: JSON checked structurally only\n");
    }

    /* open failure */
    char bad[160];
    snprintf(bad, sizeof bad, "%s/no/such/dir/x.jsonl", dir);
    err[0] = '\0';
    CHECK(jlog_open(bad, err, sizeof err) == NULL);
    CHECK(strstr(err, "No such file") != NULL);
    /* write failure shows at close */
    if (access("/dev/full", W_OK) == 0) {
        j = jlog_open("/dev/full", err, sizeof err);
        CHECK(j != NULL);
        jlog_event(j, &t, "tile_started", -1, t0, t0);
        CHECK_EQ(jlog_close(j), -1);
    }
}

static void fill_tiles(struct tile *tiles, char names[][16], size_t n)
{
    memset(tiles, 0, n * sizeof *tiles);
    for (size_t i = 0; i < n; i++) {
        snprintf(names[i], 16, "t%u", (unsigned)(i % 1000));
        tiles[i].index = i;
        tiles[i].name = names[i];
        tiles[i].result = TILE_DONE;
    }
}

static void test_summary_progress(void)
{
    struct pipe_stats s;
    const band_time dur = 10 * BAND_SEC;
    run_stats(&s, 6, dur);
    set_share(&s, BUDGET_CPU, 80, dur);
    s.budget[BUDGET_CPU].in_use_integral = 2 * 10000 * 9 / 10;
    s.budget[BUDGET_DESCRIPTORS].origin = "RLIMIT_NOFILE 1024 - 16 reserved, / 2";
    s.bytes_in = 50 * 1000 * 1000;
    s.requests = 40;
    s.throttled = 3;
    s.first_retry_after = 2 * BAND_SEC;
    s.throttled_after_first_retry_after = 1;
    s.stage_in_flight[STAGE_FETCH] = 8;
    s.stage_in_flight[STAGE_DECODE] = 2;
    s.stage_in_flight[STAGE_WRITE] = 1;
    s.budget[BUDGET_MEMORY].in_use = 412 * 1024 * 1024;
    s.done = 2;
    s.failed = 1;
    s.interrupted = 1;
    struct stats_sample row = {0};
    row.request_rate = 47.2;
    stats_sample_add(&s, &row);

    struct tile tiles[6];
    char names[6][16];
    fill_tiles(tiles, names, 6);
    tiles[2].result = TILE_FAILED;
    tiles[2].reason = REASON_HTTP;
    snprintf(tiles[2].detail, sizeof tiles[2].detail, "HTTP 404");
    tiles[4].result = TILE_ABANDONED;
    tiles[5].result = TILE_PENDING;

    char path[128];
    snprintf(path, sizeof path, "%s/summary.txt", dir);
    FILE *f = fopen(path, "w+");
    CHECK(f != NULL);
    if (f == NULL)
        return;
    CHECK_EQ(summary_print(f, &s, tiles, 6), 0);
    fclose(f);
    char *text = slurp(path, NULL);
    CHECK(text != NULL);
    if (text) {
        fputs(text, stdout);
        CHECK(strstr(text, "6 tiles in 10.0 s: 3 done, 0 skipped, 1 failed, 1 abandoned, 1 "
                           "pending\n") != NULL);
        CHECK(strstr(text, "  failed by reason: http 1\n  failed: t2  http  HTTP 404\n") != NULL);
        CHECK(strstr(text, "  completed (3, input positions from 0): 0-1, 3\n") != NULL);
        CHECK(strstr(text, "  pending (1, input positions from 0): 5\n") != NULL);
        CHECK(strstr(text, "  abandoned: t4\n") != NULL);
        CHECK(strstr(text, "throughput: 0.30 tiles/s, 5.00 MB/s in") != NULL);
        CHECK(strstr(text, "40 started, 3 throttled (429/503), 1 of them after the first "
                           "Retry-After (at 2.0 s)") != NULL);
        CHECK(strstr(text, "\ncpu                   2          0    90%      80%    20%     0%") !=
              NULL);
        CHECK(strstr(text, "RLIMIT_NOFILE 1024 - 16 reserved, / 2\n") != NULL);
        CHECK(strstr(text, "\nverdict: cpu is the bottleneck: it was at its limit 80%") != NULL);
        free(text);
    }

    snprintf(path, sizeof path, "%s/progress.txt", dir);
    f = fopen(path, "w+");
    CHECK(f != NULL);
    if (f == NULL)
        return;
    progress_draw(f, &s, 75 * BAND_SEC);
    progress_clear(f);
    fclose(f);
    text = slurp(path, NULL);
    CHECK(text != NULL);
    if (text) {
        printf("progress line: %s\n", text + 1);
        CHECK(strcmp(text, "\r3/6 tiles, 1 failed  fetch 8/8 decode 2/2 write 1/3  mem 412M/1.0G"
                           "  47 req/s  1:15\033[K\r\033[K") == 0);
        free(text);
    }
    /* on a terminal of 80 and of 50 columns: the last parts go first */
    int master = posix_openpt(O_RDWR | O_NOCTTY);
    CHECK(master >= 0);
    if (master >= 0 && grantpt(master) == 0 && unlockpt(master) == 0) {
        FILE *tty = fopen(ptsname(master), "w");
        CHECK(tty != NULL);
        static const unsigned short cols[2] = {80, 50};
        static const char *const want[2] = {
            "\r3/6 tiles, 1 failed  fetch 8/8 decode 2/2 write 1/3  mem 412M/1.0G  47 req/s\033[K",
            "\r3/6 tiles, 1 failed\033[K"};
        for (int i = 0; tty != NULL && i < 2; i++) {
            struct winsize ws = {0};
            ws.ws_row = 24;
            ws.ws_col = cols[i];
            CHECK_EQ(ioctl(master, TIOCSWINSZ, &ws), 0);
            progress_draw(tty, &s, 75 * BAND_SEC);
            char got[256];
            size_t len = 0, wlen = strlen(want[i]);
            while (len < wlen) { /* the pty may deliver the line in pieces */
                ssize_t r = read(master, got + len, sizeof got - 1 - len);
                if (r <= 0)
                    break;
                len += (size_t)r;
            }
            got[len] = '\0';
            CHECK(strcmp(got, want[i]) == 0);
            if (strcmp(got, want[i]) != 0)
                fprintf(stderr, "progress at %u columns: \"%s\"\n", cols[i], got + 1);
        }
        if (tty)
            fclose(tty);
    }
    if (master >= 0)
        close(master);
    stats_free(&s);
}

static int file_starts(const char *path, const char *magic, size_t n)
{
    char buf[16] = "";
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return 0;
    size_t got = fread(buf, 1, n, f);
    fclose(f);
    return got == n && memcmp(buf, magic, n) == 0;
}

static void test_plot(void)
{
    struct pipe_stats s;
    char path[128], p2[128], err[256] = "";
    stats_init(&s, 100, band_now());
    for (size_t i = 0; i < 50; i++) {
        struct stats_sample row = {0};
        row.limit[BUDGET_CONNECTIONS] = 8;
        row.limit[BUDGET_CPU] = 2;
        row.limit[BUDGET_DISK] = 3;
        row.limit[BUDGET_MEMORY] = 256u << 20;
        row.stage_in_flight[STAGE_FETCH] = i < 40 ? 8 : (50 - i) * 8 / 10;
        row.stage_in_flight[STAGE_DECODE] = i > 2 ? 2 : 0;
        row.stage_in_flight[STAGE_WRITE] = i % 3;
        row.in_use[BUDGET_MEMORY] = (uint64_t)(i < 40 ? 200 + i : 240 - 5 * (i - 40)) << 20;
        row.allocated = row.in_use[BUDGET_MEMORY] - (10u << 20);
        row.rss = row.allocated + (60u << 20);
        row.open_fds = 30;
        stats_sample_add(&s, &row);
        s.samples[i].t = (band_time)i * STATS_SAMPLE_NS; /* an even time axis */
    }
    snprintf(path, sizeof path, "%s/run.svg", dir);
    CHECK_EQ(plot_write(path, &s, err, sizeof err), 0);
    if (err[0])
        fprintf(stderr, "plot: %s\n", err);
    CHECK(file_starts(path, "<?xml", 5) || file_starts(path, "<svg", 4));
    snprintf(p2, sizeof p2, "%s/run.png", dir);
    CHECK(file_starts(p2, "\x89PNG\r\n\x1a\n", 8));
    snprintf(p2, sizeof p2, "%s/run.tsv", dir);
    char *tsv = slurp(p2, NULL);
    CHECK(tsv != NULL);
    if (tsv) {
        size_t lines = 0;
        for (char *c = tsv; *c; c++)
            lines += *c == '\n';
        CHECK_EQ(lines, 51);
        CHECK(strncmp(tsv, "# t_s\tfetch\tdecode\twrite\t", 25) == 0);
        CHECK(
            strstr(tsv, "\n0.100\t8\t0\t1\t8\t2\t3\t201.000\t191.000\t256.000\t251.000\t30\t0\n") !=
            NULL);
        free(tsv);
    }
    snprintf(p2, sizeof p2, "%s/run.gp", dir);
    CHECK(access(p2, F_OK) != 0); /* the script is removed */

    /* a .png name writes the same three */
    snprintf(path, sizeof path, "%s/second.png", dir);
    CHECK_EQ(plot_write(path, &s, err, sizeof err), 0);
    snprintf(p2, sizeof p2, "%s/second.svg", dir);
    CHECK(access(p2, F_OK) == 0);

    /* bad ending; a directory that does not exist; gnuplot missing */
    snprintf(path, sizeof path, "%s/run.pdf", dir);
    CHECK_EQ(plot_write(path, &s, err, sizeof err), -1);
    CHECK(strstr(err, "must end in .svg or .png") != NULL);
    snprintf(path, sizeof path, "%s/none/run.svg", dir);
    CHECK_EQ(plot_write(path, &s, err, sizeof err), -1);
    CHECK(strstr(err, "No such file") != NULL);
    char *old = getenv("PATH") ? strdup(getenv("PATH")) : NULL;
    setenv("PATH", dir, 1);
    snprintf(path, sizeof path, "%s/nognuplot.svg", dir);
    CHECK_EQ(plot_write(path, &s, err, sizeof err), -1);
    CHECK(strstr(err, "gnuplot not found on PATH (Debian: gnuplot-nox)") != NULL);
    if (old) {
        setenv("PATH", old, 1);
        free(old);
    }
    stats_free(&s);
}

static _Atomic uint64_t held_bytes;

static uint64_t bytes_cb(void *arg)
{
    (void)arg;
    return atomic_load(&held_bytes);
}

static void test_verify(void)
{
    char err[256] = "";
    uint64_t base = procfs_open_fds();
    CHECK(base >= 3);
    uint64_t rss = procfs_rss();
    CHECK(rss > 0);
    CHECK(procfs_peak_rss() >= rss); /* VmHWM: at least the resident set read before it */

    /* within budget: no violation */
    struct verify *v = NULL;
    struct verify_limits l = {base + 100, 1000, bytes_cb, NULL};
    atomic_store(&held_bytes, 500);
    CHECK_EQ(verify_start(&v, &l, err, sizeof err), 0);
    struct timespec nap = {0, 20 * 1000 * 1000};
    nanosleep(&nap, NULL);
    struct verify_result r;
    CHECK_EQ(verify_stop(v, &r), 0);
    CHECK(r.samples >= 2); /* the first at start, the last at stop */
    CHECK_EQ(r.peak_fds, base);
    CHECK_EQ(r.peak_bytes, 500);
    CHECK(r.peak_rss > 0);
    CHECK_EQ(r.violations, 0);
    CHECK_EQ(r.first_violation_t, 0);
    CHECK(r.first_violation[0] == '\0');

    /* five more descriptors: the peak rises by five, over a budget of base + 3 */
    l.fd_budget = base + 3;
    l.bytes_budget = 0; /* not checked */
    CHECK_EQ(verify_start(&v, &l, err, sizeof err), 0);
    int fds[5];
    for (int i = 0; i < 5; i++)
        fds[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
    atomic_store(&held_bytes, 5000);
    nanosleep(&nap, NULL);
    CHECK_EQ(verify_stop(v, &r), 0);
    for (int i = 0; i < 5; i++)
        close(fds[i]);
    CHECK_EQ(r.peak_fds, base + 5);
    CHECK_EQ(r.peak_bytes, 5000);
    CHECK(r.violations >= 1);
    CHECK(r.first_violation_t > 0);
    char want[64];
    snprintf(want, sizeof want, ": %llu open descriptors > %llu", (unsigned long long)(base + 5),
             (unsigned long long)(base + 3));
    CHECK(strstr(r.first_violation, want) != NULL);

    /* budgeted bytes above their budget */
    l.fd_budget = 0;
    l.bytes_budget = 4000;
    CHECK_EQ(verify_start(&v, &l, err, sizeof err), 0);
    CHECK_EQ(verify_stop(v, &r), 0);
    CHECK(r.violations >= 2); /* start and stop samples at least */
    CHECK_EQ(r.violations, r.samples);
    CHECK(strstr(r.first_violation, ": 5000 budgeted bytes > 4000") != NULL);

    /* bad arguments; a NULL stop */
    CHECK_EQ(verify_start(NULL, &l, err, sizeof err), -1);
    CHECK_EQ(verify_start(&v, NULL, err, sizeof err), -1);
    CHECK_EQ(verify_stop(NULL, &r), 0);
    CHECK_EQ(r.samples, 0);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/band-report-test.XXXXXX");
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    test_names();
    test_stats();
    test_verdict();
    test_jlog();
    test_summary_progress();
    test_plot();
    test_verify();
    if (failures == 0 && getenv("REPORT_TEST_KEEP") == NULL) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd) != 0)
            fprintf(stderr, "report_test: could not remove %s\n", dir);
    } else {
        fprintf(stderr, "report_test: files kept in %s\n", dir);
    }
    if (failures) {
        fprintf(stderr, "report_test: %d checks failed\n", failures);
        return 1;
    }
    puts("report_test: all checks passed");
    return 0;
}
