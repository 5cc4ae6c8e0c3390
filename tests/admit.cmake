# SPDX-License-Identifier: MIT
# tests/admit.cmake - multi-budget admission and capacity hierarchies (include/band/admit.h).
# Included by tests/CMakeLists.txt.

band_add_test(NAME test_admit
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/unit/test_admit.c" TIMEOUT 60 LABELS unit)
band_add_test(NAME test_admit_tree
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/unit/test_admit_tree.c" TIMEOUT 60 LABELS unit)

# Threads admitting random subsets of budgets in random orders, with plain acquisitions,
# cancels and deadlines: must always finish, and every budget is whole at quiescence.
# Bounded by iterations and about 4 s of wall time.
band_add_test(NAME stress_admit
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/stress/stress_admit.c" TIMEOUT 120 LABELS stress)

# Estimate, then reconcile a plain permit (band_permit_reconcile() in permit.h); the
# multi-budget form is covered in test_admit.
band_add_test(NAME test_reconcile
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/unit/test_reconcile.c" TIMEOUT 60 LABELS unit)

# The reference-model test: random op sequences over fixed seeds (bounded by operations
# and about 1.5 s of wall time per seed), every result checked against a small model of
# the admission rules; admit_model.c is shared with fuzz/fuzz_admit.c, and the fuzz corpus
# is replayed here too (one test per file), so every build re-checks those inputs. Run one
# case by name with BAND_MODEL_FILTER (see tests/model/model_admit.c).
band_add_test(NAME model_admit
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/model/model_admit.c"
            "${CMAKE_CURRENT_SOURCE_DIR}/model/admit_model.c"
            "${CMAKE_CURRENT_SOURCE_DIR}/model/model_input.c"
            "${CMAKE_CURRENT_SOURCE_DIR}/model/model_driver.c"
    ARGS "${PROJECT_SOURCE_DIR}/fuzz/corpus/fuzz_admit"
    TIMEOUT 180 LABELS model)
