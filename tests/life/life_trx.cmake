# TRX tractograms (src/life/trx.c): the C test reads the committed data of
# tests/data/trx (written by make_trx.py with numpy + zipfile); the Python
# test checks the subset writer's ZIP with zipfile, and with trx-python when
# it is installed (skipped parts say so).
if(TARGET test_life_trx)
  target_compile_definitions(test_life_trx PRIVATE NS_TRX_DATA="${PROJECT_SOURCE_DIR}/tests/data/trx")
endif()
find_package(Python3 COMPONENTS Interpreter)
if(Python3_FOUND AND TARGET test_life_trx)
  add_test(NAME life_trx_py
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_life_trx.py
            $<TARGET_FILE:test_life_trx> ${PROJECT_SOURCE_DIR}/tests/data/trx)
  set_tests_properties(life_trx_py PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)
endif()
