# The Python package's tests (python/tests, pytest) on the extension this
# build made (build/python/neurosolve, python/CMakeLists.txt): every binding
# against the C results and independent references (scipy, NEURON's traces,
# the command's LiFE results). GPU tests skip without a GPU. Registered when
# the extension is built (NS_PYTHON=AUTO with nanobind found, or ON); the
# test is skipped (exit 77, saying why) when pytest, numpy or scipy is missing.
# Two ctest tests: python_pytest (every file but test_docs.py) and python_pytest_docs
# (test_docs.py: the code blocks of docs/python.md and README.md and the examples, as
# typed; one of them builds BBP's channels). The docs' examples call the bindings that
# python_pytest tests, so CI's build matrix leaves them out (label matrix_skip, .ci/run);
# make test runs both, and the wheel's run in CI every file.
if(NS_PYTHON_BUILT)
  set(_ns_pytest_env
    "PYTHONPATH=${PROJECT_BINARY_DIR}/python;NS_CLI=$<TARGET_FILE:neurosolve_cli>;OMP_WAIT_POLICY=passive")
  add_test(NAME python_pytest
    COMMAND ${NS_PYTHON_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/run_pytest.py
            ${PROJECT_SOURCE_DIR}/python/tests --ignore=${PROJECT_SOURCE_DIR}/python/tests/test_docs.py
            -q -rs -p no:cacheprovider)
  add_test(NAME python_pytest_docs
    COMMAND ${NS_PYTHON_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/run_pytest.py
            ${PROJECT_SOURCE_DIR}/python/tests/test_docs.py -q -rs -p no:cacheprovider)
  set_tests_properties(python_pytest python_pytest_docs PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 900
    ENVIRONMENT "${_ns_pytest_env}")
  set_tests_properties(python_pytest_docs PROPERTIES LABELS matrix_skip)
else()
  # Not built (no nanobind, no Python development files, NS_PYTHON=OFF or a
  # sanitizer build): a test that says so, so that the skip shows in ctest's
  # summary and in `make test`'s list of skipped tests.
  add_test(NAME python_pytest
    COMMAND ${CMAKE_COMMAND} -E echo
            "SKIPPED: the Python extension is not built (NS_PYTHON=${NS_PYTHON}; it needs Python's development files and nanobind: pip install nanobind; docs/python.md)")
  set_tests_properties(python_pytest PROPERTIES SKIP_REGULAR_EXPRESSION "SKIPPED")
endif()
