# SPDX-License-Identifier: MIT
# tools/pipe/serve.cmake - serve.c (the dataset's private nginx and urls.txt) and the
# pieces it shares with the examples: tools/common/nginx.c and tools/common/curl_uv.c.
target_sources(band_pipe_core PRIVATE
    ${CMAKE_CURRENT_LIST_DIR}/serve.c
    ${PROJECT_SOURCE_DIR}/tools/common/nginx.c
    ${PROJECT_SOURCE_DIR}/tools/common/curl_uv.c)
