// The widget of live.h: its numbers, the screen laid out in display columns (so Hangul lines
// up), the key map, and the two loops (full screen, and one key per line).
#include "chapters/1-self-attention/live.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <tuple>

#include "chapters/1-self-attention/attention.h"
#include "common/plot/plot.h"
#include "common/program/cli.h"
#include "common/program/format.h"

namespace live {

// ---- the numbers ---------------------------------------------------------------------------

Model::Model(const Tensor& Q_, const Tensor& K_, const Tensor& V_) : Q(Q_), K(K_), V(V_) {
    const int64_t n = Q.size(0);
    const float d_k = float(Q.size(-1));
    // The listing's first two steps, written as it writes them: these are the scores softmax
    // sees inside scaled_dot_product_attention.
    QKt = matmul(Q, transpose(K, -2, -1));  // (n, n)
    scores[0] = QKt / std::pow(d_k, 0.5f);
    scores[1] = masked_fill(scores[0], causal_mask(n), -std::numeric_limits<float>::infinity());
    std::tie(out[0], attn[0]) = scaled_dot_product_attention(Q, K, V);
    std::tie(out[1], attn[1]) = scaled_dot_product_attention(Q, K, V, causal_mask(n));
}

void apply(View& v, const Action& a, int n) {
    switch (a.kind) {
        case Action::Select:
            if (a.token >= 0 && a.token < n) v.query = a.token;
            break;
        case Action::Prev:
            v.query = (v.query + n - 1) % n;
            break;
        case Action::Next:
            v.query = (v.query + 1) % n;
            break;
        case Action::Mask:
            v.causal = !v.causal;
            break;
        case Action::None:
        case Action::Quit:
            break;
    }
}

Colors colors_from_env() {
    const char* no_color = std::getenv("NO_COLOR");  // no-color.org: set and not empty
    if (no_color && *no_color) return Colors::None;
    const char* ct = std::getenv("COLORTERM");
    if (ct && (std::strcmp(ct, "truecolor") == 0 || std::strcmp(ct, "24bit") == 0))
        return Colors::TrueColor;
    return Colors::Palette256;
}

// ---- the screen ----------------------------------------------------------------------------

namespace {

constexpr int CELL_W = 8;         // one weight of the grid: " 0.7201 "
constexpr int LABEL_W = 7;        // the grid's row label: "  > 3번" (a space follows it)
constexpr int GAP = 3;            // between the steps and the grid when they stand side by side
constexpr int TO_EDGE = 1 << 20;  // a span's end column that append() cuts at the block's edge

std::string center(const std::string& s, int w) {
    int pad = std::max(0, w - term::display_width(s));
    return std::string(size_t(pad - pad / 2), ' ') + s + std::string(size_t(pad / 2), ' ');
}

}  // namespace

std::string token_name(int j) { return std::to_string(j + 1) + "번"; }

std::string score_text(float s) {
    if (std::isinf(s)) return s < 0 ? "-inf" : "inf";
    return fixed(s, 4);
}

std::string weight_text(float w) { return w == 0.0f ? "0" : fixed(w, 4); }

std::string status_text(const Model& m, const View& v) {
    return v.causal ? " causal 마스크: j > i인 점수는 -inf, softmax 뒤 그 가중치는 정확히 0"
                    : " 마스크 없음: 쿼리마다 키 " + std::to_string(m.n()) + "개를 모두 봅니다";
}

std::string row_text(const Tensor& t, int r) {
    const int rows = int(t.size(0)), cols = int(t.size(1));
    bool integers = true;
    for (int a = 0; a < rows; a++)
        for (int b = 0; b < cols; b++) {
            float v = t.at({a, b});
            integers &= std::isfinite(v) && v == std::round(v) && std::fabs(v) < 1e6f;
        }
    auto one = [&](float v) {
        return integers ? std::to_string((long long)std::lround(v)) + "." : fixed(v, 4);
    };
    int w = 0;
    for (int a = 0; a < rows; a++)
        for (int b = 0; b < cols; b++)
            w = std::max(w, int(one(t.at({a, b})).size()));
    std::string s = "[";
    for (int b = 0; b < cols; b++)
        s += (b ? ", " : "") + term::pad_left(one(t.at({r, b})), w);
    return s + "]";
}

namespace {

// The figure's colour map and its text colour rule (white on the dark half), as SGR codes.
std::string cell_sgr(float w, Colors colors) {
    static const plot::Colormap BLUES("Blues");
    plot::Color c = BLUES(w);  // vmin 0, vmax 1 as in the figure
    int rgb[3] = {int(std::lround(c.r * 255)), int(std::lround(c.g * 255)),
                  int(std::lround(c.b * 255))};
    bool white = w > 0.5f;
    if (colors == Colors::TrueColor)
        return std::string(white ? "38;2;255;255;255" : "38;2;0;0;0") + ";48;2;" +
               std::to_string(rgb[0]) + ";" + std::to_string(rgb[1]) + ";" + std::to_string(rgb[2]);
    // The nearest of xterm's 6x6x6 colour cube (16-231) and grey ramp (232-255).
    const int LEVEL[6] = {0, 95, 135, 175, 215, 255};
    auto dist = [&](int r, int g, int b) {
        return long(r - rgb[0]) * (r - rgb[0]) + long(g - rgb[1]) * (g - rgb[1]) +
               long(b - rgb[2]) * (b - rgb[2]);
    };
    int level[3] = {0, 0, 0};  // per channel, the nearest cube level
    for (int k = 0; k < 3; k++)
        for (int l = 1; l < 6; l++)
            if (std::abs(LEVEL[l] - rgb[k]) < std::abs(LEVEL[level[k]] - rgb[k])) level[k] = l;
    int best = 16 + 36 * level[0] + 6 * level[1] + level[2];
    long best_d = dist(LEVEL[level[0]], LEVEL[level[1]], LEVEL[level[2]]);
    for (int k = 0; k < 24; k++) {
        const int grey = 8 + 10 * k;
        if (dist(grey, grey, grey) < best_d) best = 232 + k, best_d = dist(grey, grey, grey);
    }
    return std::string(white ? "38;5;231" : "38;5;16") + ";48;5;" + std::to_string(best);
}

// A piece of the screen: lines at their natural width, with styles and click areas whose rows
// and columns count from the block's top-left corner.
struct Block {
    int width = 0;
    std::vector<std::string> lines;
    std::vector<term::Span> spans;
    std::vector<Hit> hits;

    int row() const { return int(lines.size()); }  // the row the next add() writes
    void add(const std::string& line) {
        width = std::max(width, term::display_width(line));
        lines.push_back(line);
    }
};

// The title, the token bar and the mask toggle.
Block header_block(const Model& m, const View& v) {
    Block b;
    b.add(" 1절 Self-Attention: softmax(QK^T / √d_k) V, 토큰 " + std::to_string(m.n()) +
          "개, d_k = " + std::to_string(m.Q.size(1)));
    std::string s = " 쿼리 토큰:";
    for (int j = 0; j < m.n(); j++) {
        s += " ";
        int col0 = term::display_width(s);
        bool chosen = j == v.query;
        s += (chosen ? "[" : " ") + token_name(j) + (chosen ? "]" : " ");
        int col1 = term::display_width(s);
        b.hits.push_back({b.row(), col0, col1, {Action::Select, j}});
        if (chosen) b.spans.push_back({b.row(), col0, col1, "7"});
    }
    s += "     ";
    int col0 = term::display_width(s);
    s += std::string(v.causal ? "[x]" : "[ ]") + " causal 마스크 (m)";
    int col1 = term::display_width(s);
    b.hits.push_back({b.row(), col0, col1, {Action::Mask}});
    if (v.causal) b.spans.push_back({b.row(), col0, col1, "1"});
    b.add(s);
    b.add("");
    return b;
}

// One query's row, step by step: q_i; for each key j its k_j, q_i·k_j, the score after the
// division (and the mask), the softmax weight and V's row j; then the weighted sum.
Block steps_block(const Model& m, const View& v) {
    const int n = m.n(), i = v.query, c = v.causal ? 1 : 0;
    const int d_k = int(m.Q.size(1));
    Block b;
    b.add(" " + token_name(i) + " 토큰의 쿼리 q_" + std::to_string(i + 1) + " = x_" +
          std::to_string(i + 1) + " W_Q = " + row_text(m.Q, i) + "    √d_k = √" +
          std::to_string(d_k) + " = " + fixed(std::sqrt(double(d_k)), 4));
    const std::string H1 = "1) q·k_j", H2 = "2) ÷√d_k", H3 = "3) softmax", H4 = "4) V_j";
    int kw = term::display_width(row_text(m.K, 0));
    int w1 = term::display_width(H1), w2 = term::display_width(H2);
    int w3 = term::display_width(H3);
    for (int j = 0; j < n; j++) {
        w1 = std::max(w1, int(fixed(m.QKt.at({i, j}), 4).size()));
        w2 = std::max(w2, int(score_text(m.scores[c].at({i, j})).size()));
        w3 = std::max(w3, int(weight_text(m.attn[c].at({i, j})).size()));
    }
    auto cells = [&](const std::string& j, const std::string& k, const std::string& a,
                     const std::string& s, const std::string& w, const std::string& val) {
        return "  " + term::pad_left(j, 2) + "   " + term::fit(k, kw) + "  " +
               term::pad_left(a, w1) + "  " + term::pad_left(s, w2) + "  " + term::pad_left(w, w3) +
               "   " + val;
    };
    b.add(cells("j", "k_j", H1, H2, H3, H4));
    for (int j = 0; j < n; j++) {
        if (c && j > i) b.spans.push_back({b.row(), 0, TO_EDGE, "2"});  // hidden: faint
        b.add(cells(std::to_string(j + 1), row_text(m.K, j), fixed(m.QKt.at({i, j}), 4),
                    score_text(m.scores[c].at({i, j})), weight_text(m.attn[c].at({i, j})),
                    row_text(m.V, j)));
    }
    std::string lead = " 출력 o_" + std::to_string(i + 1) + " = ";
    std::string sum;
    for (int j = 0; j < n; j++)
        sum +=
            (j ? " + " : "") + weight_text(m.attn[c].at({i, j})) + " × V_" + std::to_string(j + 1);
    b.add(lead + sum);
    std::string o = "[";
    for (int d = 0; d < int(m.out[c].size(1)); d++)
        o += (d ? ", " : "") + fixed(m.out[c].at({i, d}), 4);
    b.add(std::string(size_t(term::display_width(lead) - 2), ' ') + "= " + o + "]");
    return b;
}

// The n×n weights as a heatmap: the figure's colours, the value written in each cell.
Block heat_block(const Model& m, const View& v, Colors colors) {
    const int n = m.n(), c = v.causal ? 1 : 0;
    Block b;
    b.add(" 어텐션 가중치 (행: 쿼리 i, 열: 키 j)");  // the same width with the mask or without
    std::string head(size_t(LABEL_W), ' ');
    for (int j = 0; j < n; j++)
        head += center(token_name(j), CELL_W);
    b.add(head);
    for (int i = 0; i < n; i++) {
        bool chosen = i == v.query;
        std::string s = std::string(chosen ? "  > " : "    ") + token_name(i) + " ";
        if (chosen) b.spans.push_back({b.row(), 0, LABEL_W, "1"});
        for (int j = 0; j < n; j++) {
            float w = m.attn[c].at({i, j});
            int col0 = term::display_width(s);
            s += center(weight_text(w), CELL_W);
            if (colors != Colors::None)
                b.spans.push_back({b.row(), col0, col0 + CELL_W, cell_sgr(w, colors)});
        }
        b.hits.push_back({b.row(), 0, term::display_width(s), {Action::Select, i}});
        b.add(s);
    }
    return b;
}

// Appends rows of `left` (and `right` beside it from column right_col) to f, each line exactly
// W columns, with their styles and click areas moved to where they now stand.
void append(Frame& f, int W, const Block& left, const Block* right_block = nullptr,
            int right_col = 0) {
    const int base = int(f.lines.size());
    const int rows = std::max(left.row(), right_block ? right_block->row() : 0);
    for (int r = 0; r < rows; r++) {
        std::string l = r < left.row() ? left.lines[size_t(r)] : "";
        if (right_block) {
            std::string rt = r < right_block->row() ? right_block->lines[size_t(r)] : "";
            l = term::fit(l, right_col) + rt;
        }
        f.lines.push_back(term::fit(l, W));
    }
    auto move = [&](const Block& b, int col, int end) {  // nothing reaches past column `end`
        for (term::Span s : b.spans) {
            s.row += base, s.col0 += col, s.col1 = std::min(s.col1 + col, end);
            f.spans.push_back(s);
        }
        for (Hit h : b.hits) {
            h.row += base, h.col0 += col, h.col1 = std::min(h.col1 + col, end);
            f.hits.push_back(h);
        }
    };
    move(left, 0, right_block ? right_col : W);
    if (right_block) move(*right_block, right_col, W);
}

}  // namespace

Frame render(const Model& m, const View& view, int W, int H, Colors colors) {
    View v = view;
    v.query = std::clamp(v.query, 0, m.n() - 1);
    const Block head = header_block(m, v), steps = steps_block(m, v);
    const Block heat = heat_block(m, v, colors);
    const std::string status = status_text(m, v);
    const int status_w = term::display_width(status);
    const int stacked_w = std::max({head.width, steps.width, heat.width, status_w});
    const int wide_w = std::max({head.width, steps.width + GAP + heat.width, status_w});
    const int footer = H > 0 ? 2 : 1;  // status and key help; plain screens: the status only
    const int stacked_h = head.row() + steps.row() + 1 + heat.row() + 1 + footer;
    const int wide_h = head.row() + std::max(steps.row(), heat.row()) + 1 + footer;

    Frame f;
    bool wide;
    if (H > 0) {
        wide = W >= wide_w && H >= wide_h;
        if (!wide && (W < stacked_w || H < stacked_h)) {
            W = std::max(W, 1);
            f.lines.assign(size_t(H), std::string(size_t(W), ' '));
            std::string need = std::to_string(stacked_w) + "x" + std::to_string(stacked_h);
            f.lines[0] = term::fit_first({" 창이 작아요 (" + need + " 이상, q 끝내기)",
                                          " 창이 작아요, q 끝내기", " q 끝내기", "q"},
                                         W);
            return f;
        }
    } else {
        W = std::max(W, stacked_w);
        wide = W >= wide_w;
    }

    append(f, W, head);
    if (wide) {
        append(f, W, steps, &heat, steps.width + GAP);
    } else {
        append(f, W, steps);
        f.lines.emplace_back(size_t(W), ' ');
        append(f, W, heat);
    }
    f.lines.emplace_back(size_t(W), ' ');
    if (H > 0)
        while (int(f.lines.size()) < H - footer)
            f.lines.emplace_back(size_t(W), ' ');
    f.lines.push_back(term::fit(status, W));
    if (H > 0)
        f.lines.push_back(term::fit_first(
            {" ←/→ ↑/↓ 1-" + std::to_string(m.n()) +
                 " 또는 클릭: 쿼리 토큰   m 또는 클릭: causal 마스크   q: 끝내기",
             " ←/→ 1-" + std::to_string(m.n()) + " 클릭: 쿼리   m: 마스크   q: 끝내기",
             " q: 끝내기"},
            W));
    return f;
}

Action hit_test(const Frame& f, int x, int y) { return term::hit_test(f.hits, x, y, Action{}); }

// ---- keys ----------------------------------------------------------------------------------

Action action_for(const term::Key& k, const Frame& frame, int n) {
    using term::KeyKind;
    switch (k.kind) {
        case KeyKind::Left:
        case KeyKind::Up:
            return {Action::Prev};
        case KeyKind::Right:
        case KeyKind::Down:
            return {Action::Next};
        case KeyKind::Home:
            return {Action::Select, 0};
        case KeyKind::End:
            return {Action::Select, n - 1};
        case KeyKind::Escape:
        case KeyKind::CtrlC:
        case KeyKind::CtrlD:
            return {Action::Quit};
        case KeyKind::Mouse:
            if (k.button == 64) return {Action::Prev};  // the wheel
            if (k.button == 65) return {Action::Next};
            if (k.button == 0 && k.press) return hit_test(frame, k.x, k.y);
            return {};
        case KeyKind::Char:
            if (k.ch >= '1' && k.ch <= '9' && int(k.ch - '1') < n)
                return {Action::Select, int(k.ch - '1')};
            switch (k.ch) {
                case 'h':
                case 'k':
                    return {Action::Prev};
                case 'l':
                case 'j':
                    return {Action::Next};
                case 'm':
                case 'M':
                case U'ㅡ':  // m typed with the Korean keyboard layout on
                    return {Action::Mask};
                case 'q':
                case 'Q':
                case U'ㅂ':  // q with the Korean layout
                    return {Action::Quit};
            }
            return {};
        default:
            return {};
    }
}

bool parse_line_key(std::string_view line, int n, Action& out) {
    size_t a = line.find_first_not_of(" \t"), b = line.find_last_not_of(" \t");
    if (a == std::string_view::npos) return false;
    std::string w(line.substr(a, b - a + 1));
    for (char& ch : w)
        if (ch >= 'A' && ch <= 'Z') ch = char(ch - 'A' + 'a');
    for (int j = 0; j < n; j++)
        if (w == std::to_string(j + 1) || w == token_name(j)) {
            out = {Action::Select, j};
            return true;
        }
    static const std::pair<const char*, Action::Kind> NAMES[] = {
        {"left", Action::Prev},  {"prev", Action::Prev}, {"up", Action::Prev},
        {"right", Action::Next}, {"next", Action::Next}, {"down", Action::Next},
        {"m", Action::Mask},     {"mask", Action::Mask}, {"마스크", Action::Mask},
        {"q", Action::Quit},     {"quit", Action::Quit},
    };
    for (const auto& [name, kind] : NAMES)
        if (w == name) {
            out = {kind};
            return true;
        }
    return false;
}

// ---- the two loops -------------------------------------------------------------------------

namespace {

void print_plain(const Model& m, const View& v) {
    Frame f = render(m, v, term::plain_width(), 0, Colors::None);
    std::fputs((term::plain_text(f.lines) + "\n").c_str(), stdout);
    cli::flush_stdout_or_exit();  // a full disk ends the loop, not the input
}

int run_lines(const Model& m, View v) {
    print_plain(m, v);
    std::string line;
    for (int line_no = 1; cli::read_input_line(line); line_no++) {
        if (line.find_first_not_of(" \t") == std::string::npos) continue;  // a blank line
        Action a;
        if (!parse_line_key(line, m.n(), a)) {
            // Quoted as the option errors quote: control bytes and NUL as escapes (\x1b, \x00)
            std::fprintf(stderr,
                         "1-self-attention: error: stdin line %d: unknown key %s; use one per "
                         "line: 1-%d, left, right, m, q (see --help)\n",
                         line_no, cli::quote_input_line(line).c_str(), m.n());
            return 2;
        }
        if (a.kind == Action::Quit) break;
        apply(v, a, m.n());
        print_plain(m, v);
    }
    return 0;
}

int run_terminal(const Model& m, View v) {
    const Colors colors = colors_from_env();
    term::Raw raw;
    raw.enter(/*mouse=*/true);
    term::Screen screen;
    Frame frame;
    auto draw = [&] {
        int rows, cols;
        term::window_size(rows, cols);
        frame = render(m, v, cols, rows, colors);
        screen.draw(frame.lines, frame.spans, rows, cols);
    };
    term::key_loop(screen, draw, [&](const term::Key& key) {
        Action a = action_for(key, frame, m.n());
        if (a.kind == Action::Quit) return false;
        apply(v, a, m.n());
        return true;
    });
    raw.leave();
    return 0;
}

}  // namespace

int run(const Model& m, View v, bool plain) {
    if (!plain && term::full_screen_possible()) return run_terminal(m, v);
    return run_lines(m, v);
}

}  // namespace live
