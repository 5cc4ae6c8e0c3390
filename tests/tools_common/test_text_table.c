/* SPDX-License-Identifier: MIT */
/*
 * test_text_table.c - the tools' text table (tools/common/text_table.h): column widths,
 * the unpadded last column, the prefix, cut cells, refused columns, growth past the first
 * allocation, and free returning an empty table.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text_table.h"

static int failures;

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c);                  \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

/* Print @t into a string the caller frees. */
static char *render(const struct text_table *t, const char *prefix)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (f == NULL)
        return NULL;
    text_table_print(t, prefix, f);
    (void)fclose(f);
    return buf;
}

int main(void)
{
    struct text_table t = {0};
    CHECK(text_table_set(&t, 0, "x") == -1); /* no row yet */
    CHECK(text_table_row(&t) == 0);
    CHECK(text_table_set(&t, 0, "NAME") == 0);
    CHECK(text_table_set(&t, 1, "UNITS") == 0);
    CHECK(text_table_set(&t, 2, "LAST") == 0);
    CHECK(text_table_row(&t) == 0);
    CHECK(text_table_set(&t, 0, "a-long-name") == 0);
    CHECK(text_table_set(&t, 1, "%d", 7) == 0);
    CHECK(text_table_set(&t, 2, "end") == 0);
    CHECK(text_table_set(&t, TEXT_TABLE_COLS, "out") == -1);
    CHECK(t.ncols == 3);
    char *s = render(&t, "  ");
    CHECK(s != NULL && strcmp(s, "  NAME         UNITS  LAST\n"
                                 "  a-long-name  7      end\n") == 0);
    free(s);

    /* A cell longer than TEXT_TABLE_CELL - 1 bytes is cut, never overrun. */
    char big[TEXT_TABLE_CELL * 2];
    memset(big, 'z', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    CHECK(text_table_row(&t) == 0);
    CHECK(text_table_set(&t, 0, "%s", big) == 0);
    CHECK(strlen(t.cells[2][0]) == TEXT_TABLE_CELL - 1);

    /* Rows past the first allocation keep their cells. */
    for (int i = 0; i < 100; i++) {
        CHECK(text_table_row(&t) == 0);
        CHECK(text_table_set(&t, 1, "%d", i) == 0);
    }
    CHECK(t.nrows == 103);
    CHECK(strcmp(t.cells[3][1], "0") == 0 && strcmp(t.cells[102][1], "99") == 0);
    CHECK(strcmp(t.cells[102][0], "") == 0);

    text_table_free(&t);
    CHECK(t.nrows == 0 && t.cells == NULL && t.ncols == 0);
    s = render(&t, "> ");
    CHECK(s != NULL && strcmp(s, "") == 0);
    free(s);

    if (failures == 0)
        printf("test_text_table: all checks passed\n");
    return failures == 0 ? 0 : 1;
}
