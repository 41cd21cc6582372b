# The L5PC model file (data/models/), the model-file parser of
# validation/neuron_model_compare.py and the stored NEURON reference
# (tests/data/neuron_l5/): consistent with each other, without NEURON.
find_package(Python3 COMPONENTS Interpreter REQUIRED)
add_test(NAME neuron_l5_reference
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_neuron_l5_reference.py ${PROJECT_SOURCE_DIR})
set_tests_properties(neuron_l5_reference PROPERTIES TIMEOUT 120)

# The model in neurosolve against those traces (CPU loop; the GPU loop where
# CUDA is built, skipping without a GPU): about 75 s on 2 cores, so "large"
# (left out of the sanitizer and matrix runs).
add_test(NAME model_neuron_cpu
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_model_neuron.py $<TARGET_FILE:neurosolve_cli>
          ${PROJECT_SOURCE_DIR} cpu)
set_tests_properties(model_neuron_cpu PROPERTIES TIMEOUT 900 SKIP_RETURN_CODE 77 LABELS large)
if(NS_HAVE_CUDA)
  add_test(NAME model_neuron_cuda
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_model_neuron.py $<TARGET_FILE:neurosolve_cli>
            ${PROJECT_SOURCE_DIR} cuda)
  set_tests_properties(model_neuron_cuda PROPERTIES TIMEOUT 900 SKIP_RETURN_CODE 77 LABELS large)
endif()
