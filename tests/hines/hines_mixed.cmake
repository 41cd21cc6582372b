# The fine-grained solver's two kernels: test_hines_mixed_cuda runs the
# default (groups' images in shared memory for batches whose every shape
# fits, the device-memory kernel for batches with the largest bundled cell);
# these runs force the device-memory kernel everywhere and the variant with
# a and b in shared memory too (ns_solve_options.fine_shared,
# src/hines/cuda/mixed_backend.c).
if(TEST test_hines_mixed_cuda)
  add_test(NAME test_hines_mixed_cuda_fine_device COMMAND test_hines_mixed_cuda never)
  add_test(NAME test_hines_mixed_cuda_fine_ab COMMAND test_hines_mixed_cuda ab)
  set_tests_properties(test_hines_mixed_cuda_fine_device test_hines_mixed_cuda_fine_ab PROPERTIES
                       SKIP_RETURN_CODE 77)
endif()
