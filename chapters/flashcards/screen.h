// The screen: a session drawn as lines of exact width (boxed card, progress bar, buttons, key
// help), where a mouse click lands, and the full-screen key map.
#pragma once
#include "chapters/flashcards/session.h"
#include "common/program/terminal.h"

#include <string>
#include <vector>

namespace cards {

using Hit = term::Hit<Action>;  // where a mouse click does what

struct Frame {
    std::vector<std::string> lines;  // every line exactly `width` display columns
    std::vector<Hit> hits;           // where a mouse click does what
    int max_scroll = 0;              // content lines hidden below a full card box
};

// height > 0: exactly `height` lines (the card box scrolls); height == 0: as tall as the card
// needs, without the key-help rows (the plain frames printed when stdin is not a terminal).
// unicode: box drawing and block characters; otherwise ASCII only.
Frame render(Session& s, int width, int height, bool unicode);

// The action at a click on column x, row y (1-based, as the terminal reports them).
Action hit_test(const Frame& f, int x, int y);

// The full-screen key map: a key, mouse click or wheel step on the screen `frame` -> an action.
Action action_for(const term::Key& key, const Frame& frame);

}  // namespace cards
