# LiFE from real data (docs/life_data.md): build, fit, report and prune the
# bundled DIPY case end to end, against a model built independently in numpy.
find_package(Python3 COMPONENTS Interpreter)
if(Python3_FOUND)
  add_test(NAME life_data_cli
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_life_data_cli.py
            $<TARGET_FILE:neurosolve_cli> ${PROJECT_SOURCE_DIR}/data/life)
  set_tests_properties(life_data_cli PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
                       ENVIRONMENT "OMP_WAIT_POLICY=passive")
endif()
foreach(t test_life_readers test_life_build)
  if(TEST ${t})
    set_tests_properties(${t} PROPERTIES ENVIRONMENT "OMP_WAIT_POLICY=passive")
  endif()
endforeach()
foreach(t test_life_build test_life_cuda)
  if(TARGET ${t})
    target_compile_definitions(${t} PRIVATE NS_SOURCE_DATA="${PROJECT_SOURCE_DIR}/data/life")
  endif()
endforeach()
