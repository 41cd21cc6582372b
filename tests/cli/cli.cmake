# The command-line tool: exit codes, one-line errors, JSON documents, and the
# issue's acceptance check on every bundled morphology.
find_package(Python3 COMPONENTS Interpreter REQUIRED)
add_test(NAME cli_tool
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_cli.py
          $<TARGET_FILE:neurosolve_cli> ${PROJECT_SOURCE_DIR})
set_tests_properties(cli_tool PROPERTIES TIMEOUT 600)

# solve --check on all bundled morphologies: <= 1e-12 against the sequential
# solve and <= 1e-10 against dense LU (cells up to 2,000 unknowns). Radii <= 0
# get 0.5 um so that the diameter-less tracing loads too (docs/swc.md).
add_test(NAME cli_solve_bundled_check
  COMMAND $<TARGET_FILE:neurosolve_cli> solve bundled --cells 108 --check
          --radii default:0.5 --values cable --tolerance 1e-10)
add_test(NAME cli_solve_bundled_random
  COMMAND $<TARGET_FILE:neurosolve_cli> solve bundled --cells 108 --check
          --radii default:0.5 --method openmp --tolerance 1e-10)
set_tests_properties(cli_solve_bundled_check cli_solve_bundled_random PROPERTIES TIMEOUT 900)

# One exit-code rule: --help on every command and subcommand exits 0; every
# option's out-of-range values exit 2 before any work (docs/cli.md).
add_test(NAME cli_exit_codes
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_cli_exit_codes.py
          $<TARGET_FILE:neurosolve_cli> ${PROJECT_SOURCE_DIR})
set_tests_properties(cli_exit_codes PROPERTIES TIMEOUT 600)

# simulate --checkpoint/--resume (bit-identical continuation), the partial
# files of an interrupted run (SIGINT, NaN), errors that name their input.
add_test(NAME cli_harden
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_cli_harden.py
          $<TARGET_FILE:neurosolve_cli> ${PROJECT_SOURCE_DIR})
set_tests_properties(cli_harden PROPERTIES TIMEOUT 600)

# Inputs people type (issue 45): --opt=value, errors naming the wrong part,
# NEURON's section names against NEURON 9's Import3d (tests/data/
# neuron_section_names.csv, validation/neuron_section_names.py), morph --sections.
add_test(NAME cli_inputs
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_cli_inputs.py
          $<TARGET_FILE:neurosolve_cli> ${PROJECT_SOURCE_DIR})
set_tests_properties(cli_inputs PROPERTIES TIMEOUT 300)

# Every shell command of README.md and docs/*.md runs as typed (issue 45),
# but those the test's allow-list excludes with a reason (GPU, MPI, NEURON,
# builds, downloads); each error example fails with its documented line.
add_test(NAME doc_commands
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_doc_commands.py
          $<TARGET_FILE:neurosolve_cli> ${PROJECT_SOURCE_DIR})
set_tests_properties(doc_commands PROPERTIES TIMEOUT 600)

# --flag=VALUE for the flags of every command (issue 45).
add_test(NAME cli_flags
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_cli_flags.py
          $<TARGET_FILE:neurosolve_cli> ${PROJECT_SOURCE_DIR})
set_tests_properties(cli_flags PROPERTIES TIMEOUT 120)

# Progress on a terminal (issue 45): simulate, mechanisms build and life fit
# under a pseudo-terminal draw a bar with the time left; none to a pipe.
add_test(NAME cli_progress
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_cli_progress.py
          $<TARGET_FILE:neurosolve_cli> ${PROJECT_SOURCE_DIR})
set_tests_properties(cli_progress PROPERTIES TIMEOUT 300)

# make test's list of skipped tests with their reasons (tests/scripts/skipped.py,
# issue 45) on a LastTest.log in ctest's layout.
add_test(NAME skipped_summary
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_skipped_summary.py ${PROJECT_SOURCE_DIR})
set_tests_properties(skipped_summary PROPERTIES TIMEOUT 60)

# The README's set-up holds (issue 45): every package a test imports is in its
# `pip install` line, `pip install .` does not switch HDF5/CUDA/MPI off, and
# `bench hines` notes noisy timings only under load (a getloadavg shim).
add_test(NAME first_hour
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_first_hour.py
          $<TARGET_FILE:neurosolve_cli> ${PROJECT_SOURCE_DIR})
set_tests_properties(first_hour PROPERTIES TIMEOUT 120)

# simulate --lfp-populations: each population's potentials against its cells run alone (issue 44).
add_test(NAME cli_lfp
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_cli_lfp.py
          $<TARGET_FILE:neurosolve_cli> ${PROJECT_SOURCE_DIR})
set_tests_properties(cli_lfp PROPERTIES TIMEOUT 120)
