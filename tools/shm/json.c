/* SPDX-License-Identifier: MIT */
/*
 * json.c - the streaming JSON writer of json.h.
 */
#include "json.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

void json_init(struct json *j, FILE *out)
{
    memset(j, 0, sizeof(*j));
    j->out = out;
    j->first[0] = 1;
}

static void indent(struct json *j)
{
    fputc('\n', j->out);
    for (int i = 0; i < j->depth; i++)
        fputs("  ", j->out);
}

/* The length of the valid UTF-8 sequence at @s (shortest form, no surrogates, at most
 * U+10FFFF), or 0 when the byte there does not start one. */
static size_t utf8_len(const unsigned char *s)
{
    unsigned c = s[0];
    size_t n;
    unsigned min;
    unsigned cp;
    if (c < 0x80)
        return 1;
    if ((c & 0xE0) == 0xC0) {
        n = 2, min = 0x80, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
        n = 3, min = 0x800, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
        n = 4, min = 0x10000, cp = c & 0x07;
    } else {
        return 0;
    }
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3Fu);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

static void put_string(FILE *out, const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    fputc('"', out);
    while (*s) {
        unsigned c = *s;
        if (c == '"' || c == '\\') {
            fputc('\\', out);
            fputc((int)c, out);
            s++;
        } else if (c == '\n') {
            fputs("\\n", out), s++;
        } else if (c == '\t') {
            fputs("\\t", out), s++;
        } else if (c < 0x20 || c == 0x7F) {
            fprintf(out, "\\u%04x", c), s++;
        } else {
            size_t n = utf8_len(s);
            if (n == 0) {
                fprintf(out, "\\u%04x", c); /* a stray byte: its value as a code point */
                s++;
            } else {
                fwrite(s, 1, n, out);
                s += n;
            }
        }
    }
    fputc('"', out);
}

/* The comma, newline and indent before a member, and its key. */
static void member(struct json *j, const char *key)
{
    if (!j->first[j->depth])
        fputc(',', j->out);
    j->first[j->depth] = 0;
    if (j->depth > 0)
        indent(j);
    if (key) {
        put_string(j->out, key);
        fputs(": ", j->out);
    }
}

static void open_level(struct json *j, const char *key, int c)
{
    member(j, key);
    fputc(c, j->out);
    if (j->depth + 1 >= JSON_DEPTH_MAX)
        abort();
    j->depth++;
    j->first[j->depth] = 1;
}

static void close_level(struct json *j, int c)
{
    int empty = j->first[j->depth];
    j->depth--;
    if (!empty)
        indent(j);
    fputc(c, j->out);
    if (j->depth == 0)
        fputc('\n', j->out);
}

void json_object(struct json *j, const char *key)
{
    open_level(j, key, '{');
}

void json_array(struct json *j, const char *key)
{
    open_level(j, key, '[');
}

void json_end_object(struct json *j)
{
    close_level(j, '}');
}

void json_end_array(struct json *j)
{
    close_level(j, ']');
}

void json_str(struct json *j, const char *key, const char *val)
{
    member(j, key);
    put_string(j->out, val);
}

void json_u64(struct json *j, const char *key, uint64_t val)
{
    member(j, key);
    fprintf(j->out, "%" PRIu64, val);
}

void json_i64(struct json *j, const char *key, int64_t val)
{
    member(j, key);
    fprintf(j->out, "%" PRId64, val);
}

void json_bool(struct json *j, const char *key, int val)
{
    member(j, key);
    fputs(val ? "true" : "false", j->out);
}

void json_null(struct json *j, const char *key)
{
    member(j, key);
    fputs("null", j->out);
}
