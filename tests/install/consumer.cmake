# The consumer test: install this build to a temporary prefix, move the
# installed tree (everything must be relocatable), then build and run
# tests/install/consumer/main.c with find_package(neurosolve) and with pkg-config
# (--static for a static library); configure neurosolve as a subproject
# (tests/install/consumer/subproject: NS_TESTS defaults to OFF). Label `consumer`. Not in sanitizer
# builds (the installed library would need the sanitizers' runtime).
if(NS_SANITIZE)
  return()
endif()
find_program(NS_PKG_CONFIG NAMES pkg-config pkgconf)
add_test(NAME consumer
  COMMAND ${CMAKE_COMMAND}
    -DBUILD_DIR=${PROJECT_BINARY_DIR}
    -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
    -DCONSUMER_SOURCE=${CMAKE_CURRENT_LIST_DIR}/consumer
    -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/consumer
    -DC_COMPILER=${CMAKE_C_COMPILER}
    -DLIBDIR=${CMAKE_INSTALL_LIBDIR}
    -DSHARED=${BUILD_SHARED_LIBS}
    -DPKG_CONFIG=${NS_PKG_CONFIG}
    -DCONFIG=$<CONFIG>
    -P ${CMAKE_CURRENT_LIST_DIR}/scripts/consumer.cmake)
set_tests_properties(consumer PROPERTIES LABELS "consumer;install" TIMEOUT 900)
