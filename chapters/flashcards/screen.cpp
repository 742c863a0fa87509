// The layout of screen.h, in display columns (common/program/terminal.h), so Hangul lines up.
#include "chapters/flashcards/screen.h"

#include "common/program/terminal.h"

#include <algorithm>
#include <iterator>

namespace cards {

namespace {

struct Glyphs {
    const char *tl, *tr, *bl, *br, *h, *v, *full, *empty;
    const char* keys[3];  // the key help, widest first: the first that fits the screen is shown
};
constexpr Glyphs UNICODE_GLYPHS{
    "╭",
    "╮",
    "╰",
    "╯",
    "─",
    "│",
    "█",
    "░",
    {" Space/Enter/클릭 뒤집기  1 2 3 평가  ←/→ 이동  ↑/↓ 스크롤  q 끝내기",
     " Space 뒤집기  1 2 3 평가  ←/→ 이동  q 끝내기", " Space 뒤집기  1 2 3 평가  q 끝내기"}};
constexpr Glyphs ASCII_GLYPHS{
    "+",
    "+",
    "+",
    "+",
    "-",
    "|",
    "#",
    "-",
    {" Space/Enter/클릭 뒤집기  1 2 3 평가  Left/Right 이동  Up/Down 스크롤  q 끝내기",
     " Space 뒤집기  1 2 3 평가  Left/Right 이동  q 끝내기",
     " Space 뒤집기  1 2 3 평가  q 끝내기"}};

std::string repeat(const char* g, int n) {
    std::string s;
    for (int i = 0; i < n; i++) s += g;
    return s;
}

// "left ... right" in exactly `width` columns (right side wins when it does not fit).
std::string spread(const std::string& left, const std::string& right, int width) {
    int rw = term::display_width(right);
    if (rw + 1 >= width) return term::fit(right, width);
    return term::fit(left, width - rw - 1) + " " + right;
}

}  // namespace

Texts texts(const Session& s) {
    const int N = int(s.deck.cards.size());
    const Card& card = s.card();
    Counts c = count(s.deck, s.progress, s.session);
    Texts t;
    int today_done = 0;
    for (int k = 0; k < s.plan.today; k++)
        if (s.rated_now.count(s.deck.cards[size_t(s.plan.order[size_t(k)])].number)) today_done++;
    t.title = "트랜스포머 마스터 카드 (" + std::to_string(N) + "장)";
    t.today = "세션 " + std::to_string(s.session) + "  오늘 " + std::to_string(today_done) + "/" +
              std::to_string(s.plan.today);
    t.counts = "본 카드 " + std::to_string(c.seen) + "/" + std::to_string(N) + "  쉬움 " +
               std::to_string(c.easy) + "  보통 " + std::to_string(c.medium) + "  어려움 " +
               std::to_string(c.hard);
    std::string tag;
    auto it = s.progress.cards.find(card.number);
    if (auto mine = s.rated_now.find(card.number); mine != s.rated_now.end())
        tag = "평가함: " + std::string(rating_name(mine->second));  // this run's rating
    else if (it == s.progress.cards.end())
        tag = "새 카드";
    else if (due_in(it->second) <= s.session)
        tag = "복습, 상자 " + std::to_string(it->second.box);
    else
        tag = "미리 보기, 세션 " + std::to_string(due_in(it->second)) + " 예정";
    t.label = std::to_string(s.pos + 1) + "/" + std::to_string(s.plan.order.size()) + "  " +
              std::to_string(card.number) + "번 카드  " + tag + (s.flipped ? "  (답)" : "");
    t.status = s.message;
    if (t.status.empty())
        t.status = s.flipped ? "얼마나 잘 기억났나요? 1 쉬움  2 보통  3 어려움"
                             : "Space, Enter 또는 카드를 클릭하면 답이 보여요";
    return t;
}

Frame render(Session& s, int W, int H, bool unicode) {
    const Glyphs& g = unicode ? UNICODE_GLYPHS : ASCII_GLYPHS;
    Frame f;
    if (H > 0 && (W < 40 || H < 12)) {
        W = std::max(W, 1);
        f.lines.assign(size_t(H), std::string(size_t(W), ' '));
        f.lines[0] = term::fit_first(
            {" 창이 작아요 (40x12 이상, q 끝내기)", " 창이 작아요, q 끝내기", " q 끝내기", "q"}, W);
        return f;
    }
    W = std::max(W, 40);  // plain frames: the narrowest layout below
    const int N = int(s.deck.cards.size());
    const Card& card = s.card();
    Counts c = count(s.deck, s.progress, s.session);
    const Texts t = texts(s);

    // Title and progress bar.
    f.lines.push_back(spread(" " + t.title, t.today + " ", W));
    std::string counts = "  " + t.counts + " ";
    int bar = W - 3 - term::display_width(counts);
    if (bar < 5) {
        counts = "  " + std::to_string(c.seen) + "/" + std::to_string(N) + " ";
        bar = std::max(1, W - 3 - term::display_width(counts));
    }
    int filled = N > 0 ? c.seen * bar / N : 0;
    f.lines.push_back(
        term::fit(" [" + repeat(g.full, filled) + repeat(g.empty, bar - filled) + "]" + counts, W));
    f.lines.emplace_back(size_t(W), ' ');

    // The card: question, and once flipped the answer and where the project shows it.
    const int IW = W - 4;
    std::vector<std::string> content = term::wrap(plain_text(card.question), IW);
    if (s.flipped) {
        content.emplace_back();
        content.push_back(repeat(g.h, 2) + " 답 " + repeat(g.h, IW - 6));
        for (std::string& l : term::wrap(plain_text(card.answer), IW)) content.push_back(l);
        content.emplace_back();
        // "make ch4" stays on one line: wrap at a no-break space, then print a plain space.
        std::string demo = "실습: " + plain_text(card.demo);
        for (size_t k = 0; (k = demo.find("make ", k)) != std::string::npos;)
            demo.replace(k + 4, 1, "\u00A0");
        for (std::string& l : term::wrap(demo, IW)) {
            for (size_t k = 0; (k = l.find("\u00A0", k)) != std::string::npos;)
                l.replace(k, 2, " ");
            content.push_back(l);
        }
    }
    const int box_rows = H > 0 ? H - 6 : int(content.size()) + 2;
    const int visible = box_rows - 2;
    f.max_scroll = std::max(0, int(content.size()) - visible);
    s.scroll = std::clamp(s.scroll, 0, f.max_scroll);

    std::string label = t.label;
    int room = W - 6;
    if (term::display_width(label) > room) label = term::fit(label, room);
    int top_fill = W - 5 - term::display_width(label);
    const int box_top = int(f.lines.size());
    f.lines.push_back(std::string(g.tl) + g.h + " " + label + " " + repeat(g.h, top_fill) + g.tr);
    for (int i = 0; i < visible; i++) {
        int k = s.scroll + i;
        std::string text = k < int(content.size()) ? content[size_t(k)] : "";
        f.lines.push_back(std::string(g.v) + " " + term::fit(text, IW) + " " + g.v);
    }
    std::string more;
    if (f.max_scroll > 0)
        more = " " + std::to_string(s.scroll + 1) + "-" + std::to_string(s.scroll + visible) + "/" +
               std::to_string(content.size()) + "줄, 스크롤 ";
    int bottom_fill = W - 3 - term::display_width(more);
    f.lines.push_back(std::string(g.bl) + repeat(g.h, bottom_fill) + more + g.h + g.br);
    for (int r = box_top; r < box_top + box_rows; r++) f.hits.push_back({r, 0, W, Action::Flip});

    f.lines.push_back(term::fit(" " + t.status, W));
    if (H <= 0) return f;

    // Buttons for the mouse, then the key help.
    std::string row = " ";
    int row_index = int(f.lines.size());
    auto button = [&](const std::string& text, Action a) {
        int col0 = term::display_width(row);
        row += text;
        f.hits.push_back({row_index, col0, term::display_width(row), a});
    };
    button("[1 쉬움]", Action::Rate1);
    row += "  ";
    button("[2 보통]", Action::Rate2);
    row += "  ";
    button("[3 어려움]", Action::Rate3);
    const std::string nav_left = "[< 이전]", nav_right = "[다음 >]";
    int right_col = W - 1 - term::display_width(nav_left) - 2 - term::display_width(nav_right);
    if (right_col > term::display_width(row) + 1) {
        row += std::string(size_t(right_col - term::display_width(row)), ' ');
        button(nav_left, Action::Prev);
        row += "  ";
        button(nav_right, Action::Next);
    }
    f.lines.push_back(term::fit(row, W));
    f.lines.push_back(term::fit_first({std::begin(g.keys), std::end(g.keys)}, W));
    return f;
}

Action hit_test(const Frame& f, int x, int y) { return term::hit_test(f.hits, x, y, Action::None); }

Action action_for(const term::Key& k, const Frame& frame) {
    using term::KeyKind;
    using A = Action;
    switch (k.kind) {
        case KeyKind::Space:
        case KeyKind::Enter: return A::Flip;
        case KeyKind::Right:
        case KeyKind::PageDown: return A::Next;
        case KeyKind::Left:
        case KeyKind::PageUp: return A::Prev;
        case KeyKind::Up: return A::ScrollUp;
        case KeyKind::Down: return A::ScrollDown;
        case KeyKind::Escape:
        case KeyKind::CtrlC:
        case KeyKind::CtrlD: return A::Quit;
        case KeyKind::Mouse:
            if (k.button == 64) return A::ScrollUp;
            if (k.button == 65) return A::ScrollDown;
            if (k.button == 0 && k.press) return hit_test(frame, k.x, k.y);
            return A::None;
        case KeyKind::Char:
            switch (k.ch) {
                case '1': return A::Rate1;
                case '2': return A::Rate2;
                case '3': return A::Rate3;
                case 'l': case 'n': return A::Next;
                case 'h': case 'p': return A::Prev;
                case 'k': return A::ScrollUp;
                case 'j': return A::ScrollDown;
                case 'q': case 'Q':
                case U'ㅂ':  // q typed with the Korean keyboard layout on
                    return A::Quit;
            }
            return A::None;
        default: return A::None;
    }
}

}  // namespace cards
