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

// The words of the screen apart from its layout, which the web page (web/) shows too.
struct Texts {
    std::string title;   // "트랜스포머 마스터 카드 (20장)"
    std::string today;   // "세션 3  오늘 2/20": this session's cards rated of those due or new
    std::string counts;  // "본 카드 5/20  쉬움 2  보통 2  어려움 1"
    std::string label;   // "1/20  7번 카드  복습, 상자 1": where in the session, which card
    std::string status;  // what just happened, or what to do next
};
Texts texts(const Session& s);

// height > 0: exactly `height` lines (the card box scrolls); height == 0: as tall as the card
// needs, without the key-help rows (the plain frames printed when stdin is not a terminal).
// unicode: box drawing and block characters; otherwise ASCII only.
Frame render(Session& s, int width, int height, bool unicode);

// The action at a click on column x, row y (1-based, as the terminal reports them).
Action hit_test(const Frame& f, int x, int y);

// The full-screen key map: a key, mouse click or wheel step on the screen `frame` -> an action.
Action action_for(const term::Key& key, const Frame& frame);

}  // namespace cards
