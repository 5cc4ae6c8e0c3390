/* SPDX-License-Identifier: MIT */
/*
 * model_coord.c - runs the wait group / latch / shutdown scope reference model
 * (coord_model.c) over fixed seeds, then replays the fuzz corpus given on the command line
 * (every file in the directories passed as arguments), and finally checks that the
 * generated sequences reached every kind of operation and outcome.
 *
 * Bounded twice: BAND_MODEL_OPS operations per seed (default 30000) and BAND_MODEL_SECONDS
 * of wall time for all seeds together (default 6; a seed that runs out of time stops
 * early, with success). BAND_MODEL_SEEDS sets how many seeds (default 8).
 * COORD_MODEL_TRACE=1 prints every operation and the model's state.
 */
#include "model_driver.h"

#include "coord_model.h"

MODEL_DRIVER_TIMED(coord_model)

#define REQUIRE(field)                                                                             \
    do {                                                                                           \
        if (c->field == 0)                                                                         \
            print_error("never happened: " #field "\n");                                           \
        assert_true(c->field > 0);                                                                 \
    } while (0)

/* The generator must reach every operation and every interesting outcome. */
static void coverage(const void *totals)
{
    static const char *const names[CM_OP_COUNT] = {"group_add",
                                                   "group_done",
                                                   "group_try_wait",
                                                   "group_wait",
                                                   "group_wait_async",
                                                   "latch_count_down",
                                                   "latch_try_wait",
                                                   "latch_wait",
                                                   "latch_wait_async",
                                                   "latch_arrive_and_wait",
                                                   "request",
                                                   "join",
                                                   "leave",
                                                   "shutdown_wait",
                                                   "shutdown_wait_async",
                                                   "watch",
                                                   "unwatch",
                                                   "sem_acquire_async",
                                                   "sem_release",
                                                   "sem_close",
                                                   "cancel",
                                                   "token",
                                                   "destroy(busy)",
                                                   "recreate",
                                                   "misuse"};
    const struct coord_model_counts *c = totals;
    model_driver_check_ops(c->ops, names, CM_OP_COUNT);
    print_message(
        "objects %llu, nested ops %llu; wakes %llu (released %llu, granted %llu, closed %llu, "
        "fired %llu); pending %llu, at once %llu, cancels %llu; links fired %llu won / %llu "
        "lost, handoffs %llu; requests %llu, drains %llu, zeroes %llu, opens %llu; blocking: "
        "timed %llu, cancelled %llu, expired %llu; unwatch %llu ok / %llu fired; wake checks "
        "%llu, unwatches %llu, resubmits %llu, pokes %llu; busy alone: waits %llu, parts %llu, "
        "links %llu, child %llu; ebusy %llu, einval %llu, ealready "
        "%llu, eagain %llu, eoverflow %llu, reasons %llu\n",
        (unsigned long long)c->objects, (unsigned long long)c->nested_ops,
        (unsigned long long)c->wakes, (unsigned long long)c->wakes_released,
        (unsigned long long)c->wakes_granted, (unsigned long long)c->wakes_closed,
        (unsigned long long)c->wakes_fired, (unsigned long long)c->pending,
        (unsigned long long)c->at_once, (unsigned long long)c->cancels_ok,
        (unsigned long long)c->fired_won, (unsigned long long)c->fired_lost,
        (unsigned long long)c->handoffs, (unsigned long long)c->requests,
        (unsigned long long)c->drains, (unsigned long long)c->zeroes, (unsigned long long)c->opens,
        (unsigned long long)c->timed_queued, (unsigned long long)c->canceled_waits,
        (unsigned long long)c->expired_waits, (unsigned long long)c->unwatched_ok,
        (unsigned long long)c->unwatched_fired, (unsigned long long)c->wake_checks,
        (unsigned long long)c->wake_unwatches, (unsigned long long)c->wake_resubmits,
        (unsigned long long)c->wake_pokes, (unsigned long long)c->busy_waits,
        (unsigned long long)c->busy_parts, (unsigned long long)c->busy_links,
        (unsigned long long)c->busy_child, (unsigned long long)c->ebusy,
        (unsigned long long)c->einval, (unsigned long long)c->ealready,
        (unsigned long long)c->eagain, (unsigned long long)c->eoverflow,
        (unsigned long long)c->reasons);
    REQUIRE(nested_ops);
    REQUIRE(wakes_released);
    REQUIRE(wakes_granted);
    REQUIRE(wakes_closed);
    REQUIRE(wakes_fired);
    REQUIRE(pending);
    REQUIRE(at_once);
    REQUIRE(cancels_ok);
    REQUIRE(fired_won);
    REQUIRE(fired_lost);
    REQUIRE(handoffs);
    REQUIRE(requests);
    REQUIRE(drains);
    REQUIRE(zeroes);
    REQUIRE(opens);
    REQUIRE(timed_queued);
    REQUIRE(canceled_waits);
    REQUIRE(expired_waits);
    REQUIRE(unwatched_ok);
    REQUIRE(unwatched_fired);
    REQUIRE(wake_checks);
    REQUIRE(wake_unwatches);
    REQUIRE(wake_resubmits);
    REQUIRE(wake_pokes);
    REQUIRE(busy_waits);
    REQUIRE(busy_parts);
    REQUIRE(busy_links);
    REQUIRE(busy_child);
    REQUIRE(ebusy);
    REQUIRE(einval);
    REQUIRE(ealready);
    REQUIRE(eagain);
    REQUIRE(eoverflow);
    REQUIRE(ecanceled);
    REQUIRE(etimedout);
    REQUIRE(reasons);
    assert_true(c->objects > 7);
}

const struct model_driver model_driver = {
    .name = "model_coord",
    .seed_base = UINT64_C(0x636f6f72), /* "coor" */
    .ops = 30000,
    .seeds = 8,
    .seconds_all = 6,
    .corpus_required = 1,
    .model = MODEL_DRIVER_MODEL(coord_model),
    .coverage = coverage,
};
