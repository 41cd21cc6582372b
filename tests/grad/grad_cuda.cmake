# test_grad_cuda builds BBP's channels with the nvcc of this build, for its
# first architecture (as test_nmodl_cuda: tests/nmodl/nmodl.cmake).
ns_test_nvcc(test_grad_cuda)
if(NS_HAVE_CUDA AND TARGET test_grad_cuda)
  set_tests_properties(test_grad_cuda PROPERTIES TIMEOUT 900)
endif()
