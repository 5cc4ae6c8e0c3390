# SPDX-License-Identifier: MIT
# The API reference and the headers' doc comments (labels unit and lint; no sanitizer or
# fuzz build registers them: they check text, not code).
#
#   api_reference  Doxygen over every installed header (docs/Doxyfile.in) with warnings as
#                  errors, into <build>/docs-check: an undocumented function, parameter or
#                  return value, a @param naming no parameter or an unknown command fails,
#                  and so does a function or header without its man page (man3/<name>.3).
#   header_docs    every installed header compiled alone by clang with -Wdocumentation
#                  -Wdocumentation-unknown-command -Werror, and each exported function's
#                  comment checked for a @param per parameter and a @return
#                  (scripts/check_header_docs.py).

if(BAND_SANITIZE STREQUAL "" AND NOT BAND_BUILD_FUZZ)
    if(BAND_BUILD_DOCS)
        add_test(NAME api_reference
            COMMAND "${CMAKE_COMMAND}"
                    "-DDOXYGEN=${DOXYGEN_EXECUTABLE}"
                    "-DDOXYFILE=${BAND_DOCS_DIR}/Doxyfile"
                    "-DOUTPUT=${PROJECT_BINARY_DIR}/docs-check"
                    "-DLOG=${PROJECT_BINARY_DIR}/docs-check/warnings.log"
                    -DWERROR=ON
                    "-DHEADERS=${BAND_DOCS_HEADERS}"
                    -P "${PROJECT_SOURCE_DIR}/cmake/BandDocsRun.cmake")
        set_tests_properties(api_reference PROPERTIES LABELS "unit;lint" TIMEOUT 120)
    else()
        message(STATUS "band: BAND_BUILD_DOCS=OFF: the api_reference test is not registered")
    endif()

    find_program(BAND_CLANG NAMES clang clang-14)
    if(BAND_CLANG AND Python3_Interpreter_FOUND)
        add_test(NAME header_docs
            COMMAND "${Python3_EXECUTABLE}" "${PROJECT_SOURCE_DIR}/scripts/check_header_docs.py"
                    --clang "${BAND_CLANG}"
                    --generated "${BAND_GENERATED_INCLUDE_DIR}"
                    "${PROJECT_SOURCE_DIR}")
        set_tests_properties(header_docs PROPERTIES LABELS "unit;lint" TIMEOUT 120)
    else()
        message(STATUS "band: clang or python3 not found: the header_docs test is not registered")
    endif()
endif()
