# tests/broadcast.cmake - band_broadcast: exact-outcome unit tests and the stress test
# (included by tests/CMakeLists.txt, in name order, like every fragment).

band_add_test(NAME test_broadcast
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/unit/test_broadcast.c"
    TIMEOUT 60 LABELS unit)

# Senders and receivers on one lossless and one lossy broadcast; bounded by iterations and
# a few seconds of wall time per scenario (2 cores, TSan and ASan in CI).
band_add_test(NAME stress_broadcast
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/stress/stress_broadcast.c"
    TIMEOUT 120 LABELS stress)
