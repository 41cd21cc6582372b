# A shared libneurosolve (and libneurosolve_mpi) exports the public API and
# nothing else: every exported symbol starts with ns_, every NS_API function
# of the headers is exported, and nothing else is (tests/install/scripts/check_symbols.cmake).
if(NOT BUILD_SHARED_LIBS OR NOT CMAKE_NM)
  return()
endif()
set(_ns_symbol_libs $<TARGET_FILE:neurosolve>)
if(NS_HAVE_MPI)
  list(APPEND _ns_symbol_libs $<TARGET_FILE:neurosolve_mpi>)
endif()
add_test(NAME exported_symbols
  COMMAND ${CMAKE_COMMAND}
    -DNM=${CMAKE_NM}
    "-DLIBRARIES=${_ns_symbol_libs}"
    "-DHEADERS=${PROJECT_SOURCE_DIR}/include/neurosolve;${PROJECT_BINARY_DIR}/include/neurosolve;${PROJECT_SOURCE_DIR}/src"
    -P ${CMAKE_CURRENT_LIST_DIR}/scripts/check_symbols.cmake)
set_tests_properties(exported_symbols PROPERTIES LABELS "install")
