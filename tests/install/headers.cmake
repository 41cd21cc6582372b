# Every public header must compile on its own as C11 with -Wpedantic and as
# C++ (extern "C", no C-only constructs). The test runs the compilers.
find_program(NS_CXX_FOR_TESTS NAMES c++ g++ clang++)
add_test(NAME headers_standalone
  COMMAND ${CMAKE_COMMAND}
    -DC_COMPILER=${CMAKE_C_COMPILER}
    -DCXX_COMPILER=${NS_CXX_FOR_TESTS}
    -DINCLUDE_DIR=${PROJECT_SOURCE_DIR}/include
    -DGENERATED_INCLUDE_DIR=${PROJECT_BINARY_DIR}/include
    -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/headers
    -P ${CMAKE_CURRENT_LIST_DIR}/scripts/check_headers.cmake)
