# SPDX-License-Identifier: MIT
# band-shm end to end (tests/shm_tool/shm_tool.sh): create, list, show, --json, grow,
# reduce, reclaim of a SIGKILLed holder, remove, and the error paths (a missing segment,
# bad usage, a file under /dev/shm that is no segment, a damaged segment). The segments
# carry the script's PID in their names and are removed however the script ends.
# band-shm is defined later (tools/shm); the generator expression resolves it at
# generation time.

if(CMAKE_SYSTEM_NAME STREQUAL "Linux" AND BAND_BUILD_TOOLS AND NOT BAND_BUILD_FUZZ
   AND BAND_BASH AND EXISTS "${PROJECT_SOURCE_DIR}/tools/shm/CMakeLists.txt")
    add_executable(shm_hold "${CMAKE_CURRENT_SOURCE_DIR}/shm_tool/shm_hold.c")
    target_link_libraries(shm_hold PRIVATE band_static)
    band_target_warnings(shm_hold)
    add_test(NAME shm_tool
             COMMAND "${BAND_BASH}" "${CMAKE_CURRENT_SOURCE_DIR}/shm_tool/shm_tool.sh"
                     $<TARGET_FILE:band-shm> $<TARGET_FILE:shm_hold>)
    set_tests_properties(shm_tool PROPERTIES LABELS "tools" TIMEOUT 120
                         ENVIRONMENT "${BAND_SANITIZER_TEST_ENV}")
endif()
