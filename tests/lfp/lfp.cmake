# test_lfp runs on the CPU loop (the generic registration) and, with the
# argument cuda, the GPU reduction against the CPU's (skips without a GPU);
# test_lfp_lowrank likewise for the lowrank storage.
add_test(NAME test_lfp_cuda COMMAND test_lfp cuda)
set_tests_properties(test_lfp_cuda PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
add_test(NAME test_lfp_lowrank_cuda COMMAND test_lfp_lowrank cuda)
set_tests_properties(test_lfp_lowrank_cuda PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
