# The Hay L5 cell's gradient (tests/grad/test_grad_hay.c) runs its model on ~1,000
# compartments with central differences: large.
if(TEST test_grad_hay)
  set_tests_properties(test_grad_hay PROPERTIES LABELS large)
endif()
