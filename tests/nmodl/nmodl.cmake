# test_nmodl_cuda builds the mechanisms with the nvcc of this build, for its
# first architecture (docs/mechanisms.md).
ns_test_nvcc(test_nmodl_cuda)
if(NS_HAVE_CUDA AND TARGET test_nmodl_cuda)
  set_tests_properties(test_nmodl_cuda PROPERTIES TIMEOUT 900)
endif()

# test_nmodl_pointer cuda: gap.mod's POINTER on the GPU loop (skips without a GPU).
add_test(NAME test_nmodl_pointer_cuda COMMAND test_nmodl_pointer cuda)
set_tests_properties(test_nmodl_pointer_cuda PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600)
ns_test_nvcc(test_nmodl_pointer)

# test_nmodl_neuron: every mechanism of data/mechanisms/ built with the system C compiler
# (the same compiler and flags in every configuration of this library) and run by the test's
# own one-compartment driver against NEURON's traces. CI's build matrix leaves it out (label
# matrix_skip, .ci/run): its translator runs there in test_nmodl, test_sim_nmodl_neuron and
# the CLI's tests; make test and the sanitizer build run it.
set_tests_properties(test_nmodl_neuron PROPERTIES LABELS matrix_skip)

# test_nmodl_gpu_forms: BBP's and NEURON's mechanisms built a second time with the device's forms
# of the generated arithmetic, on the host (a minute of compiling on 2 cores): "large".
set_tests_properties(test_nmodl_gpu_forms PROPERTIES LABELS large)

# test_nmodl_dpointer cuda: a density mechanism's POINTERs on the GPU loop (skips without a GPU).
add_test(NAME test_nmodl_dpointer_cuda COMMAND test_nmodl_dpointer cuda)
set_tests_properties(test_nmodl_dpointer_cuda PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600)
ns_test_nvcc(test_nmodl_dpointer)
