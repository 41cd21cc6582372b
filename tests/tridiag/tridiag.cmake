# test_tridiag_cuda allocates device arrays itself for the device-pointer
# solve, so in CUDA builds it needs the runtime's headers and library.
if(NS_HAVE_CUDA AND TARGET test_tridiag_cuda)
  target_include_directories(test_tridiag_cuda PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
  target_link_libraries(test_tridiag_cuda PRIVATE CUDA::cudart_static)
endif()
