# The emulator's own checks (included by cuda/cuda.mk).

.PHONY: emu-tsan emu-racecheck

# ---- the access checks ----------------------------------------------------------------------
# On in every emulator build with GCC (cuda/cuda.mk, EMU_RACECHECK): the suite's kernels all run
# under them. emu-racecheck runs only their cases: every kernel in cuda/ at small sizes, and a
# planted bug per check (tests/test_emulator_checks.cpp, "emulator checks:").
ifeq ($(EMU_RACECHECK),1)
emu-racecheck: $(BUILD)/bin/tests ## the emulator's access checks: every kernel, and planted bugs
	$(RUNNER) $(BUILD)/bin/tests -tc='emulator checks:*'
else
emu-racecheck:
	@echo "emu-racecheck: not built (EMU_RACECHECK=0: clang, a sanitizer build, or asked for)"
endif

# ThreadSanitizer over the emulator's OS-thread mode: the real kernels must be race-free and
# the planted missing __syncthreads (cuda/emu/planted_race.cuh) must be reported.
$(BUILD)/bin/emu-tsan: cuda/emu/emu_tsan.cpp \
                       $(wildcard cuda/*.cu cuda/*.h cuda/emu/*.h cuda/emu/*.cpp cuda/emu/*.cuh)
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
