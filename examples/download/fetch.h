/* SPDX-License-Identifier: MIT */
/*
 * fetch.h - one run of the download example: clients, slots, bodies and their counters.
 *
 * Several independent clients, each with its own share of the files, download over one
 * curl multi handle on one uv loop, and all of them share ONE band semaphore of transfer
 * slots. A download acquires a slot before its request is sent and moves the permit into
 * its response body; the permit goes back when the body has been consumed (checksummed)
 * or the transfer failed. With a byte budget, each body's Content-Length is reserved from
 * the budget before the body's buffer is allocated.
 */
#ifndef DOWNLOAD_FETCH_H
#define DOWNLOAD_FETCH_H

#include <band/band.h>

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "tree.h"

struct fetch_config {
    const struct tree *tree;
    const char *base_url;              /* "http://127.0.0.1:PORT/" */
    unsigned clients;                  /* independent clients; file i goes to i % clients */
    unsigned window;                   /* downloads each client keeps outstanding */
    uint64_t slots;                    /* permits of the shared semaphore */
    uint64_t budget;                   /* 0: no byte budget; else its capacity in bytes */
    band_time timeout;                 /* the whole run, in ns */
    const volatile sig_atomic_t *stop; /* set by a signal handler: end the run early */
};

/* One second of the run. */
struct fetch_tick {
    uint64_t in_flight;      /* transfers holding a slot at the end of the second */
    uint64_t in_flight_peak; /* the most during the second */
    uint64_t done;           /* bodies consumed during the second */
    uint64_t bytes;          /* body bytes received during the second */
    uint64_t buffered_peak;  /* the most body bytes allocated during the second */
};

#define FETCH_ERRORS_KEPT 5

struct fetch_result {
    double seconds;
    uint64_t files;        /* downloads attempted */
    uint64_t ok;           /* bodies that arrived whole with the right checksum */
    uint64_t bad_checksum; /* bodies that arrived whole but differ from the file */
    uint64_t failed;       /* transfers that failed (or were stopped) */
    uint64_t refused;      /* larger than the budget's capacity: refused with BAND_E2BIG */
    uint64_t bytes;        /* body bytes received */

    uint64_t peak_in_flight;     /* bodies holding a slot permit, counted here */
    uint64_t peak_slots_held;    /* slots - band_sem_available(), sampled at every change */
    uint64_t peak_buffered;      /* bytes of body buffers allocated, counted here */
    uint64_t peak_budget_in_use; /* the budget's in_use counter, sampled at every change */
    uint64_t bytes_outside_slot; /* body bytes that arrived while no slot was held */

    band_sem_stats slot_stats;      /* the semaphore's counters at the end */
    band_budget_stats budget_stats; /* the budget's counters at the end (budget runs) */
    uint64_t slots_left;            /* permits available at the end: all of them */
    uint64_t budget_left;           /* budget units available at the end: all of them */

    int stopped;       /* 1 when the run ended early */
    char why[128];     /* why it ended early */
    unsigned errors;   /* problems seen (the first few are kept): failures and others */
    unsigned internal; /* of those, band or loop errors that are not transfer failures */
    char error[FETCH_ERRORS_KEPT][200];

    struct fetch_tick *timeline; /* one per second, the last one partial */
    size_t nticks;
};

/**
 * fetch_run() - download every file of @cfg->tree once, as configured, on @loop.
 *
 * Runs the loop until the run is over and every handle it opened is closed. Returns 0
 * when the run took place (what happened is in @res, failures included), or -1 when it
 * could not be set up (printed). Free @res with fetch_result_free() either way.
 */
int fetch_run(uv_loop_t *loop, const struct fetch_config *cfg, struct fetch_result *res);

void fetch_result_free(struct fetch_result *res);

#endif /* DOWNLOAD_FETCH_H */
