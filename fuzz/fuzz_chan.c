/* SPDX-License-Identifier: MIT */
/*
 * fuzz_chan.c - libFuzzer target for the bounded channel.
 *
 * The input bytes are an operation sequence for the interpreter in tests/model/chan_model.c
 * (the same one tests/model/model_chan.c runs from fixed seeds): the first three bytes
 * choose the capacity, the byte bound, the overflow policy and sender counting, then each
 * op byte selects try_send, send with a past deadline, send_async, reserve_async,
 * try_reserve, reserve, slot_send, slot_release, try_recv, recv, recv_async, recv_many,
 * cancel (of a send or a receive), offer, sender join/leave, close, destroy while busy or
 * recreate, followed by its arguments. Every result, every wake (per kind in order, with
 * status and element), every op's state and the counters are compared with a reference
 * model; a mismatch prints the op and aborts, which libFuzzer reports as a crash.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "chan_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct chan_model *m = chan_model_new();
    if (m == NULL)
        return 0;
    if (chan_model_run_bytes(m, data, size) != 0) {
        fprintf(stderr, "fuzz_chan: model mismatch: %s\n", chan_model_error(m));
        abort();
    }
    chan_model_free(m);
    return 0;
}
