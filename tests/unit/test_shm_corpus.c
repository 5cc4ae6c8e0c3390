/* SPDX-License-Identifier: MIT */
/*
 * test_shm_corpus.c - replays the segment-file corpus of fuzz_shm (fuzz/fuzz_shm.c) in
 * every build, so that an input that once crashed band_shm_open() stays a regression
 * test where clang and libFuzzer are not available. The corpus directories are the
 * program's arguments; fuzz_shm aborts on any failure, so reaching the end is the pass.
 */
#include "test.h"

#include <stdio.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int g_argc;
static char **g_argv;

static int run_one(const uint8_t *data, size_t len, const char *path, void *ctx)
{
    (void)path;
    (void)ctx;
    return LLVMFuzzerTestOneInput(data, len);
}

static void test_corpus(void **state)
{
    (void)state;
    unsigned files = 0;
    unsigned failures = test_replay_corpus(g_argv + 1, g_argc - 1, run_one, NULL, &files);
    print_message("replayed %u fuzz_shm corpus file(s)\n", files);
    assert_int_equal(failures, 0);
    assert_true(files > 0);
}

int main(int argc, char **argv)
{
    g_argc = argc;
    g_argv = argv;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_corpus),
    };
    return cmocka_run_group_tests_name("test_shm_corpus", tests, NULL, NULL);
}
