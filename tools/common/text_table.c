/* SPDX-License-Identifier: MIT */
/*
 * text_table.c - text tables for the command-line tools (text_table.h).
 */
#include "text_table.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int text_table_row(struct text_table *t)
{
    if (t->nrows == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        void *p = realloc(t->cells, cap * sizeof(*t->cells));
        if (p == NULL)
            return -1;
        t->cells = p;
        t->cap = cap;
    }
    memset(t->cells[t->nrows], 0, sizeof(*t->cells));
    t->nrows++;
    return 0;
}

int text_table_set(struct text_table *t, size_t col, const char *fmt, ...)
{
    if (t->nrows == 0 || col >= TEXT_TABLE_COLS)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    /* The analyzer of clang 14 loses va_start on this path and reports the list unset. */
    // NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized)
    (void)vsnprintf(t->cells[t->nrows - 1][col], TEXT_TABLE_CELL, fmt, ap);
    va_end(ap);
    if (col + 1 > t->ncols)
        t->ncols = col + 1;
    return 0;
}

void text_table_print(const struct text_table *t, const char *prefix, FILE *out)
{
    size_t width[TEXT_TABLE_COLS] = {0};
    for (size_t r = 0; r < t->nrows; r++)
        for (size_t c = 0; c < t->ncols; c++) {
            size_t n = strlen(t->cells[r][c]);
            if (n > width[c])
                width[c] = n;
        }
    for (size_t r = 0; r < t->nrows; r++) {
        (void)fputs(prefix, out);
        for (size_t c = 0; c < t->ncols; c++) {
            if (c + 1 == t->ncols)
                (void)fputs(t->cells[r][c], out);
            else
                (void)fprintf(out, "%-*s  ", (int)width[c], t->cells[r][c]);
        }
        (void)fputc('\n', out);
    }
}

void text_table_free(struct text_table *t)
{
    free(t->cells);
    memset(t, 0, sizeof(*t));
}
