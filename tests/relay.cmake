# SPDX-License-Identifier: MIT
# tests/relay.cmake - band_relay (include/band/relay.h): waiters completed by outside code.
# Included by tests/CMakeLists.txt, which defines band_add_test() and band_test_support.

# Argument checks, park/complete/cancel in every order, the cancel hook, a wake that frees
# its waiter, and 2000 waiters whose completes race cancels on two threads (each ends
# exactly once).
band_add_test(NAME test_relay
    SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/unit/test_relay.c"
    TIMEOUT 60 LABELS unit)
