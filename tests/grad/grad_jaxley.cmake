# neurosolve's gradient against Jaxley's stored one on the same discrete
# equations (test_grad_jaxley.py; the reference: validation/jaxley_grad.py).
find_package(Python3 COMPONENTS Interpreter REQUIRED)
add_test(NAME grad_jaxley
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_grad_jaxley.py
          $<TARGET_FILE:neurosolve_cli> ${NS_TEST_DATA}/grad_jaxley)
set_tests_properties(grad_jaxley PROPERTIES TIMEOUT 600)
