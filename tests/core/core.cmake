# The CUDA architectures a default build picks (cmake/cuda_archs.cmake): the GPUs present, none
# (CUDA skipped, with a notice), NS_CUDA=ON, nvcc 13 (issue 45), without a GPU or nvcc.
add_test(NAME cuda_archs_config
  COMMAND ${CMAKE_COMMAND} -P ${PROJECT_SOURCE_DIR}/tests/scripts/cuda_archs_test.cmake)
