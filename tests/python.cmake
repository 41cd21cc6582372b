# The Python package's tests (python/tests, pytest) on the extension this
# build made (build/python/neurosolve, python/CMakeLists.txt): every binding
# against the C results and independent references (scipy, NEURON's traces,
# the command's LiFE results). GPU tests skip without a GPU. Registered when
# the extension is built (NS_PYTHON=AUTO with nanobind found, or ON); the
# test is skipped (exit 77, saying why) when pytest, numpy or scipy is missing.
if(NS_PYTHON_BUILT)
  add_test(NAME python_pytest
    COMMAND ${NS_PYTHON_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/run_pytest.py
            ${PROJECT_SOURCE_DIR}/python/tests -q -p no:cacheprovider)
  set_tests_properties(python_pytest PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 900
    ENVIRONMENT "PYTHONPATH=${PROJECT_BINARY_DIR}/python;NS_CLI=$<TARGET_FILE:neurosolve_cli>;OMP_WAIT_POLICY=passive")
endif()
