/* SPDX-License-Identifier: MIT */
/*
 * model_sem.c - runs the semaphore reference model (sem_model.c) over fixed seeds, 10^5
 * operations each, then replays the fuzz corpus given on the command line (every file in
 * the directories passed as arguments), and finally checks that the generated sequences
 * reached every kind of operation and outcome (model_driver.h runs the seeds and the
 * corpus).
 *
 * Environment knobs for longer local runs: BAND_MODEL_SEEDS (how many seeds, default 20)
 * and BAND_MODEL_OPS (operations per seed, default 100000). SEM_MODEL_TRACE=1 prints every
 * operation and the model's state.
 */
#include "model_driver.h"

#include "sem_model.h"

MODEL_DRIVER_UNTIMED(sem_model)

/* The generator must reach every operation and every interesting outcome. */
static void coverage(const void *totals)
{
    static const char *const names[SM_OP_COUNT] = {
        "try",    "acquire_past", "async", "release_held", "release_any",  "reduce", "drain",
        "cancel", "stats",        "close", "recreate",     "destroy_busy", "grow",   "shrink"};
    const struct sem_model_counts *c = totals;
    model_driver_check_ops(c->ops, names, SM_OP_COUNT);
    print_message("wakes %llu (grants %llu, closed %llu, e2big %llu), pending %llu, "
                  "cancels %llu, ealready %llu, overflows %llu, partial heads %llu, "
                  "debt %llu, reentrant %llu, sems %llu, budgets %llu\n",
                  (unsigned long long)c->wakes, (unsigned long long)c->grants,
                  (unsigned long long)c->closed, (unsigned long long)c->e2big_wakes,
                  (unsigned long long)c->pending, (unsigned long long)c->cancels_ok,
                  (unsigned long long)c->ealready, (unsigned long long)c->overflows,
                  (unsigned long long)c->partial_heads, (unsigned long long)c->debt_ops,
                  (unsigned long long)c->reentrant, (unsigned long long)c->sems,
                  (unsigned long long)c->budgets);
    assert_true(c->grants > 0);
    assert_true(c->closed > 0);
    assert_true(c->e2big_wakes > 0);
    assert_true(c->cancels_ok > 0);
    assert_true(c->ealready > 0);
    assert_true(c->overflows > 0);
    assert_true(c->partial_heads > 0);
    assert_true(c->debt_ops > 0);
    assert_true(c->reentrant > 0);
    assert_true(c->sems > 0);
    assert_true(c->budgets > 0);
}

const struct model_driver model_driver = {
    .name = "model_sem",
    .seed_base = UINT64_C(0x62616e64), /* "band" */
    .ops = 100000,
    .seeds = 20,
    .model = MODEL_DRIVER_MODEL(sem_model),
    .coverage = coverage,
};
