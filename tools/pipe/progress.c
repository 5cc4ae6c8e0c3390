/* SPDX-License-Identifier: MIT */
/*
 * progress.c - the one-line progress display (progress.h).
 */
#define _DEFAULT_SOURCE
#include "progress.h"

#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define PROGRESS_MAX_COLUMNS 100

char *progress_human_bytes(char *buf, size_t len, uint64_t bytes)
{
    static const char units[] = "BKMGTPE";
    if (bytes < 1024) {
        snprintf(buf, len, "%lluB", (unsigned long long)bytes);
        return buf;
    }
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 6) {
        v /= 1024.0;
        u++;
    }
    if (v < 9.95)
        snprintf(buf, len, "%.1f%c", v, units[u]);
    else
        snprintf(buf, len, "%.0f%c", v, units[u]);
    return buf;
}

static int tty_width(FILE *tty)
{
    struct winsize ws;
    int w = PROGRESS_MAX_COLUMNS;
    if (ioctl(fileno(tty), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 && ws.ws_col < w)
        w = ws.ws_col;
    return w - 1; /* never the last column: some terminals wrap there */
}

/* Append @part (after two blanks when @line is not empty) if it fits in @width, and
 * return 1; else leave @line alone and return 0, so the parts after it are dropped too. */
static int add_part(char *line, size_t *used, size_t width, const char *part)
{
    size_t n = strlen(part), sep = *used > 0 ? 2 : 0;
    if (*used + sep + n > width)
        return 0;
    if (sep) {
        memcpy(line + *used, "  ", 2);
        *used += 2;
    }
    memcpy(line + *used, part, n);
    *used += n;
    line[*used] = '\0';
    return 1;
}

void progress_draw(FILE *tty, const struct pipe_stats *s, band_time now)
{
    enum { NPARTS = 5 };
    char part[NPARTS][96], a[16], b[16];
    static const int stage_budget[STAGE_COUNT] = {BUDGET_CONNECTIONS, BUDGET_CPU, BUDGET_DISK};

    size_t finished = s->done + s->skipped + s->failed + s->abandoned;
    if (s->failed > 0)
        snprintf(part[0], sizeof part[0], "%zu/%zu tiles, %zu failed", finished, s->total,
                 s->failed);
    else
        snprintf(part[0], sizeof part[0], "%zu/%zu tiles", finished, s->total);

    int n = 0;
    for (int st = 0; st < STAGE_COUNT; st++) {
        int w = snprintf(part[1] + n, sizeof part[1] - (size_t)n, "%s%s %llu/%llu", st ? " " : "",
                         pipe_stage_name(st), (unsigned long long)s->stage_in_flight[st],
                         (unsigned long long)s->budget[stage_budget[st]].limit);
        if (w > 0 && (size_t)w < sizeof part[1] - (size_t)n)
            n += w;
    }

    const struct stats_budget *mem = &s->budget[BUDGET_MEMORY];
    if (s->memory_by_count)
        snprintf(part[2], sizeof part[2], "mem %llu/%llu slots, %s held",
                 (unsigned long long)mem->in_use, (unsigned long long)s->memory_by_count,
                 progress_human_bytes(a, sizeof a, s->allocated));
    else
        snprintf(part[2], sizeof part[2], "mem %s/%s",
                 progress_human_bytes(a, sizeof a, mem->in_use),
                 progress_human_bytes(b, sizeof b, mem->limit));

    double rate = s->nsamples > 0 ? s->samples[s->nsamples - 1].request_rate : 0.0;
    snprintf(part[3], sizeof part[3], "%.0f req/s", rate);

    long long secs = now > s->t0 ? (long long)((now - s->t0) / BAND_SEC) : 0;
    if (secs >= 3600)
        snprintf(part[4], sizeof part[4], "%lld:%02lld:%02lld", secs / 3600, secs / 60 % 60,
                 secs % 60);
    else
        snprintf(part[4], sizeof part[4], "%lld:%02lld", secs / 60, secs % 60);

    char line[PROGRESS_MAX_COLUMNS + 1] = "";
    size_t used = 0, width = (size_t)tty_width(tty);
    if (strlen(part[0]) > width) /* a very narrow terminal: cut rather than wrap */
        part[0][width] = '\0';
    for (int i = 0; i < NPARTS && add_part(line, &used, width, part[i]); i++)
        ;

    fprintf(tty, "\r%s\033[K", line);
    fflush(tty);
}

void progress_clear(FILE *tty)
{
    fputs("\r\033[K", tty);
    fflush(tty);
}
