/* SPDX-License-Identifier: MIT */
/**
 * @file band/band.h
 * @brief Umbrella header: includes every public band header.
 *
 * band bounds in-flight work: weighted FIFO semaphores, byte budgets and (in later
 * headers) channels and admission control, with backpressure explicit at every edge.
 * See README.md and docs/ for the contracts.
 */
#ifndef BAND_BAND_H
#define BAND_BAND_H

#include "band/admit.h"
#include "band/answer.h"
#include "band/broadcast.h"
#include "band/budget.h"
#include "band/cancel.h"
#include "band/cap_tree.h"
#include "band/chan.h"
#include "band/core.h"
#include "band/error.h"
#include "band/exec.h"
#include "band/fair.h"
#include "band/front_door.h"
#include "band/group.h"
#include "band/histo.h"
#include "band/keyrate.h"
#include "band/latch.h"
#include "band/limit.h"
#include "band/metrics.h"
#include "band/oneshot.h"
#include "band/permit.h"
#include "band/rate.h"
#include "band/relay.h"
#include "band/sem.h"
#include "band/shm.h"
#include "band/shutdown.h"
#include "band/version.h"
#include "band/watch.h"

#endif /* BAND_BAND_H */
