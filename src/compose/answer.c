/* SPDX-License-Identifier: MIT */
/*
 * answer.c - the answer a server gives for a band result (band/answer.h).
 */
#include "band/answer.h"
#include "compose/answer_internal.h"
#include "core/internal.h"

static const int http_of[BAND_ANSWER_KINDS] = {200, 202, 503, 429, 503, 413, 503};

band_answer band__answer_make(int kind, int reason, band_time retry_after)
{
    band_answer a = {kind, http_of[kind], retry_after, reason};
    return a;
}

band_answer band_answer_from(int rc, int source, band_time retry_after)
{
    band_answer a;
    a.reason = rc;
    a.retry_after = retry_after > 0 ? retry_after : 0;
    switch (rc) {
    case 0:
        a.kind = BAND_ANSWER_ACCEPT;
        a.retry_after = 0;
        break;
    case BAND_EAGAIN:
    case BAND_ETIMEDOUT:
        a.kind = source == BAND_ANSWER_FROM_RATE ? BAND_ANSWER_OVER_QUOTA : BAND_ANSWER_BUSY;
        break;
    case BAND_E2BIG:
        a.kind = BAND_ANSWER_TOO_BIG;
        a.retry_after = 0; /* it never fits: retrying is pointless */
        break;
    case BAND_ECLOSED:
    case BAND_ECANCELED:
        a.kind = BAND_ANSWER_GONE;
        a.retry_after = 0;
        break;
    default:
        a.kind = BAND_ANSWER_BUSY;
        break;
    }
    a.http_status = http_of[a.kind];
    return a;
}

uint32_t band_answer_retry_after_s(const band_answer *a)
{
    if (a == NULL || (a->kind != BAND_ANSWER_BUSY && a->kind != BAND_ANSWER_OVER_QUOTA &&
                      a->kind != BAND_ANSWER_SHED))
        return 0;
    band_time s = a->retry_after / BAND_SEC + (a->retry_after % BAND_SEC != 0);
    if (s < 1)
        return 1;
    return s > UINT32_MAX ? UINT32_MAX : (uint32_t)s;
}

const char *band_answer_name(int kind)
{
    static const char *const names[BAND_ANSWER_KINDS] = {"accept", "later",   "busy", "over_quota",
                                                         "shed",   "too_big", "gone"};
    return kind >= 0 && kind < BAND_ANSWER_KINDS ? names[kind] : "?";
}
