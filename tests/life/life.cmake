# LiFE tests: on a 2-core machine shared with other jobs, OpenMP threads that
# spin while waiting make the small tests slow; let them sleep instead.
foreach(t test_life_products test_life_fit test_life_path test_life_io test_life_cuda)
  if(TEST ${t})
    set_tests_properties(${t} PROPERTIES ENVIRONMENT "OMP_WAIT_POLICY=passive")
  endif()
endforeach()

# The command line end to end, and the NPY files checked with numpy (and the
# fit against scipy's nnls when scipy is installed).
find_package(Python3 COMPONENTS Interpreter)
if(Python3_FOUND)
  add_test(NAME life_cli
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_life_cli.py
            $<TARGET_FILE:neurosolve_cli>)
  set_tests_properties(life_cli PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
                       ENVIRONMENT "OMP_WAIT_POLICY=passive")
endif()

# The ground-truth phantom recomputed in numpy and the quality benchmark's AUC
# against one computed from life fit's weights (about 5 s of CPU).
if(Python3_FOUND)
  add_test(NAME life_phantom
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_life_phantom.py
            $<TARGET_FILE:neurosolve_cli>)
  set_tests_properties(life_phantom PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
                       ENVIRONMENT "OMP_WAIT_POLICY=passive")
endif()

# life fit stopped by SIGINT/SIGTERM and resumed: bit-identical to the
# uninterrupted fit; hostile states refused (about 3 s).
if(Python3_FOUND)
  add_test(NAME life_resume
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_life_resume.py
            $<TARGET_FILE:neurosolve_cli>)
  set_tests_properties(life_resume PROPERTIES TIMEOUT 120 ENVIRONMENT "OMP_WAIT_POLICY=passive")
endif()

# life cohort on a synthetic derivatives folder: a broken subject reported while the others
# finish, SIGTERM mid-run and a rerun bit-identical to an uninterrupted run (about 3 s).
if(Python3_FOUND)
  add_test(NAME life_cohort
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_life_cohort.py
            $<TARGET_FILE:neurosolve_cli>)
  set_tests_properties(life_cohort PROPERTIES TIMEOUT 120 ENVIRONMENT "OMP_WAIT_POLICY=passive")
endif()
