/* SPDX-License-Identifier: MIT */
/*
 * cancel.h - the cancellation token's internal side (never installed).
 */
#ifndef BAND_CORE_CANCEL_H
#define BAND_CORE_CANCEL_H

#include "band/cancel.h"
#include "core/internal.h"

#endif /* BAND_CORE_CANCEL_H */
