/* SPDX-License-Identifier: MIT */
/*
 * error.c - names and messages for result codes, generated from BAND_ERRNO_MAP.
 */
#include "core/internal.h"

const char *band_strerror(int code)
{
    switch (code) {
    case BAND_OK:
        return "success";
    case BAND_PENDING:
        return "operation is pending";
#define BAND__ERR_MSG(name, val, msg)                                                              \
    case BAND_##name:                                                                              \
        return msg;
        BAND_ERRNO_MAP(BAND__ERR_MSG)
#undef BAND__ERR_MSG
    default:
        return "unknown error";
    }
}

const char *band_err_name(int code)
{
    switch (code) {
    case BAND_OK:
        return "BAND_OK";
    case BAND_PENDING:
        return "BAND_PENDING";
#define BAND__ERR_NAME(name, val, msg)                                                             \
    case BAND_##name:                                                                              \
        return "BAND_" #name;
        BAND_ERRNO_MAP(BAND__ERR_NAME)
#undef BAND__ERR_NAME
    default:
        return "BAND_EUNKNOWN";
    }
}
