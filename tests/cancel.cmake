# SPDX-License-Identifier: MIT
# tests/cancel.cmake - the cancellation token (include/band/cancel.h) and the core's one
# blocking wait that honours it. Included by tests/CMakeLists.txt.

band_add_test(NAME test_cancel
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/unit/test_cancel.c" TIMEOUT 60 LABELS unit)

# Every blocking call of every primitive, stopped by a token.
band_add_test(NAME test_cancel_waits
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/unit/test_cancel_waits.c" TIMEOUT 60 LABELS unit)
