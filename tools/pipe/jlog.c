/* SPDX-License-Identifier: MIT */
/*
 * jlog.c - the JSON lines event log (jlog.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "jlog.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "errtext.h"

struct jlog {
    FILE *f;
    int failed;
    int64_t wall_minus_band; /* CLOCK_REALTIME - band_now(), in nanoseconds */
};

struct jlog *jlog_open(const char *path, char *err, size_t errlen)
{
    struct jlog *j = calloc(1, sizeof *j);
    if (j == NULL) {
        snprintf(err, errlen, "log %s: out of memory", path);
        return NULL;
    }
    j->f = fopen(path, "w");
    if (j->f == NULL) {
        snprintf(err, errlen, "log %s: %s", path, errtext(errno));
        free(j);
        return NULL;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    band_time mono = band_now();
    j->wall_minus_band = (int64_t)ts.tv_sec * BAND_SEC + ts.tv_nsec - mono;
    return j;
}

/* Length of the valid UTF-8 sequence at @p (at most @n bytes), 0 when it is not valid. */
static size_t utf8_len(const unsigned char *p, size_t n)
{
    size_t len;
    uint32_t min, c;
    if (p[0] < 0x80)
        return 1;
    if ((p[0] & 0xE0) == 0xC0)
        len = 2, min = 0x80, c = p[0] & 0x1Fu;
    else if ((p[0] & 0xF0) == 0xE0)
        len = 3, min = 0x800, c = p[0] & 0x0Fu;
    else if ((p[0] & 0xF8) == 0xF0)
        len = 4, min = 0x10000, c = p[0] & 0x07u;
    else
        return 0;
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        c = (c << 6) | (p[i] & 0x3Fu);
    }
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
        return 0; /* overlong, beyond Unicode, or a surrogate */
    return len;
}

/* @s (at most @max bytes of it) as a JSON string, or null */
static void put_string_n(FILE *f, const char *s, size_t max)
{
    if (s == NULL) {
        fputs("null", f);
        return;
    }
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strnlen(s, max);
    fputc('"', f);
    while (n > 0) {
        unsigned char c = *p;
        size_t len = 1;
        switch (c) {
        case '"':
            fputs("\\\"", f);
            break;
        case '\\':
            fputs("\\\\", f);
            break;
        case '\n':
            fputs("\\n", f);
            break;
        case '\r':
            fputs("\\r", f);
            break;
        case '\t':
            fputs("\\t", f);
            break;
        case '\b':
            fputs("\\b", f);
            break;
        case '\f':
            fputs("\\f", f);
            break;
        default:
            if (c < 0x20) {
                fprintf(f, "\\u%04x", c);
            } else if (c < 0x80) {
                fputc(c, f);
            } else if ((len = utf8_len(p, n)) > 0) {
                fwrite(p, 1, len, f);
            } else {
                fputs("\\ufffd", f);
                len = 1;
            }
        }
        p += len;
        n -= len;
    }
    fputc('"', f);
}

static void put_string(FILE *f, const char *s)
{
    put_string_n(f, s, SIZE_MAX);
}

/* @ns as a decimal number of @unit with 3 decimals ("12.345"), sign included. */
static void put_fixed3(FILE *f, int64_t ns, int64_t unit)
{
    int64_t milli = unit / 1000;
    int neg = ns < 0;
    uint64_t v = neg ? (uint64_t)(-(ns + 1)) + 1 : (uint64_t)ns;
    v /= (uint64_t)milli;
    fprintf(f, "%s%llu.%03llu", neg ? "-" : "", (unsigned long long)(v / 1000),
            (unsigned long long)(v % 1000));
}

static void put_ts(FILE *f, int64_t wall_ns)
{
    time_t secs = (time_t)(wall_ns / BAND_SEC);
    int64_t ms = (wall_ns % BAND_SEC) / BAND_MSEC;
    if (ms < 0) {
        secs -= 1;
        ms += 1000;
    }
    struct tm tm;
    char buf[32];
    if (gmtime_r(&secs, &tm) == NULL || strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm) == 0)
        snprintf(buf, sizeof buf, "1970-01-01T00:00:00");
    fprintf(f, "\"%s.%03dZ\"", buf, (int)ms);
}

static int is_final(const char *event)
{
    return strcmp(event, "tile_done") == 0 || strcmp(event, "tile_failed") == 0 ||
           strcmp(event, "tile_skipped") == 0 || strcmp(event, "tile_abandoned") == 0;
}

void jlog_event(struct jlog *j, const struct tile *t, const char *event, int stage, band_time now,
                band_time t0)
{
    if (j == NULL || j->f == NULL)
        return;
    FILE *f = j->f;
    if (event == NULL)
        event = "unknown";
    int has_stage = stage >= 0 && stage < STAGE_COUNT;

    fputs("{\"ts\":", f);
    put_ts(f, now + j->wall_minus_band);
    fputs(",\"t\":", f);
    put_fixed3(f, now - t0, BAND_SEC);
    fputs(",\"event\":", f);
    put_string(f, event);
    fputs(",\"tile\":", f);
    put_string(f, t ? t->name : NULL);
    fputs(",\"source\":", f);
    put_string(f, t ? t->source : NULL);
    fputs(",\"stage\":", f);
    put_string(f, has_stage ? pipe_stage_name(stage) : NULL);
    if (t != NULL) {
        if (has_stage && strcmp(event, "stage_end") == 0) {
            uint64_t bytes = stage == STAGE_FETCH    ? t->body_bytes
                             : stage == STAGE_DECODE ? t->warped_bytes
                                                     : t->output_bytes;
            fprintf(f, ",\"bytes\":%llu", (unsigned long long)bytes);
            if (stage == STAGE_FETCH)
                fprintf(f, ",\"attempts\":%u,\"throttled\":%u", t->attempts, t->throttled);
        }
        fprintf(f, ",\"reserved\":%llu,\"waited_ms\":{", (unsigned long long)t->reserved);
        for (int b = 0; b < BUDGET_COUNT; b++) {
            fprintf(f, "%s\"%s\":", b ? "," : "", pipe_budget_name(b));
            put_fixed3(f, t->waited[b], BAND_MSEC);
        }
        fputc('}', f);
        if (is_final(event)) {
            fputs(",\"result\":", f);
            put_string(f, tile_result_name(t->result));
            fputs(",\"reason\":", f);
            put_string(f, tile_reason_name(t->reason));
            fputs(",\"detail\":", f);
            put_string_n(f, t->detail, sizeof t->detail);
        }
    }
    if (fputs("}\n", f) == EOF || ferror(f))
        j->failed = 1;
}

int jlog_close(struct jlog *j)
{
    if (j == NULL)
        return 0;
    int rc = j->failed ? -1 : 0;
    if (j->f != NULL) {
        if (fflush(j->f) != 0 || ferror(j->f))
            rc = -1;
        if (fclose(j->f) != 0)
            rc = -1;
    }
    free(j);
    return rc;
}
