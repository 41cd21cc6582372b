# The 10-million-point SWC test (tests/morph/swc_large.c): too slow for the
# ordinary suite (about 7 s optimised, far more under Debug or sanitizers),
# so it is its own program with the ctest label "large" and it skips
# (exit 77) unless NS_LARGE_TESTS=1 is set in the environment:
#   NS_LARGE_TESTS=1 ctest --test-dir BUILD -L large --output-on-failure
add_executable(swc_large ${CMAKE_CURRENT_LIST_DIR}/swc_large.c)
target_link_libraries(swc_large PRIVATE neurosolve m)
target_compile_options(swc_large PRIVATE ${NS_WARNINGS})
target_include_directories(swc_large PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/common)
add_test(NAME swc_large COMMAND swc_large)
set_tests_properties(swc_large PROPERTIES LABELS large SKIP_RETURN_CODE 77 TIMEOUT 900)
