/* SPDX-License-Identifier: MIT */
/*
 * fetch.c - the fetch stage: one tile's body into memory.
 *
 * HTTP: a connection, then a request slot of the rate budget, then the transfer on the
 * loop's curl multi handle. The status is known before any body byte arrives: an error
 * body is discarded as it streams, never stored or decoded. The first body byte brings
 * Content-Length, and the body's bytes are reserved from the memory budget before its
 * buffer exists (the transfer pauses while the reservation waits). A 429 or 503 slows the
 * whole run to the server's pace (Retry-After, and RateLimit-Policy when the server says
 * it) and the tile tries again; an unreachable host is retried with exponential backoff a
 * bounded number of times.
 *
 * Local files (file:// or paths): no connection and no request slot; the size comes from
 * stat(), the bytes are reserved, then libuv's thread pool reads the file.
 */
#include "pipe_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "errtext.h"

#define THROTTLE_TRIES 20 /* 429/503 answers one tile accepts before it gives up */

static void conn_acquire(struct tctx *c);
static void on_body_bytes(band_uv_op *op, int status);

void fetch_free_body(struct tctx *c)
{
    if (c->body == NULL)
        return;
    free(c->body);
    c->body = NULL;
    pipe_alloc_sub(c->p, c->body_size);
    if (c->body_grant.n > 0)
        band_admit_release(&c->body_grant); /* its bytes, and its share of the bodies' */
}

/* The easy handle is done with (ended, failed, or removed). */
static void xfer_cleanup(struct tctx *c)
{
    if (c->xfer.easy != NULL) {
        curl_easy_cleanup(c->xfer.easy);
        c->xfer.easy = NULL;
    }
}

static void conn_release(struct tctx *c, int outcome)
{
    struct pipe *p = c->p;
    if (c->conn.count == 0)
        return;
    pipe_stage_end(c, STAGE_FETCH);
    if (c->conn_limit_held) {
        /* The adaptive limit takes its permit back itself with the sample. */
        (void)band_permit_forget(&c->conn);
        (void)band_limit_on_done(p->conn_limit, c->req_start, band_now(), outcome);
        c->conn_limit_held = 0;
        p->st->budget[BUDGET_CONNECTIONS].limit = band_limit_current(p->conn_limit);
    } else {
        (void)band_permit_release(&c->conn);
    }
    pipe_use(p, BUDGET_CONNECTIONS, -1);
}

void fetch_abandon(struct tctx *c)
{
    if (c->state == TS_TRANSFER && !c->local && c->xfer.easy != NULL) {
        curl_uv_remove(c->p->cu, &c->xfer);
        xfer_cleanup(c);
        conn_release(c, BAND_LIMIT_IGNORE);
        pipe_finish(c, TILE_ABANDONED);
    } else if (c->state == TS_TRANSFER && c->local) {
        c->abandon = 1; /* the read finishes on libuv's pool; then it is dropped */
    }
    /* TS_WAIT_BODY: its reservation wait is bound to the abandon token and ends with
     * BAND_ECANCELED, which removes the transfer. */
}

/* ---- the body's bytes -------------------------------------------------------------- */

/* The body's buffer once its bytes are granted. 0, or -1 with the reason set. */
static int body_alloc(struct tctx *c, size_t n)
{
    struct pipe *p = c->p;
    c->body = malloc(n);
    if (c->body == NULL) {
        if (c->body_grant.n > 0)
            band_admit_release(&c->body_grant);
        c->fail_reason = REASON_TOO_LARGE;
        snprintf(c->fail_detail, sizeof(c->fail_detail), "out of memory for %zu bytes", n);
        return -1;
    }
    pipe_alloc_add(p, c->body_size);
    if (p->bytes_budgeted) {
        c->t->reserved += n;
        pipe_memory_changed(p);
    }
    return 0;
}

/* Reserve @c->body_size bytes, then allocate the buffer. The bytes come from the memory
 * budget and, in the same admission, from the share of it that fetched bodies may hold
 * until they are decoded (a third): decoding always finds the rest, so bodies waiting for
 * the decoders can never hold the memory the decoders need. Returns 0 (the body has its
 * buffer), 1 (the reservation waits: on_body_bytes continues), or -1 (failed, reason set
 * in the tile context). */
static int body_reserve(struct tctx *c)
{
    struct pipe *p = c->p;
    size_t n = c->body_size > 0 ? c->body_size : 1;
    if (!p->bytes_budgeted)
        return body_alloc(c, n); /* memory by count: the body is outside any byte bound */
    uint64_t share = p->z->body_share;
    if ((uint64_t)n > share) {
        char h1[32], h2[32], h3[32];
        c->fail_reason = REASON_TOO_LARGE;
        snprintf(c->fail_detail, sizeof(c->fail_detail),
                 "body of %s is larger than the %s of the %s memory budget that fetched "
                 "bodies may hold",
                 sizing_human(n, h1, sizeof(h1)), sizing_human(share, h2, sizeof(h2)),
                 sizing_human(band_budget_capacity(p->memory), h3, sizeof(h3)));
        return -1;
    }
    band_admit_req_init(&c->body_req, NULL, NULL);
    (void)band_admit_req_add(&c->body_req, p->bodies, (uint64_t)n);
    (void)band_admit_req_add(&c->body_req, band_budget_sem(p->memory), (uint64_t)n);
    int rc = band_admit_try_acquire(&c->body_req, &c->body_grant);
    if (rc == 0)
        return body_alloc(c, n);
    if (rc == BAND_EAGAIN) {
        c->op.data = c;
        pipe_wait_begin(c, BUDGET_MEMORY);
        rc = band_uv_bind(p->bu, &c->op, &c->body_req.w, on_body_bytes, BAND_FOREVER, p->abandon);
        if (rc == 0) {
            rc = band_admit_acquire_async(&c->body_req);
            (void)band_uv_start(&c->op, rc);
            return 1;
        }
        pipe_wait_end(c, 0);
    }
    c->fail_reason = REASON_TOO_LARGE;
    snprintf(c->fail_detail, sizeof(c->fail_detail), "reserving %zu bytes: %s", n,
             band_strerror(rc));
    return -1;
}

/* ---- the end of a fetch -------------------------------------------------------------- */

/* The whole body is in memory: read its header, then on to the decoders. */
static void body_complete(struct tctx *c)
{
    struct pipe *p = c->p;
    struct tile *t = c->t;
    struct raster_info info;
    char err[TILE_DETAIL_MAX];
    t->body_bytes = c->body_len;
    p->st->bytes_in += c->body_len;
    if (raster_probe(c->body, c->body_len, p->o->crs, &info, err, sizeof(err)) != 0) {
        pipe_fail(c, REASON_CORRUPT, "%s", err);
        return;
    }
    t->width = info.width;
    t->height = info.height;
    t->bands = info.bands;
    t->decoded_bytes = info.decoded_bytes;
    t->warped_bytes = info.warped_bytes;
    pipe_fetched(c);
}

static void retry_later(struct tctx *c, band_time delay);
static void first_answer(struct pipe *p);

static void on_done(struct curl_uv_xfer *x, CURLcode result)
{
    struct tctx *c = (struct tctx *)x; /* the transfer is the first member */
    struct pipe *p = c->p;
    struct tile *t = c->t;
    long status = 0;
    (void)curl_easy_getinfo(c->xfer.easy, CURLINFO_RESPONSE_CODE, &status);
    c->status = status;
    xfer_cleanup(c);
    first_answer(p); /* even one that failed without headers */

    if (result == CURLE_OK && (status == 429 || status == 503)) {
        conn_release(c, BAND_LIMIT_DROPPED);
        if (!c->throttle_seen) /* else its headers already slowed the run */
            pipe_throttled(c);
        if (t->throttled >= THROTTLE_TRIES) {
            pipe_fail(c, REASON_THROTTLED, "HTTP %ld, %u times", status, t->throttled);
            return;
        }
        retry_later(c, 0); /* the request budget carries the server's pace now */
        return;
    }
    if (result == CURLE_OK && status >= 400) {
        conn_release(c, status >= 500 ? BAND_LIMIT_DROPPED : BAND_LIMIT_IGNORE);
        if (status >= 500 && t->attempts <= p->o->retries) {
            retry_later(c, (band_time)(100 * BAND_MSEC) << (t->attempts - 1));
            return;
        }
        pipe_fail(c, REASON_HTTP, "HTTP %ld", status);
        return;
    }
    if (result != CURLE_OK) {
        conn_release(c, c->fail_reason != 0 ? BAND_LIMIT_IGNORE : BAND_LIMIT_DROPPED);
        if (c->fail_reason != 0) { /* a callback refused the body: its reason stands */
            pipe_fail(c, c->fail_reason, "%s", c->fail_detail);
            return;
        }
        if (t->attempts <= p->o->retries) {
            fetch_free_body(c);
            c->t->reserved = 0;
            pipe_memory_changed(p);
            retry_later(c, (band_time)(200 * BAND_MSEC) << (t->attempts - 1));
            return;
        }
        pipe_fail(c, REASON_UNREACHABLE, "%s%s%s (after %u attempt%s)", curl_easy_strerror(result),
                  c->errbuf[0] ? ": " : "", c->errbuf, t->attempts, t->attempts == 1 ? "" : "s");
        return;
    }
    t->body_bytes = c->body_len; /* for the fetch's stage_end event */
    conn_release(c, BAND_LIMIT_OK);
    if (c->body == NULL) {
        pipe_fail(c, REASON_CORRUPT, "empty body");
        return;
    }
    if (c->body_len != c->body_size) {
        pipe_fail(c, REASON_UNREACHABLE, "body ended after %zu of %zu bytes", c->body_len,
                  c->body_size);
        return;
    }
    body_complete(c);
}

/* ---- curl callbacks ------------------------------------------------------------------ */

/* "Retry-After: 2" or an HTTP date, as a delay. */
static band_time parse_retry_after(const char *v)
{
    while (*v == ' ' || *v == '\t')
        v++;
    char *end = NULL;
    long long s = strtoll(v, &end, 10);
    if (end != v && s >= 0)
        return (band_time)(s > 3600 ? 3600 : s) * BAND_SEC;
    time_t when = curl_getdate(v, NULL);
    time_t now = time(NULL);
    if (when > now)
        return (band_time)(when - now > 3600 ? 3600 : when - now) * BAND_SEC;
    return 0;
}

static size_t on_header(char *buf, size_t size, size_t nitems, void *userdata)
{
    struct tctx *c = userdata;
    size_t n = size * nitems;
    char line[256];
    size_t len = n < sizeof(line) - 1 ? n : sizeof(line) - 1;
    memcpy(line, buf, len);
    line[len] = '\0';
    line[strcspn(line, "\r\n")] = '\0';
    if (strncmp(line, "HTTP/", 5) == 0) { /* a new response (after a redirect too) */
        const char *sp = strchr(line, ' ');
        c->status = sp != NULL ? strtol(sp + 1, NULL, 10) : 0;
        if (c->status >= 200 && c->status < 300) /* accepted: counted as soon as known */
            c->p->ok_bucket[c->p->bucket]++;
        c->retry_after = 0;
        c->policy_q = c->policy_w = 0;
    } else if (line[0] == '\0') {
        /* The end of this response's headers: what they say of the server's pace applies
         * now, to every request not yet sent, not once the body has arrived. */
        if (c->status == 429 || c->status == 503) {
            if (!c->throttle_seen)
                pipe_throttled(c);
            c->throttle_seen = 1;
        } else if (c->status >= 200 && c->status < 300) {
            pipe_policy_seen(c); /* a server that states its pace is kept to before any 429 */
        }
        if (c->status >= 200)
            first_answer(c->p);
    } else if (strncasecmp(line, "Retry-After:", 12) == 0) {
        c->retry_after = parse_retry_after(line + 12);
        if (c->retry_after == 0)
            c->retry_after = 1; /* "now": still a Retry-After */
    } else if (strncasecmp(line, "RateLimit-Policy:", 17) == 0) {
        /* "q;w=W" (a quota of q requests per window of W seconds) */
        unsigned long long q = 0, w = 1;
        const char *v = line + 17;
        q = strtoull(v, NULL, 10);
        const char *wp = strstr(v, "w=");
        if (wp != NULL)
            w = strtoull(wp + 2, NULL, 10);
        if (q > 0 && w > 0) {
            c->policy_q = q;
            c->policy_w = w;
        }
    }
    return n;
}

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    struct tctx *c = userdata;
    size_t n = size * nmemb;
    if (c->status < 200 || c->status >= 300)
        return n; /* an error body: discarded as it streams, never stored or decoded */
    if (c->body == NULL) {
        curl_off_t cl = -1;
        if (curl_easy_getinfo(c->xfer.easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl) != CURLE_OK ||
            cl < 0) {
            c->fail_reason = REASON_NO_LENGTH;
            snprintf(c->fail_detail, sizeof(c->fail_detail),
                     "no Content-Length: the body cannot be reserved before it is read");
            return 0;
        }
        if ((uint64_t)cl > BAND_MAX_UNITS || (uint64_t)cl > SIZE_MAX / 2) {
            c->fail_reason = REASON_TOO_LARGE;
            snprintf(c->fail_detail, sizeof(c->fail_detail), "Content-Length %lld", (long long)cl);
            return 0;
        }
        c->body_size = (size_t)cl;
        c->body_len = 0;
        int rc = body_reserve(c);
        if (rc < 0)
            return 0; /* fails the transfer; on_done reports the reason */
        if (rc > 0) {
            c->state = TS_WAIT_BODY;
            return CURL_WRITEFUNC_PAUSE;
        }
    }
    if (n > c->body_size - c->body_len) {
        c->fail_reason = REASON_CORRUPT;
        snprintf(c->fail_detail, sizeof(c->fail_detail), "more body than its Content-Length of %zu",
                 c->body_size);
        return 0;
    }
    memcpy(c->body + c->body_len, ptr, n);
    c->body_len += n;
    return n;
}

/* The memory budget granted (or refused) the body's bytes. */
static void on_body_bytes(band_uv_op *op, int status)
{
    struct tctx *c = op->data;
    struct pipe *p = c->p;
    size_t n = c->body_size > 0 ? c->body_size : 1;
    pipe_wait_end(c, status == 0);
    if (status == 0) {
        if (band_admit_req_grant(&c->body_req, &c->body_grant) != 0)
            status = BAND_EINVAL;
        else if (body_alloc(c, n) != 0)
            status = BAND_ENOMEM;
    }
    if (c->local) {
        if (status == BAND_ECANCELED) {
            pipe_finish(c, TILE_ABANDONED);
            return;
        }
        if (status != 0) {
            pipe_fail(c, REASON_TOO_LARGE, "reserving %zu bytes: %s", n, band_strerror(status));
            return;
        }
        fetch_read_local(c);
        return;
    }
    if (status != 0) {
        curl_uv_remove(p->cu, &c->xfer);
        xfer_cleanup(c);
        conn_release(c, BAND_LIMIT_IGNORE);
        if (status == BAND_ECANCELED)
            pipe_finish(c, TILE_ABANDONED);
        else
            pipe_fail(c, REASON_TOO_LARGE, "reserving %zu bytes: %s", n, band_strerror(status));
        return;
    }
    c->state = TS_TRANSFER;
    /* Resuming may deliver the bytes curl kept at once, through on_body. */
    CURLcode cc = curl_easy_pause(c->xfer.easy, CURLPAUSE_CONT);
    if (cc != CURLE_OK) {
        curl_uv_remove(p->cu, &c->xfer);
        xfer_cleanup(c);
        conn_release(c, BAND_LIMIT_IGNORE);
        pipe_fail(c, REASON_UNREACHABLE, "curl_easy_pause: %s", curl_easy_strerror(cc));
    }
}

/* ---- the request --------------------------------------------------------------------- */

static void send_request(struct tctx *c)
{
    struct pipe *p = c->p;
    struct tile *t = c->t;
    CURL *e = curl_easy_init();
    if (e == NULL) {
        conn_release(c, BAND_LIMIT_IGNORE);
        pipe_fail(c, REASON_UNREACHABLE, "curl_easy_init failed");
        return;
    }
    c->xfer.easy = e;
    c->errbuf[0] = '\0';
    c->status = 0;
    c->fail_reason = 0;
    c->fail_detail[0] = '\0';
    curl_easy_setopt(e, CURLOPT_URL, c->url);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, (void *)c);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, (void *)c);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, c->errbuf);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(e, CURLOPT_MAXREDIRS, 5L);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L); /* a stalled server: 30 s, then retry */
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, 30L);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_USERAGENT, "band-pipe");
    c->xfer.done = on_done;
    t->attempts++;
    p->st->requests++;
    if (p->requests_sent++ == 0)
        p->first_sent = band_now();
    c->throttle_seen = 0;
    p->req_bucket[p->bucket]++;
    c->req_start = band_now();
    c->state = TS_TRANSFER;
    if (curl_uv_add(p->cu, &c->xfer) != 0) {
        xfer_cleanup(c);
        conn_release(c, BAND_LIMIT_IGNORE);
        pipe_fail(c, REASON_UNREACHABLE, "curl_multi_add_handle failed");
    }
}

/* ---- the request pace ---------------------------------------------------------------- */

/* Requests wait for their turn in one first-in first-out queue and are sent from its head
 * by one timer, each only when a token is in the request budget now and no Retry-After
 * runs. No slot is ever booked ahead: a loop that stalls (a busy machine, a sanitizer)
 * sends, when it catches up, what the bucket holds now, never every slot that fell due
 * meanwhile, a burst the server would answer with 429 again. Until the first answer's
 * headers arrive (for at most FIRST_ANSWER_WAIT) only one request is out: they say the
 * server's pace (RateLimit-Policy), which a first wave sent blind would overrun, and a 429
 * costs a whole Retry-After. */

#define FIRST_ANSWER_WAIT BAND_SEC /* a server slow to answer delays the rest no longer */

static void on_pace(uv_timer_t *tm);

/* Run the pacer again after @delay nanoseconds (0: on the loop's next turn). Safe inside
 * curl's callbacks: it only arms the timer, it sends nothing. */
static void pace_after(struct pipe *p, band_time delay)
{
    uint64_t ms = delay > 0 ? (uint64_t)((delay + BAND_MSEC - 1) / BAND_MSEC) : 0;
    (void)uv_timer_start(&p->pacer, on_pace, ms, 0);
}

static struct tctx *pace_pop(struct pipe *p)
{
    struct tctx *c = p->rate_head;
    p->rate_head = c->rate_next;
    if (p->rate_head == NULL)
        p->rate_tail = &p->rate_head;
    c->rate_next = NULL;
    return c;
}

/* What the head of the queue waits for now: 0 (it may be sent), or the nanoseconds until
 * it may. A budget error is returned as *@rc. */
static band_time pace_wait(struct pipe *p, int *rc)
{
    band_time now = band_now();
    *rc = 0;
    if (!p->answered && p->requests_sent > 0 && now - p->first_sent < FIRST_ANSWER_WAIT)
        return p->first_sent + FIRST_ANSWER_WAIT - now; /* the first answer runs it sooner */
    if (p->requests_resume > now)
        return p->requests_resume - now;
    if (p->requests == NULL)
        return 0;
    band_time wait = 0;
    int r = band_rate_try_acquire(p->requests, 1, &wait);
    if (r == BAND_EAGAIN)
        return wait > 0 ? wait : 1;
    *rc = r;
    return 0;
}

/* Send from the head of the queue while the pace allows, then arm the timer for the next. */
static void pace_run(struct pipe *p)
{
    while (p->rate_head != NULL) {
        int rc = 0;
        band_time wait = pace_wait(p, &rc);
        if (wait > 0) {
            pace_after(p, wait);
            return;
        }
        struct tctx *c = pace_pop(p);
        pipe_wait_end(c, rc == 0);
        if (rc != 0) {
            conn_release(c, BAND_LIMIT_IGNORE);
            pipe_fail(c, REASON_THROTTLED, "request budget: %s", band_strerror(rc));
            continue;
        }
        send_request(c);
    }
    uv_timer_stop(&p->pacer);
}

static void on_pace(uv_timer_t *tm)
{
    pace_run(tm->data);
}

/* The first answer's headers (or, without any, its end) came: the requests held back for
 * it may go, at the pace it stated if it stated one. */
static void first_answer(struct pipe *p)
{
    if (p->answered)
        return;
    p->answered = 1;
    if (p->rate_head != NULL)
        pace_after(p, 0);
}

/* The tile holds its connection: send its request now if the pace allows and nobody is
 * ahead of it, else queue it for the pacer. */
static void rate_wait(struct tctx *c)
{
    struct pipe *p = c->p;
    if (p->stopping) {
        conn_release(c, BAND_LIMIT_IGNORE);
        pipe_finish(c, p->stopping >= 2 ? TILE_ABANDONED : TILE_PENDING);
        return;
    }
    if (p->rate_head == NULL) {
        int rc = 0;
        band_time wait = pace_wait(p, &rc);
        if (wait == 0 && rc != 0) {
            conn_release(c, BAND_LIMIT_IGNORE);
            pipe_fail(c, REASON_THROTTLED, "request budget: %s", band_strerror(rc));
            return;
        }
        if (wait == 0) {
            send_request(c);
            return;
        }
    }
    c->state = TS_WAIT_RATE;
    c->rate_next = NULL;
    *p->rate_tail = c;
    p->rate_tail = &c->rate_next;
    pipe_wait_begin(c, BUDGET_REQUESTS);
    pace_run(p);
}

void fetch_stop_waiting(struct pipe *p)
{
    uv_timer_stop(&p->pacer);
    while (p->rate_head != NULL) {
        struct tctx *c = pace_pop(p);
        pipe_wait_end(c, 0);
        conn_release(c, BAND_LIMIT_IGNORE);
        pipe_finish(c, p->stopping >= 2 ? TILE_ABANDONED : TILE_PENDING);
    }
}

static void on_conn(band_uv_op *op, int status)
{
    struct tctx *c = op->data;
    struct pipe *p = c->p;
    pipe_wait_end(c, status == 0);
    if (status != 0) {
        if (status == BAND_ECANCELED || status == BAND_ECLOSED)
            pipe_finish(c, p->stopping >= 2 ? TILE_ABANDONED : TILE_PENDING);
        else
            pipe_fail(c, REASON_UNREACHABLE, "waiting for a connection: %s", band_strerror(status));
        return;
    }
    (void)band_permit_adopt(&c->conn, p->connections, 1);
    if (p->conn_limit != NULL) {
        (void)band_limit_adopt(p->conn_limit);
        c->conn_limit_held = 1;
    }
    pipe_use(p, BUDGET_CONNECTIONS, 1);
    pipe_stage_begin(c, STAGE_FETCH);
    rate_wait(c);
}

static void conn_acquire(struct tctx *c)
{
    struct pipe *p = c->p;
    if (p->stopping) {
        pipe_finish(c, p->stopping >= 2 ? TILE_ABANDONED : TILE_PENDING);
        return;
    }
    c->state = TS_WAIT_CONN;
    c->op.data = c;
    pipe_wait_begin(c, BUDGET_CONNECTIONS);
    int rc = band_uv_bind(p->bu, &c->op, &c->w, on_conn, BAND_FOREVER, p->stop);
    if (rc != 0) {
        pipe_wait_end(c, 0);
        pipe_finish(c, TILE_PENDING);
        return;
    }
    rc = band_sem_acquire_async(p->connections, 1, &c->w);
    (void)band_uv_start(&c->op, rc);
}

static void on_backoff(band_uv_op *op, int status)
{
    struct tctx *c = op->data;
    if (status != 0) {
        pipe_finish(c, c->p->stopping >= 2 ? TILE_ABANDONED : TILE_PENDING);
        return;
    }
    conn_acquire(c);
}

static void retry_later(struct tctx *c, band_time delay)
{
    struct pipe *p = c->p;
    if (delay <= 0) {
        conn_acquire(c);
        return;
    }
    c->state = TS_BACKOFF;
    c->op.data = c;
    if (band_uv_at(p->bu, &c->op, on_backoff, band_now() + delay, p->stop) != 0)
        pipe_finish(c, TILE_PENDING);
}

/* ---- local files --------------------------------------------------------------------- */

static void read_work(uv_work_t *req)
{
    struct tctx *c = req->data;
    c->read_errno = 0;
    int fd = open(c->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        c->read_errno = errno;
        return;
    }
    size_t got = 0;
    while (got < c->body_size) {
        ssize_t r = read(fd, c->body + got, c->body_size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            c->read_errno = r < 0 ? errno : EIO;
            break;
        }
        got += (size_t)r;
    }
    c->body_len = got;
    close(fd);
}

static void read_done(uv_work_t *req, int status)
{
    struct tctx *c = req->data;
    if (c->abandon || status != 0) {
        pipe_finish(c, TILE_ABANDONED);
        return;
    }
    if (c->read_errno != 0) {
        pipe_fail(c, c->read_errno == ENOENT ? REASON_NOT_FOUND : REASON_CORRUPT, "%s: %s", c->path,
                  errtext(c->read_errno));
        return;
    }
    c->t->attempts = 1;
    body_complete(c);
}

void fetch_read_local(struct tctx *c)
{
    pipe_stage_begin(c, STAGE_FETCH);
    c->state = TS_TRANSFER;
    c->read_work.data = c;
    if (uv_queue_work(&c->p->loop, &c->read_work, read_work, read_done) != 0)
        pipe_fail(c, REASON_CORRUPT, "%s: cannot queue the read", c->path);
}

static void fetch_local(struct tctx *c)
{
    struct stat st;
    if (stat(c->path, &st) != 0) {
        pipe_fail(c, errno == ENOENT ? REASON_NOT_FOUND : REASON_CORRUPT, "%s: %s", c->path,
                  errtext(errno));
        return;
    }
    if (!S_ISREG(st.st_mode)) {
        pipe_fail(c, REASON_CORRUPT, "%s: not a regular file", c->path);
        return;
    }
    c->body_size = (size_t)st.st_size;
    c->body_len = 0;
    int rc = body_reserve(c);
    if (rc < 0) {
        pipe_fail(c, c->fail_reason, "%s", c->fail_detail);
        return;
    }
    if (rc > 0) {
        c->state = TS_WAIT_BODY;
        return; /* on_body_bytes reads it once the bytes are granted */
    }
    fetch_read_local(c);
}

void fetch_start(struct tctx *c)
{
    if (c->local)
        fetch_local(c);
    else
        conn_acquire(c);
}
