# CUDA parts (cuda/): included at the end of the Makefile. This file builds the kernels
# (cuda/*.cu) two ways and the device test program; cuda/emu/emu.mk holds the emulator's own
# checks (emu-tsan), cuda/bench/bench.mk the programs that time the kernels (chapter 6 on the
# GPU, gpu-bench) and gpu-check.
#   CUDA=1:  `make build` (and so `make test`) also builds with nvcc $(BUILD)/bin/cuda-tests (the
#            CUDA test cases on a device) and $(BUILD)/bin/6-cost-cuda (chapter 6 with --device
#            cuda); `make test` runs cuda-tests too (its device cases are skipped when no GPU is
#            visible), and the emulator checks each launch against ptxas's register counts.
#   CUDA=0:  nothing here is built for a device; the emulator tests in $(BUILD)/bin/tests run.
# CUDA is 1 where nvcc is and nvidia-smi lists a GPU, else 0: without a GPU the device programs
# cannot run, and nvcc is the longest compile there is. `make CUDA=1 test` builds them anyway
# (CI does: every kernel then compiles with nvcc, and ptxas checks sgemm for spills).
# CUDA_ARCH=sm_80 (say) overrides the target; default: the visible GPU's, else sm_90 (+ PTX).

NVCC ?= $(firstword $(shell command -v nvcc 2>/dev/null) $(wildcard /usr/local/cuda/bin/nvcc))
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))
CUDA_ARCH ?= $(or $(shell nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '. ' | sed 's/^\([0-9]\)/sm_\1/'),sm_90)
CUDA_COMPUTE := $(subst sm_,compute_,$(CUDA_ARCH))
# Warnings are errors while developing; gpu-check passes NVCC_WERROR= (another machine's host
# compiler may warn where ours does not).
NVCC_WERROR ?= -Werror all-warnings
NVCCFLAGS ?= -std=c++20 -O3 -I. -gencode arch=$(CUDA_COMPUTE),code=[$(CUDA_ARCH),$(CUDA_COMPUTE)] \
             -Xcompiler -Wall,-Wextra $(NVCC_WERROR)
CUDA_LIBS := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudart
# The kernels, in cuda/ itself: every program below links all of them.
KERNEL_SRC := $(wildcard cuda/*.cu)
KERNEL_OBJ := $(KERNEL_SRC:%.cu=$(BUILD)/cuda/%.o)

export CUDA ?= $(if $(and $(NVCC),$(shell nvidia-smi -L 2>/dev/null | grep -m1 GPU)),1,0)
# Sanitizer builds (make sanitize) leave the CUDA runtime out: ASan and cudart do not mix.
CUDA_SANITIZED := $(findstring -fsanitize,$(EXTRA_CXXFLAGS))
CUDA_ENABLED := $(if $(and $(NVCC),$(filter 1,$(CUDA))),$(if $(CUDA_SANITIZED),,yes))
CUDA_WHY := $(if $(NVCC),$(if $(filter 1,$(CUDA)),sanitizer build,no GPU),no nvcc)
CUDA_HOW := $(if $(and $(NVCC),$(filter-out 1,$(CUDA))),make CUDA=1 builds them; )

ifeq ($(MAKELEVEL),0)
ifneq ($(CUDA_ENABLED),)
$(info cuda: nvcc found ($(NVCC)); building the CUDA programs for $(CUDA_ARCH) + PTX $(CUDA_COMPUTE))
else
$(info cuda: $(CUDA_WHY); CUDA programs not built ($(CUDA_HOW)the emulator tests still run))
endif
endif

.PHONY: cuda-test cuda-ptxas-report

ifneq ($(CUDA_ENABLED),)
build: $(BUILD)/bin/cuda-tests
test: cuda-test

# ptxas's report of each object (-Xptxas -v) goes beside it (.ptxas), for the emulator's
# register table (below); the rest of nvcc's messages go to the terminal. An object without
# its report beside it is compiled again.
$(BUILD)/cuda/%.o: %.cu $(call stamp,nvcc,$(NVCC) $(NVCCFLAGS))
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -Xptxas -v -MMD -MP -c $< -o $@ 2>$(@:.o=.ptxas) || \
	  { cat $(@:.o=.ptxas) >&2; rm -f $@; exit 1; }
	@grep -v -e '^ptxas info' -e '^    [0-9]* bytes stack frame' $(@:.o=.ptxas) >&2 || true
$(foreach o,$(KERNEL_OBJ),$(if $(wildcard $(o:.o=.ptxas)),,$(eval $(o): ptxas-every-time)))
# No sgemm kernel may spill registers to local memory (ptxas's figures: cuda/sgemm.cu); where
# warnings are errors, a spill fails the build.
$(BUILD)/cuda/cuda/sgemm.o: NVCCFLAGS += -Xptxas -warn-spills $(if $(NVCC_WERROR),-Xptxas -Werror)

# ptxas's report of every kernel source, for gpu-check's spill check (cuda/bench/gpu-check.sh):
# each compiled afresh with -Xptxas -v into a scratch object, at every make that names it, since
# ptxas reports only when it runs, and nothing for an object already built.
PTXAS_SRC := $(KERNEL_SRC) $(wildcard cuda/bench/*.cu)
PTXAS_REPORTS := $(PTXAS_SRC:%.cu=$(BUILD)/cuda/ptxas/%.txt)
.PHONY: ptxas-every-time
ptxas-every-time:
$(BUILD)/cuda/ptxas/%.txt: %.cu ptxas-every-time
	@mkdir -p $(dir $@)
	@$(NVCC) $(NVCCFLAGS) -Xptxas -v -c $< -o $(@:.txt=.o) >$@ 2>&1 || { cat $@; exit 1; }
cuda-ptxas-report: $(PTXAS_REPORTS) ## ptxas's report (registers, spills) of every kernel source

# The emulator's register table (cuda/emu/checks.h): ptxas's register count of every kernel
# in cuda/*.cu, from the reports the objects above leave, so ptxas runs no more than it does
# for them. Linked into every emulator program (EMU_REG_OBJ); without nvcc, none is.
EMU_REG_OBJ := $(BUILD)/emu/kernel_registers.o
$(BUILD)/emu/kernel_registers.cpp: $(KERNEL_OBJ) cuda/emu/kernel_registers.pl
	@mkdir -p $(dir $@)
	perl cuda/emu/kernel_registers.pl $(KERNEL_OBJ:.o=.ptxas) > $@.tmp && mv $@.tmp $@
$(EMU_REG_OBJ): $(BUILD)/emu/kernel_registers.cpp cuda/emu/checks.h $(FLAGS_STAMP) | deps
	$(CXX) $(CXXFLAGS) -c $< -o $@

# The test source compiled by g++ against the real runtime; the kernels come from nvcc.
$(BUILD)/cuda/obj/tests/%.o: tests/%.cpp $(FLAGS_STAMP) $(TEST_STAMP) | deps
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) $(TEST_DEFINES) -DCUDA_DEVICE_BUILD -I$(CUDA_HOME)/include -c $< -o $@

$(BUILD)/bin/cuda-tests: $(BUILD)/cuda/obj/tests/test_cuda_kernels.o $(BUILD)/obj/tests/main.o $(KERNEL_OBJ) $(CHAPTER_LIB) $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) $^ -o $@ $(LDFLAGS) $(CUDA_LIBS) $(LDLIBS)

cuda-test: $(BUILD)/bin/cuda-tests ## run the CUDA test cases on the GPU (skipped when none is visible)
	$(BUILD)/bin/cuda-tests

-include $(KERNEL_OBJ:.o=.d) $(wildcard $(BUILD)/cuda/obj/tests/*.d)
else
cuda-test:
	@echo "cuda-test: $(CUDA_WHY): CUDA programs not built ($(CUDA_HOW)the emulator cases run in make test)"
cuda-ptxas-report:
	@echo "cuda-ptxas-report: $(CUDA_WHY), so nothing is compiled with nvcc$(if $(CUDA_HOW), \
	  (make CUDA=1 cuda-ptxas-report))$(if $(NVCC),, (set NVCC=/path/to/nvcc))"; exit 1
endif

# ---- the same kernels on the emulator, on every machine ----------------------------------------
# g++ compiles each cuda/*.cu (and cuda/bench/*.cu) against cuda/emu/emulator.h. The test suite
# links the kernels (the "cuda emulator:" cases); cuda/bench/bench.mk links them into
# 6-cost-emu and gpu-bench-emu, which the tests run at small sizes.
EMU_KERNEL_OBJ := $(KERNEL_SRC:%.cu=$(BUILD)/emu/%.o)
# The emulator itself (cuda/emu/*.cpp): compiled once, by the rule of every .cpp, at the
# project's flags and never instrumented, and linked into every emulator program; the hooks
# only where the kernels call them.
EMU_RT_OBJ := $(addprefix $(BUILD)/obj/cuda/emu/,runtime.o scheduler.o checks.o)

# The access checks (cuda/emu/racecheck.cpp, emu::access): every object that holds kernels is
# compiled with GCC's ThreadSanitizer instrumentation (every load and store a call) and linked
# with cuda/emu/racecheck.cpp, the hooks, in place of its runtime; so every kernel any emulator
# build launches (the suite, 6-cost-emu, gpu-bench-emu) runs under them: a shared-memory race
# between warps (shadow state per word, independent of the schedule), an access or an atomic
# outside a shared array or tile or a buffer's live bytes, a misaligned float2/float4 or atomic;
# and with GCC's alignment check (-fsanitize=alignment, its handler in racecheck.cpp too) a
# struct's member reached through a pointer misaligned for the struct.
# -g1: the line tables that name a report's source lines; -fno-optimize-sibling-calls: an atomic
# is a call to its hook, and one in a kernel's last statement must return there, not to the
# launch, for its return address to name its line. EMU_RACECHECK=0 leaves them out; clang builds
# (GCC's hook names) and the sanitizer builds (ASan cannot be combined with the instrumentation)
# do.
EMU_RACECHECK ?= $(if $(or $(PORT_CLANG),$(findstring -fsanitize,$(EXTRA_CXXFLAGS))),0,1)
ifeq ($(EMU_RACECHECK),1)
EMU_INSTRUMENT := -fsanitize=thread,alignment --param=tsan-instrument-func-entry-exit=0 -g1 \
                  -fno-optimize-sibling-calls -DEMU_INSTRUMENTED
EMU_HOOK_OBJ := $(BUILD)/obj/cuda/emu/racecheck.o
# The planted bugs of each check, in the suite (a test unit with kernels of its own).
EMU_CHECK_TESTS := $(BUILD)/obj/tests/test_emulator_checks.o
endif

# The instrumentation as the objects were last built with it (the Makefile's stamp), so that
# every object compiled with it is rebuilt when it changes (make EMU_RACECHECK=0, then 1).
EMU_FLAGS_STAMP := $(call stamp,emu,$(EMU_INSTRUMENT))

# Each source is preprocessed first, with __launch_bounds__(args) a marker
# (-DEMU_LAUNCH_BOUNDS_PASS, cuda/emu/emulator.h); cuda/emu/launch_bounds.pl turns every marker
# into a check of the block against args in the body of the function it declares, so that every
# kernel declared with launch bounds, however spelled (a macro, a parameterised one), checks them
# at each launch, with no hand-written call. The preprocessed unit (.lb.ii) is what g++ compiles
# (and ccache caches); its line markers keep every diagnostic and line table on the source. The
# number of checks inserted stays beside the object (.lb-checks), for the test that holds it to
# the source's count of __launch_bounds__. (A test unit compiled so goes without the tests'
# precompiled header: the preprocessed unit holds its headers already.)
EMU_LB := perl cuda/emu/launch_bounds.pl
EMU_LB_FLAGS = $(filter-out -include $(TEST_PCH),$(CXXFLAGS)) $(EMU_INSTRUMENT)
define emu_lb_compile
	$(CXX) $(EMU_LB_FLAGS) -DEMU_LAUNCH_BOUNDS_PASS -MT $@ -MF $(@:.o=.d) -E -x c++ $< \
	    -o $(@:.o=.ii)
	$(EMU_LB) $(@:.o=.ii) > $(@:.o=.lb.ii)
	grep -o '{ ::emu::check_launch_bounds(' $(@:.o=.lb.ii) | wc -l > $(@:.o=.lb-checks)
	$(CXX) $(filter-out -MMD -MP,$(EMU_LB_FLAGS)) -c $(@:.o=.lb.ii) -o $@
	@rm -f $(@:.o=.ii) $(@:.o=.lb.ii)
endef
$(BUILD)/emu/cuda/%.o: cuda/%.cu cuda/emu/launch_bounds.pl cuda/cuda.mk $(FLAGS_STAMP) \
        $(EMU_FLAGS_STAMP) | deps
	@mkdir -p $(dir $@)
	$(emu_lb_compile)
$(BUILD)/obj/tests/test_emulator_checks.o: tests/test_emulator_checks.cpp \
        cuda/emu/launch_bounds.pl cuda/cuda.mk $(FLAGS_STAMP) $(EMU_FLAGS_STAMP) | deps
	@mkdir -p $(dir $@)
	$(emu_lb_compile)
# The emulator's sgemm is its largest unit (every tile shape, instrumented): it compiles at -O1.
# The emulator's results are compared with tolerances, never bit for bit.
$(BUILD)/emu/cuda/sgemm.o: private CXXFLAGS += -O1
# The kernels of tests/test_cuda_emulator.cpp, apart from its test cases, which need no hooks.
# private: a target's variables reach its prerequisites, and the tests' precompiled header
# built with the hooks' flags would be refused by every other test unit.
$(BUILD)/obj/tests/emu_kernels.o: private CXXFLAGS += $(EMU_INSTRUMENT)
$(BUILD)/obj/tests/emu_kernels.o: $(EMU_FLAGS_STAMP)

$(BUILD)/bin/tests: $(EMU_KERNEL_OBJ) $(EMU_RT_OBJ) $(EMU_HOOK_OBJ) $(EMU_REG_OBJ)

-include $(EMU_KERNEL_OBJ:.o=.d) $(EMU_RT_OBJ:.o=.d) $(EMU_HOOK_OBJ:.o=.d)

include cuda/emu/emu.mk cuda/bench/bench.mk
