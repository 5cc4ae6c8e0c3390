/* SPDX-License-Identifier: MIT */
/*
 * sem_inline_exported.c - the script of sem_inline_script.h compiled with BAND_NO_INLINE,
 * so that every band_sem_try_acquire() and band_sem_release() is a call of the exported
 * function (test_sem_inline.c runs the same script through the inline path).
 */
#define BAND_NO_INLINE    1
#define SEM_INLINE_SCRIPT sem_inline_script_exported
#include "sem_inline_script.h"

int sem_inline_exported_is_plain(void)
{
#if defined(BAND_SEM_HAVE_INLINE) || defined(band_sem_try_acquire) || defined(band_sem_release)
    return 0;
#else
    return 1;
#endif
}
