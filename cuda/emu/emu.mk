# The emulator's own checks (included by cuda/cuda.mk). The emulator itself is one header,
# cuda/emu/emulator.h, that every cuda/*.cu compiles against when nvcc is not the compiler.

.PHONY: emu-tsan emu-racecheck

# ---- the access checks: emu-racecheck, part of `make test` -----------------------------------
# The kernels compiled a second time, with GCC's ThreadSanitizer instrumentation (every load and
# store a call) and linked with cuda/emu/racecheck.cpp in place of its runtime: emulator.h's
# on_access checks each access of the kernel code: a shared-memory race between warps (shadow
# state per word, independent of the schedule), an access outside a shared array or tile or a
# cudaMalloc'd buffer, a misaligned float2/float4. -g1: the line tables that name a report's
# source lines. emu-racecheck runs every kernel in cuda/ through them at small sizes, and the
# planted bugs of cuda/emu/racecheck_tests.cpp. The calls make the kernels about 8 times slower,
# so the main suite ($(BUILD)/bin/tests) runs the plain objects.
# EMU_RACECHECK=0 leaves it out; it is left out of clang builds (GCC's hook names) and the
# sanitizer builds (ASan cannot be combined with the instrumentation).
EMU_RACECHECK ?= $(if $(or $(PORT_CLANG),$(findstring -fsanitize,$(EXTRA_CXXFLAGS))),0,1)
EMU_INSTRUMENT := -fsanitize=thread --param=tsan-instrument-func-entry-exit=0 -g1 \
                  -DEMU_INSTRUMENTED
EMU_RC_KERNEL_OBJ := $(KERNEL_SRC:%.cu=$(BUILD)/emu-rc/%.o)
EMU_RC_OBJ := $(BUILD)/emu-rc/cuda/emu/racecheck.o $(BUILD)/emu-rc/cuda/emu/racecheck_tests.o

$(BUILD)/emu-rc/cuda/%.o: cuda/%.cu cuda/emu/launch_bounds.pl | deps
	@mkdir -p $(dir $@)
	$(EMU_LB) $< | $(CXX) $(CXXFLAGS) $(EMU_INSTRUMENT) -MT $@ -MF $(@:.o=.d) -x c++ -c - -o $@
$(BUILD)/emu-rc/cuda/emu/racecheck_tests.o: cuda/emu/racecheck_tests.cpp \
                                            cuda/emu/launch_bounds.pl | deps
	@mkdir -p $(dir $@)
	$(EMU_LB) $< | $(CXX) $(CXXFLAGS) $(EMU_INSTRUMENT) -MT $@ -MF $(@:.o=.d) -x c++ -c - -o $@
# The hooks themselves: never instrumented.
$(BUILD)/emu-rc/cuda/emu/racecheck.o: cuda/emu/racecheck.cpp | deps
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -c $< -o $@

$(BUILD)/bin/emu-racecheck: $(EMU_RC_OBJ) $(BUILD)/obj/tests/main.o $(EMU_RC_KERNEL_OBJ) \
                            $(CHAPTER_LIB) $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) $^ -o $@ $(LDFLAGS) $(LDLIBS)

-include $(EMU_RC_KERNEL_OBJ:.o=.d) $(EMU_RC_OBJ:.o=.d)

ifeq ($(EMU_RACECHECK),1)
build: $(BUILD)/bin/emu-racecheck
test: emu-racecheck
emu-racecheck: $(BUILD)/bin/emu-racecheck ## every kernel, and planted bugs, under the emulator's access checks
	$(RUNNER) $(BUILD)/bin/emu-racecheck
else
emu-racecheck:
	@echo "emu-racecheck: not built (EMU_RACECHECK=0: clang, a sanitizer build, or asked for)"
endif

# ThreadSanitizer over the emulator's OS-thread mode: the real kernels must be race-free and
# the planted missing __syncthreads (cuda/emu/planted_race.cuh) must be reported.
$(BUILD)/bin/emu-tsan: cuda/emu/emu_tsan.cpp \
                       $(wildcard cuda/*.cu cuda/*.h cuda/emu/*.h cuda/emu/*.cuh)
	@mkdir -p $(dir $@)
	$(CXX) -std=c++20 -O1 -g -fsanitize=thread -DEMU_THREADS -Wall -Wextra -I. $< -o $@

emu-tsan: $(BUILD)/bin/emu-tsan ## ThreadSanitizer catches a planted missing __syncthreads in the emulator
	@export TSAN_OPTIONS="halt_on_error=1 exitcode=66"; \
	$(BUILD)/bin/emu-tsan clean >/dev/null 2>$(BUILD)/emu-tsan-clean.log || \
	  { cat $(BUILD)/emu-tsan-clean.log; echo "emu-tsan: FAILED: ThreadSanitizer reported the real kernels (above)"; exit 1; }; \
	echo "emu-tsan: the real kernels (sgemm tiled, warp-tiled, few-rows and split-K, softmax, sum, FlashAttention versions 1 and 2) run clean under ThreadSanitizer"; \
	$(BUILD)/bin/emu-tsan planted >/dev/null 2>$(BUILD)/emu-tsan-planted.log; rc=$$?; \
	if [ $$rc = 66 ] && grep -q "ThreadSanitizer: data race" $(BUILD)/emu-tsan-planted.log; then \
	  grep -m1 "SUMMARY" $(BUILD)/emu-tsan-planted.log; \
	  echo "emu-tsan: OK: the planted missing __syncthreads is reported as a data race"; \
	else cat $(BUILD)/emu-tsan-planted.log; echo "emu-tsan: FAILED: the planted race was not reported (exit $$rc)"; exit 1; fi
