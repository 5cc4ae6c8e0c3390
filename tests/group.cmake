# tests/group.cmake - the coordination objects: the wait group (include/band/group.h), the
# latch (latch.h) and the shutdown scope (shutdown.h). Included by tests/CMakeLists.txt.

band_add_test(NAME test_group
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/unit/test_group.c" TIMEOUT 60 LABELS unit)
band_add_test(NAME test_latch
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/unit/test_latch.c" TIMEOUT 60 LABELS unit)
band_add_test(NAME test_shutdown
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/unit/test_shutdown.c" TIMEOUT 60 LABELS unit)

# Threads on wait groups, latches and shutdown scopes (with watch links on a semaphore);
# bounded by iterations and a few seconds of wall time per scenario.
band_add_test(NAME stress_group
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/stress/stress_group.c" TIMEOUT 120 LABELS stress)
