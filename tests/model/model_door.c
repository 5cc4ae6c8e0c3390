/* SPDX-License-Identifier: MIT */
/*
 * model_door.c - runs the front door's reference model (door_model.c) over fixed seeds,
 * then replays the fuzz corpus given on the command line (every file in the directories
 * passed as arguments), and finally checks that the generated sequences reached every
 * kind of operation and every answer.
 *
 * Environment knobs for longer local runs: BAND_MODEL_SEEDS (how many seeds, default 12)
 * and BAND_MODEL_OPS (operations per seed, default 50000). DOOR_MODEL_TRACE=1 prints every
 * operation.
 */
#include "model_driver.h"

#include "door_model.h"

MODEL_DRIVER_UNTIMED(door_model)

/* The generator must reach every operation, every answer and the interesting paths. */
static void coverage(const void *totals)
{
    static const char *const names[DM_OP_COUNT] = {"admit", "done",   "take",     "release",
                                                   "async", "cancel", "wrelease", "rate",
                                                   "tick",  "recv",   "close",    "recreate"};
    const struct door_model_counts *c = totals;
    model_driver_check_ops(c->ops, names, DM_OP_COUNT);
    for (int k = 0; k < DM_ANSWER_KINDS; k++) {
        print_message("%-10s %llu\n", band_answer_name(k), (unsigned long long)c->answers[k]);
        assert_true(c->answers[k] > 0);
    }
    print_message("admit EINVAL %llu, done ok %llu, done EINVAL %llu, waits %llu, over quota "
                  "before a wait %llu, permits given back on a rate refusal %llu, too big "
                  "(semaphore %llu, headroom %llu, rate %llu), measured retry %llu, wakes %llu, "
                  "doors %llu\n",
                  (unsigned long long)c->admit_einval, (unsigned long long)c->done_ok,
                  (unsigned long long)c->done_einval, (unsigned long long)c->waited_path,
                  (unsigned long long)c->peek_over_quota, (unsigned long long)c->rate_gave_back,
                  (unsigned long long)c->too_big_sem, (unsigned long long)c->too_big_headroom,
                  (unsigned long long)c->too_big_rate, (unsigned long long)c->measured_busy,
                  (unsigned long long)c->wakes, (unsigned long long)c->doors);
    assert_true(c->admit_einval > 0);
    assert_true(c->done_ok > 0);
    assert_true(c->done_einval > 0);
    assert_true(c->waited_path > 0);
    assert_true(c->peek_over_quota > 0);
    assert_true(c->rate_gave_back > 0);
    assert_true(c->too_big_sem > 0);
    assert_true(c->too_big_headroom > 0);
    assert_true(c->too_big_rate > 0);
    assert_true(c->measured_busy > 0);
    assert_true(c->wakes > 0);
    assert_true(c->doors > 1);
}

const struct model_driver model_driver = {
    .name = "model_door",
    .seed_base = UINT64_C(0x646f6f72), /* "door" */
    .ops = 50000,
    .seeds = 12,
    .corpus_required = 1,
    .model = MODEL_DRIVER_MODEL(door_model),
    .coverage = coverage,
};
