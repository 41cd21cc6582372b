# simulate --network: the NEURON ring's raster through the CLI, a Poisson
# network, bad input with no result files (test_cli_network.py).
find_package(Python3 COMPONENTS Interpreter REQUIRED)
add_test(NAME cli_network
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_cli_network.py
          $<TARGET_FILE:neurosolve_cli> ${PROJECT_SOURCE_DIR})
set_tests_properties(cli_network PROPERTIES TIMEOUT 600)
# simulate --network CONFIG.json: the SONATA example's raster (spikes.csv and
# spikes.h5) against NEURON's, bad input (test_cli_sonata.py); 77: built without HDF5.
add_test(NAME cli_sonata
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_cli_sonata.py
          $<TARGET_FILE:neurosolve_cli> ${PROJECT_SOURCE_DIR})
set_tests_properties(cli_sonata PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77)
