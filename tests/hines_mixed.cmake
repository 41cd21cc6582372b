# The fine-grained solver's kernels: test_hines_mixed_cuda runs the default
# (each group's d and rhs in shared memory where the group fits, the
# device-memory kernel for the rest); these runs force the other two
# variants (NEUROSOLVE_FINE_SHARED, src/hines/cuda/mixed_backend.c).
if(TEST test_hines_mixed_cuda)
  add_test(NAME test_hines_mixed_cuda_fine_device COMMAND test_hines_mixed_cuda)
  add_test(NAME test_hines_mixed_cuda_fine_ab COMMAND test_hines_mixed_cuda)
  set_tests_properties(test_hines_mixed_cuda_fine_device PROPERTIES SKIP_RETURN_CODE 77
                       ENVIRONMENT "NEUROSOLVE_FINE_SHARED=0")
  set_tests_properties(test_hines_mixed_cuda_fine_ab PROPERTIES SKIP_RETURN_CODE 77
                       ENVIRONMENT "NEUROSOLVE_FINE_SHARED=ab")
endif()
