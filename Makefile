# The two commands of the README:
#   make demo   install what is missing, build, run examples/local-demo.yaml on this machine
#   make test   install what is missing, build, run every test (ctest; labels unit, e2e, gpu)
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
CTEST_FLAGS ?=

.PHONY: all deps configure build test unit e2e demo clean

all: build

deps:
	@bash scripts/install-deps.sh

# Quiet configure that still reports what was found (LibTorch, NCCL) and shows the whole log
# when it fails.
configure: deps
	@mkdir -p $(BUILD)
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) \
		> $(BUILD)/configure.log 2>&1 || { cat $(BUILD)/configure.log; exit 1; }
	@grep -E '^-- ddp-' $(BUILD)/configure.log || true

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) $(CTEST_FLAGS)

unit: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -L unit

e2e: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -L e2e

demo: build
	$(BUILD)/operator/ddp-operator local -f examples/local-demo.yaml

clean:
	rm -rf $(BUILD)
