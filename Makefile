# The Transformer, part by part: one Makefile for everything.
# `make` builds, runs every chapter and writes figures/; `make test` runs the doctest suite.
# `make help` lists the targets. Paths below can be overridden: `make STB_INC=/opt/stb`.

SHELL      := bash
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
CXXFLAGS  := -std=c++20 $(OPT) $(ARCH_FLAGS) -fno-trapping-math -fopenmp -Wall -Wextra -MMD -MP -I. \
             -I$(DOCTEST_INC) -I$(STB_INC) -DPROJECT_FONT='"$(FONT)"' $(EXTRA_CXXFLAGS)
LDFLAGS   := -fopenmp $(EXTRA_LDFLAGS)
LDLIBS    := -lm

COMMON_SRC  := $(wildcard common/*.cpp common/*/*.cpp)
COMMON_OBJ  := $(COMMON_SRC:%.cpp=$(BUILD)/obj/%.o)
LIB         := $(BUILD)/libcommon.a
# A chapter's own code beside its main.cpp (every .cpp there but main.cpp): one archive, so a
# later chapter, the tests and the benchmarks link what they use of earlier chapters.
CHAPTER_SRC := $(filter-out %/main.cpp,$(wildcard chapters/*/*.cpp))
CHAPTER_OBJ := $(CHAPTER_SRC:%.cpp=$(BUILD)/obj/%.o)
CHAPTER_LIB := $(BUILD)/libchapters.a
CHAPTERS    := $(sort $(patsubst chapters/%/,%,$(dir $(wildcard chapters/*/main.cpp))))
NUMBERED    := $(filter-out flashcards,$(CHAPTERS))
# Chapter 8 trains 11 models (about 4 minutes on 2 cores): `make ablations`, not part of `make`.
RUN_BY_MAKE := $(filter-out 8-ablations,$(NUMBERED))
BENCHES     := $(patsubst bench/%.cpp,bench-%,$(wildcard bench/*.cpp))
TEST_SRC    := $(wildcard tests/*.cpp)
TEST_OBJ    := $(TEST_SRC:%.cpp=$(BUILD)/obj/%.o)
PROGRAMS    := $(CHAPTERS:%=$(BUILD)/bin/%) $(BENCHES:%=$(BUILD)/bin/%)

.DEFAULT_GOAL := all
.SECONDARY:  # keep object files between runs
.PHONY: all chapters build test help clean sanitize format cards bench ablations deps $(NUMBERED:%=run-%)

# `make` compiles the chapters on every core (make -jN given on the command line wins), then runs
# them. The tests, the emulator's programs and the benchmarks are built by `make test` / `build`.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
all: ## build the chapters (in parallel), run every chapter, write figures/
	@$(MAKE) --no-print-directory $(if $(filter -j%,$(MAKEFLAGS)),,-j$(JOBS)) chapters
	@# One chapter at a time, even under make -j: chapter 6 times itself, and the logs stay apart.
	@for c in $(RUN_BY_MAKE); do $(MAKE) --no-print-directory run-$$c || exit 1; done

chapters: deps $(CHAPTERS:%=$(BUILD)/bin/%) ## build the chapter programs only

build: deps $(PROGRAMS) $(BUILD)/bin/tests ## build every program into $(BUILD)/bin without running them

test: build ## build and run the doctest suite
	$(BUILD)/bin/tests

help: ## list the targets
	@grep -hE '^[a-zA-Z0-9_%-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([^:]+):.*## (.*)/  make \1\t\2/' | expand -t 24
	@for c in $(NUMBERED); do n=$${c%%-*}; printf '  make %-17srun chapters/%s\n' "ch$$n" "$$c"; done

clean: ## remove build outputs (figures/ stays: it is committed)
	rm -rf build build-san

sanitize: ## run the test suite built with AddressSanitizer + UndefinedBehaviorSanitizer
	$(MAKE) BUILD=build-san EXTRA_CXXFLAGS='-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined' \
	    EXTRA_LDFLAGS='-fsanitize=address,undefined' test

format: ## reformat every C++ source with .clang-format
	clang-format -i $$(git ls-files '*.cpp' '*.h' '*.cu' '*.cuh')

cards: $(BUILD)/bin/flashcards ## review the 20-card deck in the terminal (CARDS_ARGS=--stats ...)
	$(BUILD)/bin/flashcards $(CARDS_ARGS)

ablations: $(BUILD)/bin/8-ablations ## chapter 8: the article's claims that need training (about 4 min; not in make)
	$(BUILD)/bin/8-ablations $(ABLATIONS_ARGS)

.PHONY: widget
widget: $(BUILD)/bin/1-self-attention ## section 1's widget in the terminal (WIDGET_ARGS=--plain)
	$(BUILD)/bin/1-self-attention --live $(WIDGET_ARGS)

# Then chapter 6's layers in PyTorch, at bench-layers's sizes and protocol, where PEER_PYTHON
# has torch (Debian's python3-torch).
PEER_PYTHON ?= /usr/bin/python3
PEER_ARGS   := --device cpu --seq-lens 256,512,1024 --warmup 1 --repeat 3
bench: $(BENCHES:%=$(BUILD)/bin/%) ## speed benchmarks, side by side with the peers (not tests)
	@for b in $(BENCHES); do $(BUILD)/bin/$$b || exit 1; done
	@if $(PEER_PYTHON) -c 'import torch' 2>/dev/null; then \
	  $(PEER_PYTHON) chapters/6-cost/peer_torch.py $(PEER_ARGS); \
	else echo "bench: PyTorch peer skipped: $(PEER_PYTHON) cannot import torch" \
	  "(Debian: apt-get install python3-torch)"; fi

# ---- dependencies: Debian packages, installed on demand where we may ----------------------
NEEDS := $(DOCTEST_INC)/doctest.h:doctest-dev $(STB_INC)/stb_image_write.h:libstb-dev \
         $(STB_INC)/stb_truetype.h:libstb-dev $(FONT):fonts-nanum
deps: ## check (and where possible install) the Debian packages the build needs
	@missing=""; for pair in $(NEEDS); do f=$${pair%%:*}; p=$${pair##*:}; \
	  [ -e "$$f" ] || missing="$$missing $$p"; done; \
	missing=$$(echo $$missing | tr ' ' '\n' | sort -u | tr '\n' ' '); \
	if [ -n "$${missing// /}" ]; then \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; elif sudo -n true 2>/dev/null; then SUDO=sudo; \
	  else echo "missing Debian package(s):$$missing -- install with: sudo apt-get install$$missing" >&2; exit 1; fi; \
	  echo "installing Debian package(s):$$missing"; \
	  ($$SUDO apt-get install -y -qq $$missing >/dev/null 2>&1 || \
	   ($$SUDO apt-get update -qq >/dev/null 2>&1 && $$SUDO apt-get install -y -qq $$missing >/dev/null 2>&1)) || \
	  { echo "could not install:$$missing -- run: sudo apt-get update && sudo apt-get install$$missing" >&2; exit 1; }; \
	fi

# ---- compile ---------------------------------------------------------------------------
$(BUILD)/obj/%.o: %.cpp | deps
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -c $< -o $@

# The random generators must not let the compiler fuse a*b+c: numpy and torch round twice.
$(BUILD)/obj/common/random.o: CXXFLAGS += -ffp-contract=off
# Figures are compared byte for byte: keep pixel arithmetic the same on FMA and non-FMA CPUs.
$(BUILD)/obj/common/plot/%.o: CXXFLAGS += -ffp-contract=off
# Chapter 2 keeps one rounding for its sums: no fused a*b+c (chapters/2-scaling/numpy_math.h).
$(BUILD)/obj/chapters/2-scaling/%.o: CXXFLAGS += -ffp-contract=off

$(BUILD)/obj/tests/%.o: CXXFLAGS += -DPROJECT_BIN='"$(abspath $(BUILD))/bin"' -DPROJECT_ROOT='"$(CURDIR)"'

# Each archive also depends on a file naming its members, rewritten only when the list changes,
# so a source that is deleted or moved does not leave its old object inside the archive.
members = $(shell mkdir -p $(BUILD); f=$(BUILD)/$(1).members; \
            [ "$$(cat $$f 2>/dev/null)" = "$(2)" ] || echo "$(2)" > $$f; echo $$f)
$(LIB): $(COMMON_OBJ) $(call members,libcommon,$(COMMON_OBJ))
	@mkdir -p $(dir $@)
	@rm -f $@
	ar rcs $@ $(filter %.o,$^)

$(CHAPTER_LIB): $(CHAPTER_OBJ) $(call members,libchapters,$(CHAPTER_OBJ))
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
-include $(COMMON_OBJ:.o=.d) $(TEST_OBJ:.o=.d) $(CHAPTER_OBJ:.o=.d) $(wildcard $(BUILD)/obj/chapters/*/*.d) $(wildcard $(BUILD)/obj/bench/*.d)
