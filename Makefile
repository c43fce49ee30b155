# The two commands of the README:
#   make demo   install what is missing, build, run examples/local-demo.yaml on this machine
#   make test   install what is missing, build, run every test (ctest; labels unit, e2e, gpu),
#               then the worker's suite again on the other Debian release's LibTorch
# And for the container images and a real cluster:
#   make images       build ddp-operator and ddp-worker-cpu with docker, podman or buildah
#   make image-test   build them and run them (ctest label image)
#   make e2e-cluster  the suite of tests/cluster/ on the cluster in KUBECONFIG (skipped without)
#   make cuda-check   compile and link the GPU code against Debian 13's CUDA LibTorch and NCCL
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
CTEST_FLAGS ?=

.PHONY: all deps configure build test test-other cuda-check unit e2e demo clean images image-test e2e-cluster fuzz

all: build

# `make demo` installs only what the build needs (no test tools, no npm): DEPS_ARGS=--build.
DEPS_ARGS ?=
deps:
	@bash scripts/install-deps.sh $(DEPS_ARGS)

# Quiet configure that still reports what was found (LibTorch, NCCL) and shows the whole log
# when it fails.
configure: deps
	@mkdir -p $(BUILD)
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) \
		> $(BUILD)/configure.log 2>&1 || { cat $(BUILD)/configure.log; exit 1; }
	@grep -E '^-- ddp-' $(BUILD)/configure.log || true

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

# The whole suite on this machine's LibTorch, then the worker's suite (label torch) on the other
# Debian release's in a root kept under /var/cache/ddp-roots (scripts/test-other-release.sh).
test: build
	@bash scripts/run-tests.sh $(BUILD) $(JOBS) $(CTEST_FLAGS)

# Every CUDA and NCCL path compiled and linked against Debian 13's CUDA LibTorch 2.6, NCCL 2.22
# and CUDA 12.4 (scripts/cuda-compile-check.sh; not in `make test`: see docs/install.md).
cuda-check:
	JOBS=$(JOBS) bash scripts/cuda-compile-check.sh

# The worker's suite on the other Debian release's LibTorch alone.
test-other: deps
	JOBS=$(JOBS) bash scripts/test-other-release.sh $(CTEST_FLAGS)

unit: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -L unit

e2e: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -L e2e

images:
	bash scripts/build-images.sh

# Exit 77 is a skip (no builder, no cluster): said, not an error.
image-test:
	DDP_IMAGE_TEST=1 bash tests/delivery/image_run_test.sh . || [ $$? -eq 77 ]

e2e-cluster:
	bash tests/cluster/run.sh || [ $$? -eq 77 ]

# The demo runs two binaries: it builds those, not every test, benchmark and fuzz target.
demo: DEPS_ARGS = --build
demo: configure
	@cmake --build $(BUILD) -j $(JOBS) --target ddp-operator ddp-worker
	$(BUILD)/operator/ddp-operator local -f examples/local-demo.yaml

# libFuzzer with ASan and UBSan (clang) in a build of its own: every fuzz/*_fuzz.cc for
# FUZZ_SECONDS each; new crashers land in fuzz/crashers/<stem>/ (`make test` replays them).
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_FLAGS = -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -g
fuzz:
	@bash scripts/install-deps.sh --fuzz
	@mkdir -p $(FUZZ_BUILD)
	@cmake -S . -B $(FUZZ_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DDDP_FUZZ=ON \
		-DDDP_BUILD_WORKER=OFF -DDDP_BUILD_BENCH=OFF -DBUILD_TESTING=OFF \
		"-DCMAKE_CXX_FLAGS=$(FUZZ_FLAGS)" "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined" \
		> $(FUZZ_BUILD)/configure.log 2>&1 || { cat $(FUZZ_BUILD)/configure.log; exit 1; }
	@cmake --build $(FUZZ_BUILD) -j $(JOBS) --target ddp_fuzz_targets
	@bash scripts/run-fuzz.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

clean:
	rm -rf $(BUILD)
