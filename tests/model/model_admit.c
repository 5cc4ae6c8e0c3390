/*
 * model_admit.c - runs the admission reference model (admit_model.c) over fixed seeds,
 * checks that the generated sequences reached every kind of operation and outcome, and
 * replays the fuzz corpus given on the command line (one test per file, named
 * corpus_<file>). Every case is a test of its own, so that one can be run by name.
 *
 * Environment knobs: BAND_MODEL_SEEDS (how many seeds, default 16), BAND_MODEL_OPS
 * (operations per seed, default 20000; every seed also stops after BAND_MODEL_SECONDS,
 * default 0.6 s, so the test stays within a few seconds under sanitizers),
 * BAND_MODEL_FILTER (a cmocka test-name pattern, e.g. "model_seed_*" or
 * "corpus_destroy_in_wake*"), ADMIT_MODEL_TRACE=1 (print every operation; 2 also dumps
 * the model's state after each), ADMIT_MODEL_RECORD=<file> (write the bytes a seeded run
 * consumed: a corpus file that replays the same operations; use with a filter that
 * selects one seed).
 */
#include "test.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>

#include "admit_model.h"

#define MAX_SEEDS 256
#define MAX_FILES 512

static uint64_t g_ops = 20000;
static unsigned g_nseeds = 16;
static double g_seconds = 0.6;
static uint64_t g_seeds[MAX_SEEDS];
static struct admit_model_counts g_total; /* over the seeds */
static unsigned g_runs;

static void add_counts(const struct admit_model_counts *c)
{
    const uint64_t *src = (const uint64_t *)(const void *)c;
    uint64_t *dst = (uint64_t *)(void *)&g_total;
    for (size_t k = 0; k < sizeof(*c) / sizeof(uint64_t); k++)
        dst[k] += src[k];
    g_runs++;
}

/* Runs g_ops operations of a seed, or fewer when BAND_MODEL_SECONDS run out first. */
static void test_seed(void **state)
{
    uint64_t seed = *(uint64_t *)*state;
    struct admit_model *m = admit_model_new();
    assert_non_null(m);
    admit_model_set_deadline(m, band_now() + (band_time)(g_seconds * (double)BAND_SEC));
    int rc = admit_model_run_seed(m, seed, g_ops);
    if (rc != 0)
        print_error("seed %llu (op %llu): %s\n", (unsigned long long)seed,
                    (unsigned long long)admit_model_ops_done(m), admit_model_error(m));
    add_counts(admit_model_counts(m));
    admit_model_free(m);
    assert_int_equal(rc, 0);
}

static char g_files[MAX_FILES][1024];
static char g_names[MAX_FILES][96];

static void test_file(void **state)
{
    const char *path = *state;
    static uint8_t buf[1 << 20];
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    size_t n = fread(buf, 1, sizeof(buf), fp);
    fclose(fp);
    struct admit_model *m = admit_model_new();
    assert_non_null(m);
    int rc = admit_model_run_bytes(m, buf, n);
    if (rc != 0)
        print_error("%s: %s\n", path, admit_model_error(m));
    admit_model_free(m);
    assert_int_equal(rc, 0);
}

/* The generator must reach every operation and every interesting outcome (counted over
 * the seeds, which run first). */
static void test_coverage(void **state)
{
    (void)state;
    static const char *const names[AM_OP_COUNT] = {
        "build",  "try",    "async",     "past",       "take",        "release",       "part",
        "adjust", "cancel", "plain_try", "plain_past", "plain_async", "plain_release", "drain",
        "grow",   "shrink", "close",     "destroy",    "create",      "busy",          "reset"};
    if (g_runs < g_nseeds) {
        print_message("seeds filtered out: coverage not checked\n");
        return;
    }
    for (int i = 0; i < AM_OP_COUNT; i++) {
        if (g_total.ops[i] == 0)
            print_error("operation %s never ran\n", names[i]);
        assert_true(g_total.ops[i] > 0);
    }
    const struct admit_model_counts *c = &g_total;
    print_message("pending %llu, wakes: grant %llu closed %llu e2big %llu plain %llu; "
                  "cancels %llu, ealready %llu, e2big at submit %llu, guaranteed %llu, "
                  "staged joins %llu, granted at submit %llu, wake releases %llu, "
                  "wake destroys %llu (%llu with a staged request), adjust from set-aside "
                  "%llu, branch points %llu, several candidates %llu, truncated %llu\n",
                  (unsigned long long)c->pending, (unsigned long long)c->grant_wakes,
                  (unsigned long long)c->closed_wakes, (unsigned long long)c->e2big_wakes,
                  (unsigned long long)c->plain_wakes, (unsigned long long)c->cancels_ok,
                  (unsigned long long)c->ealready, (unsigned long long)c->e2big_submit,
                  (unsigned long long)c->guaranteed, (unsigned long long)c->staged_joins,
                  (unsigned long long)c->submit_granted, (unsigned long long)c->hook_releases,
                  (unsigned long long)c->wake_destroys, (unsigned long long)c->destroy_staged,
                  (unsigned long long)c->adjust_front, (unsigned long long)c->branch_points,
                  (unsigned long long)c->multi_candidate, (unsigned long long)c->truncated);
    assert_true(c->pending > 0);
    assert_true(c->grant_wakes > 0);
    assert_true(c->closed_wakes > 0);
    assert_true(c->e2big_wakes > 0);
    assert_true(c->plain_wakes > 0);
    assert_true(c->cancels_ok > 0);
    assert_true(c->ealready > 0);
    assert_true(c->e2big_submit > 0);
    assert_true(c->guaranteed > 0);
    assert_true(c->staged_joins > 0);
    assert_true(c->hook_releases > 0);
    assert_true(c->wake_destroys > 0);
    assert_true(c->adjust_front > 0);
}

/* ---------------------------------------------------------------------------------- */

static uint64_t env_u64(const char *name, uint64_t dflt)
{
    const char *v = getenv(name);
    if (v == NULL || *v == '\0')
        return dflt;
    return strtoull(v, NULL, 10);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp((const char *)a, (const char *)b);
}

int main(int argc, char **argv)
{
    g_ops = env_u64("BAND_MODEL_OPS", g_ops);
    uint64_t ns = env_u64("BAND_MODEL_SEEDS", g_nseeds);
    g_nseeds = (unsigned)(ns > MAX_SEEDS ? MAX_SEEDS : ns);
    const char *secs = getenv("BAND_MODEL_SECONDS");
    if (secs != NULL && *secs != '\0')
        g_seconds = strtod(secs, NULL);
    const char *filter = getenv("BAND_MODEL_FILTER");
    if (filter != NULL && *filter != '\0')
        cmocka_set_test_filter(filter);

    static struct CMUnitTest tests[MAX_SEEDS + MAX_FILES + 8];
    static char seed_names[MAX_SEEDS][40];
    size_t n = 0;
    for (unsigned i = 0; i < g_nseeds; i++) {
        g_seeds[i] = UINT64_C(0x61646d74) * (i + 1) + i; /* fixed: "admt" * k */
        snprintf(seed_names[i], sizeof(seed_names[i]), "model_seed_%llu",
                 (unsigned long long)g_seeds[i]);
        tests[n] = (struct CMUnitTest)cmocka_unit_test_prestate(test_seed, &g_seeds[i]);
        tests[n++].name = seed_names[i];
    }
    /* every file of the corpus directories, in name order, one test each */
    unsigned nfiles = 0;
    for (int a = 1; a < argc; a++) {
        DIR *d = opendir(argv[a]);
        if (d == NULL) {
            fprintf(stderr, "cannot open corpus directory %s\n", argv[a]);
            return 1;
        }
        unsigned first = nfiles;
        struct dirent *e;
        while ((e = readdir(d)) != NULL && nfiles < MAX_FILES) {
            if (e->d_name[0] == '.')
                continue;
            size_t len = strlen(e->d_name);
            if (len + 8 > sizeof(g_names[nfiles])) {
                fprintf(stderr, "corpus file name too long: %s\n", e->d_name);
                closedir(d);
                return 1;
            }
            memcpy(g_names[nfiles], "corpus_", 7);
            memcpy(g_names[nfiles] + 7, e->d_name, len + 1);
            nfiles++;
        }
        closedir(d);
        qsort(g_names[first], nfiles - first, sizeof(g_names[0]), cmp_str);
        for (unsigned i = first; i < nfiles; i++)
            snprintf(g_files[i], sizeof(g_files[i]), "%s/%s", argv[a], g_names[i] + 7);
    }
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_coverage);
    for (unsigned i = 0; i < nfiles; i++) {
        tests[n] = (struct CMUnitTest)cmocka_unit_test_prestate(test_file, g_files[i]);
        tests[n++].name = g_names[i];
    }
    return _cmocka_run_group_tests("model_admit", tests, n, NULL, NULL);
}
