# tests/oneshot_watch.cmake - band_oneshot and band_watch (include/band/oneshot.h, watch.h).
# Included by tests/CMakeLists.txt, which defines band_add_test() and band_test_support.

band_add_test(NAME test_oneshot
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/unit/test_oneshot.c"
    TIMEOUT 60 LABELS unit)
band_add_test(NAME test_watch
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/unit/test_watch.c"
    TIMEOUT 60 LABELS unit)

# Watch: one sender, many receivers (blocking, async with racing cancels, polling) checking
# monotonic versions, consistent values and that the last version is always observed.
# Oneshot: ping-pong rounds with racing sends, drops, deadlines and cancels, checking that
# every value has exactly one owner. Bounded by iterations and wall time (a few seconds per
# scenario, also under TSan on 2 cores).
band_add_test(NAME stress_watch
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/stress/stress_watch.c"
    TIMEOUT 120 LABELS stress)
