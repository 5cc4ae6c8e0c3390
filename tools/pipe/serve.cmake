# SPDX-License-Identifier: MIT
# tools/pipe/serve.cmake - serve.c (the dataset's private nginx and urls.txt) and the
# pieces it shares with the examples: tools/common/nginx.c, tools/common/curl_uv.c and
# tools/common/errtext.c.
target_sources(band_pipe_core PRIVATE
    ${CMAKE_CURRENT_LIST_DIR}/serve.c
    ${PROJECT_SOURCE_DIR}/tools/common/nginx.c
    ${PROJECT_SOURCE_DIR}/tools/common/curl_uv.c
    ${PROJECT_SOURCE_DIR}/tools/common/errtext.c)

# test pipe_serve: serve.c and nginx.c against a real nginx (skipped without one): urls.txt,
# 200 / 404 / 429 with Retry-After and RateLimit-Policy, the access-log counts, refusals.
if(BAND_BUILD_TESTS AND TARGET band::cmocka)
    add_executable(test_pipe_serve
        ${PROJECT_SOURCE_DIR}/tests/pipe/test_serve.c
        ${CMAKE_CURRENT_LIST_DIR}/serve.c
        ${PROJECT_SOURCE_DIR}/tools/common/nginx.c
        ${PROJECT_SOURCE_DIR}/tools/common/errtext.c)
    target_include_directories(test_pipe_serve PRIVATE
        ${CMAKE_CURRENT_LIST_DIR} ${PROJECT_SOURCE_DIR}/tools/common)
    target_link_libraries(test_pipe_serve PRIVATE band::cmocka)
    band_target_warnings(test_pipe_serve)
    add_test(NAME pipe_serve COMMAND test_pipe_serve)
    set_tests_properties(pipe_serve PROPERTIES
        LABELS "tools"
        TIMEOUT 60
        ENVIRONMENT "${BAND_SANITIZER_TEST_ENV}")
endif()
