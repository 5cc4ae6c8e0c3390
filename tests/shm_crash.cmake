# SPDX-License-Identifier: MIT
# tests/shm_crash.cmake - a death at every point of the shared segment's transactions
# (src/shm/): the testing build's crash countdown kills a process at each logged store in
# turn, and every recovery must return the segment exactly to balance. Linux only.

if(CMAKE_SYSTEM_NAME STREQUAL "Linux")
    band_add_test(NAME shm_crash_points
        SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/unit/shm_crash_points.c"
        TIMEOUT 120 LABELS unit)
endif()
