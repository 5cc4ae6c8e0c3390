/* SPDX-License-Identifier: MIT */
/*
 * fair_inline_exported.c - the script of fair_inline_script.h compiled with BAND_NO_INLINE,
 * so that every band_fair_handle_try_acquire() and band_fair_handle_release() is a call of
 * the exported function (test_fair_inline.c runs the same script through the inline path).
 */
#define BAND_NO_INLINE     1
#define FAIR_INLINE_SCRIPT fair_inline_script_exported
#include "fair_inline_script.h"

int fair_inline_exported_is_plain(void)
{
#if defined(BAND_FAIR_HAVE_INLINE) || defined(band_fair_handle_try_acquire) ||                     \
    defined(band_fair_handle_release)
    return 0;
#else
    return 1;
#endif
}
