/* SPDX-License-Identifier: MIT */
/*
 * fuzz_sem.c - libFuzzer target for the semaphore and the budget.
 *
 * The input bytes are an operation sequence for the interpreter in tests/model/sem_model.c
 * (the same one tests/model/model_sem.c runs from fixed seeds): the first bytes choose a
 * semaphore or a budget and its permits, then each op byte selects try_acquire, acquire
 * with a past deadline, acquire_async, release (held or arbitrary, overflow attempts
 * included), reduce, drain, cancel, close, recreate, destroy while busy, stats, grow or
 * shrink, followed by its arguments. Every result, every wake (order and status), every
 * waiter's state, the counters and band__sem_check() are compared with a reference model;
 * a mismatch prints the op and aborts, which libFuzzer reports as a crash.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "sem_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sem_model *m = sem_model_new();
    if (m == NULL)
        return 0;
    if (sem_model_run_bytes(m, data, size) != 0) {
        fprintf(stderr, "fuzz_sem: model mismatch: %s\n", sem_model_error(m));
        abort();
    }
    sem_model_free(m);
    return 0;
}
