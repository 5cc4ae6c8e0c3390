# SPDX-License-Identifier: MIT
# tests/keyrate.cmake - keyed rate budgets (include/band/keyrate.h). Included by
# tests/CMakeLists.txt.

band_add_test(NAME test_keyrate
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/unit/test_keyrate.c" TIMEOUT 60 LABELS unit)
