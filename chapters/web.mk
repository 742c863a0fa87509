# The web pages: section 1's widget and the flashcard deck, the chapters' own C++ compiled to
# WebAssembly by Debian's emscripten (chapters/1-self-attention/web/, chapters/flashcards/web/),
# tested in Debian's headless chromium (tests/web/). Nothing of `make` or `make test` needs it.
WEB      := $(BUILD)/web
WEB_TEST := $(BUILD)/test-web
EMXX     ?= em++
CHROMIUM ?= /usr/bin/chromium
# Debian's em++ runs node tools that need Debian's acorn, where node does not look by itself.
WEB_ENV  := NODE_PATH=/usr/share/nodejs
# -fexceptions: without it a throw ends the program even inside a try. -Oz: the smallest code.
WEB_CXXFLAGS := -std=c++20 -Oz -fno-trapping-math -fexceptions -Wall -Wextra -MMD -MP -I. \
                -isystem $(STB_INC)
# One JavaScript file per page with the wasm inside (SINGLE_FILE): a page opened from file://
# may not fetch a .wasm file beside it.
WEB_LDFLAGS := -Oz -fexceptions -sMODULARIZE=1 -sENVIRONMENT=web -sSINGLE_FILE=1 \
               -sEXPORTED_RUNTIME_METHODS=ccall

WEB_PAGES  := 1-self-attention flashcards
WEB_LIB    := $(WEB)/libcommon.a
WEB_COMMON := $(COMMON_SRC:%.cpp=$(WEB)/obj/%.o)
WIDGET_OBJ := $(addprefix $(WEB)/obj/chapters/1-self-attention/,web/widget.o live.o)
CARDS_OBJ  := $(patsubst %.cpp,$(WEB)/obj/%.o,chapters/flashcards/web/cards.cpp \
                $(filter-out %/main.cpp,$(wildcard chapters/flashcards/*.cpp)))
WEB_FILES  := $(foreach p,$(WEB_PAGES),$(WEB)/$(p)/index.html $(WEB)/$(p)/page.js) \
              $(WEB)/1-self-attention/widget.js $(WEB)/flashcards/cards.js

.PHONY: web test-web web-deps web-browser
web: $(WEB_FILES) ## the widget and the deck as web pages in build/web/ (Debian's emscripten)
	@for p in $(WEB_PAGES); do echo "open file://$(abspath $(WEB))/$$p/index.html"; done

web-deps:
	@$(MAKE) --no-print-directory deps NEEDS='$(NEEDS) /usr/bin/em++:emscripten'
web-browser:
	@$(MAKE) --no-print-directory deps NEEDS='$(CHROMIUM):chromium /usr/bin/npm:npm'

$(WEB)/obj/%.o: %.cpp | web-deps
	@mkdir -p $(dir $@)
	$(WEB_ENV) $(EMXX) $(WEB_CXXFLAGS) -c $< -o $@

$(WEB_LIB): $(WEB_COMMON)
	@rm -f $@
	emar rcs $@ $^

$(WEB)/1-self-attention/widget.js: $(WIDGET_OBJ) $(WEB_LIB)
	@mkdir -p $(dir $@)
	$(WEB_ENV) $(EMXX) $(WEB_LDFLAGS) -sEXPORT_NAME=Widget -sEXPORTED_FUNCTIONS=_widget $^ -o $@

$(WEB)/flashcards/cards.js: $(CARDS_OBJ) $(WEB_LIB) chapters/flashcards/deck.md
	@mkdir -p $(dir $@)
	$(WEB_ENV) $(EMXX) $(WEB_LDFLAGS) -sEXPORT_NAME=Cards \
	  -sEXPORTED_FUNCTIONS=_cards_open,_cards_key $(filter %.o %.a,$^) -o $@ \
	  --embed-file chapters/flashcards/deck.md

$(WEB)/%/index.html $(WEB)/%/page.js: chapters/%/web/index.html chapters/%/web/page.js
	@mkdir -p $(dir $@)
	cp chapters/$*/web/index.html chapters/$*/web/page.js $(dir $@)

# The browser tests: node's test runner, and puppeteer-core at the version tests/web's lockfile
# pins, installed into $(WEB_TEST) (it downloads no browser: the tests start $(CHROMIUM)).
# The last line counts the tests that passed.
WEB_NPM := $(WEB_TEST)/node_modules/puppeteer-core/package.json
$(WEB_NPM): tests/web/package.json tests/web/package-lock.json | web-browser
	@mkdir -p $(WEB_TEST)
	cp $^ $(WEB_TEST)/
	cd $(WEB_TEST) && npm ci --no-audit --no-fund --ignore-scripts
	@touch $@

test-web: web-browser web $(WEB_NPM) ## the web pages in headless chromium (tests/web/)
	@CHROMIUM=$(CHROMIUM) WEB=$(WEB) NODE_PATH="$$PWD/$(WEB_TEST)/node_modules" \
	  node --test --test-reporter=spec --test-reporter-destination=stdout \
	  --test-reporter=tap --test-reporter-destination=$(WEB_TEST)/tap.txt tests/web/*.test.js; \
	rc=$$?; tap=$(WEB_TEST)/tap.txt; n=$$(sed -n 's/^# tests //p' $$tap); \
	echo "test-web: $$(sed -n 's/^# pass //p' $$tap) of $${n:-0} tests passed," \
	  "$$(sed -n 's/^# fail //p' $$tap) failed (screenshots in $(WEB_TEST)/)"; exit $$rc

-include $(WEB_COMMON:.o=.d) $(WIDGET_OBJ:.o=.d) $(CARDS_OBJ:.o=.d)
