# The MPI layer's tests (docs/mpi.md). Every tests/test_mpi_*.c is built by
# the generic loop in tests/CMakeLists.txt; without MPI it compiles to a
# program that skips (exit 77). With MPI it links neurosolve_mpi, runs once
# as a singleton (the generic registration) and here again under mpirun with
# 1, 2 and 4 processes. --oversubscribe: CI has 2 cores;
# --allow-run-as-root: CI runs as root.
file(GLOB NS_MPI_TESTS CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/test_mpi_*.c)
if(NOT NS_HAVE_MPI)
  return()
endif()

# The MPI header compiles alone too (as C11 and C++), with MPI's include
# directories as system directories (OpenMPI's C++ bindings are not
# -Wpedantic clean); tests/install/scripts/check_headers.cmake skips it otherwise.
find_program(NS_CXX_FOR_TESTS NAMES c++ g++ clang++)
add_test(NAME headers_standalone_mpi
  COMMAND ${CMAKE_COMMAND}
    -DC_COMPILER=${CMAKE_C_COMPILER}
    -DCXX_COMPILER=${NS_CXX_FOR_TESTS}
    -DINCLUDE_DIR=${PROJECT_SOURCE_DIR}/include
    -DGENERATED_INCLUDE_DIR=${PROJECT_BINARY_DIR}/include
    -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/headers_mpi
    "-DMPI_INCLUDE_DIRS=${MPI_C_INCLUDE_DIRS}"
    -DONLY_HEADER=mpi
    -P ${CMAKE_CURRENT_SOURCE_DIR}/install/scripts/check_headers.cmake)

set(NS_MPIEXEC ${MPIEXEC_EXECUTABLE})
set(NS_MPIEXEC_FLAGS ${MPIEXEC_PREFLAGS})
# OpenMPI refuses root and more processes than cores unless told.
execute_process(COMMAND ${NS_MPIEXEC} --version OUTPUT_VARIABLE _ns_mpiexec_version ERROR_QUIET)
if(_ns_mpiexec_version MATCHES "Open MPI|OpenRTE")
  list(APPEND NS_MPIEXEC_FLAGS --oversubscribe --allow-run-as-root)
endif()
# One OpenMP thread per process: 4 processes already share 2 cores.
set(NS_MPI_TEST_ENV "OMP_NUM_THREADS=1;OMP_WAIT_POLICY=passive")
if(_ns_mpiexec_version MATCHES "Open MPI|OpenRTE")
  # Containers often forbid the cross-memory attach that OpenMPI's shared
  # memory transport uses for large messages; copy through the buffer instead.
  list(APPEND NS_MPI_TEST_ENV "OMPI_MCA_btl_vader_single_copy_mechanism=none")
endif()

if(NS_SANITIZE)
  # OpenMPI leaks at MPI_Finalize from components it has unloaded, whose
  # frames LeakSanitizer cannot name (so no suppression can match them):
  # leak checks off for the MPI tests; AddressSanitizer and UBSan stay on.
  list(APPEND NS_MPI_TEST_ENV "ASAN_OPTIONS=detect_leaks=0")
endif()

foreach(src ${NS_MPI_TESTS})
  get_filename_component(name ${src} NAME_WE)
  target_link_libraries(${name} PRIVATE neurosolve_mpi)
  target_compile_definitions(${name} PRIVATE NS_HAVE_MPI=1)
  set_tests_properties(${name} PROPERTIES TIMEOUT 300 ENVIRONMENT "${NS_MPI_TEST_ENV}")
  if(name STREQUAL "test_mpi_partition")
    continue() # pure functions: no processes to spread
  endif()
  foreach(np 1 2 4)
    add_test(NAME ${name}_np${np}
      COMMAND ${NS_MPIEXEC} ${MPIEXEC_NUMPROC_FLAG} ${np} ${NS_MPIEXEC_FLAGS}
              $<TARGET_FILE:${name}> ${MPIEXEC_POSTFLAGS})
    # A hang (a process left in a collective) fails by the timeout.
    # label mpi_np: the runs under mpiexec, left out of the sanitizer build and the
    # CI matrix (each test's singleton run stays there; make test runs them all)
    set_tests_properties(${name}_np${np} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
                         ENVIRONMENT "${NS_MPI_TEST_ENV}" PROCESSORS ${np} LABELS mpi_np)
  endforeach()
endforeach()

# The command under mpirun: same outputs as one process, one failing rank.
find_package(Python3 COMPONENTS Interpreter)
if(Python3_FOUND)
  add_test(NAME mpi_cli
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_mpi_cli.py
            $<TARGET_FILE:neurosolve_cli> ${PROJECT_SOURCE_DIR} ${NS_MPIEXEC} ${NS_MPIEXEC_FLAGS})
  set_tests_properties(mpi_cli PROPERTIES TIMEOUT 600 PROCESSORS 2 ENVIRONMENT "${NS_MPI_TEST_ENV}" LABELS mpi_np)
  # simulate --network under mpirun: the same files as one process, NEURON's raster, bad input
  add_test(NAME mpi_cli_network
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_mpi_cli_network.py
            $<TARGET_FILE:neurosolve_cli> ${PROJECT_SOURCE_DIR} ${NS_MPIEXEC} ${NS_MPIEXEC_FLAGS})
  set_tests_properties(mpi_cli_network PROPERTIES TIMEOUT 600 PROCESSORS 2 ENVIRONMENT "${NS_MPI_TEST_ENV}"
                       LABELS mpi_np)
endif()
