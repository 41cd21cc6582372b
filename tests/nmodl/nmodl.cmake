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

# test_nmodl_cuda_emu: test_nmodl_cuda in a build without CUDA, the mechanisms' device code run on
# the host (tests/common/cuda_emu: the generated .cu compiled as C++ with __CUDA_ARCH__ defined,
# each launch a loop over its threads): its comparisons of every mechanism's device code and
# derivative products with the host's, for a machine without a GPU. It found the FUNCTION_TABLE
# derivatives' NaN and arrdi's second root without a device. Not the device's arithmetic, stack or
# races (cuda_runtime.h there). About 5 minutes of compiling on 2 cores: labels emu and large
# (CI's matrix and the sanitizer build leave large out).
if(NOT NS_HAVE_CUDA AND NOT NS_SANITIZE AND CMAKE_CXX_COMPILER AND UNIX)
  add_executable(test_nmodl_cuda_emu ${CMAKE_CURRENT_SOURCE_DIR}/nmodl/test_nmodl_cuda.c)
  target_include_directories(test_nmodl_cuda_emu BEFORE PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/common/cuda_emu)
  target_include_directories(test_nmodl_cuda_emu PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/nmodl
                             ${CMAKE_CURRENT_SOURCE_DIR}/common ${PROJECT_SOURCE_DIR}/src)
  target_compile_definitions(test_nmodl_cuda_emu PRIVATE NS_HAVE_CUDA=1 NS_CUDA_ARCH="sm_90"
    NS_NVCC="${CMAKE_CURRENT_SOURCE_DIR}/common/cuda_emu/nvcc" NS_TEST_DATA="${NS_TEST_DATA}"
    NS_MORPHOLOGIES="${NS_MORPHOLOGIES}")
  target_link_libraries(test_nmodl_cuda_emu PRIVATE neurosolve_internal ${LAPACK_LIBRARIES} m)
  add_test(NAME test_nmodl_cuda_emu COMMAND test_nmodl_cuda_emu)
  set_tests_properties(test_nmodl_cuda_emu PROPERTIES LABELS "emu;large" SKIP_RETURN_CODE 77 TIMEOUT 1800
                       ENVIRONMENT "NS_EMU_CXX=${CMAKE_CXX_COMPILER};NS_EMU_CC=${CMAKE_C_COMPILER}")
endif()
