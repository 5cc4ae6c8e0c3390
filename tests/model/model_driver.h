/* SPDX-License-Identifier: MIT */
/*
 * model_driver.h - the cmocka program around a model interpreter (the *_model.c files):
 * its fixed seeds, the replay of the fuzz corpus and the coverage check. model_driver.c
 * holds main(); each tests/model/model_<name>.c defines `model_driver`, the description
 * of its test: the interpreter's callbacks, the defaults, the coverage check of its
 * counters and any tests of its own. The program's arguments are the corpus directories.
 *
 * The cmocka group, named model_driver.name, runs in this order:
 *  - one test per seed, named "model_seed_<seed>"; seed k (from 0) is
 *    seed_base * (k + 1) + k. It runs BAND_MODEL_OPS operations of the seed (fewer when
 *    the seed's deadline passes first, see BAND_MODEL_SECONDS), adds the run's counts to
 *    the totals, and fails with "seed <seed>: <error text>" (with ops_done set,
 *    "seed <seed> (op <n>): <error text>") when a result did not match the model;
 *  - then, when the tests callback is set, the tests it adds; otherwise:
 *  - "test_corpus": every file of the directories given as arguments (the fuzz corpus)
 *    through model.run_bytes, adding its counts to the totals; it fails when a file fails
 *    or a directory cannot be read, and with corpus_required also when the directories
 *    hold no file;
 *  - "test_coverage": the coverage callback on the totals.
 *
 * Environment (the interpreter reads its own trace variables, <NAME>_MODEL_TRACE):
 *  - BAND_MODEL_SEEDS: how many seeds (default: seeds; at most MODEL_DRIVER_MAX_SEEDS; at
 *    least 1 when seconds_all is set).
 *  - BAND_MODEL_OPS: operations per seed (default: ops).
 *  - BAND_MODEL_SECONDS: read only by a test with a time bound. With seconds_all set (its
 *    default), whole seconds of wall time for all seeds together: seed k may run until
 *    (k + 1) equal shares of it have passed since the group started. With seconds_each
 *    set (its default), seconds (fractions too) that each seed may run from its own start.
 *    Without either, a seed's deadline is MODEL_DRIVER_NO_DEADLINE.
 *  - BAND_MODEL_FILTER: read only when filter is set: a cmocka test-name pattern (e.g.
 *    "model_seed_*"); the coverage check is then skipped, with a message, when not every
 *    seed ran.
 *
 * Single-threaded, like the interpreters.
 */
#ifndef BAND_MODEL_DRIVER_H
#define BAND_MODEL_DRIVER_H

#include "test.h"

#include <stddef.h>
#include <stdint.h>

#define MODEL_DRIVER_MAX_SEEDS 256
/* How many tests a group may hold in all (the seeds and the rest). */
#define MODEL_DRIVER_MAX_TESTS 1024
/* The deadline a seed gets when its driver has no time bound. */
#define MODEL_DRIVER_NO_DEADLINE INT64_MAX

/* An interpreter, behind untyped pointers (fill it with MODEL_DRIVER_MODEL()). */
struct model_driver_model {
    void *(*create)(void); /* NULL when out of memory */
    void (*destroy)(void *m);
    /* Runs @ops operations from @seed, stopping early (with success) at @until when the
     * interpreter has a time bound; 0 when every result matched the model. */
    int (*run_seed)(void *m, uint64_t seed, uint64_t ops, band_time until);
    /* Runs the operations read from @data[0..@len); 0 when every result matched. */
    int (*run_bytes)(void *m, const uint8_t *data, size_t len);
    const char *(*error)(const void *m); /* why the last run failed */
    const void *(*counts)(const void *m);
    size_t counts_size; /* the size of the counts struct, which holds uint64_t fields only */
};

struct model_driver {
    const char *name;     /* the cmocka group: the test's name, e.g. "model_sem" */
    uint64_t seed_base;   /* seed k (from 0) is seed_base * (k + 1) + k */
    uint64_t ops;         /* default of BAND_MODEL_OPS */
    unsigned seeds;       /* default of BAND_MODEL_SEEDS */
    uint64_t seconds_all; /* default of BAND_MODEL_SECONDS, shared by all seeds; or 0 */
    double seconds_each;  /* default of BAND_MODEL_SECONDS, per seed; or 0 (one of the two) */
    int corpus_required;  /* test_corpus fails when the directories hold no file */
    int filter;           /* read BAND_MODEL_FILTER */
    struct model_driver_model model;
    /* Optional: how many operations the failed seed ran, printed with its error. */
    uint64_t (*ops_done)(const void *m);
    /* The coverage check, a cmocka test body (it asserts): @totals is the interpreter's
     * counts struct summed over every seeded run and corpus file so far. */
    void (*coverage)(const void *totals);
    /* Optional: adds the tests that follow the seeds at @tests[*@n..@cap), advancing *@n,
     * instead of test_corpus and test_coverage (model_driver_coverage_test() gives the
     * latter); @argv[1..@argc) are the program's arguments. Returns 0, or the exit status
     * of a program that cannot run its tests. */
    int (*tests)(int argc, char **argv, struct CMUnitTest *tests, size_t *n, size_t cap);
};

/* The test this program runs, defined by its model_<name>.c (see the top of this file). */
extern const struct model_driver model_driver;

/* The "test_coverage" test: the coverage callback on the totals (for a tests callback). */
struct CMUnitTest model_driver_coverage_test(void);

/*
 * For a coverage check: asserts that every operation ran (@ops[i] > 0 for i in [0, @n)),
 * printing "operation <name> never ran" (from @names) for each that did not.
 */
void model_driver_check_ops(const uint64_t *ops, const char *const *names, int n);

/*
 * Typed adapters for an interpreter whose functions are <p>_new(), <p>_free(),
 * <p>_run_bytes(), <p>_error() and <p>_counts() (a struct <p>_counts), plus the seeded
 * run: @run_seed_expr is an expression of m, seed, ops and until (the parameters of
 * struct model_driver_model's run_seed). Use it, or one of the two forms below, once at
 * file scope, then initialize the model member with MODEL_DRIVER_MODEL(p).
 */
#define MODEL_DRIVER_ADAPTERS(p, run_seed_expr)                                                    \
    static void *p##_driver_create(void)                                                           \
    {                                                                                              \
        return p##_new();                                                                          \
    }                                                                                              \
    static void p##_driver_destroy(void *m)                                                        \
    {                                                                                              \
        p##_free(m);                                                                               \
    }                                                                                              \
    static int p##_driver_run_seed(void *m, uint64_t seed, uint64_t ops, band_time until)          \
    {                                                                                              \
        return (run_seed_expr);                                                                    \
    }                                                                                              \
    static int p##_driver_run_bytes(void *m, const uint8_t *data, size_t len)                      \
    {                                                                                              \
        return p##_run_bytes(m, data, len);                                                        \
    }                                                                                              \
    static const char *p##_driver_error(const void *m)                                             \
    {                                                                                              \
        return p##_error(m);                                                                       \
    }                                                                                              \
    static const void *p##_driver_counts(const void *m)                                            \
    {                                                                                              \
        return p##_counts(m);                                                                      \
    }

/* <p>_run_seed(m, seed, ops): bounded by operations only. */
#define MODEL_DRIVER_UNTIMED(p) MODEL_DRIVER_ADAPTERS(p, ((void)until, p##_run_seed(m, seed, ops)))

/* <p>_run_seed(m, seed, ops, until): also stops at the deadline. */
#define MODEL_DRIVER_TIMED(p) MODEL_DRIVER_ADAPTERS(p, p##_run_seed(m, seed, ops, until))

/* The initializer of struct model_driver's model member for the adapters of @p. */
#define MODEL_DRIVER_MODEL(p)                                                                      \
    {                                                                                              \
        .create = p##_driver_create, .destroy = p##_driver_destroy,                                \
        .run_seed = p##_driver_run_seed, .run_bytes = p##_driver_run_bytes,                        \
        .error = p##_driver_error, .counts = p##_driver_counts,                                    \
        .counts_size = sizeof(struct p##_counts),                                                  \
    }

#endif /* BAND_MODEL_DRIVER_H */
