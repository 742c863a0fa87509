# CUDA parts (cuda/): included at the end of the Makefile.
#   with nvcc:     `make` also builds $(BUILD)/bin/cuda-tests (the CUDA test cases on a device)
#                  and $(BUILD)/bin/cuda-cost (chapter 6's table on the GPU); `make test` runs
#                  cuda-tests too (its device cases are skipped when no GPU is visible).
#   without nvcc:  nothing here is built; the emulator tests in $(BUILD)/bin/tests still run.
# CUDA_ARCH=sm_80 (say) overrides the target; default: the visible GPU's, else sm_90 (+ PTX).

NVCC ?= $(firstword $(shell command -v nvcc 2>/dev/null) $(wildcard /usr/local/cuda/bin/nvcc))
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))
CUDA_ARCH ?= $(or $(shell nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '. ' | sed 's/^\([0-9]\)/sm_\1/'),sm_90)
CUDA_COMPUTE := $(subst sm_,compute_,$(CUDA_ARCH))
NVCCFLAGS ?= -std=c++20 -O3 -I. -gencode arch=$(CUDA_COMPUTE),code=[$(CUDA_ARCH),$(CUDA_COMPUTE)] \
             -Xcompiler -Wall,-Wextra -Werror all-warnings
CUDA_LIBS := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudart
CUDA_SRC  := $(filter-out cuda/gpu_bench.cu,$(wildcard cuda/*.cu))
CUDA_OBJ  := $(CUDA_SRC:%.cu=$(BUILD)/cuda/%.o)
KERNEL_OBJ := $(filter-out $(BUILD)/cuda/cuda/cost_bench.o,$(CUDA_OBJ))

# Sanitizer builds (make sanitize) leave the CUDA runtime out: ASan and cudart do not mix.
CUDA_ENABLED := $(if $(and $(NVCC),$(if $(findstring -fsanitize,$(EXTRA_CXXFLAGS)),,yes)),yes,)

ifeq ($(MAKELEVEL),0)
ifneq ($(CUDA_ENABLED),)
$(info cuda: nvcc found ($(NVCC)); building the CUDA programs for $(CUDA_ARCH) + PTX $(CUDA_COMPUTE))
else
$(info cuda: $(if $(NVCC),sanitizer build,no nvcc); CUDA programs not built (the emulator tests still run))
endif
endif

.PHONY: cuda-test emu-tsan gpu-check gpu-bundle

ifneq ($(CUDA_ENABLED),)
build: $(BUILD)/bin/cuda-tests $(BUILD)/bin/cuda-cost $(BUILD)/bin/6-cost-cuda
test: cuda-test

$(BUILD)/cuda/%.o: %.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -MMD -MP -c $< -o $@

# The test source compiled by g++ against the real runtime; the kernels come from nvcc.
$(BUILD)/cuda/obj/tests/%.o: tests/%.cpp | deps
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -DCUDA_DEVICE_BUILD -I$(CUDA_HOME)/include \
	    -DPROJECT_BIN='"$(abspath $(BUILD))/bin"' -DPROJECT_ROOT='"$(CURDIR)"' -c $< -o $@

$(BUILD)/bin/cuda-tests: $(BUILD)/cuda/obj/tests/test_cuda_kernels.o $(BUILD)/obj/tests/main.o $(KERNEL_OBJ) $(CHAPTER_LIB) $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) $^ -o $@ $(LDFLAGS) $(CUDA_LIBS) $(LDLIBS)

$(BUILD)/cuda/obj/cuda/cost_main.o: cuda/cost_main.cpp | deps
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -c $< -o $@

$(BUILD)/bin/cuda-cost: $(BUILD)/cuda/obj/cuda/cost_main.o $(CUDA_OBJ) $(CHAPTER_LIB) $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) $^ -o $@ $(LDFLAGS) $(CUDA_LIBS) $(LDLIBS)

# Chapter 6 with its CUDA path: the same main.cpp compiled with WITH_CUDA (it then calls
# run_cost_table_cuda from cuda/cost_bench.h for --device cuda) and linked with the kernels.
CH6_CUDA_OBJ := $(patsubst chapters/6-cost/%.cpp,$(BUILD)/cuda/obj/chapters/6-cost/%.o,$(wildcard chapters/6-cost/*.cpp))
$(BUILD)/cuda/obj/chapters/6-cost/%.o: chapters/6-cost/%.cpp | deps
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -DWITH_CUDA -c $< -o $@

$(BUILD)/bin/6-cost-cuda: $(CH6_CUDA_OBJ) $(CUDA_OBJ) $(CHAPTER_LIB) $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) $^ -o $@ $(LDFLAGS) $(CUDA_LIBS) $(LDLIBS)

cuda-test: $(BUILD)/bin/cuda-tests ## run the CUDA test cases on the GPU (skipped when none is visible)
	$(BUILD)/bin/cuda-tests

-include $(CUDA_OBJ:.o=.d) $(wildcard $(BUILD)/cuda/obj/*/*.d)
else
cuda-test:
	@echo "cuda-test: nvcc not found (set NVCC=/path/to/nvcc); the emulator cases run in make test"
endif

# ---- the same kernels on the emulator, on every machine ----------------------------------------
# g++ compiles each cuda/*.cu against cuda/emulator.h. The test suite links them (the "cuda
# emulator:" cases), and so do 6-cost-emu (chapter 6 with its --device cuda path: the GPU
# table's allocation, timing, memory and skipping code) and gpu-bench-emu, which the tests run
# at small sizes.
EMU_SRC        := $(filter-out cuda/gpu_bench.cu,$(wildcard cuda/*.cu))
EMU_OBJ        := $(EMU_SRC:%.cu=$(BUILD)/emu/%.o)
EMU_KERNEL_OBJ := $(filter-out $(BUILD)/emu/cuda/cost_bench.o,$(EMU_OBJ))
EMU_CH6_OBJ    := $(patsubst chapters/6-cost/%.cpp,$(BUILD)/emu/chapters/6-cost/%.o,$(wildcard chapters/6-cost/*.cpp))

$(BUILD)/emu/cuda/%.o: cuda/%.cu | deps
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -x c++ -c $< -o $@

$(BUILD)/emu/chapters/6-cost/%.o: chapters/6-cost/%.cpp | deps
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -DWITH_CUDA -c $< -o $@

$(BUILD)/bin/tests: $(EMU_KERNEL_OBJ)

$(BUILD)/bin/6-cost-emu: $(EMU_CH6_OBJ) $(EMU_OBJ) $(CHAPTER_LIB) $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) $^ -o $@ $(LDFLAGS) $(LDLIBS)

# gpu-bench on the emulator (cuBLAS replaced by cuda/cublas_emulated.h): the tests run its
# --quick mode, so its shapes and comparisons have run before gpu-check spends device time.
$(BUILD)/bin/gpu-bench-emu: $(BUILD)/emu/cuda/gpu_bench.o $(EMU_KERNEL_OBJ) $(CHAPTER_LIB) $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) $^ -o $@ $(LDFLAGS) $(LDLIBS)

build: $(BUILD)/bin/6-cost-emu $(BUILD)/bin/gpu-bench-emu

-include $(EMU_OBJ:.o=.d) $(EMU_CH6_OBJ:.o=.d) $(BUILD)/emu/cuda/gpu_bench.d

# ThreadSanitizer over the emulator's OS-thread mode: the real kernels must be race-free and
# the planted missing __syncthreads (cuda/planted_race.cuh) must be reported.
$(BUILD)/bin/emu-tsan: cuda/emu_tsan.cpp $(wildcard cuda/*.cu cuda/*.cuh cuda/*.h)
	@mkdir -p $(dir $@)
	$(CXX) -std=c++20 -O1 -g -fsanitize=thread -DEMU_THREADS -Wall -Wextra -I. $< -o $@

emu-tsan: $(BUILD)/bin/emu-tsan ## ThreadSanitizer catches a planted missing __syncthreads in the emulator
	@export TSAN_OPTIONS="halt_on_error=1 exitcode=66"; \
	$(BUILD)/bin/emu-tsan clean >/dev/null 2>$(BUILD)/emu-tsan-clean.log || \
	  { cat $(BUILD)/emu-tsan-clean.log; echo "emu-tsan: FAILED: ThreadSanitizer reported the real kernels (above)"; exit 1; }; \
	echo "emu-tsan: the real kernels (sgemm tiled, warp-tiled and few-rows, softmax, sum, fused attention) run clean under ThreadSanitizer"; \
	$(BUILD)/bin/emu-tsan planted >/dev/null 2>$(BUILD)/emu-tsan-planted.log; rc=$$?; \
	if [ $$rc = 66 ] && grep -q "ThreadSanitizer: data race" $(BUILD)/emu-tsan-planted.log; then \
	  grep -m1 "SUMMARY" $(BUILD)/emu-tsan-planted.log; \
	  echo "emu-tsan: OK: the planted missing __syncthreads is reported as a data race"; \
	else cat $(BUILD)/emu-tsan-planted.log; echo "emu-tsan: FAILED: the planted race was not reported (exit $$rc)"; exit 1; fi

gpu-check: ## on a machine with a GPU: build, CUDA tests on the device, chapter 6 on cuda, torch peers; results in gpu-check/
	bash cuda/gpu-check.sh $(BUILD)

gpu-bundle: ## copy doctest, stb and the font into .gpu-deps/ for a GPU machine without Debian packages
	bash cuda/gpu-bundle.sh
