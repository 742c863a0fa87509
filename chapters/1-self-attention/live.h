// The article's widget beside section 1, in the terminal: `1-self-attention --live`, `make widget`.
//
// Choose a query token (click it, Left/Right, Up/Down or 1-4) and its row of the computation
// shows step by step: q_i, the dot products q_i·k_j, the division by √d_k, the softmax weights
// and the weighted sum of V's rows. `m` (or a click on the toggle) switches the causal mask:
// the scores above the diagonal become -inf and their weights exactly 0, and the 4×4 weight
// grid beside it is redrawn as a heatmap in the figure's colour map (Blues). `q` quits.
//
//   live::Model m(Q, K, V);                     // main.cpp's tensors, both mask states
//   live::View v{.query = 2, .causal = true};   // token 3, mask on
//   live::Frame f = live::render(m, v, 80, 24, live::Colors::Palette256);
//   live::apply(v, live::action_for(key, f, m.n()), m.n());
//
// In a terminal it runs full screen (common/program/terminal.h: raw mode, the alternate screen
// restored on every exit path, mouse clicks); with TERM=dumb, a pipe or --plain it reads one key
// per line and prints each screen as plain text, so it can be scripted and tested.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "common/program/terminal.h"
#include "common/tensor.h"

namespace live {

// The numbers the widget shows: main.cpp's Q, K, V, what scaled_dot_product_attention returns
// for them without and with causal_mask, and the scores it computes on the way (the same
// expressions as the listing, so softmax(scores[c]) is attn[c] bit for bit).
struct Model {
    Model(const Tensor& Q, const Tensor& K, const Tensor& V);
    int n() const { return int(Q.size(0)); }

    Tensor Q, K, V;          // (n, d_k), (n, d_k), (n, d_v)
    Tensor QKt;              // (n, n) Q @ K^T: the dot products q_i·k_j
    Tensor scores[2];        // (n, n) QKt / sqrt(d_k); [1] with -inf where causal_mask is 1
    Tensor attn[2], out[2];  // (n, n), (n, d_v): [0] no mask, [1] causal
};

// Row r of t as torch prints an integer-valued float tensor, one width for the whole tensor
// ("[ 1.,  1., -1., -1.]"); 4 decimals when some value is not an integer. The widget's rows, and
// --explain's (main.cpp), so both print section 1's integers as the README and torch do.
std::string row_text(const Tensor& t, int r);

// What the reader has chosen.
struct View {
    int query = 0;        // the query token i, 0-based
    bool causal = false;  // the causal mask is on
};

// The texts the screen is made of, which the web page (web/) shows too.
std::string token_name(int j);  // token j (0-based) as the article names it: "1번"
// A score: 4 decimals like --explain, and -inf as torch prints it.
std::string score_text(float s);
// A weight: 4 decimals, and "0" for a weight that is exactly zero (what the mask gives), so
// the screen tells it apart from a small weight that rounds to 0.0000.
std::string weight_text(float w);
// The line under the grid: what the mask does, or that there is none.
std::string status_text(const Model& m, const View& v);

struct Action {
    enum Kind { None, Select, Prev, Next, Mask, Quit } kind = None;
    int token = 0;  // for Select: the query token, 0-based
    bool operator==(const Action&) const = default;
};

// Applies one action to the view of n tokens (Prev and Next wrap around).
void apply(View& v, const Action& a, int n);

// How the heatmap is painted: not at all (NO_COLOR, plain screens), in the xterm 256-colour
// palette, or in true colour (COLORTERM=truecolor or 24bit).
enum class Colors { None, Palette256, TrueColor };
Colors colors_from_env();

using Hit = term::Hit<Action>;  // where a click does what

struct Frame {
    std::vector<std::string> lines;  // every line exactly `width` display columns
    std::vector<term::Span> spans;   // colours and highlights (none in the plain text)
    std::vector<Hit> hits;           // where a click does what
};

// height > 0: exactly `height` lines, the key help at the bottom, or a line saying the window
// is too small; the 4×4 grid stands beside the steps when the width allows, below them
// otherwise. height == 0: as tall as the content, without the key help (the plain screens).
Frame render(const Model& m, const View& v, int width, int height, Colors colors);

// The action at a click on column x, row y (1-based, as the terminal reports them).
Action hit_test(const Frame& f, int x, int y);

// The full-screen key map: a key, click or wheel step on `frame` -> an action (n tokens).
Action action_for(const term::Key& key, const Frame& frame, int n);

// One line of the line mode ("3", "right", "m", "q", ...) -> an action; false if unknown.
bool parse_line_key(std::string_view line, int n, Action& out);

// Runs the widget: full screen when the terminal allows it and plain is false, else the line
// mode. Returns the exit code (2 for an unknown line in the line mode).
int run(const Model& m, View v, bool plain);

}  // namespace live
