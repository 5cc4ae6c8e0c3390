# SPDX-License-Identifier: MIT
# check_readme.cmake - fail unless the first ```c block in README.md is byte for byte
# the content of examples/readme_example.c, less the example's SPDX licence line.
#   cmake -DREADME=README.md -DEXAMPLE=examples/readme_example.c -P check_readme.cmake

if(NOT README OR NOT EXAMPLE)
  message(FATAL_ERROR "usage: cmake -DREADME=<file> -DEXAMPLE=<file> -P check_readme.cmake")
endif()
file(READ "${README}" readme)
file(READ "${EXAMPLE}" example)
string(REGEX REPLACE "^/\\* SPDX-License-Identifier: [^\n]*\\*/\n" "" example "${example}")

set(fence_open "```c\n")
string(FIND "${readme}" "${fence_open}" begin)
if(begin EQUAL -1)
  message(FATAL_ERROR "${README}: no ```c block")
endif()
string(LENGTH "${fence_open}" fence_len)
math(EXPR begin "${begin} + ${fence_len}")
string(SUBSTRING "${readme}" ${begin} -1 rest)
string(FIND "${rest}" "\n```" end)
if(end EQUAL -1)
  message(FATAL_ERROR "${README}: the ```c block is not closed")
endif()
math(EXPR end "${end} + 1")
string(SUBSTRING "${rest}" 0 ${end} block)

if(NOT block STREQUAL example)
  file(WRITE "${CMAKE_CURRENT_BINARY_DIR}/readme_block.c" "${block}")
  message(FATAL_ERROR "README.md's example differs from ${EXAMPLE}; the README block was "
                      "written to ${CMAKE_CURRENT_BINARY_DIR}/readme_block.c for diffing")
endif()
message(STATUS "README.md's example matches ${EXAMPLE}")
