/*
 * band/overload.h - turning band's answers into the answer a server gives.
 *
 * Overload is a product contract: a request that cannot be served now gets a fast,
 * honest answer (busy, over quota, accepted for later, shed), decided before any
 * expensive allocation or side effect, never an unbounded wait. Two layers:
 *
 *  - band_answer_from() maps one result of a band call (0, BAND_EAGAIN, BAND_ETIMEDOUT,
 *    BAND_E2BIG, BAND_ECLOSED, ...) and the bound it came from to an answer with its HTTP
 *    status and a Retry-After;
 *  - band_door is a front door over an optional concurrency semaphore, an optional rate
 *    budget and an optional backlog channel. It sheds lower-priority work first (each
 *    class keeps headroom for the classes above it), takes the permit and the tokens
 *    only when both are there, queues for later when a backlog has room, and counts every
 *    refusal by reason.
 */
#ifndef BAND_OVERLOAD_H
#define BAND_OVERLOAD_H

#include "band/cancel.h"
#include "band/chan.h"
#include "band/core.h"
#include "band/error.h"
#include "band/permit.h"
#include "band/rate.h"
#include "band/sem.h"

#ifdef __cplusplus
extern "C" {
#endif

/** What the server answers. */
enum band_answer_kind {
    BAND_ANSWER_ACCEPT = 0,     /* do the work now (HTTP: proceed) */
    BAND_ANSWER_LATER = 1,      /* accepted for later: queued in the backlog (202) */
    BAND_ANSWER_BUSY = 2,       /* no capacity now (503, Retry-After) */
    BAND_ANSWER_OVER_QUOTA = 3, /* the rate budget refused (429, Retry-After) */
    BAND_ANSWER_SHED = 4,       /* shed by priority to keep room for urgent work (503) */
    BAND_ANSWER_TOO_BIG = 5,    /* can never fit (413) */
    BAND_ANSWER_GONE = 6,       /* closed or shutting down (503, no Retry-After) */
};
#define BAND_ANSWER_KINDS 7

/** Which bound a result came from (it decides 429 versus 503). */
enum band_answer_source {
    BAND_FROM_CAPACITY = 0, /* a semaphore, budget or admission */
    BAND_FROM_RATE = 1,     /* a rate budget */
    BAND_FROM_QUEUE = 2,    /* a channel or backlog */
};

typedef struct band_answer {
    int kind;              /* enum band_answer_kind */
    int http_status;       /* 200, 202, 503, 429, 413 */
    band_time retry_after; /* nanoseconds; 0 when there is nothing to suggest */
    int reason;            /* the band result it came from (0 when accepted) */
} band_answer;

/**
 * band_answer_from() - the answer for result @rc of a call on a bound of kind @source,
 * with @retry_after (ns, may be 0) as that bound estimated it.
 *
 * 0 → ACCEPT; BAND_EAGAIN / BAND_ETIMEDOUT → OVER_QUOTA from a rate budget, BUSY otherwise;
 * BAND_E2BIG → TOO_BIG; BAND_ECLOSED / BAND_ECANCELED → GONE; any other code → BUSY with
 * that reason. Pure and MT-safe.
 */
BAND_API band_answer band_answer_from(int rc, int source, band_time retry_after);

/** band_answer_retry_after_s() - Retry-After in whole seconds, rounded up; at least 1 for
 *  BUSY, OVER_QUOTA and SHED; 0 otherwise. */
BAND_API uint32_t band_answer_retry_after_s(const band_answer *a);

/** band_answer_name() - "accept", "later", "busy", "over_quota", "shed", "too_big",
 *  "gone", or "?" for an unknown kind. Static string. */
BAND_API const char *band_answer_name(int kind);

/* ---------------------------------------------------------------- the front door */

#define BAND_DOOR_CLASSES 8

typedef struct band_door band_door;
struct band_histo;

/** Options; zero-initialise, then set what you need. Every bound is optional and is not
 *  owned by the door (it must outlive the door). */
typedef struct band_door_opts {
    band_sem *sem;      /* concurrency: a request takes `n` permits */
    band_rate *rate;    /* rate: a request takes `n` tokens */
    band_chan *backlog; /* accepted-for-later: band_door_admit's @job goes here when the
                           semaphore has no room (try_send: never waits) */
    int classes;        /* priority classes, 1..BAND_DOOR_CLASSES (0 means 1); class 0 is
                           the most urgent */
    uint64_t headroom[BAND_DOOR_CLASSES]; /* class c is shed while fewer than headroom[c]
                                             permits would stay available after it; must not
                                             decrease with c, at most BAND_MAX_UNITS;
                                             headroom[0] is usually 0. A class with headroom
                                             never waits for permits */
    band_time wait;          /* the longest a request of a class without headroom may wait
                                for permits (0: never wait) */
    struct band_histo *hold; /* optional, the caller's: band_door_done() records each hold
                                time (ns) into it (band/histo.h) */
} band_door_opts;

/**
 * band_door_create() - a front door. Returns 0, BAND_EINVAL (NULL, classes out of range,
 * headroom decreasing or above BAND_MAX_UNITS, a negative wait, a backlog without a
 * semaphore), or BAND_ENOMEM.
 */
BAND_API int band_door_create(band_door **out, const band_door_opts *opts);

/** band_door_destroy() - free @d (NULL is a no-op). Permits it handed out stay valid.
 *  Returns 0. */
BAND_API int band_door_destroy(band_door *d);

/**
 * band_door_admit() - decide one request of @n units at priority @cls, cheapest checks
 * first, before the caller does any expensive work.
 *
 * Order: closed → GONE; a request the door can never admit → TOO_BIG (more than
 * BAND_MAX_UNITS with a semaphore, more than a budget's capacity minus
 * headroom[@cls], more tokens than the rate budget's burst; no Retry-After, the job is not
 * queued); shedding (class @cls would leave less than headroom[@cls], also when the room
 * vanished between the check and the try) → SHED; permits (try; then, for a class without
 * headroom, wait up to opts.wait, capped by @deadline) and then tokens, both or neither →
 * ACCEPT with the permits in *@permit; no permits but @job and a backlog with room → LATER
 * (the element *@job was sent); otherwise BUSY, OVER_QUOTA or GONE (the semaphore or the
 * rate budget closed, or the door closed while the request waited).
 *
 * Both or neither holds on every path: tokens are taken only once the permits are held,
 * and a rate refusal gives the permits back at once, so a request that is refused (a wait
 * that timed out, a close, a shed, a rate refusal) holds no permit and spent no token.
 * Before waiting, the door reads the rate budget's counters without taking anything: with
 * too few tokens now it answers OVER_QUOTA at once instead of waiting for permits it would
 * have to give back.
 *
 * Returns 0 with *@ans filled (the kind says what to do; only ACCEPT hands permits over,
 * and they go back with band_door_done()), or BAND_EINVAL (NULL @d/@ans, @n 0, @cls out of
 * range, @permit NULL while the door has a semaphore or not empty) with *@ans untouched.
 * Retry-After: a rate budget's exact retry-after for OVER_QUOTA after the permits were
 * taken; for OVER_QUOTA found before a wait, the time for the missing whole tokens to flow
 * in (at most one token interval above the exact figure); for BUSY and SHED, the measured
 * mean hold time × ceil((waiters + @n) / capacity), saturating at INT64_MAX, or 1 s before
 * any measurement; 0 for TOO_BIG and GONE. The never-fits checks read the semaphore's and
 * the rate budget's counters (each takes its lock briefly) and run only on paths that are
 * refusing or about to wait. MT-safe.
 *
 * @cancel (NULL for none): when it is requested the call stops waiting and answers GONE
 * with reason BAND_ECANCELED, nothing taken; a token requested before the call means
 * "do not wait", as a past deadline does (band/cancel.h).
 */
BAND_API int band_door_admit(band_door *d, int cls, uint64_t n, const void *job,
                             band_permit *permit, band_answer *ans, band_time deadline,
                             band_cancel *cancel);

/**
 * band_door_done() - the admitted work finished: releases *@permit (like
 * band_permit_release()) and feeds its hold time into the Retry-After estimate.
 * @admitted_at is the band_now() of the admission, 0 to skip the measurement. For a door
 * without a semaphore @permit may be NULL (or empty): done() only measures.
 *
 * Returns 0, BAND_EOVERFLOW as band_permit_release() (the permit keeps its permits), or
 * BAND_EINVAL with nothing changed (nothing released, nothing measured): NULL @d; a
 * negative @admitted_at or one after band_now(); for a door with a semaphore, @permit NULL,
 * empty (a second done() for one admission) or of another semaphore, or holding more
 * permits than the door has handed out and not yet taken back; for a door without one, a
 * non-empty @permit. MT-safe.
 */
BAND_API int band_door_done(band_door *d, band_permit *permit, band_time admitted_at);

/** band_door_close() - every later admission answers GONE. Returns 0 or BAND_EINVAL. */
BAND_API int band_door_close(band_door *d);

/** Counters; see band_door_get_stats(). */
typedef struct band_door_stats {
    uint64_t answers[BAND_ANSWER_KINDS];  /* by kind: accepted, later, busy, ... */
    uint64_t admitted[BAND_DOOR_CLASSES]; /* ACCEPT by class */
    uint64_t refused[BAND_DOOR_CLASSES];  /* every other answer but LATER, by class */
    uint64_t waited;                      /* admissions that had to wait for permits */
    band_time mean_hold;                  /* the hold time estimate (ns; 0: none yet) */
} band_door_stats;

/** band_door_get_stats() - a snapshot: 0 or BAND_EINVAL. */
BAND_API int band_door_get_stats(const band_door *d, band_door_stats *out);

#ifdef __cplusplus
}
#endif
#endif /* BAND_OVERLOAD_H */
