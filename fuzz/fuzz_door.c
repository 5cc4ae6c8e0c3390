/* SPDX-License-Identifier: MIT */
/*
 * fuzz_door.c - libFuzzer target for the front door (band_front_door, band/front_door.h).
 *
 * The input bytes are an operation sequence for the interpreter in tests/model/door_model.c
 * (the same one tests/model/model_door.c runs from fixed seeds): the first five bytes
 * choose the door (a plain semaphore, a budget or none; a rate budget on a fake clock or
 * none; a backlog; classes, headroom and wait), then each op byte selects an admission,
 * a done() (valid or not), another user's take, release, async acquisition, cancel or
 * token take, a clock tick, a backlog receive, a close of one of the bounds, or a new
 * door, followed by its arguments. Every answer, permit, job, wake and counter is compared
 * with a reference model; a mismatch prints the op and aborts, which libFuzzer reports as
 * a crash.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "door_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct door_model *m = door_model_new();
    if (m == NULL)
        return 0;
    if (door_model_run_bytes(m, data, size) != 0) {
        fprintf(stderr, "fuzz_door: model mismatch: %s\n", door_model_error(m));
        abort();
    }
    door_model_free(m);
    return 0;
}
