# SPDX-License-Identifier: MIT
# tests/shm.cmake - the shared-memory budgets (band/shm.h): unit tests (the contract,
# bad segments), the SIGKILL torture, the two-process model, and the replay of the
# fuzz_shm corpus in every build.

set(_shm_unit "${CMAKE_CURRENT_SOURCE_DIR}/unit")
band_add_test(NAME test_shm SOURCES "${_shm_unit}/test_shm.c" TIMEOUT 120 LABELS unit)
# Damaged segments, no permission (as root, opening as uid 65534) and a full /dev/shm (a
# private mount namespace); the last two skip with a message where they cannot run.
band_add_test(NAME test_shm_bad SOURCES "${_shm_unit}/test_shm_bad.c" TIMEOUT 60 LABELS unit)

# Rounds of worker processes SIGKILLed at random moments (many inside the library), each
# round recovered and checked; 20 s of wall time (15 s under a sanitizer) or 1000 rounds.
band_add_test(NAME stress_shm_torture
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/stress/stress_shm_torture.c"
    TIMEOUT 120 LABELS stress)

# Threads of two processes on one bound: the per-process cache contended by its threads
# while the other process freezes it and takes its units; 3 s of wall time (4 s under a
# sanitizer) or 40000 operations per thread.
band_add_test(NAME stress_shm_threads
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/stress/stress_shm_threads.c"
    TIMEOUT 60 LABELS stress)

# The two-process reference model (tests/model/shm_model.c, shared with fuzz/fuzz_shm.c's
# op-sequence mode): fixed seeds, then the op-sequence corpus of fuzz_shm.
band_add_test(NAME model_shm
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/model/model_shm.c"
            "${CMAKE_CURRENT_SOURCE_DIR}/model/shm_model.c"
            "${CMAKE_CURRENT_SOURCE_DIR}/model/model_input.c"
            "${CMAKE_CURRENT_SOURCE_DIR}/model/model_driver.c"
    ARGS "${PROJECT_SOURCE_DIR}/fuzz/corpus/fuzz_shm_ops"
    TIMEOUT 180 LABELS model)

# The segment-file corpus of fuzz_shm replayed through fuzz/fuzz_shm.c in every build.
band_add_test(NAME test_shm_corpus
    SOURCES "${_shm_unit}/test_shm_corpus.c" "${PROJECT_SOURCE_DIR}/fuzz/fuzz_shm.c"
    ARGS "${PROJECT_SOURCE_DIR}/fuzz/corpus/fuzz_shm"
    TIMEOUT 60 LABELS unit)

# Async shm acquisitions through the event-loop adapters. tests/ is configured before
# adapters/, so these are registered at the end of the top-level directory, when the
# adapters' test libraries exist (and only if they do).
function(_band_shm_adapter_tests)
    if(TARGET band_fd_testing)
        band_add_test(NAME test_shm_fd SOURCES "${PROJECT_SOURCE_DIR}/tests/unit/test_shm_fd.c"
            LIBRARIES band_fd_testing TIMEOUT 60 LABELS unit)
    endif()
    if(TARGET band_uv_testing)
        band_add_test(NAME test_shm_uv SOURCES "${PROJECT_SOURCE_DIR}/tests/unit/test_shm_uv.c"
            LIBRARIES band_uv_testing TIMEOUT 60 LABELS unit)
    endif()
endfunction()
cmake_language(DEFER DIRECTORY "${PROJECT_SOURCE_DIR}" CALL _band_shm_adapter_tests)

# The forked children of these tests use handles, and so start the handle's doorbell
# thread, after fork() in a process with threads - what shm.h allows. TSan refuses that by
# default (die_after_fork); let it run.
foreach(_shm_test test_shm test_shm_bad stress_shm_torture stress_shm_threads model_shm
        test_shm_corpus)
    get_test_property(${_shm_test} ENVIRONMENT _shm_env)
    list(TRANSFORM _shm_env REPLACE "^TSAN_OPTIONS=(.*)$" "TSAN_OPTIONS=\\1:die_after_fork=0")
    set_tests_properties(${_shm_test} PROPERTIES ENVIRONMENT "${_shm_env}")
endforeach()
