# The programs that time the kernels (included by cuda/cuda.mk, after the kernels' rules):
#   6-cost-cuda    chapter 6 with --device cuda: chapters/6-cost/main.cpp compiled WITH_CUDA
#                  (it then calls run_cost_table_cuda from cost_bench.h) and linked with the
#                  kernels; built by `make build` when nvcc is present
#   6-cost-emu     the same program on the emulator, which the tests run at small sizes
#   gpu-bench-emu  gpu_bench.cu on the emulator (cuBLAS replaced by cuda/emu/cublas_emulated.h):
#                  the tests run its --quick mode, so its shapes and comparisons have run before
#                  gpu-check spends device time; on a GPU gpu-check.sh builds it with nvcc
#   gpu-check      gpu-check.sh: everything above on a real GPU, results in gpu-check/
#   gpu-bundle     gpu-bundle.sh: the build's third-party files for a machine without network

.PHONY: gpu-check gpu-bundle

# Chapter 6's main.cpp compiled WITH_CUDA (its other files are in $(CHAPTER_LIB) as they are):
# g++ with the same flags for both programs (the kernels are what differ), so 6-cost-cuda links
# the object 6-cost-emu's rule below builds, not a second copy.
EMU_CH6_OBJ := $(BUILD)/emu/chapters/6-cost/main.o

ifneq ($(CUDA_ENABLED),)
build: $(BUILD)/bin/6-cost-cuda

$(BUILD)/bin/6-cost-cuda: $(EMU_CH6_OBJ) $(BUILD)/cuda/cuda/bench/cost_bench.o $(KERNEL_OBJ) \
                          $(CHAPTER_LIB) $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) $^ -o $@ $(LDFLAGS) $(CUDA_LIBS) $(LDLIBS)

-include $(BUILD)/cuda/cuda/bench/cost_bench.d
endif

# ---- on the emulator, on every machine ---------------------------------------------------------
$(EMU_CH6_OBJ): chapters/6-cost/main.cpp $(FLAGS_STAMP) | deps
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -DWITH_CUDA -c $< -o $@

$(BUILD)/bin/6-cost-emu: $(EMU_CH6_OBJ) $(BUILD)/emu/cuda/bench/cost_bench.o $(EMU_KERNEL_OBJ) \
                         $(EMU_RT_OBJ) $(EMU_HOOK_OBJ) $(EMU_REG_OBJ) $(CHAPTER_LIB) $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) $^ -o $@ $(LDFLAGS) $(LDLIBS)

$(BUILD)/bin/gpu-bench-emu: $(BUILD)/emu/cuda/bench/gpu_bench.o $(EMU_KERNEL_OBJ) $(EMU_RT_OBJ) \
                            $(EMU_HOOK_OBJ) $(EMU_REG_OBJ) $(CHAPTER_LIB) $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) $^ -o $@ $(LDFLAGS) $(LDLIBS)

build: $(BUILD)/bin/6-cost-emu $(BUILD)/bin/gpu-bench-emu

-include $(EMU_CH6_OBJ:.o=.d) $(BUILD)/emu/cuda/bench/cost_bench.d \
         $(BUILD)/emu/cuda/bench/gpu_bench.d

gpu-check: ## on a machine with a GPU: build, CUDA tests on the device, chapter 6 on cuda, torch peers; results in gpu-check/
	bash cuda/bench/gpu-check.sh $(if $(GPU_CHECK_DIR),,$(BUILD))

gpu-bundle: ## copy doctest, stb and the font into .gpu-deps/ for a GPU machine without Debian packages
	bash cuda/bench/gpu-bundle.sh
