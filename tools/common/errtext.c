/* SPDX-License-Identifier: MIT */
/*
 * errtext.c - the text of an errno value into a thread's own buffer (errtext.h).
 *
 * POSIX's strerror_r, the XSI one that returns an int: this file asks for no GNU
 * extensions, under which glibc's strerror_r would be the char * returning variant.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include "errtext.h"

#include <stdio.h>
#include <string.h>

#define ERRTEXT_MAX 256

const char *errtext(int e)
{
    static _Thread_local char buf[ERRTEXT_MAX];
    if (strerror_r(e, buf, sizeof(buf)) != 0)
        (void)snprintf(buf, sizeof(buf), "Unknown error %d", e);
    return buf;
}
