# tests/rate.cmake - the rate budget (include/band/rate.h). Included by tests/CMakeLists.txt.

band_add_test(NAME test_rate
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/unit/test_rate.c" TIMEOUT 60 LABELS unit)

# The rate budget against an independently written token bucket, on random operation
# sequences over a fake clock (20 seeds x 20000 operations).
band_add_test(NAME model_rate
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/model/model_rate.c" TIMEOUT 120 LABELS model)

# Threads trying, booking and cancelling on the real clock: the rate is never exceeded and
# the counters agree (about half a second).
band_add_test(NAME stress_rate
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/stress/stress_rate.c" TIMEOUT 120 LABELS stress)
