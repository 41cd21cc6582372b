# simulate --network: the NEURON ring's raster through the CLI, a Poisson
# network, bad input with no result files (test_cli_network.py).
find_package(Python3 COMPONENTS Interpreter REQUIRED)
add_test(NAME cli_network
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/test_cli_network.py
          $<TARGET_FILE:neurosolve_cli> ${PROJECT_SOURCE_DIR})
set_tests_properties(cli_network PROPERTIES TIMEOUT 600)
