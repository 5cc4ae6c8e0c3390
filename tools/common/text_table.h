/* SPDX-License-Identifier: MIT */
/*
 * text_table.h - a text table for the command-line tools: cells collected row by row,
 * printed with each column as wide as its widest cell and two spaces between columns.
 *
 * Not thread-safe: one table belongs to one thread. A zero-initialised struct text_table
 * is an empty table; text_table_free() returns it to that state.
 */
#ifndef BAND_TOOLS_TEXT_TABLE_H
#define BAND_TOOLS_TEXT_TABLE_H

#include <stddef.h>
#include <stdio.h>

#define TEXT_TABLE_COLS 12 /* columns at most */
#define TEXT_TABLE_CELL 72 /* bytes per cell, the NUL included: longer text is cut */

struct text_table {
    size_t ncols; /* columns in use: the highest column set + 1 */
    size_t nrows;
    size_t cap;
    char (*cells)[TEXT_TABLE_COLS][TEXT_TABLE_CELL];
};

/* Start a new row, its cells empty. Returns 0, or -1 when memory runs out (the table is
 * unchanged). */
int text_table_row(struct text_table *t);

/* Format the cell at column @col of the current row (printf rules). Returns 0, or -1
 * when there is no row yet or @col is TEXT_TABLE_COLS or more (nothing is written). */
int text_table_set(struct text_table *t, size_t col, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Print every row to @out, each line starting with @prefix; the last column is not
 * padded. */
void text_table_print(const struct text_table *t, const char *prefix, FILE *out);

/* Free the rows: the table is empty again. */
void text_table_free(struct text_table *t);

#endif
