# Thin wrapper around CMake so that the README's set-up is two commands:
#   make run    configure, build, run the main job on the bundled real data
#   make test   configure, build, run every test through ctest
# `make run` (and `make build`) configure a fresh build directory without
# the tests, so that they need no LAPACK; `make test` turns the tests on.
BUILD ?= build
ASAN_BUILD ?= build-sanitize
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
NS := $(BUILD)/neurosolve

.PHONY: all build run test test-sanitize bench clean

all: build

# -DNS_TESTS=OFF only when $(BUILD) is configured for the first time: a
# build directory that `make test` configured keeps its tests.
NS_TESTS_FIRST = $(if $(wildcard $(BUILD)/CMakeCache.txt),,-DNS_TESTS=OFF)

build:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(NS_TESTS_FIRST) $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j$(JOBS)

# The main job: a 100 ms Hodgkin-Huxley simulation of six bundled real
# neurons (NEURON's hh and fixed step; traces agree with NEURON's,
# docs/simulation.md), traces and plot in out/; then every bundled
# morphology read, discretised and solved as a checked batch of passive
# cable systems, and the CPU (and GPU, when present) benchmark.
# The plot needs python3 with matplotlib; without it simulate warns that the
# plot is skipped, writes the traces and the run goes on.
SIM_CELLS := ca1_h10 purk_dbbs l5pc_bbp_axon allen_rbp4_485574832 dg_granule_1220882a str_chin
run: build
	$(NS) info
	$(NS) simulate $(SIM_CELLS:%=data/morphologies/%.swc) --record soma --tstop 100 \
	  --out out/sim --plot out/sim.png
	$(NS) morph data/morphologies --radii default:0.5
	$(NS) solve bundled --radii default:0.5 --values cable --cells 5400 --check
	$(NS) bench hines --backend all --cells 256,2560

# After ctest: the tests that skipped all or part of their checks, with the
# reasons (ctest's summary names them without the reasons).
SKIPPED = python3 tests/scripts/skipped.py
test:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DNS_TESTS=ON $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j$(JOBS)
	ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS); rc=$$?; $(SKIPPED) $(BUILD); exit $$rc

# AddressSanitizer + UndefinedBehaviorSanitizer build of the C code (CUDA off:
# the sanitizers do not instrument device code and CI has no GPU), at -O1 as
# ASan advises: its tests ran 2.3-3.6x faster than at -O0 (test_sim_state 32
# against 116 s on 2 cores, 2026-11-29), asserts kept (Debug).
test-sanitize:
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-O1 -g" \
	  -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" -DNS_CUDA=OFF -DNS_SANITIZE=address,undefined $(CMAKE_FLAGS)
	cmake --build $(ASAN_BUILD) -j$(JOBS)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --test-dir $(ASAN_BUILD) --output-on-failure -j$(JOBS) -LE 'large|mpi_np'; \
	  rc=$$?; $(SKIPPED) $(ASAN_BUILD); exit $$rc

bench: build
	$(NS) bench hines --backend all --large --csv bench/hines.csv --plot bench/hines.png

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
