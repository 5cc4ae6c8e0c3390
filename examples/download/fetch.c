/* SPDX-License-Identifier: MIT */
/*
 * fetch.c - the downloads: slots, response bodies, the byte budget and the counters.
 *
 * The life of one download:
 *
 *   1. band_sem_acquire_async(slots, 1) through libband-uv: the waiter is bound to the loop
 *      (band_uv_bind), the semaphore's answer handed over (band_uv_start), and the callback
 *      runs on the loop when a slot is granted (strict FIFO across all clients: they share
 *      the one semaphore).
 *   2. The permit is moved into the response body object (struct response), and only then
 *      is the request sent: an easy handle joins the curl multi handle.
 *   3. The first body bytes arrive. Content-Length says how large the body is.
 *      - Slots only: the buffer is malloc'd at once.
 *      - With a byte budget: the transfer is paused (CURL_WRITEFUNC_PAUSE) and
 *        band_budget_acquire_async(budget, Content-Length), bound the same way, asks for
 *        the bytes in one acquisition.
 *        When they are granted, band_budget_alloc_reserved() allocates the buffer against
 *        them (the buffer carries the reservation from then on) and the transfer resumes.
 *        A body larger than the whole budget is refused at once (BAND_E2BIG): the
 *        transfer is dropped and counted as refused, like the reference's allocate()
 *        that returns nothing for len > capacity. Streaming it in budget-sized pieces
 *        would be the alternative; this example keeps bodies whole.
 *   4. curl reports the transfer done. The body is consumed (its checksum compared with
 *      the file's), the buffer freed (returning its bytes to the budget) and the slot
 *      permit released. On any failure the same release happens at once.
 *
 * So a slot is held from before the request until the body is gone, whichever function
 * happens to be running: the transfer is what the semaphore bounds. Bytes held while a
 * transfer waits for its reservation (curl's receive buffer, the socket's) are outside
 * the budget; they are bounded per transfer by curl and the kernel, and the slots bound
 * the number of transfers.
 *
 * Everything runs on the loop thread. The counters are plain integers, sampled at every
 * change, together with the semaphore's and the budget's own counters.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include "fetch.h"

#include <band/uv.h>
#include <curl/curl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "curl_uv.h"

#if defined(__GNUC__) || defined(__clang__)
#define PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))
#else
#define PRINTF_LIKE(f, a)
#endif

struct run;

/* The response body: it owns the transfer's slot and, once allocated, its buffer. */
struct response {
    band_permit slot;    /* moved in before the request is sent; released by response_end */
    unsigned char *data; /* Content-Length bytes; from the budget in budget runs */
    size_t size;         /* Content-Length */
    size_t len;          /* bytes received so far */
    int budgeted;        /* data came from band_budget_alloc_reserved() */
};

enum dl_state {
    DL_WAIT_SLOT,  /* slot_op submitted */
    DL_TRANSFER,   /* in curl, receiving */
    DL_WAIT_BYTES, /* in curl but paused, bytes_op submitted */
};

struct client {
    struct run *run;
    unsigned id;
    size_t next;        /* the next of this client's files to start */
    size_t count;       /* this client's files: id, id + clients, id + 2 * clients, ... */
    unsigned in_flight; /* downloads started and not yet ended */
};

struct download {
    struct curl_uv_xfer xfer; /* the transfer as the curl glue sees it */
    struct run *run;
    struct client *client;
    const struct tree_file *file;
    struct download *prev, *next; /* run->active */
    band_uv_op slot_op;           /* waits for a transfer slot, on the loop */
    band_waiter slot_w;           /* ... its acquisition of the semaphore */
    band_uv_op bytes_op;          /* budget runs: waits for Content-Length bytes */
    band_waiter bytes_w;          /* ... its acquisition of the budget */
    enum dl_state state;
    int in_curl;  /* the easy handle is in the multi handle */
    int stopping; /* the run is ending: give everything back when the callback comes */
    int refused;  /* the budget refused the body (BAND_E2BIG) */
    char why[120];
    char errbuf[CURL_ERROR_SIZE];
    char url[600];
    struct response resp;
};

struct run {
    const struct fetch_config *cfg;
    struct fetch_result *res;
    uv_loop_t *loop;
    band_uv *bu;
    struct curl_uv *cu;
    band_sem *slots;
    band_budget *budget; /* NULL in slots-only runs */
    uv_timer_t tick;     /* once a second: the timeline */
    uv_timer_t watch;    /* every 100 ms: the stop flag and the run's deadline */
    struct client *clients;
    struct download *active; /* every download that has not ended */
    band_time t0, deadline;
    int stopping;  /* no new downloads; pending ones are being ended */
    int closing;   /* the handles are being closed */
    unsigned open; /* things still to close: 2 timers, band_uv, curl_uv */
    uint64_t in_flight;
    uint64_t buffered;
    struct fetch_tick cur; /* the second in progress */
    size_t ticks_cap;
};

static void client_pump(struct client *c);
static void maybe_finish(struct run *run);

/* ---- counters ------------------------------------------------------------------------ */

static uint64_t max_u64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

/* Raises every peak from the current counters and the primitives' own. */
static void sample(struct run *run)
{
    struct fetch_result *r = run->res;
    r->peak_in_flight = max_u64(r->peak_in_flight, run->in_flight);
    r->peak_slots_held =
        max_u64(r->peak_slots_held, run->cfg->slots - band_sem_available(run->slots));
    r->peak_buffered = max_u64(r->peak_buffered, run->buffered);
    if (run->budget != NULL) {
        band_budget_stats st;
        if (band_budget_get_stats(run->budget, &st) == 0)
            r->peak_budget_in_use = max_u64(r->peak_budget_in_use, st.in_use);
    }
    run->cur.in_flight_peak = max_u64(run->cur.in_flight_peak, run->in_flight);
    run->cur.buffered_peak = max_u64(run->cur.buffered_peak, run->buffered);
}

static void record_error(struct run *run, const char *fmt, ...) PRINTF_LIKE(2, 3);

static void record_error(struct run *run, const char *fmt, ...)
{
    struct fetch_result *r = run->res;
    if (r->errors < FETCH_ERRORS_KEPT) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->error[r->errors], sizeof(r->error[0]), fmt, ap);
        va_end(ap);
    }
    r->errors++;
}

/* Closes the second in progress and starts the next. */
static void push_tick(struct run *run)
{
    struct fetch_result *r = run->res;
    if (r->nticks == run->ticks_cap) {
        size_t cap = run->ticks_cap ? 2 * run->ticks_cap : 64;
        struct fetch_tick *t = realloc(r->timeline, cap * sizeof(*t));
        if (t == NULL)
            return; /* the timeline loses a second; the counters are unaffected */
        r->timeline = t;
        run->ticks_cap = cap;
    }
    run->cur.in_flight = run->in_flight;
    r->timeline[r->nticks++] = run->cur;
    memset(&run->cur, 0, sizeof(run->cur));
    run->cur.in_flight_peak = run->in_flight;
    run->cur.buffered_peak = run->buffered;
}

/* ---- the response body ---------------------------------------------------------------- */

/* Moves the granted slot into the body: from here on the body owns it. */
static int response_take_slot(struct download *d)
{
    int rc = band_permit_adopt(&d->resp.slot, d->run->slots, 1);
    if (rc != 0)
        return rc;
    d->run->in_flight++;
    sample(d->run);
    return 0;
}

/* Consumes a whole body: compares its checksum with the file's. */
static void response_consume(struct download *d)
{
    struct run *run = d->run;
    const struct tree_file *f = d->file;
    uint64_t sum = tree_checksum(TREE_CHECKSUM_INIT, d->resp.data, d->resp.len);
    if (d->resp.len == f->size && sum == f->sum) {
        run->res->ok++;
    } else {
        run->res->bad_checksum++;
        record_error(run, "%s: %zu bytes with checksum %016llx, want %llu bytes with %016llx",
                     f->path, d->resp.len, (unsigned long long)sum, (unsigned long long)f->size,
                     (unsigned long long)f->sum);
    }
    run->cur.done++;
}

/* Frees the body: the buffer (and with it its bytes of the budget), then the slot. */
static void response_end(struct download *d)
{
    struct run *run = d->run;
    struct response *resp = &d->resp;
    if (resp->data != NULL) {
        if (resp->budgeted)
            band_budget_free(resp->data);
        else
            free(resp->data);
        resp->data = NULL;
        run->buffered -= resp->size;
    }
    if (resp->slot.count > 0) {
        int rc = band_permit_release(&resp->slot);
        if (rc != 0) {
            record_error(run, "band_permit_release: %s", band_strerror(rc));
            run->res->internal++;
        }
        run->in_flight--;
    }
    sample(run);
}

/* ---- one download ----------------------------------------------------------------------- */

static void unlink_download(struct run *run, struct download *d)
{
    if (d->prev != NULL)
        d->prev->next = d->next;
    else
        run->active = d->next;
    if (d->next != NULL)
        d->next->prev = d->prev;
}

/* Ends a download that is no longer in curl and has no operation pending: gives back what
 * its body holds, counts a failure when @failure is set, and lets its client go on. */
static void download_end(struct download *d, const char *failure)
{
    struct run *run = d->run;
    struct client *c = d->client;
    if (failure != NULL) {
        if (d->refused) {
            run->res->refused++;
        } else {
            run->res->failed++;
            record_error(run, "%s: %s", d->file->path, failure);
        }
    }
    response_end(d);
    unlink_download(run, d);
    free(d);
    c->in_flight--;
    client_pump(c);
    maybe_finish(run);
}

/* Takes a download out of curl and ends it. Not from inside a curl callback. */
static void download_abort(struct download *d, const char *why)
{
    if (d->in_curl) {
        curl_uv_remove(d->run->cu, &d->xfer);
        d->in_curl = 0;
    }
    curl_easy_cleanup(d->xfer.easy);
    d->xfer.easy = NULL;
    download_end(d, why);
}

static void on_bytes(band_uv_op *op, int status);

/* CURLOPT_WRITEFUNCTION: the body arrives. */
static size_t on_body(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    struct download *d = userdata;
    struct run *run = d->run;
    size_t n = size * nmemb;

    if (d->resp.slot.count == 0)
        run->res->bytes_outside_slot += n; /* never: the body owns its slot */

    if (d->resp.data == NULL) {
        curl_off_t cl = -1;
        if (curl_easy_getinfo(d->xfer.easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl) != CURLE_OK ||
            cl < 0) {
            snprintf(d->why, sizeof(d->why), "no Content-Length: cannot size the buffer");
            return 0; /* fails the transfer with CURLE_WRITE_ERROR */
        }
        if ((uint64_t)cl > SIZE_MAX / 2) {
            snprintf(d->why, sizeof(d->why), "Content-Length %lld is too large", (long long)cl);
            return 0;
        }
        d->resp.size = (size_t)cl;
        if (run->budget == NULL) {
            /* Slots only: the buffer is outside any byte bound. */
            d->resp.data = malloc(d->resp.size > 0 ? d->resp.size : 1);
            if (d->resp.data == NULL) {
                snprintf(d->why, sizeof(d->why), "out of memory for %zu bytes", d->resp.size);
                return 0;
            }
            run->buffered += d->resp.size;
            sample(run);
        } else {
            /* Reserve the whole body in one acquisition before allocating anything; hold
             * the transfer (curl keeps these bytes) until the reservation is granted. */
            int rc = band_uv_bind(run->bu, &d->bytes_op, &d->bytes_w, on_bytes, BAND_FOREVER, NULL);
            if (rc != 0) {
                snprintf(d->why, sizeof(d->why), "band_uv_bind(budget): %s", band_strerror(rc));
                return 0;
            }
            /* Too big for the whole budget comes back as BAND_E2BIG in on_bytes. */
            rc = band_budget_acquire_async(run->budget, (uint64_t)d->resp.size, &d->bytes_w);
            (void)band_uv_start(&d->bytes_op, rc); /* bound: cannot fail */
            d->state = DL_WAIT_BYTES;
            return CURL_WRITEFUNC_PAUSE;
        }
    }
    if (n > d->resp.size - d->resp.len) {
        snprintf(d->why, sizeof(d->why), "more body than its Content-Length of %zu", d->resp.size);
        return 0;
    }
    memcpy(d->resp.data + d->resp.len, ptr, n);
    d->resp.len += n;
    run->res->bytes += n;
    run->cur.bytes += n;
    return n;
}

/* The budget granted (or refused) the body's bytes. */
static void on_bytes(band_uv_op *op, int status)
{
    struct download *d = op->data;
    struct run *run = d->run;
    band_permit reservation = BAND_PERMIT_INIT;

    if (status == 0) {
        int rc = band_permit_adopt(&reservation, band_budget_sem(run->budget), d->resp.size);
        if (rc != 0) {
            download_abort(d, "band_permit_adopt failed");
            return;
        }
    }
    if (d->stopping) { /* the run ended meanwhile; the transfer is already out of curl */
        band_permit_release(&reservation);
        download_end(d, d->why[0] ? d->why : "stopped");
        return;
    }
    if (status == BAND_E2BIG) {
        d->refused = 1; /* larger than the whole budget: it could never fit */
        download_abort(d, "larger than the budget");
        return;
    }
    if (status != 0) {
        snprintf(d->why, sizeof(d->why), "waiting for budget bytes: %s", band_strerror(status));
        download_abort(d, d->why);
        return;
    }

    void *buf = NULL;
    int rc = band_budget_alloc_reserved(run->budget, d->resp.size, &buf);
    if (rc != 0) {
        band_permit_release(&reservation); /* on failure the reservation stays ours */
        snprintf(d->why, sizeof(d->why), "band_budget_alloc_reserved: %s", band_strerror(rc));
        download_abort(d, d->why);
        return;
    }
    /* The buffer carries the reservation now: forget our copy without releasing it. */
    reservation = (band_permit)BAND_PERMIT_INIT;
    d->resp.data = buf;
    d->resp.budgeted = 1;
    run->buffered += d->resp.size;
    sample(run);

    d->state = DL_TRANSFER;
    /* Resuming may deliver the bytes curl kept right away, through on_body. */
    CURLcode cc = curl_easy_pause(d->xfer.easy, CURLPAUSE_CONT);
    if (cc != CURLE_OK) {
        snprintf(d->why, sizeof(d->why), "curl_easy_pause: %s", curl_easy_strerror(cc));
        download_abort(d, d->why);
    }
}

/* curl finished the transfer, well or not. */
static void on_done(struct curl_uv_xfer *x, CURLcode result)
{
    struct download *d = (struct download *)x; /* xfer is the first member */
    d->in_curl = 0;
    curl_easy_cleanup(d->xfer.easy);
    d->xfer.easy = NULL;

    const char *failure = NULL;
    char why[300];
    if (result == CURLE_OK && d->resp.len == d->resp.size) {
        response_consume(d); /* the body is consumed; download_end frees it */
    } else if (result == CURLE_OK) {
        snprintf(why, sizeof(why), "body ended after %zu of %zu bytes", d->resp.len, d->resp.size);
        failure = why;
    } else {
        snprintf(why, sizeof(why), "%s%s%s", curl_easy_strerror(result),
                 d->why[0] || d->errbuf[0] ? ": " : "", d->why[0] ? d->why : d->errbuf);
        failure = why;
    }
    download_end(d, failure);
}

/* Sends the request of a download whose body already owns a slot. Returns 0 or -1. */
static int send_request(struct download *d)
{
    struct run *run = d->run;
    CURL *e = curl_easy_init();
    if (e == NULL)
        return -1;
    d->xfer.easy = e;
    d->xfer.done = on_done;
    snprintf(d->url, sizeof(d->url), "%s%s", run->cfg->base_url, d->file->path);
    curl_easy_setopt(e, CURLOPT_URL, d->url);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, (void *)d);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, d->errbuf);
    curl_easy_setopt(e, CURLOPT_FAILONERROR, 1L);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_PROXY, ""); /* never via $http_proxy: the server is local */
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    if (curl_uv_add(run->cu, &d->xfer) != 0) {
        curl_easy_cleanup(e);
        d->xfer.easy = NULL;
        return -1;
    }
    d->in_curl = 1;
    return 0;
}

/* A slot was granted (or the wait ended otherwise). */
static void on_slot(band_uv_op *op, int status)
{
    struct download *d = op->data;
    if (status == 0 && response_take_slot(d) != 0) {
        download_end(d, "band_permit_adopt failed");
        return;
    }
    if (d->stopping || status != 0) {
        download_end(d, status != 0 ? band_strerror(status) : "stopped");
        return;
    }
    /* The body owns the slot: now the request may go out. */
    d->state = DL_TRANSFER;
    if (send_request(d) != 0)
        download_end(d, "could not start the transfer");
}

/* Starts file @index for client @c: queues for a slot. */
static void download_start(struct client *c, size_t index)
{
    struct run *run = c->run;
    struct download *d = calloc(1, sizeof(*d)); /* zeroed: the ops' first submission */
    run->res->files++;
    if (d == NULL) {
        run->res->failed++;
        record_error(run, "out of memory");
        return;
    }
    d->run = run;
    d->client = c;
    d->file = &run->cfg->tree->files[index];
    d->resp.slot = (band_permit)BAND_PERMIT_INIT;
    d->slot_op.data = d;
    d->bytes_op.data = d;
    d->state = DL_WAIT_SLOT;
    d->next = run->active;
    if (run->active != NULL)
        run->active->prev = d;
    run->active = d;
    c->in_flight++;
    int rc = band_uv_bind(run->bu, &d->slot_op, &d->slot_w, on_slot, BAND_FOREVER, NULL);
    if (rc == 0)
        rc = band_uv_start(&d->slot_op, band_sem_acquire_async(run->slots, 1, &d->slot_w));
    if (rc != 0) {
        snprintf(d->why, sizeof(d->why), "band_uv_bind(slots): %s", band_strerror(rc));
        unlink_download(run, d);
        c->in_flight--;
        run->res->failed++;
        record_error(run, "%s: %s", d->file->path, d->why);
        free(d);
    }
}

/* Keeps @c's window of downloads full while it has files left. */
static void client_pump(struct client *c)
{
    struct run *run = c->run;
    while (!run->stopping && c->in_flight < run->cfg->window && c->next < c->count) {
        size_t index = c->id + c->next * run->cfg->clients;
        c->next++;
        download_start(c, index);
    }
}

/* ---- the run ---------------------------------------------------------------------------- */

static void on_closed(void *data)
{
    struct run *run = data;
    run->open--;
}

static void on_timer_closed(uv_handle_t *h)
{
    on_closed(h->data);
}

/* The adapter's close has completed: free it. */
static void on_band_closed(void *data)
{
    struct run *run = data;
    int rc = band_uv_destroy(run->bu);
    if (rc != 0) {
        record_error(run, "band_uv_destroy: %s", band_strerror(rc));
        run->res->internal++;
    }
    run->bu = NULL;
    on_closed(run);
}

/* Once nothing is left to do (or the run was stopped and everything has ended): close the
 * adapter, the curl glue and the timers. uv_run() returns when they are closed. */
static void maybe_finish(struct run *run)
{
    if (run->closing || run->active != NULL)
        return;
    if (!run->stopping)
        for (unsigned i = 0; i < run->cfg->clients; i++)
            if (run->clients[i].next < run->clients[i].count)
                return;
    run->closing = 1;
    run->res->seconds = (double)(band_now() - run->t0) / (double)BAND_SEC;
    if (run->cur.done > 0 || run->cur.bytes > 0 || run->res->nticks == 0)
        push_tick(run); /* the last, partial second */
    uv_close((uv_handle_t *)&run->tick, on_timer_closed);
    uv_close((uv_handle_t *)&run->watch, on_timer_closed);
    int rc = band_uv_close(run->bu, on_band_closed, run);
    if (rc != 0) {
        record_error(run, "band_uv_close: %s", band_strerror(rc));
        run->res->internal++;
        run->open--;
    }
    curl_uv_close(run->cu, on_closed, run);
}

/* Ends the run early: no new downloads; every pending one gives back what it holds. */
static void run_stop(struct run *run, const char *why)
{
    if (run->stopping)
        return;
    run->stopping = 1;
    run->res->stopped = 1;
    snprintf(run->res->why, sizeof(run->res->why), "%s", why);
    struct download *d = run->active;
    while (d != NULL) {
        struct download *next = d->next;
        d->stopping = 1;
        if (d->in_curl) {
            curl_uv_remove(run->cu, &d->xfer);
            d->in_curl = 0;
        }
        if (d->state == DL_WAIT_SLOT) {
            band_uv_cancel(&d->slot_op); /* on_slot follows and ends it */
        } else if (d->state == DL_WAIT_BYTES) {
            curl_easy_cleanup(d->xfer.easy);
            d->xfer.easy = NULL;
            band_uv_cancel(&d->bytes_op); /* on_bytes follows and ends it */
        } else {
            download_abort(d, why); /* may free d; next was read before */
        }
        d = next;
    }
    maybe_finish(run);
}

static void on_tick(uv_timer_t *t)
{
    push_tick(t->data);
}

static void on_watch(uv_timer_t *t)
{
    struct run *run = t->data;
    if (run->cfg->stop != NULL && *run->cfg->stop)
        run_stop(run, "interrupted");
    else if (band_now() >= run->deadline)
        run_stop(run, "the run's time limit passed");
}

int fetch_run(uv_loop_t *loop, const struct fetch_config *cfg, struct fetch_result *res)
{
    memset(res, 0, sizeof(*res));
    struct run run;
    memset(&run, 0, sizeof(run));
    run.cfg = cfg;
    run.res = res;
    run.loop = loop;
    int rc;

    if (cfg->clients == 0 || cfg->window == 0 || cfg->slots == 0) {
        fprintf(stderr, "download: clients, window and slots must be at least 1\n");
        return -1;
    }
    rc = band_sem_create(&run.slots, cfg->slots, NULL);
    if (rc == 0) {
        band_sem_set_name(run.slots, "transfer-slots");
        if (cfg->budget > 0 && (rc = band_budget_create(&run.budget, cfg->budget, NULL)) == 0)
            band_budget_set_name(run.budget, "body-bytes");
    }
    if (rc != 0) {
        fprintf(stderr, "download: creating the semaphore or budget: %s\n", band_strerror(rc));
        band_sem_destroy(run.slots);
        return -1;
    }
    run.clients = calloc(cfg->clients, sizeof(*run.clients));
    if (run.clients == NULL || (rc = band_uv_create(&run.bu, loop)) != 0) {
        fprintf(stderr, "download: band_uv_create: %s\n",
                run.clients == NULL ? "out of memory" : band_strerror(rc));
        goto fail;
    }
    if (curl_uv_create(loop, &run.cu) != 0) {
        band_uv_close(run.bu, NULL, NULL);
        uv_run(loop, UV_RUN_DEFAULT);
        band_uv_destroy(run.bu);
        goto fail;
    }
    run.open = 4; /* tick, watch, band_uv, curl_uv */
    uv_timer_init(loop, &run.tick);
    uv_timer_init(loop, &run.watch);
    run.tick.data = &run;
    run.watch.data = &run;

    run.t0 = band_now();
    run.deadline = run.t0 + cfg->timeout;
    uv_timer_start(&run.tick, on_tick, 1000, 1000);
    uv_timer_start(&run.watch, on_watch, 100, 100);

    size_t n = cfg->tree->n;
    for (unsigned i = 0; i < cfg->clients; i++) {
        struct client *c = &run.clients[i];
        c->run = &run;
        c->id = i;
        c->count = n > i ? (n - i + cfg->clients - 1) / cfg->clients : 0;
    }
    for (unsigned i = 0; i < cfg->clients; i++)
        client_pump(&run.clients[i]);
    maybe_finish(&run); /* no files at all */

    uv_run(loop, UV_RUN_DEFAULT);
    if (run.open != 0) {
        record_error(&run, "the loop stopped with %u handles still open", run.open);
        res->internal++;
    }

    band_sem_get_stats(run.slots, &res->slot_stats);
    res->slots_left = band_sem_available(run.slots);
    if (run.budget != NULL) {
        band_budget_get_stats(run.budget, &res->budget_stats);
        res->budget_left = band_budget_available(run.budget);
    }
    rc = band_sem_destroy(run.slots);
    if (rc == 0 && run.budget != NULL)
        rc = band_budget_destroy(run.budget);
    if (rc != 0) {
        record_error(&run, "destroying the semaphore or budget: %s", band_strerror(rc));
        res->internal++;
    }
    free(run.clients);
    return 0;

fail:
    free(run.clients);
    band_budget_destroy(run.budget);
    band_sem_destroy(run.slots);
    return -1;
}

void fetch_result_free(struct fetch_result *res)
{
    free(res->timeline);
    res->timeline = NULL;
    res->nticks = 0;
}
