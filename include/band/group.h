/*
 * band/group.h - coordination: the wait group, the latch and the shutdown token.
 *
 * Three small primitives that let one party wait for others, each with a blocking wait
 * (absolute deadline) and an async wait on a caller-owned band_waiter. docs/coordination.md
 * has the long form.
 *
 *  - band_group (Go's sync.WaitGroup): a counter of outstanding tasks. add(n) before a task
 *    starts, done() when it ends; waiters are released each time the count reaches 0. The
 *    group is reusable: a count that rises again after reaching 0 starts a new round, and
 *    only waits submitted while the count is above 0 wait for that round to finish.
 *  - band_latch (Java's CountDownLatch, C++ std::latch): a count fixed at creation that
 *    only goes down. Once it reaches 0 the latch is open for good. It is a band_group that
 *    refuses add(), so it shares the group's code and counters.
 *  - band_token: a shutdown (cancellation) token. Anybody may request shutdown once, with a
 *    reason; work loops poll band_token_requested() (one atomic load) or wait for the
 *    request. Participants join before they start work and leave when done; joining after
 *    the request is refused, so the set of participants only shrinks once shutdown has
 *    begun, and band_token_wait_drained() waits until the request was made and every
 *    participant left. A token link (band_token_watch()) cancels a pending band_waiter of
 *    any primitive when shutdown is requested, without user callbacks under any lock.
 *
 * Shared rules (band/core.h has the wake contract):
 *  - Counts are uint64_t and never wrap: an add past the maximum fails with BAND_EOVERFLOW
 *    and a done/count_down/leave below zero fails with BAND_EINVAL; nothing changes then.
 *  - The call that opens a group or latch (the last done) or drains a token runs the wakes
 *    of every waiter it released, on its own thread, after every band lock is released.
 *  - A wait on something already satisfied completes at once: 0, no wake. A blocking wait
 *    whose deadline is in the past does not wait: it returns 0 if satisfied, else
 *    BAND_ETIMEDOUT, and then it never queued, so it counts in no counter.
 *  - band_waiter_cancel() withdraws a queued wait (0), or reports that it was already
 *    released (BAND_EALREADY; the wake has run or is running). Nothing is held by a
 *    waiter, so a cancel never returns anything to the primitive.
 *  - Every function is MT-safe. The counts and the requested flag are read without a lock;
 *    done/leave that do not open anything, add, join and band_token_requested() take no
 *    lock.
 */
#ifndef BAND_GROUP_H
#define BAND_GROUP_H

#include "band/cancel.h"
#include "band/core.h"
#include "band/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ wait group */

/** The largest count a wait group or latch can hold. */
#define BAND_GROUP_MAX UINT64_MAX

typedef struct band_group band_group;

/**
 * band_group_create() - allocate a wait group with a count of 0.
 *
 * Returns 0 and stores the group in *@out, BAND_EINVAL when @out is NULL, or BAND_ENOMEM
 * (*@out unchanged on failure). The caller owns the group; free it with
 * band_group_destroy().
 */
BAND_API int band_group_create(band_group **out);

/**
 * band_group_destroy() - free @g.
 *
 * Returns 0, or BAND_EBUSY while waits are queued (nothing is freed; cancel them or let
 * the count reach 0 first). A count above 0 does not stop destruction: nobody may call
 * band_group_done() on @g afterwards. Destroying NULL returns 0.
 */
BAND_API int band_group_destroy(band_group *g);

/**
 * band_group_add() - add @n outstanding tasks to @g.
 *
 * Call it before the task starts (before handing it to another thread), so that a waiter
 * cannot see the count at 0 in between. Returns 0 (adding 0 is a no-op), BAND_EOVERFLOW
 * when the count would exceed BAND_GROUP_MAX (nothing changes), or BAND_EINVAL for a NULL
 * @g. Never wakes anybody. Lock-free. MT-safe.
 */
BAND_API int band_group_add(band_group *g, uint64_t n);

/**
 * band_group_done() - one outstanding task of @g finished: band_group_done_n(@g, 1).
 */
BAND_API int band_group_done(band_group *g);

/**
 * band_group_done_n() - @n outstanding tasks of @g finished.
 *
 * Returns 0, or BAND_EINVAL when @g is NULL or @n exceeds the count (the count never goes
 * below 0; nothing changes). Done of 0 returns 0 and changes nothing. When the count
 * reaches 0, every queued wait is released with status 0 and its wake runs on the calling
 * thread before this call returns, after the group's lock is released (a wake may call
 * back into @g). Lock-free unless the count reaches 0. Memory written by a task before
 * its done is visible to a waiter after its wait returned 0 (or its wake ran). MT-safe.
 */
BAND_API int band_group_done_n(band_group *g, uint64_t n);

/**
 * band_group_count() - the current count of @g (0 for NULL). A snapshot. MT-safe.
 */
BAND_API uint64_t band_group_count(const band_group *g);

/**
 * band_group_wait() - block this thread until the count of @g is 0, or until @deadline.
 *
 * Returns 0 when the count was 0 or reached 0 (a release that races with the deadline
 * wins and is returned as 0), BAND_ETIMEDOUT when @deadline passed first (a deadline at
 * or before band_now() means "do not wait": 0 if the count is 0 now, else BAND_ETIMEDOUT),
 * or BAND_EINVAL for a NULL @g. MT-safe.
 *
 * @cancel (NULL for none): when it is requested the call stops waiting and returns
 * BAND_ECANCELED, holding nothing; a token requested before the call means "do not
 * wait", as a past deadline does (band/cancel.h).
 */
BAND_API int band_group_wait(band_group *g, band_time deadline, band_cancel *cancel);

/**
 * band_group_wait_async() - complete now if the count of @g is 0, or queue @w until it is.
 *
 * Returns 0 when the count is 0 (no wake follows; band_waiter_status(@w) is 0),
 * BAND_PENDING when queued (from then on exactly one of {wake called once with status 0
 * by the thread whose done brought the count to 0, band_waiter_cancel() returns 0} ends
 * the wait), or BAND_EINVAL (NULL @g or @w, @w already pending or without a wake
 * function; @w is left untouched). Never calls wake itself. @w must stay valid and
 * untouched while pending; the group must outlive it. MT-safe.
 */
BAND_API int band_group_wait_async(band_group *g, band_waiter *w);

/**
 * struct band_group_stats - a snapshot of a wait group's (or latch's) counters.
 */
typedef struct band_group_stats {
    uint64_t count;    /* outstanding tasks now */
    uint64_t waiters;  /* waits queued now */
    uint64_t queued;   /* waits that had to queue, since creation */
    uint64_t released; /* queued waits released by the count reaching 0 */
    uint64_t timeouts; /* queued waits that ended with BAND_ETIMEDOUT */
    uint64_t cancels;  /* queued waits cancelled for any other reason */
    uint64_t zeroes;   /* times a done brought the count to 0 */
    uint64_t misuse;   /* done/count_down calls refused with BAND_EINVAL (below zero) */
} band_group_stats;

/**
 * band_group_get_stats() - copy @g's counters into *@out.
 *
 * Takes the group's lock briefly. Returns 0 or BAND_EINVAL (NULL argument). MT-safe.
 */
BAND_API int band_group_get_stats(const band_group *g, band_group_stats *out);

/* ------------------------------------------------------------------------ latch */

typedef struct band_latch band_latch;

/**
 * band_latch_create() - allocate a latch that opens after @count count-downs.
 *
 * A latch created with 0 is open at once. Returns 0 and stores it in *@out, BAND_EINVAL
 * when @out is NULL, or BAND_ENOMEM (*@out unchanged on failure). Free it with
 * band_latch_destroy().
 */
BAND_API int band_latch_create(band_latch **out, uint64_t count);

/**
 * band_latch_destroy() - free @l. Returns 0, or BAND_EBUSY while waits are queued
 * (nothing is freed). Destroying NULL returns 0.
 */
BAND_API int band_latch_destroy(band_latch *l);

/**
 * band_latch_count_down() - lower the count of @l by @n.
 *
 * Returns 0, or BAND_EINVAL when @l is NULL or @n exceeds the remaining count (including
 * any @n > 0 on an open latch: a latch never counts below zero; nothing changes). A count
 * down of 0 returns 0. When the count reaches 0 the latch opens for good: every queued
 * wait is released with status 0, its wake running on the calling thread after the
 * latch's lock is released, before this call returns. Lock-free unless it opens the
 * latch. MT-safe.
 */
BAND_API int band_latch_count_down(band_latch *l, uint64_t n);

/**
 * band_latch_try_wait() - 0 if @l is open, BAND_EAGAIN if not, BAND_EINVAL for NULL.
 * Never waits; one atomic load. MT-safe.
 */
BAND_API int band_latch_try_wait(const band_latch *l);

/**
 * band_latch_wait() - block this thread until @l is open, or until @deadline.
 *
 * Returns as band_group_wait(): 0, BAND_ETIMEDOUT (a past deadline means "do not wait"),
 * or BAND_EINVAL for NULL. MT-safe.
 *
 * @cancel (NULL for none): when it is requested the call stops waiting and returns
 * BAND_ECANCELED, holding nothing; a token requested before the call means "do not
 * wait", as a past deadline does (band/cancel.h).
 */
BAND_API int band_latch_wait(band_latch *l, band_time deadline, band_cancel *cancel);

/**
 * band_latch_wait_async() - complete now if @l is open, or queue @w until it opens.
 *
 * Returns as band_group_wait_async(): 0 (open; no wake follows), BAND_PENDING (exactly
 * one of {wake with status 0 on the thread whose count-down opened the latch,
 * band_waiter_cancel() returns 0} follows), or BAND_EINVAL (@w untouched). MT-safe.
 */
BAND_API int band_latch_wait_async(band_latch *l, band_waiter *w);

/**
 * band_latch_arrive_and_wait() - band_latch_count_down(@l, @n), then band_latch_wait(@l, *
 * @deadline, NULL) (std::latch::arrive_and_wait with a deadline).
 *
 * Returns the count-down's error (then it did not wait), else the wait's result. MT-safe.
 *
 * @cancel (NULL for none): when it is requested the call stops waiting and returns
 * BAND_ECANCELED, holding nothing; a token requested before the call means "do not
 * wait", as a past deadline does (band/cancel.h).
 */
BAND_API int band_latch_arrive_and_wait(band_latch *l, uint64_t n, band_time deadline,
                                        band_cancel *cancel);

/** band_latch_count() - the remaining count of @l (0 when open, and for NULL). MT-safe. */
BAND_API uint64_t band_latch_count(const band_latch *l);

/** band_latch_get_stats() - as band_group_get_stats(), for @l. 0 or BAND_EINVAL. */
BAND_API int band_latch_get_stats(const band_latch *l, band_group_stats *out);

/* ------------------------------------------------------------------------ shutdown token */

/** The most participants a token can hold at once. */
#define BAND_TOKEN_MAX_PARTICIPANTS ((UINT64_C(1) << 63) - 1)

typedef struct band_token band_token;

/**
 * struct band_token_link - ties one pending band_waiter to a token (band_token_watch()).
 *
 * Embedded by the owner of the waiter, usually next to it. Initialise with
 * band_token_link_init(). All fields are private.
 */
struct band_token_link {
    struct band__node _node; /* on the token's watch list while watched */
    band_waiter *_w;         /* the waiter to cancel */
    band_token *_t;          /* the token it is linked to, NULL when idle */
    int _state;              /* idle, watched, firing, fired */
};

/**
 * band_token_create() - allocate a token: not requested, no participants.
 *
 * Returns 0 and stores it in *@out, BAND_EINVAL when @out is NULL, or BAND_ENOMEM. Free it
 * with band_token_destroy().
 */
BAND_API int band_token_create(band_token **out);

/**
 * band_token_destroy() - free @t.
 *
 * Returns 0, or BAND_EBUSY (nothing is freed) while waits are queued, participants have
 * not left, or links are still watched (band_token_unwatch() every link first).
 * Destroying NULL returns 0.
 */
BAND_API int band_token_destroy(band_token *t);

/**
 * band_token_request() - request shutdown, for @reason.
 *
 * @reason is the negative BAND_E* code that work stopped by this token reports (usually
 * BAND_ECANCELED; a deadline-driven shutdown may use BAND_ETIMEDOUT). The first request
 * wins: it sets the reason, refuses every later band_token_join(), releases every queued
 * band_token_wait_requested() (status 0) and, when no participant is joined, every queued
 * band_token_wait_drained() (status 0), then fires every watched link (band_token_watch()).
 * All those wakes and cancels run on the calling thread, after the token's lock is
 * released, before this call returns (a wake may call back into @t).
 * Returns 0 for the first request, BAND_EALREADY when shutdown was already requested
 * (nothing changes: the first reason stays), or BAND_EINVAL (NULL @t, @reason >= 0).
 * MT-safe; may be called from a wake.
 */
BAND_API int band_token_request(band_token *t, int reason);

/**
 * band_token_requested() - 1 once shutdown was requested, 0 before (and for NULL).
 *
 * One atomic load with acquire ordering, no lock: the check a work loop polls. When it
 * returns 1, band_token_reason() returns the reason. MT-safe.
 */
BAND_API int band_token_requested(const band_token *t);

/** band_token_reason() - the first request's reason, or 0 before any request (and for
 *  NULL). MT-safe. */
BAND_API int band_token_reason(const band_token *t);

/**
 * band_token_wait_requested() - block this thread until shutdown is requested, or until
 * @deadline.
 *
 * Returns 0 once requested (the reason is band_token_reason()), BAND_ETIMEDOUT when
 * @deadline passed first (a past deadline means "do not wait"), or BAND_EINVAL for NULL.
 * MT-safe.
 *
 * @cancel (NULL for none): when it is requested the call stops waiting and returns
 * BAND_ECANCELED, holding nothing; a token requested before the call means "do not
 * wait", as a past deadline does (band/cancel.h).
 */
BAND_API int band_token_wait_requested(band_token *t, band_time deadline, band_cancel *cancel);

/**
 * band_token_wait_requested_async() - complete now if shutdown was requested, or queue @w
 * until it is.
 *
 * Returns 0 (requested; no wake follows), BAND_PENDING (exactly one of {wake with status 0
 * on the thread that requested shutdown, band_waiter_cancel() returns 0} follows), or
 * BAND_EINVAL (NULL @t or @w, @w pending or without wake; @w untouched). MT-safe.
 */
BAND_API int band_token_wait_requested_async(band_token *t, band_waiter *w);

/**
 * band_token_join() - register one participant: work that shutdown must wait for.
 *
 * Returns 0 (the caller must call band_token_leave() once when its work is done), the
 * token's reason (a negative code, usually BAND_ECANCELED) once shutdown was requested:
 * no new work starts after the request, BAND_EOVERFLOW at BAND_TOKEN_MAX_PARTICIPANTS
 * participants, or BAND_EINVAL for NULL. A join and a request race safely: either the join
 * is refused, or the request's drain waits for that participant. Lock-free. MT-safe.
 */
BAND_API int band_token_join(band_token *t);

/**
 * band_token_leave() - one participant finished.
 *
 * Returns 0, or BAND_EINVAL when @t is NULL or no participant is joined (nothing
 * changes). When shutdown was requested and this was the last participant, every queued
 * band_token_wait_drained() is released (status 0), its wake running on this thread after
 * the token's lock is released, before this call returns. Lock-free otherwise. MT-safe.
 */
BAND_API int band_token_leave(band_token *t);

/** band_token_participants() - participants joined now (0 for NULL). A snapshot. MT-safe. */
BAND_API uint64_t band_token_participants(const band_token *t);

/**
 * band_token_wait_drained() - block this thread until shutdown was requested and every
 * participant left, or until @deadline.
 *
 * Returns 0 when drained, BAND_ETIMEDOUT when @deadline passed first (a past deadline
 * means "do not wait"), or BAND_EINVAL for NULL. It does not request shutdown itself.
 * A participant that waits for the drain of its own token waits forever (it has not left):
 * leave first. MT-safe.
 *
 * @cancel (NULL for none): when it is requested the call stops waiting and returns
 * BAND_ECANCELED, holding nothing; a token requested before the call means "do not
 * wait", as a past deadline does (band/cancel.h).
 */
BAND_API int band_token_wait_drained(band_token *t, band_time deadline, band_cancel *cancel);

/**
 * band_token_wait_drained_async() - complete now if @t is drained, or queue @w until it is.
 *
 * Returns 0 (drained; no wake follows), BAND_PENDING (exactly one of {wake with status 0
 * on the thread whose request or leave drained the token, band_waiter_cancel() returns 0}
 * follows), or BAND_EINVAL (@w untouched). MT-safe.
 */
BAND_API int band_token_wait_drained_async(band_token *t, band_waiter *w);

/** band_token_link_init() - prepare @link (idle). Not for a watched link. */
BAND_API void band_token_link_init(struct band_token_link *link);

/**
 * band_token_watch() - cancel the pending operation @w when shutdown of @t is requested.
 *
 * Submit @w first (its _async call returned BAND_PENDING), then watch it. When shutdown
 * is requested, the requesting thread calls band_waiter_cancel(@w, reason). If that cancel
 * wins (returns 0), the token then calls @w's wake itself, once, with
 * band_waiter_status(@w) == reason; if it loses, the primitive's own wake reports the
 * result. Either way the owner sees exactly one wake, as without the token, and no user
 * code runs under a lock.
 *
 * Returns 0 when linked; the token's reason (negative; nothing linked, @w untouched) when
 * shutdown was already requested - the caller then decides, typically by cancelling @w
 * itself; BAND_EALREADY when @w already completed (nothing linked); or BAND_EINVAL (NULL
 * argument, @link already watched, @w never submitted or cancelled).
 *
 * Ownership: @link and @w must stay valid until band_token_unwatch(@link) returned, and
 * the owner must unwatch before it reuses or frees @w (or destroys @w's primitive), even
 * after its wake ran. MT-safe with respect to the token and the waiter.
 */
BAND_API int band_token_watch(band_token *t, struct band_token_link *link, band_waiter *w);

/**
 * band_token_unwatch() - detach @link from its token.
 *
 * Returns 0 when the token had not fired the link: it will never touch @link or its
 * waiter again. Returns BAND_EALREADY when shutdown fired it: the token's cancel has
 * returned (this call waits for a cancel in progress on another thread, a short bounded
 * wait), and the waiter's operation ended or ends with exactly one wake, from its
 * primitive or from the token. Returns BAND_EINVAL when @link is NULL or not watched.
 * May be called from any wake, including the watched waiter's own; must not be called,
 * from a wake that runs inside the token's cancel of another link, for that other link.
 * MT-safe; @link is idle afterwards and may be reused.
 */
BAND_API int band_token_unwatch(struct band_token_link *link);

/**
 * struct band_token_stats - a snapshot of a token's counters.
 */
typedef struct band_token_stats {
    int requested;              /* 1 after the first request */
    int reason;                 /* the first request's reason, or 0 */
    uint64_t participants;      /* joined now */
    uint64_t waiting_requested; /* band_token_wait_requested waits queued now */
    uint64_t waiting_drained;   /* band_token_wait_drained waits queued now */
    uint64_t watched;           /* links watched now (including fired, not yet unwatched) */
    uint64_t queued;            /* waits of both kinds that had to queue, since creation */
    uint64_t released;          /* queued waits released by the request or the drain */
    uint64_t timeouts;          /* queued waits that ended with BAND_ETIMEDOUT */
    uint64_t cancels;           /* queued waits cancelled for any other reason */
    uint64_t join_refusals;     /* joins refused because shutdown was requested */
    uint64_t fired;             /* links fired by the request */
    uint64_t fired_cancelled;   /* fired links whose cancel won (the token called wake) */
} band_token_stats;

/**
 * band_token_get_stats() - copy @t's counters into *@out.
 *
 * Takes the token's lock briefly. Returns 0 or BAND_EINVAL (NULL argument). MT-safe.
 */
BAND_API int band_token_get_stats(const band_token *t, band_token_stats *out);

#ifdef __cplusplus
}
#endif
#endif /* BAND_GROUP_H */
