/* SPDX-License-Identifier: MIT */
/*
 * plot.c - the run's time series through gnuplot (plot.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "plot.h"

#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "errtext.h"

extern char **environ;

static int have_gnuplot(void)
{
    // NOLINTNEXTLINE(concurrency-mt-unsafe): band-pipe sets no environment variables
    const char *path = getenv("PATH");
    if (path == NULL || *path == '\0')
        path = "/usr/bin:/bin";
    char buf[4096];
    while (*path) {
        size_t n = strcspn(path, ":");
        if (n > 0 && n + sizeof "/gnuplot" < sizeof buf) {
            memcpy(buf, path, n);
            memcpy(buf + n, "/gnuplot", sizeof "/gnuplot");
            if (access(buf, X_OK) == 0)
                return 1;
        }
        path += n;
        if (*path == ':')
            path++;
    }
    return 0;
}

/* @s as a gnuplot single-quoted string: a quote is doubled, nothing else is special. */
static void put_quoted(FILE *f, const char *s)
{
    fputc('\'', f);
    for (; *s; s++) {
        if (*s == '\'')
            fputc('\'', f);
        fputc(*s, f);
    }
    fputc('\'', f);
}

static int write_tsv(const char *tsv, const struct pipe_stats *s, char *err, size_t errlen)
{
    FILE *f = fopen(tsv, "w");
    if (f == NULL) {
        snprintf(err, errlen, "plot data %s: %s", tsv, errtext(errno));
        return -1;
    }
    const double mib = 1024.0 * 1024.0;
    fprintf(f, "# t_s\tfetch\tdecode\twrite\tconnections\tcpu\tdisk\treserved_mib\t"
               "allocated_mib\tmemory_budget_mib\trss_mib\topen_fds\tdone\n");
    for (size_t i = 0; i < s->nsamples; i++) {
        const struct stats_sample *r = &s->samples[i];
        fprintf(f, "%.3f\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%.3f\t%.3f\t%.3f\t%.3f\t%llu\t%llu\n",
                (double)r->t / (double)BAND_SEC, (unsigned long long)r->stage_in_flight[0],
                (unsigned long long)r->stage_in_flight[1],
                (unsigned long long)r->stage_in_flight[2],
                (unsigned long long)r->limit[BUDGET_CONNECTIONS],
                (unsigned long long)r->limit[BUDGET_CPU], (unsigned long long)r->limit[BUDGET_DISK],
                (double)r->in_use[BUDGET_MEMORY] / mib, (double)r->allocated / mib,
                (double)r->limit[BUDGET_MEMORY] / mib, (double)r->rss / mib,
                (unsigned long long)r->open_fds, (unsigned long long)r->done);
    }
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        snprintf(err, errlen, "plot data %s: write failed", tsv);
        return -1;
    }
    return 0;
}

static void put_plots(FILE *g, const char *tsv, int have_rows)
{
    fputs("set multiplot layout 2,1 title 'band-pipe: stages and memory over time'\n"
          "set grid\nset key outside right top\nset xlabel 'seconds'\n"
          /* the same margins in both panels, so their time axes line up */
          "set lmargin at screen 0.08\nset rmargin at screen 0.72\n"
          "set ylabel 'tiles in flight'\nset yrange [0:*]\nset offsets 0, 0, graph 0.08, 0\n",
          g);
    if (!have_rows) {
        fputs("set xrange [0:1]\nplot NaN title 'no samples'\n"
              "set ylabel 'MiB'\nplot NaN title 'no samples'\nunset multiplot\n",
              g);
        return;
    }
    static const char *const colour[3] = {"#1f77b4", "#d62728", "#2ca02c"};
    static const char *const stage[3] = {"fetch", "decode", "write"};
    static const char *const limit[3] = {"connections", "cpu", "disk"};
    fputs("plot ", g);
    for (int i = 0; i < 3; i++) {
        if (i)
            fputs(", \\\n     ", g);
        put_quoted(g, tsv);
        fprintf(g, " using 1:%d with steps lw 2 lc rgb '%s' title '%s in flight', ", 2 + i,
                colour[i], stage[i]);
        put_quoted(g, tsv);
        fprintf(g, " using 1:%d with steps dt 2 lw 1.5 lc rgb '%s' title '%s limit (%s)'", 5 + i,
                colour[i], stage[i], limit[i]);
    }
    fputs("\nset ylabel 'MiB'\nplot ", g);
    put_quoted(g, tsv);
    fputs(" using 1:8 with steps lw 2 lc rgb '#9467bd' title 'reserved', ", g);
    put_quoted(g, tsv);
    fputs(" using 1:9 with steps lw 1.5 lc rgb '#ff7f0e' title 'allocated', ", g);
    put_quoted(g, tsv);
    fputs(" using 1:10 with lines dt 2 lw 2 lc rgb '#000000' title 'memory budget', ", g);
    put_quoted(g, tsv);
    fputs(" using 1:11 with lines lw 1 lc rgb '#7f7f7f' title 'RSS'\nunset multiplot\n", g);
}

int plot_write(const char *path, const struct pipe_stats *s, char *err, size_t errlen)
{
    size_t n = path ? strlen(path) : 0;
    if (n < 5 || (strcmp(path + n - 4, ".svg") != 0 && strcmp(path + n - 4, ".png") != 0)) {
        snprintf(err, errlen, "plot %s: the name must end in .svg or .png", path ? path : "");
        return -1;
    }
    char *svg = malloc(4 * (n + 1));
    if (svg == NULL) {
        snprintf(err, errlen, "plot %s: out of memory", path);
        return -1;
    }
    char *png = svg + n + 1, *tsv = png + n + 1, *gp = tsv + n + 1;
    memcpy(svg, path, n - 4);
    memcpy(svg + n - 4, ".svg", 5);
    memcpy(png, path, n - 4);
    memcpy(png + n - 4, ".png", 5);
    memcpy(tsv, path, n - 4);
    memcpy(tsv + n - 4, ".tsv", 5);
    memcpy(gp, path, n - 4);
    memcpy(gp + n - 4, ".gp", 4);

    int rc = -1;
    if (write_tsv(tsv, s, err, errlen) != 0)
        goto out;
    if (!have_gnuplot()) {
        snprintf(err, errlen, "plot %s: gnuplot not found on PATH (Debian: gnuplot-nox)", path);
        goto out;
    }
    FILE *g = fopen(gp, "w");
    if (g == NULL) {
        snprintf(err, errlen, "plot script %s: %s", gp, errtext(errno));
        goto out;
    }
    int rows = s->nsamples > 0;
    fputs("set terminal svg size 1000,700 dynamic enhanced font 'sans,11' background "
          "rgb 'white'\nset output ",
          g);
    put_quoted(g, svg);
    fputc('\n', g);
    put_plots(g, tsv, rows);
    fputs("set terminal pngcairo size 1000,700 enhanced font 'sans,10'\nset output ", g);
    put_quoted(g, png);
    fputc('\n', g);
    put_plots(g, tsv, rows);
    fputs("set output\n", g);
    int bad = ferror(g);
    if (fclose(g) != 0 || bad) {
        snprintf(err, errlen, "plot script %s: write failed", gp);
        unlink(gp);
        goto out;
    }
    /* A script file rather than a pipe: gnuplot stopping at an error cannot raise SIGPIPE
     * here, and its exit status says whether both pictures were written. */
    char prog[] = "gnuplot";
    char *argv[] = {prog, gp, NULL};
    pid_t pid;
    int e = posix_spawnp(&pid, "gnuplot", NULL, NULL, argv, environ);
    if (e != 0) {
        snprintf(err, errlen, "plot %s: cannot run gnuplot: %s", path, errtext(e));
        unlink(gp);
        goto out;
    }
    int status;
    pid_t w;
    while ((w = waitpid(pid, &status, 0)) == -1 && errno == EINTR)
        ;
    unlink(gp);
    if (w == -1) {
        snprintf(err, errlen, "plot %s: waiting for gnuplot: %s", path, errtext(errno));
        goto out;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        snprintf(err, errlen, "plot %s: gnuplot failed (status %d; its messages are above)", path,
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        goto out;
    }
    rc = 0;
out:
    free(svg);
    return rc;
}
