# The L5PC model file (data/models/), the model-file parser of
# validation/neuron_model_compare.py and the stored NEURON reference
# (tests/data/neuron_l5/): consistent with each other, without NEURON.
find_package(Python3 COMPONENTS Interpreter REQUIRED)
add_test(NAME neuron_l5_reference
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/test_neuron_l5_reference.py ${PROJECT_SOURCE_DIR})
set_tests_properties(neuron_l5_reference PROPERTIES TIMEOUT 120)
