/* SPDX-License-Identifier: MIT */
/*
 * model_input.h - where a model interpreter reads its operations from: a libFuzzer input,
 * or a seeded generator that never runs out (shared by every *_model.c).
 */
#ifndef BAND_MODEL_INPUT_H
#define BAND_MODEL_INPUT_H

#include <stddef.h>
#include <stdint.h>

struct model_input {
    const uint8_t *data; /* bytes mode: the input, read once; 0 after the end */
    size_t len, pos;
    int use_rng; /* seed mode: splitmix64, eight bytes per word */
    uint64_t rng, rng_word;
    unsigned rng_left;
};

/* Read @data[0..@len) in order. */
void model_input_bytes(struct model_input *in, const uint8_t *data, size_t len);

/* Generate bytes from @seed, forever. */
void model_input_seed(struct model_input *in, uint64_t seed);

/* The next byte (0 once a byte input is exhausted). */
uint8_t model_input_byte(struct model_input *in);

/* 1 when a byte input is exhausted; a seeded input never is. */
int model_input_done(const struct model_input *in);

#endif
