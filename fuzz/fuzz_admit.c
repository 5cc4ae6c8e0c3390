/* SPDX-License-Identifier: MIT */
/*
 * fuzz_admit.c - libFuzzer target for multi-budget admission and capacity trees.
 *
 * The input bytes are an operation sequence for the interpreter in tests/model/admit_model.c
 * (the same one tests/model/model_admit.c runs from fixed seeds): the first bytes choose
 * two to four flat budgets (band_budget or plain band_sem) and a capacity tree, then each
 * op byte selects building a request over several budgets and tree paths, admitting it
 * (try, async, blocking with a past deadline), taking, releasing whole or in part,
 * adjusting, cancelling, plain acquisitions and releases on the same budgets, capacity
 * changes, close, recycling, and wakes that release their grant and destroy an idle
 * primitive. Every result, every wake (status, exactly once), every waiter's state, the
 * counters and the conservation of units are compared with a reference model; a mismatch
 * prints the op and the model's state and aborts, which libFuzzer reports as a crash.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "admit_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct admit_model *m;
    if (m == NULL && (m = admit_model_new()) == NULL)
        return 0;
    if (admit_model_run_bytes(m, data, size) != 0) {
        fprintf(stderr, "fuzz_admit: model mismatch: %s\n", admit_model_error(m));
        abort();
    }
    return 0;
}
