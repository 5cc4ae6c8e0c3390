/* SPDX-License-Identifier: MIT */
/*
 * errtext.h - the text of an errno value, safe to call from any thread.
 *
 * strerror() may return a buffer shared by every thread, so a message built in a worker
 * can be overwritten by another thread's strerror() before it is printed. errtext() gives
 * the same text from a buffer of the calling thread's own.
 */
#ifndef BAND_TOOLS_ERRTEXT_H
#define BAND_TOOLS_ERRTEXT_H

/* The text strerror() gives for @e ("Unknown error N" for a value it does not know).
 * Thread-safe. The string belongs to the calling thread and stays valid until that
 * thread's next errtext() call: use it at once (one errtext() per formatted message). */
const char *errtext(int e);

#endif
