/* SPDX-License-Identifier: MIT */
/*
 * shm_hold.c - a process that holds or waits for units of a named segment, for the
 * band-shm tests (tests/shm_tool/shm_tool.sh), which SIGKILL it to make a dead holder.
 *
 *   shm_hold NAME BOUND=N ...          take the units now (one try per bound), print
 *                                      "held", then sleep until killed
 *   shm_hold --wait NAME BOUND=N ...   print "waiting", admit all parts at once (blocking,
 *                                      20 s deadline), print "granted", then sleep
 *
 * Exits 1 when a step fails (the band error on stderr), 2 on bad usage. An alarm ends it
 * after 60 s, so a test that dies never leaves it behind for long.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <band/band.h>
#include <band/shm.h>

static int fail(const char *what, int rc)
{
    fprintf(stderr, "shm_hold: %s: %s (%s)\n", what, band_strerror(rc), band_err_name(rc));
    return 1;
}

int main(int argc, char **argv)
{
    int wait = 0;
    int i = 1;
    alarm(60);
    if (i < argc && strcmp(argv[i], "--wait") == 0) {
        wait = 1;
        i++;
    }
    if (argc - i < 2) {
        fprintf(stderr, "usage: shm_hold [--wait] NAME BOUND=N ...\n");
        return 2;
    }
    band_shm *s = NULL;
    int rc = band_shm_open(&s, argv[i], NULL);
    if (rc != 0)
        return fail("open", rc);
    band_shm_req req;
    (void)band_shm_req_init(&req, NULL, NULL);
    for (i++; i < argc; i++) {
        char *eq = strchr(argv[i], '=');
        if (!eq) {
            fprintf(stderr, "shm_hold: %s: expected BOUND=N\n", argv[i]);
            return 2;
        }
        *eq = '\0';
        unsigned idx;
        rc = band_shm_bound_index(s, argv[i], &idx);
        if (rc != 0)
            return fail(argv[i], rc);
        uint64_t n = strtoull(eq + 1, NULL, 10);
        if (wait)
            rc = band_shm_req_add(&req, idx, n);
        else
            rc = band_shm_try_acquire(s, idx, n);
        if (rc != 0)
            return fail(argv[i], rc);
    }
    if (wait) {
        printf("waiting\n");
        fflush(stdout);
        rc = band_shm_admit(s, &req, band_deadline_after(20 * BAND_SEC), NULL);
        if (rc != 0)
            return fail("admit", rc);
        printf("granted\n");
    } else {
        printf("held\n");
    }
    fflush(stdout);
    for (;;)
        pause();
}
