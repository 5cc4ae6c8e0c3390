# SPDX-License-Identifier: MIT
# tests/exec.cmake - the bounded executor (include/band/exec.h), the adaptive concurrency
# limit (include/band/limit.h) and the histogram they record into (include/band/histo.h).
# Included by tests/CMakeLists.txt.

band_add_test(NAME test_histo
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/unit/test_histo.c" TIMEOUT 60 LABELS unit)
band_add_test(NAME test_exec
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/unit/test_exec.c" TIMEOUT 60 LABELS unit)
# Unit tests and the fake-clock simulation (synthetic server whose capacity changes).
band_add_test(NAME test_limit
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/unit/test_limit.c" TIMEOUT 60 LABELS unit)

# Submitters, cancellers and shutdowns racing on executors; bounded by iterations and a
# few seconds of wall time in total.
band_add_test(NAME stress_exec
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/stress/stress_exec.c" TIMEOUT 120 LABELS stress)
