# test_sim_network runs on the backend its argument names: the CPU loop
# (the generic registration) and the GPU loop here (skips without a GPU).
add_test(NAME test_sim_network_cuda COMMAND test_sim_network cuda)
set_tests_properties(test_sim_network_cuda PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600)
