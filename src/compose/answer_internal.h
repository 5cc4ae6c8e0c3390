/* SPDX-License-Identifier: MIT */
/*
 * answer_internal.h - building an answer of a known kind, for the front door.
 */
#ifndef BAND_COMPOSE_ANSWER_INTERNAL_H
#define BAND_COMPOSE_ANSWER_INTERNAL_H

#include "band/answer.h"

/* The answer of kind @kind (0..BAND_ANSWER_KINDS-1) with its HTTP status, for band result
 * @reason, suggesting @retry_after ns. */
band_answer band__answer_make(int kind, int reason, band_time retry_after);

#endif /* BAND_COMPOSE_ANSWER_INTERNAL_H */
