/* SPDX-License-Identifier: MIT */
/*
 * json.h - a small streaming JSON writer for band-shm's --json output.
 *
 * Values are written as they come, pretty-printed with two-space indents; the writer keeps
 * only the nesting depth and whether a comma is due. Every string is escaped, and bytes
 * that are not valid UTF-8 (a /dev/shm name may hold any byte) are written as the code
 * point of the same value, so the output is always valid JSON. One thread per writer.
 */
#ifndef BAND_TOOLS_SHM_JSON_H
#define BAND_TOOLS_SHM_JSON_H

#include <stdint.h>
#include <stdio.h>

#define JSON_DEPTH_MAX 16

struct json {
    FILE *out;
    int depth;
    int first[JSON_DEPTH_MAX]; /* 1 until the first member of that level is written */
};

/* Start writing to @out. */
void json_init(struct json *j, FILE *out);

/* Open an object or array; @key names it inside an object, NULL inside an array or at
 * the top. Nesting beyond JSON_DEPTH_MAX is a programming error (abort). */
void json_object(struct json *j, const char *key);
void json_array(struct json *j, const char *key);
/* Close the innermost object or array; at depth 0 it ends the document with a newline. */
void json_end_object(struct json *j);
void json_end_array(struct json *j);

/* One member (@key non-NULL) or array element (@key NULL). */
void json_str(struct json *j, const char *key, const char *val);
void json_u64(struct json *j, const char *key, uint64_t val);
void json_i64(struct json *j, const char *key, int64_t val);
void json_bool(struct json *j, const char *key, int val);
void json_null(struct json *j, const char *key);

#endif
