# tests/fair.cmake - per-key fair share with priority classes (include/band/fair.h).
# Included by tests/CMakeLists.txt.

band_add_test(NAME test_fair
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/unit/test_fair.c" TIMEOUT 60 LABELS unit)
# Shares measured on deterministic schedules (1:2:4 exact on every capacity 1..9 and within
# a quantum after every grant, caps below the quantum, idle share redistributed) and the key
# registry under a flood of distinct keys.
band_add_test(NAME test_fair_share
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/unit/test_fair_share.c" TIMEOUT 60 LABELS unit)

# Threads on one fair: blocking, async, cancels, releases, key floods and key changes, and
# a cancel racing with the release that grants it; bounded by iterations and about 6 s of
# wall time (under 4 s in the sanitizer builds).
band_add_test(NAME stress_fair
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/stress/stress_fair.c" TIMEOUT 120 LABELS stress)
