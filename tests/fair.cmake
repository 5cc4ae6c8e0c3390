# SPDX-License-Identifier: MIT
# tests/fair.cmake - per-key fair share with priority classes (include/band/fair.h).
# Included by tests/CMakeLists.txt.

band_add_test(NAME test_fair
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/unit/test_fair.c" TIMEOUT 60 LABELS unit)
# The split accounting of key handles (their own counts, folded back on key changes and puts)
# against a reference model, several handles per key.
band_add_test(NAME test_fair_split
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/unit/test_fair_split.c" TIMEOUT 60 LABELS unit)
# Shares measured on deterministic schedules (1:2:4 exact on every capacity 1..9 and within
# a quantum after every grant, caps below the quantum, idle share redistributed) and the key
# registry under a flood of distinct keys.
# The header's inline handle fast paths against the exported functions (two translation
# units), and the public prefix they read.
band_add_test(NAME test_fair_inline
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/unit/test_fair_inline.c"
            "${CMAKE_CURRENT_SOURCE_DIR}/unit/fair_inline_exported.c"
    TIMEOUT 60 LABELS unit)
band_add_test(NAME test_fair_share
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/unit/test_fair_share.c" TIMEOUT 60 LABELS unit)

# Threads on one fair: blocking, async, cancels, releases, key floods and key changes, and
# a cancel racing with the release that grants it; bounded by iterations and about 6 s of
# wall time (under 4 s in the sanitizer builds).
band_add_test(NAME stress_fair
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/stress/stress_fair.c" TIMEOUT 120 LABELS stress)

# The reference-model test: random op sequences over fixed seeds (12 x 25000 ops, several
# configurations each), every result checked against a plain-array model of the rules;
# fair_model.c is shared with fuzz/fuzz_fair.c, and the fuzz corpus is replayed here too,
# so every build re-checks those inputs.
band_add_test(NAME model_fair
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/model/model_fair.c"
            "${CMAKE_CURRENT_SOURCE_DIR}/model/fair_model.c"
            "${CMAKE_CURRENT_SOURCE_DIR}/model/model_input.c"
            "${CMAKE_CURRENT_SOURCE_DIR}/model/model_driver.c"
    ARGS "${PROJECT_SOURCE_DIR}/fuzz/corpus/fuzz_fair"
    TIMEOUT 180 LABELS model)

# Key handles under threads (more than the cores): the lock-free path against the locked
# calls, queueing that shuts the gate, handles swapped mid-run; exact unit accounting and
# counters at the end. About 3 s (1.5 s under sanitizers).
band_add_test(NAME stress_fair_handles
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/stress/stress_fair_handles.c" TIMEOUT 120 LABELS stress)

# Two threads release the same units of one key (through the handle that took them, by key
# id, through a second handle): exactly one release of each unit succeeds, the rest answer
# BAND_EINVAL, and nothing is left in use after a round. About 1.5 s (0.75 s under sanitizers).
band_add_test(NAME stress_fair_overrelease
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/stress/stress_fair_overrelease.c" TIMEOUT 120 LABELS stress)
