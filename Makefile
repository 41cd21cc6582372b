# Thin wrapper around CMake so that the README's set-up is two commands:
#   make run    configure, build, run the main job on the bundled real data
#   make test   configure, build, run every test through ctest
BUILD ?= build
ASAN_BUILD ?= build-sanitize
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
NS := $(BUILD)/neurosolve

.PHONY: all build run test test-sanitize bench clean

all: build

build:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j$(JOBS)

# The main job: every bundled morphology read, discretised with NEURON's
# d_lambda rule and solved as a batch of passive cable systems, checked
# against the sequential solve and dense LU; then the CPU benchmark.
run: build
	$(NS) info
	$(NS) morph data/morphologies --radii default:0.5
	$(NS) solve bundled --radii default:0.5 --values cable --cells 5400 --check
	$(NS) bench hines --backend all --cells 256,2560

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS)

# AddressSanitizer + UndefinedBehaviorSanitizer build of the C code (CUDA off:
# the sanitizers do not instrument device code and CI has no GPU).
test-sanitize:
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DNS_CUDA=OFF -DNS_SANITIZE=address,undefined $(CMAKE_FLAGS)
	cmake --build $(ASAN_BUILD) -j$(JOBS)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --test-dir $(ASAN_BUILD) --output-on-failure -j$(JOBS) -LE large

bench: build
	$(NS) bench hines --backend all --large --csv bench/hines.csv --plot bench/hines.png

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
