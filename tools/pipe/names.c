/* SPDX-License-Identifier: MIT */
/*
 * names.c - the names of band-pipe's enums (tile.h), as the log, the summary and the
 * progress line print them. Every function is MT-safe and returns a static string;
 * a value out of range gives "unknown".
 */
#include "tile.h"

static const char *name_of(const char *const *names, int count, int v)
{
    if (v < 0 || v >= count)
        return "unknown";
    return names[v];
}

const char *pipe_stage_name(int stage)
{
    static const char *const names[STAGE_COUNT] = {"fetch", "decode", "write"};
    return name_of(names, STAGE_COUNT, stage);
}

const char *pipe_budget_name(int budget)
{
    static const char *const names[BUDGET_COUNT] = {"descriptors", "connections", "requests",
                                                    "cpu",         "memory",      "disk"};
    return name_of(names, BUDGET_COUNT, budget);
}

const char *tile_result_name(int result)
{
    static const char *const names[] = {"pending", "done", "skipped", "failed", "abandoned"};
    return name_of(names, (int)(sizeof names / sizeof names[0]), result);
}

const char *tile_reason_name(int reason)
{
    static const char *const names[REASON_COUNT] = {
        "none",      "http",    "unreachable", "not_found", "no_length",
        "too_large", "corrupt", "warp",        "write",     "throttled"};
    return name_of(names, REASON_COUNT, reason);
}
