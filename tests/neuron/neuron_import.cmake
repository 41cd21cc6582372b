# Models imported from NEURON by neurosolve.from_neuron (tests/data/neuron_import/: the written
# files and NEURON's run of the model) replayed by `simulate`, without NEURON (well under 1 s).
find_package(Python3 COMPONENTS Interpreter REQUIRED)
add_test(NAME neuron_import_cpu
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_neuron_import.py $<TARGET_FILE:neurosolve_cli>
          ${PROJECT_SOURCE_DIR} cpu)
set_tests_properties(neuron_import_cpu PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)
if(NS_HAVE_CUDA)
  add_test(NAME neuron_import_cuda
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_neuron_import.py $<TARGET_FILE:neurosolve_cli>
            ${PROJECT_SOURCE_DIR} cuda)
  set_tests_properties(neuron_import_cuda PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77)
endif()
