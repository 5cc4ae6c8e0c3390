/* SPDX-License-Identifier: MIT */
/*
 * version.c - the library's version, as built.
 */
#include "core/internal.h"

const char *band_version(void)
{
    return BAND_VERSION_STRING;
}

unsigned band_version_number(void)
{
    return (unsigned)BAND_VERSION_NUMBER;
}
