/* SPDX-License-Identifier: MIT */
/*
 * band/error.h - result codes.
 *
 * Functions return 0 on success, BAND_PENDING (> 0) when an operation was queued and a
 * wake will follow, or a negative BAND_E* code. One table generates the codes, their names
 * and their messages. Where a code has an errno counterpart its value is that errno's
 * negative value on Linux (the header includes no system header, so the numbers are
 * written out); band's own conditions use values from -4000 down.
 */
#ifndef BAND_ERROR_H
#define BAND_ERROR_H

#include "band/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* X(name, value, message) */
#define BAND_ERRNO_MAP(X)                                                                          \
    X(EAGAIN, -11, "operation would wait")                                                         \
    X(ETIMEDOUT, -110, "deadline passed")                                                          \
    X(ECANCELED, -125, "operation was cancelled")                                                  \
    X(E2BIG, -7, "request is larger than the capacity")                                            \
    X(EOVERFLOW, -75, "count would overflow")                                                      \
    X(EINVAL, -22, "invalid argument")                                                             \
    X(ENOMEM, -12, "out of memory")                                                                \
    X(EALREADY, -114, "operation already completed")                                               \
    X(EBUSY, -16, "primitive still has pending operations")                                        \
    X(ECLOSED, -4001, "primitive was closed")                                                      \
    X(ELAGGED, -4002, "receiver fell behind")

enum band_result {
    BAND_OK = 0,
    BAND_PENDING = 1, /* queued: exactly one wake or one successful cancel ends it */
#define BAND__ERR_ENUM(name, val, msg) BAND_##name = (val),
    BAND_ERRNO_MAP(BAND__ERR_ENUM)
#undef BAND__ERR_ENUM
};

/**
 * band_strerror() - a short English message for @code.
 *
 * Never returns NULL: unknown codes give "unknown error". The string is static. MT-safe.
 */
BAND_API const char *band_strerror(int code);

/**
 * band_err_name() - the symbolic name of @code ("BAND_EAGAIN", "BAND_OK", "BAND_PENDING").
 *
 * Never returns NULL: unknown codes give "BAND_EUNKNOWN". The string is static. MT-safe.
 */
BAND_API const char *band_err_name(int code);

#ifdef __cplusplus
}
#endif
#endif /* BAND_ERROR_H */
