# test_sim_nmodl_neuron also runs on the GPU where there is one: it builds its .mod files
# with the nvcc of this build, for its first architecture (as test_nmodl_cuda).
if(NS_HAVE_CUDA AND TARGET test_sim_nmodl_neuron)
  list(GET CMAKE_CUDA_ARCHITECTURES 0 _ns_snn_arch)
  string(REGEX MATCH "[0-9]+" _ns_snn_arch "${_ns_snn_arch}")
  if(NOT _ns_snn_arch)
    set(_ns_snn_arch 90)
  endif()
  target_compile_definitions(test_sim_nmodl_neuron PRIVATE NS_NVCC="${CMAKE_CUDA_COMPILER}"
    NS_CUDA_ARCH="sm_${_ns_snn_arch}")
endif()
