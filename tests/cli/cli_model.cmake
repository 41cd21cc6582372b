# simulate --model / --mechanisms: bad input, no files after a failed run,
# and the model's hh against the hand-written hh (test_cli_model.py).
find_package(Python3 COMPONENTS Interpreter REQUIRED)
add_test(NAME cli_model
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_cli_model.py
          $<TARGET_FILE:neurosolve_cli> ${PROJECT_SOURCE_DIR})
set_tests_properties(cli_model PROPERTIES TIMEOUT 600)
