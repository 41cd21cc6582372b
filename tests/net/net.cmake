# test_sim_network runs on the backend its argument names: the CPU loop
# (the generic registration) and the GPU loop here (skips without a GPU).
add_test(NAME test_sim_network_cuda COMMAND test_sim_network cuda)
set_tests_properties(test_sim_network_cuda PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600)
# The CPU loop's random network (two thirds of its time): label large, left out of the
# sanitizer and matrix builds, whose test_sim_network runs the rings (the same code).
add_test(NAME test_sim_network_large COMMAND test_sim_network cpu large)
set_tests_properties(test_sim_network_large PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600 LABELS large)

# test_sim_events cuda: FDSyn's per-connection state on the GPU loop against the
# CPU loop, its library built with this build's nvcc (skips without a GPU).
add_test(NAME test_sim_events_cuda COMMAND test_sim_events cuda)
set_tests_properties(test_sim_events_cuda PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600)
ns_test_nvcc(test_sim_events)
