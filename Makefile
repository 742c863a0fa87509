# The Transformer, part by part: one Makefile for everything.
# `make` builds, runs every chapter and writes figures/; `make test` runs the doctest suite.
# `make help` lists the targets. Paths below can be overridden: `make STB_INC=/opt/stb`.

SHELL      := bash
# make runs in the checkout's root and names every path relative to it: its functions split
# words at spaces, and the checkout's own path may hold them. An absolute path is quoted where
# a recipe needs one (in the shell: "$$PWD/...").
BUILD      ?= build
CXX        ?= g++
DOCTEST_INC ?= /usr/include/doctest
STB_INC    ?= /usr/include/stb
FONT       ?= /usr/share/fonts/truetype/nanum/NanumGothic.ttf
ARCH_FLAGS ?= -march=native
OPT        ?= -O2

# -fno-trapping-math: no floating-point trap is ever enabled here, and saying so lets GCC turn
# the selects in exp_fast (the clamp, exp(-inf) = 0) into vector blends, so the softmax and LSTM
# gate loops vectorise. It changes no result: no reassociation, no contraction, no flush to zero.
# OpenMP's flags are added by the portability block below (OPENMP=0 builds without it).
# stb's single-file libraries are system headers here: their implementations compile without
# the project's warnings, so the files that instantiate them need no pragmas.
CXXFLAGS  := -std=c++20 $(OPT) $(ARCH_FLAGS) -fno-trapping-math -Wall -Wextra -MMD -MP -I. \
             -I$(DOCTEST_INC) -isystem $(STB_INC) -DPROJECT_FONT='"$(FONT)"' $(EXTRA_CXXFLAGS)
LDFLAGS   := $(EXTRA_LDFLAGS)
LDLIBS    := -lm

COMMON_SRC  := $(wildcard common/*.cpp common/*/*.cpp)
COMMON_OBJ  := $(COMMON_SRC:%.cpp=$(BUILD)/obj/%.o)
LIB         := $(BUILD)/libcommon.a
# A chapter's own code beside its main.cpp (every .cpp there but main.cpp): one archive, so a
# later chapter, the tests and the benchmarks link what they use of earlier chapters.
CHAPTER_SRC := $(filter-out %/main.cpp,$(wildcard chapters/*/*.cpp chapters/*/*/*.cpp))
CHAPTER_OBJ := $(CHAPTER_SRC:%.cpp=$(BUILD)/obj/%.o)
CHAPTER_LIB := $(BUILD)/libchapters.a
CHAPTERS    := $(sort $(patsubst chapters/%/,%,$(dir $(wildcard chapters/*/main.cpp))))
NUMBERED    := $(filter-out flashcards,$(CHAPTERS))
# Chapter 8 trains 24 settings over K seeds (minutes): `make ablations`, not part of `make`.
RUN_BY_MAKE := $(filter-out 8-ablations,$(NUMBERED))
BENCHES     := $(patsubst bench/%.cpp,bench-%,$(wildcard bench/*.cpp))
TEST_SRC    := $(wildcard tests/*.cpp)
TEST_OBJ    := $(TEST_SRC:%.cpp=$(BUILD)/obj/%.o)
PROGRAMS    := $(CHAPTERS:%=$(BUILD)/bin/%) $(BENCHES:%=$(BUILD)/bin/%)

.DEFAULT_GOAL := all
.SECONDARY:  # keep object files between runs
.PHONY: all chapters build test help clean sanitize format cards bench ablations deps $(NUMBERED:%=run-%)

# `make`, `make test`, `make build` and `make sanitize` compile on every core (make -jN given on
# the command line wins; other goals, `make clean` among them, keep make's one job at a time).
# `make` then runs the chapters; the tests, the emulator's programs and the benchmarks are built
# by `make test` / `build`.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
# Only the top-level make adds it: a sub-make shares its parent's jobs (adding -j there would
# start a second pool of jobs, and make would say so).
PARALLEL_GOALS := all chapters build test sanitize
ifeq ($(MAKELEVEL)$(filter -j%,$(MAKEFLAGS)),0)
ifeq ($(filter-out $(PARALLEL_GOALS),$(or $(MAKECMDGOALS),all)),)
MAKEFLAGS += -j$(JOBS)
endif
endif
# While chapter 7 trains (one thread) the other core would idle: there `make` builds, one at a
# time and niced, the longest units of what `make test` builds (`prebuild`, at the end of this
# file), its output in $(BUILD)/prebuild.log. When chapter 7 ends it lets the unit in progress
# finish and starts no other; `make test` builds the rest (and reports a failure of theirs). It
# never runs beside chapter 6, which times itself. PREBUILD=0 leaves it all to `make test`.
PREBUILD ?= 1
PREBUILD_BESIDE := 7-translate
PREBUILD_STOP := $(BUILD)/prebuild.stop
all: ## build the chapters, run chapters 1 to 7 (beside chapter 7, start on what make test builds)
	@$(MAKE) --no-print-directory chapters
	@# One chapter at a time, even under make -j: chapter 6 times itself, and the logs stay apart.
	@pid=; trap 's=$$?; [ -z "$$pid" ] || { kill -TERM -- -$$pid; wait $$pid; }; exit $$s' EXIT; \
	trap 'exit 130' INT; trap 'exit 143' TERM; rm -f $(PREBUILD_STOP); \
	for c in $(RUN_BY_MAKE); do \
	  if [ $$c = $(PREBUILD_BESIDE) ] && [ "$(PREBUILD)" = 1 ]; then \
	    set -m; nice -n 19 $(MAKE) --no-print-directory prebuild >$(BUILD)/prebuild.log 2>&1 & \
	    pid=$$!; set +m; \
	  fi; \
	  $(MAKE) --no-print-directory run-$$c || exit 1; \
	done; \
	[ -z "$$pid" ] || { touch $(PREBUILD_STOP); wait $$pid; pid=; rm -f $(PREBUILD_STOP); }

chapters: deps $(CHAPTERS:%=$(BUILD)/bin/%) ## build the chapter programs only

build: deps $(PROGRAMS) $(BUILD)/bin/tests ## build every program into $(BUILD)/bin without running them

# The suite runs in TEST_JOBS processes, each taking slices of consecutive test cases in turn
# (tests/run-suite.sh); the last line adds them up. `build/bin/tests` runs it in one process,
# with doctest's own options (-tc=NAME, -s, --duration=true).
# The suite is a prerequisite of `test` beside cuda-test and emu-racecheck (cuda/*.mk), so that
# those run beside it rather than before it, each on a core the suite's slices leave.
TEST_JOBS ?= $(JOBS)
.PHONY: suite
test: suite ## build what is out of date, run the doctest suite (on every core)
suite: build
	@bash tests/run-suite.sh $(TEST_JOBS) $(BUILD)/test-logs $(BUILD)/bin/tests $(RUNNER)

help: ## list the targets
	@grep -hE '^[a-zA-Z0-9_%-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([^:]+):.*## (.*)/  make \1\t\2/' | expand -t 24
	@for c in $(NUMBERED); do n=$${c%%-*}; printf '  make %-17srun chapters/%s\n' "ch$$n" "$$c"; done

clean: ## remove build outputs (figures/ stays: it is committed)
	rm -rf build $(SAN_BUILD) $(CROSS_BUILD) $(PORT_DIR)

# make sanitize: everything `build` builds, built into build-san/ with AddressSanitizer (and its
# LeakSanitizer) and UBSan, in parallel, then the whole suite, whose programs are the sanitized
# ones too: the suite starts every program (a list of those it does not would go stale as tests
# are added; one it misses is named by tests/util.h's program_path, not "not found"). Every
# process writes what the sanitizers say to build-san/sanitizer/ (a file per process that said
# something), so a report from a program a test started is counted even where the test only
# checks its exit code. The last line: the test cases passed and the reports found; it exits 1
# unless all passed and there were none.
SAN_BUILD := build-san
SAN_LOGS  := $(SAN_BUILD)/sanitizer
# A report's first line. The logs also hold ASan's warnings about the CUDA emulator's fibers
# (makecontext/swapcontext, a stack switch it cannot follow); those are not reports.
SAN_REPORT := ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:
# GCC's two runtimes keep two report files, and UBSan's ignores log_path: tests/san/report_path.cpp,
# linked into every program here, points both at SANITIZER_REPORT_PREFIX before main().
SAN_FLAGS := -fsanitize=address,undefined
SAN_REPORT_OBJ := $(SAN_BUILD)/san/report_path.o
# One run at a time in a tree: a second would empty the first one's report folder (flock(1); 75:
# the lock is held).
sanitize: ## the whole suite built with AddressSanitizer + UBSan and run (minutes: build and suite)
	@mkdir -p $(SAN_BUILD); flock -n -E 75 $(SAN_BUILD)/.lock $(MAKE) --no-print-directory \
	  sanitize-run; s=$$?; [ $$s != 75 ] || echo "sanitize: another make sanitize runs in this" \
	  "tree ($(SAN_BUILD)/.lock): wait for it to end" >&2; exit $$s
.PHONY: sanitize-run
sanitize-run:
	@rm -rf $(SAN_LOGS) && mkdir -p $(SAN_LOGS) $(dir $(SAN_REPORT_OBJ))
	$(CXX) -std=c++20 -O1 -Wall -Wextra -c tests/san/report_path.cpp -o $(SAN_REPORT_OBJ)
	@$(MAKE) --no-print-directory BUILD=$(SAN_BUILD) \
	    EXTRA_CXXFLAGS='$(SAN_FLAGS) -fno-omit-frame-pointer -fno-sanitize-recover=undefined' \
	    EXTRA_LDFLAGS='$(SAN_FLAGS) $(SAN_REPORT_OBJ)' build
	@logs="$$PWD/$(SAN_LOGS)"; \
	SANITIZER_REPORT_PREFIX="$$logs/report" \
	ASAN_OPTIONS="log_path='$$logs/asan':detect_leaks=1:$$ASAN_OPTIONS" \
	UBSAN_OPTIONS="print_stacktrace=1:$$UBSAN_OPTIONS" \
	  bash tests/run-suite.sh $(TEST_JOBS) $(SAN_BUILD)/test-logs $(SAN_BUILD)/bin/tests \
	  $(RUNNER) | tee $(SAN_BUILD)/tests.log; status=$${PIPESTATUS[0]}; \
	reported=$$(grep -lE '$(SAN_REPORT)' $(SAN_LOGS)/* 2>/dev/null); \
	reports=$$(cat /dev/null $$reported | grep -cE '$(SAN_REPORT)'); \
	cases=$$(tail -1 $(SAN_BUILD)/tests.log | grep -oE '[0-9]+ of [0-9]+ test cases passed'); \
	for f in $$reported; do echo "== $$f"; head -60 "$$f"; done; \
	echo "sanitize: $${cases:-no test cases passed}; $$reports sanitizer reports" \
	  "(logs in $(SAN_LOGS)/)"; \
	[ $$status = 0 ] && [ $$reports = 0 ]

# Only the lines changed since the last commit (git clang-format): the tree's own layout, tables
# and lambda arguments set by hand, is not clang-format's, and a one-line change stays one line.
format: ## reformat the lines changed since HEAD with .clang-format (new files once git-added)
	@$(MAKE) --no-print-directory deps NEEDS=/usr/bin/git-clang-format:clang-format
	git clang-format --force --extensions cpp,h,cu,cuh

cards: $(BUILD)/bin/flashcards ## review the 20-card deck in the terminal (CARDS_ARGS=--stats ...)
	$(BUILD)/bin/flashcards $(CARDS_ARGS)

# K seeds per run (8-ablations --seeds, whose default is 5); the summary feeds
# bench/claims-table.sh (the README), which gives the run's time (README, Claims). Finished runs
# are kept in $(BUILD)/ablations-runs: after a Ctrl-C, make ablations again trains only the rest.
# Only the full default run writes figures/: one that ABLATIONS_ARGS or ABLATIONS_SEEDS makes
# partial (--only, --runs, --scale, --seeds, --seed) writes to $(BUILD)/ablations-partial.
ABLATIONS_SEEDS ?= 5
ablations: $(BUILD)/bin/8-ablations ## chapter 8: the article's claims that need training, over seeds (not in make)
	$(BUILD)/bin/8-ablations --seeds $(ABLATIONS_SEEDS) --summary figures/8-ablations.tsv \
	  --keep $(BUILD)/ablations-runs --partial-dir $(BUILD)/ablations-partial $(ABLATIONS_ARGS)

.PHONY: widget
widget: $(BUILD)/bin/1-self-attention ## section 1's widget in the terminal (WIDGET_ARGS=--plain)
	$(BUILD)/bin/1-self-attention --live $(WIDGET_ARGS)

# Then chapter 6's layers in PyTorch, at bench-layers's sizes and protocol, where PEER_PYTHON
# has torch (Debian's python3-torch), on this CPU's best OpenBLAS core (bench/openblas.h).
# bench-translate runs chapter 7's torch peer itself (PEER_PYTHON is exported to it).
export PEER_PYTHON ?= /usr/bin/python3
PEER_ARGS   := --device cpu --seq-lens 256,512,1024 --warmup 1 --repeat 3
bench: $(BENCHES:%=$(BUILD)/bin/%) ## speed benchmarks, side by side with the peers (not tests)
	@for need in $(PEER_NEEDS); do $(MAKE) --no-print-directory deps NEEDS="$$need" || \
	  echo "bench: $${need##*:} is not installed: bench-gemm skips its peer"; done
	@$(MAKE) --no-print-directory bench-peers
	@for b in $(BENCHES); do $(BUILD)/bin/$$b || exit 1; done
	@if $(PEER_PYTHON) -c 'import torch' 2>/dev/null; then \
	  $(PEER_PYTHON) chapters/6-cost/peer_torch.py $(PEER_ARGS) \
	    --openblas-best "$$($(BUILD)/bin/bench-gemm --openblas-best)"; \
	else echo "bench: PyTorch peer skipped: $(PEER_PYTHON) cannot import torch" \
	  "(Debian: apt-get install python3-torch)"; fi

# bench-gemm's peers (bench/gemm.cpp): oneDNN, BLIS, OpenBLAS and Eigen, Debian packages that
# `make bench` installs where it may, as `make` installs its own, one at a time (a package this
# Debian lacks leaves the others to be installed); never needed by make, make build or make
# test: bench-gemm loads the libraries at run time and names one that is missing.
# Eigen is headers alone: its peer is a program of its own (bench/peers/eigen_gemm.cpp), built
# by a sub-make once they are there, with the project's flags. GCC warns of an uninitialised
# register inside its own AVX-512 intrinsics as Eigen uses them (a false positive there).
EIGEN_INC ?= /usr/include/eigen3
PEER_LIBDIR = /usr/lib/$(shell $(CXX) -print-multiarch 2>/dev/null)
PEER_NEEDS = $(PEER_LIBDIR)/libdnnl.so.2:libdnnl2 $(PEER_LIBDIR)/libblis.so.4:libblis4-openmp \
              $(PEER_LIBDIR)/libopenblas.so.0:libopenblas0-pthread \
              $(EIGEN_INC)/Eigen/Core:libeigen3-dev
.PHONY: bench-peers
bench-peers: $(if $(wildcard $(EIGEN_INC)/Eigen/Core),$(BUILD)/bin/peer-eigen-gemm)
$(BUILD)/bin/peer-eigen-gemm: bench/peers/eigen_gemm.cpp bench/peer_child.h
	@mkdir -p $(dir $@)
	$(CXX) $(filter-out -MMD -MP,$(CXXFLAGS)) -isystem $(EIGEN_INC) -Wno-uninitialized \
	  -Wno-maybe-uninitialized $< -o $@ $(LDFLAGS)

# ---- dependencies: Debian packages, installed on demand where we may ----------------------
NEEDS := $(DOCTEST_INC)/doctest.h:doctest-dev $(STB_INC)/stb_image_write.h:libstb-dev \
         $(STB_INC)/stb_truetype.h:libstb-dev $(FONT):fonts-nanum
deps: ## check (and where possible install) the Debian packages the build needs
	@missing=""; files=""; for pair in $(NEEDS); do f=$${pair%%:*}; p=$${pair##*:}; \
	  [ -e "$$f" ] || { missing="$$missing $$p"; files="$$files $$f"; }; done; \
	missing=$$(echo $$missing | tr ' ' '\n' | sort -u | tr '\n' ' '); \
	if [ -n "$${missing// /}" ]; then \
	  command -v apt-get >/dev/null || { echo "missing:$$files -- no apt-get here: install them and point DOCTEST_INC, STB_INC, FONT at them (README.md, Platforms)" >&2; exit 1; }; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; elif sudo -n true 2>/dev/null; then SUDO=sudo; \
	  else echo "missing Debian package(s):$$missing -- install with: sudo apt-get install$$missing" >&2; exit 1; fi; \
	  echo "installing Debian package(s):$$missing"; \
	  ($$SUDO apt-get install -y -qq --no-remove $$missing >/dev/null 2>&1 || \
	   ($$SUDO apt-get update -qq >/dev/null 2>&1 && $$SUDO apt-get install -y -qq --no-remove $$missing >/dev/null 2>&1)) || \
	  { echo "could not install:$$missing -- run: sudo apt-get update && sudo apt-get install$$missing" >&2; exit 1; }; \
	fi

# ---- portability: OpenMP or not, other compilers, other CPUs ------------------------------------
# README.md's "Platforms" says what is built and tested where; `make portability` runs each of
# those configurations here, one after another, and prints one line for each.
#
# OPENMP=1 runs the CPU kernels on OpenMP threads. OPENMP=0 builds without OpenMP: one thread,
# the same results (common/kernels/parallel.h; -fopenmp-simd keeps every `omp simd` loop as it is).
# Unset, it is 1 where $(CXX) builds an OpenMP program: as it is; for clang, with the libomp of
# another LLVM installed here or Homebrew's; or with the libomp-N-dev that `make deps` installs
# for clang N. Otherwise it is 0, and one line says so. The probe runs once per compiler and
# flags; sub-makes receive its answer through the environment.
OPENMP ?=
# A prefix for running this build's programs (make cross-test: qemu-aarch64).
RUNNER ?=
comma := ,

OMP_PROBE := \#include <omp.h>\nint main() {\n    int n = 0;\n\#pragma omp parallel for \
  schedule(dynamic) reduction(+ : n)\n    for (int i = 0; i < 64; i++) n += omp_get_thread_num() \
  >= 0;\n    return n == 64 ? 0 : 1;\n}\n
# $(call probe,SOURCE,FLAGS): yes if $(CXX) FLAGS builds SOURCE into a program that runs, empty
# if it does not while an empty program builds and runs. Anything else (no temporary folder: a
# TMPDIR that names none; a compiler or RUNNER that runs nothing) stops make, naming it, rather
# than being taken for an answer about SOURCE.
probe = $(call probe_answer,$(shell d=$$(mktemp -d 2>&1) || \
  { echo "$$d: set TMPDIR to a folder that can be written"; exit; }; \
  printf '$(1)' > $$d/p.cpp && printf 'int main() { return 0; }\n' > $$d/c.cpp && \
  if $(CXX) $(2) $$d/p.cpp -o $$d/p >/dev/null 2>&1 && $(RUNNER) $$d/p; then echo yes; \
  elif $(CXX) $$d/c.cpp -o $$d/c >$$d/log 2>&1 && $(RUNNER) $$d/c >>$$d/log 2>&1; then echo no; \
  else echo "$(CXX) builds and runs no program, not even an empty one: $$(head -2 $$d/log)"; fi; \
  rm -rf $$d))
probe_answer = $(if $(filter-out yes no,$(1))$(if $(1),,x),$(error probe: $(or $(1),the shell \
  answered nothing)),$(filter yes,$(1)))
may_install = $(if $(shell command -v apt-get),$(shell [ "$$(id -u)" = 0 ] || sudo -n true \
  2>/dev/null && echo yes))

PORT_KEY := $(CXX)|$(OPENMP)|$(ARCH_FLAGS)|$(RUNNER)
ifneq ($(PORT_KEY),$(PORT_CACHED_KEY))
PORT_OMP_CXXFLAGS :=
PORT_OMP_LDFLAGS :=
PORT_NEED :=
PORT_NOTE :=
PORT_CLANG := $(if $(shell $(CXX) --version 2>&1 | grep -i clang),yes)
ifneq ($(OPENMP),0)
ifeq ($(call probe,$(OMP_PROBE),-fopenmp),yes)
PORT_OMP_CXXFLAGS := -fopenmp
PORT_OMP_LDFLAGS := -fopenmp
else ifeq ($(PORT_CLANG),yes)
# clang without an omp.h: the newest LLVM libomp on this system (Debian's clang-16 next to
# libomp-dev, which is clang 14's; its folder is searched last, after clang's own headers), then
# Homebrew's (macOS, untested), then install libomp-N-dev (never removing another, so on Debian
# clang-16 and libomp-dev do not push each other out).
PORT_LLVM := $(patsubst %/lib/libomp.so,%,$(lastword $(sort \
  $(wildcard /usr/lib/llvm-*/lib/libomp.so))))
PORT_LLVM_INC := $(dir $(firstword $(wildcard $(PORT_LLVM)/lib/clang/*/include/omp.h)))
PORT_LLVM_LD := -fopenmp -L$(PORT_LLVM)/lib -Wl$(comma)-rpath$(comma)$(PORT_LLVM)/lib
PORT_BREW := $(shell brew --prefix libomp 2>/dev/null)
PORT_BREW_CXX := -Xpreprocessor -fopenmp -I$(PORT_BREW)/include
PORT_LLVM_OK := $(if $(PORT_LLVM_INC),$(call probe,$(OMP_PROBE),-fopenmp \
  -idirafter $(PORT_LLVM_INC) $(PORT_LLVM_LD)))
PORT_BREW_OK := $(if $(PORT_BREW),$(call probe,$(OMP_PROBE),$(PORT_BREW_CXX) -L$(PORT_BREW)/lib \
  -lomp))
ifeq ($(PORT_LLVM_OK),yes)
PORT_OMP_CXXFLAGS := -fopenmp -idirafter $(PORT_LLVM_INC)
PORT_OMP_LDFLAGS := $(PORT_LLVM_LD)
PORT_NOTE := openmp: $(CXX) has no omp.h of its own; using the libomp in $(PORT_LLVM)
else ifeq ($(PORT_BREW_OK),yes)
PORT_OMP_CXXFLAGS := $(PORT_BREW_CXX)
PORT_OMP_LDFLAGS := -L$(PORT_BREW)/lib -lomp
else ifeq ($(call may_install),yes)
PORT_OMP_CXXFLAGS := -fopenmp
PORT_OMP_LDFLAGS := -fopenmp
PORT_NEED := $(shell $(CXX) -print-resource-dir)/include/omp.h:libomp-$(firstword \
  $(subst ., ,$(shell $(CXX) -dumpversion)))-dev
endif
endif
endif
ifeq ($(PORT_OMP_CXXFLAGS),)
ifeq ($(OPENMP),1)
$(error openmp: $(CXX) cannot build an OpenMP program here: install an OpenMP runtime (Debian: \
  libomp-dev for clang; macOS: brew install libomp), or build without one: make OPENMP=0)
endif
ifneq ($(OPENMP),0)
PORT_NOTE := openmp: $(CXX) cannot build an OpenMP program here, so this is an OPENMP=0 build \
  (one thread, the same results); for threads install libomp-dev (Debian) or libomp (Homebrew)
endif
PORT_OMP_CXXFLAGS := $(if $(call probe,int main() { return 0; }\n,-fopenmp-simd),-fopenmp-simd)
endif
# GCC 12 for an AVX-512 CPU builds some 32- and 64-byte constants as a broadcast of their first
# 64-bit word at -O2: std::vector<int>{1,1,1,1,0,0,0,0} becomes eight 1s (tests/test_compiler.cpp
# holds the known shapes). Told to move no general register into a vector one, it builds them
# right; other compilers and CPUs need nothing.
PORT_WORKAROUND := $(if $(shell $(CXX) $(ARCH_FLAGS) -dM -E -x c++ /dev/null 2>/dev/null | \
  grep -cxE '\#define (__GNUC__ 12|__AVX512F__ 1)' | grep -x 2), \
  -mtune-ctrl=^inter_unit_moves_to_vec)
# The CPU the compiler targets (-march=native resolved): part of the float path the tests name.
PORT_CPU := $(shell $(CXX) $(ARCH_FLAGS) -\#\#\# -c -x c++ /dev/null -o /dev/null 2>&1 | \
  grep -oE '"-march=[^"]*"|"-target-cpu" "[^"]*"' | tail -1 | sed -E 's/.*[=" ]([^"=]*)"$$/\1/')
export PORT_CACHED_KEY := $(PORT_KEY)
export PORT_OMP_CXXFLAGS PORT_OMP_LDFLAGS PORT_NEED PORT_NOTE PORT_CLANG PORT_CPU \
  PORT_WORKAROUND
ifneq ($(PORT_NOTE),)
$(info $(PORT_NOTE))
endif
endif

CXXFLAGS += $(PORT_OMP_CXXFLAGS) $(PORT_WORKAROUND)
# clang warns of each `#pragma omp simd` loop it leaves scalar: attention's row maxima (LLVM
# vectorises a float max only when told there are no NaNs), Adam's step (std::sqrt may set
# errno), the backward of sin, cos and pow (library calls). GCC vectorises the maxima and leaves
# the others scalar without a word; a maximum is exact in any order, so every value is the same.
CXXFLAGS += $(if $(PORT_CLANG),-Wno-pass-failed)
LDFLAGS += $(PORT_OMP_LDFLAGS)
NEEDS += $(PORT_NEED)
# The tests name the float path they run on (tests/util.h: the CPU, and the flags that change
# how the compiler orders and vectorises float arithmetic: `make sanitize` is another path), run
# the programs through RUNNER, and find the checkout at PROJECT_ROOT_FROM_BIN from the folder of
# their own program, where the programs are: a copied or moved checkout tests its own.
FLOAT_FLAGS := $(strip $(OPT) $(ARCH_FLAGS) $(PORT_OMP_CXXFLAGS) $(EXTRA_CXXFLAGS))
TEST_DEFINES := -DPROJECT_CPU='"$(PORT_CPU)"' -DPROJECT_RUNNER='"$(RUNNER)"' \
    -DPROJECT_FLOAT_FLAGS='"$(subst ',,$(subst ",,$(subst \,,$(FLOAT_FLAGS))))"' \
    -DPROJECT_ROOT_FROM_BIN='"$(shell realpath -m --relative-to='$(BUILD)/bin' .)"'
$(BUILD)/obj/tests/%.o: CXXFLAGS += $(TEST_DEFINES)

# aarch64: Debian's cross compiler builds everything but the nvcc parts into $(CROSS_BUILD), and
# the test suite runs under qemu-user, which also runs every program the tests start. It runs with
# OMP_NUM_THREADS=1: Debian 12's qemu 7.2 loses the signal handlers of a child forked from a
# process whose OpenMP threads have started (the emulator's guard-page tests catch SIGSEGV in such
# a child; after the attention tests they fail under qemu, with one thread they pass, and natively
# both pass). The LSTM's thread test still sets 2 threads itself. qemu's x86-64 host orders memory
# more strongly than aarch64 does, so threads under it would prove little about aarch64 anyway.
CROSS_CXX ?= aarch64-linux-gnu-g++
CROSS_ROOT ?= /usr/aarch64-linux-gnu
CROSS_BUILD ?= build-aarch64
CROSS_NEEDS := /usr/bin/aarch64-linux-gnu-g++:g++-aarch64-linux-gnu \
               /usr/bin/qemu-aarch64:qemu-user
.PHONY: cross-test portability
cross-test: ## aarch64: cross-compile everything, run the test suite under qemu-aarch64
	@$(MAKE) --no-print-directory deps NEEDS='$(CROSS_NEEDS)'
	$(MAKE) --no-print-directory BUILD=$(CROSS_BUILD) CXX='$(CROSS_CXX)' ARCH_FLAGS= NVCC= \
	    RUNNER='env OMP_NUM_THREADS=1 qemu-aarch64 -L $(CROSS_ROOT)' test

# One line per configuration (.ci/portability): pass or FAIL, its test count, time and log.
PORT_DIR ?= build-port
portability: ## build and test: clang 14 and 16, AVX2, no AVX2, aarch64 (qemu), OPENMP=0
	@MAKE='$(MAKE)' PORT_DIR='$(PORT_DIR)' bash .ci/portability

# ---- compile ---------------------------------------------------------------------------
# $(call stamp,NAME,TEXT): the file $(BUILD)/stamps/NAME holding TEXT, for what must be rebuilt
# when, and only when, TEXT changes. Every object depends on the compiler and the flags it is
# built with (FLAGS_STAMP: CXX, ARCH_FLAGS and the CPU it names, OpenMP, the sanitizers), the
# test units also on theirs, the emulator's kernels on their instrumentation (cuda/cuda.mk); an
# archive on the list of its members. The rule below rewrites the file when TEXT differs from
# what it holds: so a dry run (make -n) lists what a change rebuilds, and writes nothing, nor
# does a make that builds nothing (make help).
stamp = $(eval STAMP_$(1) := $(subst ','\'',$(strip $(2))))$(if $(shell \
  [ "$$(cat $(BUILD)/stamps/$(1) 2>/dev/null)" = '$(STAMP_$(1))' ] || echo changed), \
  $(eval $(BUILD)/stamps/$(1): stamp-changed))$(BUILD)/stamps/$(1)
.PHONY: stamp-changed
stamp-changed:
$(BUILD)/stamps/%:
	@mkdir -p $(dir $@)
	@printf '%s\n' '$(STAMP_$*)' > $@
FLAGS_STAMP := $(call stamp,cxx,$(CXX) $(CXXFLAGS) $(PORT_CPU))
$(BUILD)/bin/peer-eigen-gemm: $(FLAGS_STAMP)
$(BUILD)/obj/%.o: %.cpp $(FLAGS_STAMP) | deps
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -c $< -o $@

# The random generators must not let the compiler fuse a*b+c: numpy and torch round twice.
$(BUILD)/obj/common/random.o: CXXFLAGS += -ffp-contract=off
# Figures are compared byte for byte: keep pixel arithmetic the same on FMA and non-FMA CPUs.
$(BUILD)/obj/common/plot/%.o: CXXFLAGS += -ffp-contract=off
# Chapter 2 keeps one rounding for its sums: no fused a*b+c (chapters/2-scaling/numpy_math.h).
$(BUILD)/obj/chapters/2-scaling/%.o: CXXFLAGS += -ffp-contract=off
# Adam's loop takes a square root: without errno to set, it is a vector loop (same results).
$(BUILD)/obj/common/optim.o: CXXFLAGS += -fno-math-errno

TEST_STAMP := $(call stamp,tests,$(TEST_DEFINES))
$(TEST_OBJ): $(TEST_STAMP)

# The test units hold assertions, processes and files; the arithmetic under test is the
# library's, at -O2. So they compile at -O0, in half -O2's time, the suite a few percent slower
# for it. The units that compare a kernel's bits with arithmetic of their own (exp_fast's vector
# and scalar paths, attention's four products) keep -O2: below it GCC fuses no a*b+c, and their
# bits would differ from the library's. So does the compiler's own test, whose constants are
# miscompiled at -O2 (tests/test_compiler.cpp).
TEST_BITS := $(addprefix $(BUILD)/obj/tests/,test_gemm.o test_attention.o test_compiler.o)
# The emulator's tests' kernels keep -O1: the emulator names the source line of an access from
# the frames GCC inlines into the kernel (a float4 load, an atomic), and -O0 inlines none.
TEST_EMU := $(addprefix $(BUILD)/obj/tests/,emu_kernels.o test_emulator_checks.o)
$(filter-out $(TEST_BITS) $(TEST_EMU),$(TEST_OBJ)): private CXXFLAGS += -O0
$(TEST_EMU): private CXXFLAGS += -O1
# The headers most test units include (tests/pch.h: doctest's, the standard library's) are
# compiled once, with the units' own flags, into $(TEST_PCH).gch, which each unit includes
# first (GCC takes the .gch beside the header named), so no unit parses them again. doctest is
# a system header there, as it is in a unit. GCC only (clang refuses, not ignores, a PCH built
# with other flags); main.o, which compiles doctest's implementation, and the units at -O1 or
# -O2 (GCC 12 can crash on a PCH built at another level) go without.
ifeq ($(PORT_CLANG),)
TEST_PCH := $(BUILD)/pch/tests/pch.h
$(TEST_PCH): tests/pch.h
	@mkdir -p $(dir $@)
	@cp $< $@
$(TEST_PCH).gch: $(TEST_PCH) $(FLAGS_STAMP) $(TEST_STAMP) | deps
	$(CXX) $(CXXFLAGS) -O0 -isystem $(DOCTEST_INC) -x c++-header $< -o $@
TEST_PCH_USERS := $(filter-out %/main.o $(TEST_BITS) $(TEST_EMU),$(TEST_OBJ))
$(TEST_PCH_USERS): $(TEST_PCH).gch
$(TEST_PCH_USERS): private CXXFLAGS += -isystem $(DOCTEST_INC) -include $(TEST_PCH)
-include $(TEST_PCH).d
endif

# Each archive also depends on a stamp naming its members, so a source that is deleted or moved
# does not leave its old object inside the archive.
$(LIB): $(COMMON_OBJ) $(call stamp,libcommon,$(COMMON_OBJ))
	@mkdir -p $(dir $@)
	@rm -f $@
	ar rcs $@ $(filter %.o,$^)

$(CHAPTER_LIB): $(CHAPTER_OBJ) $(call stamp,libchapters,$(CHAPTER_OBJ))
	@mkdir -p $(dir $@)
	@rm -f $@
	ar rcs $@ $(filter %.o,$^)

# One program per chapter folder: chapters/<name>/main.cpp -> $(BUILD)/bin/<name>, linked with
# the chapters' own code (its folder's other .cpp files, and earlier chapters' it includes).
define CHAPTER_RULES
$(BUILD)/bin/$(1): $(BUILD)/obj/chapters/$(1)/main.o $(CHAPTER_LIB) $(LIB)
	@mkdir -p $$(dir $$@)
	$$(CXX) $$^ -o $$@ $$(LDFLAGS) $$(LDLIBS)
run-$(1): $(BUILD)/bin/$(1)
	@echo "== chapters/$(1) =="
	$(BUILD)/bin/$(1)
endef
$(foreach c,$(CHAPTERS),$(eval $(call CHAPTER_RULES,$(c))))
$(foreach c,$(NUMBERED),$(eval ch$(firstword $(subst -, ,$(c))): run-$(c)))
.PHONY: $(foreach c,$(NUMBERED),ch$(firstword $(subst -, ,$(c))))

$(BUILD)/bin/bench-%: $(BUILD)/obj/bench/%.o $(CHAPTER_LIB) $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) $^ -o $@ $(LDFLAGS) $(LDLIBS)

$(BUILD)/bin/tests: $(TEST_OBJ) $(CHAPTER_LIB) $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) $^ -o $@ $(LDFLAGS) $(LDLIBS)

# Optional parts keep their rules beside their sources.
-include $(wildcard cuda/*.mk)
include chapters/web.mk

# What `make` builds beside chapter 7 (see `all`): the units of `build` that take longest, longest
# first, so that `make test` is not left waiting on one of them at its end; each by a make of its
# own, so that `all` can stop between two.
PREBUILD_UNITS := $(if $(CUDA_ENABLED),$(BUILD)/cuda/cuda/sgemm.o) $(EMU_CHECK_TESTS) \
    $(addprefix $(BUILD)/obj/tests/,test_chapter8.o test_cuda_emulator.o test_flashcards.o) \
    $(BUILD)/emu/cuda/sgemm.o $(BUILD)/obj/bench/gemm.o $(BUILD)/emu/cuda/bench/gpu_bench.o \
    $(addprefix $(BUILD)/obj/tests/,test_chapter6.o test_scripts.o test_peers.o test_chapter7.o)
.PHONY: prebuild
prebuild:
	@for u in $(PREBUILD_UNITS); do [ -e $(PREBUILD_STOP) ] && exit 0; \
	  $(MAKE) -j1 --no-print-directory $$u || exit; done

-include $(COMMON_OBJ:.o=.d) $(TEST_OBJ:.o=.d) $(CHAPTER_OBJ:.o=.d) $(wildcard $(BUILD)/obj/chapters/*/*.d) $(wildcard $(BUILD)/obj/bench/*.d)
