# test_sim_nmodl_neuron also runs on the GPU where there is one: it builds its .mod files
# with the nvcc of this build, for its first architecture (as test_nmodl_cuda).
ns_test_nvcc(test_sim_nmodl_neuron)
