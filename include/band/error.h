/* SPDX-License-Identifier: MIT */
/**
 * @file band/error.h
 * @brief Result codes.
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

/**
 * @brief The table of error codes: X(name, value, message) for each.
 *
 * Each entry becomes an enumerator of enum band_result, BAND_ and its name, with that value;
 * band_strerror() and band_err_name() give its message and name. Where a code has an errno
 * counterpart its value is that errno's negative value on Linux; docs/errors.md lists
 * every code with the functions that return it.
 *
 * @param X  The macro applied to each entry.
 */
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
    X(ELAGGED, -4002, "receiver fell behind")                                                      \
    X(ENOENT, -2, "no such object")                                                                \
    X(EEXIST, -17, "object already exists")                                                        \
    X(EACCES, -13, "permission denied")                                                            \
    X(ENOSPC, -28, "no space left for the object")                                                 \
    X(EBADSEG, -4003, "not a valid band segment")                                                  \
    X(EVERSION, -4004, "segment has another layout version")                                       \
    X(ESTALE, -116, "grant is no longer held")                                                     \
    X(EUNAVAIL, -4005, "service could not be reached")

/**
 * @brief The result codes: BAND_OK, BAND_PENDING and one negative BAND_E* code per entry
 * of BAND_ERRNO_MAP.
 */
enum band_result {
    BAND_OK = 0,      /**< success */
    BAND_PENDING = 1, /**< queued: exactly one wake or one successful cancel ends it */
#define BAND__ERR_ENUM(name, val, msg) BAND_##name = (val),
    BAND_ERRNO_MAP(BAND__ERR_ENUM)
#undef BAND__ERR_ENUM
};

/**
 * @brief A short English message for @p code.
 *
 * Never returns NULL: unknown codes give "unknown error". The string is static. MT-safe.
 *
 * @param code  A result code, or any other int.
 * @return A static message, never NULL.
 */
BAND_API const char *band_strerror(int code);

/**
 * @brief The symbolic name of @p code ("BAND_EAGAIN", "BAND_OK", "BAND_PENDING").
 *
 * Never returns NULL: unknown codes give "BAND_EUNKNOWN". The string is static. MT-safe.
 *
 * @param code  A result code, or any other int.
 * @return The code's name as a static string, or "BAND_EUNKNOWN"; never NULL.
 */
BAND_API const char *band_err_name(int code);

#ifdef __cplusplus
}
#endif
#endif /* BAND_ERROR_H */
