/* SPDX-License-Identifier: MIT */
/*
 * model_input.c - operation bytes for the model interpreters.
 */
#include "model_input.h"

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

void model_input_bytes(struct model_input *in, const uint8_t *data, size_t len)
{
    in->use_rng = 0;
    in->data = data;
    in->len = len;
    in->pos = 0;
}

void model_input_seed(struct model_input *in, uint64_t seed)
{
    in->use_rng = 1;
    in->rng = seed;
    in->rng_left = 0;
    in->data = NULL;
    in->len = in->pos = 0;
}

uint8_t model_input_byte(struct model_input *in)
{
    if (in->use_rng) {
        if (in->rng_left == 0) {
            in->rng_word = splitmix(&in->rng);
            in->rng_left = 8;
        }
        uint8_t b = (uint8_t)(in->rng_word & 0xff);
        in->rng_word >>= 8;
        in->rng_left--;
        return b;
    }
    return in->pos < in->len ? in->data[in->pos++] : 0;
}

int model_input_done(const struct model_input *in)
{
    return !in->use_rng && in->pos >= in->len;
}
