// The web page's widget (index.html, page.js) runs on this: live.h's numbers for the article's
// tokens (tokens.h), compiled to WebAssembly. The page sends the line mode's keys ("3", "right",
// "m") and draws the view each call returns; it computes nothing itself.
#include <cmath>
#include <cstdio>

#include "chapters/1-self-attention/attention.h"
#include "chapters/1-self-attention/live.h"
#include "chapters/1-self-attention/tokens.h"
#include "chapters/1-self-attention/web/json.h"
#include "common/plot/plot.h"
#include "common/program/format.h"

namespace {

const live::Model& model() {
    static const live::Model m = [] {
        const auto [X, W_Q, W_K, W_V] = article_tokens();
        return live::Model(matmul(X, W_Q), matmul(X, W_K), matmul(X, W_V));
    }();
    return m;
}

live::View view;

// A cell of the heat map: the weight, and the figure's colour map (Blues, 0 to 1) with its
// text colour rule (white on the dark half), as the terminal paints its grid.
std::string cell(float w) {
    static const plot::Colormap BLUES("Blues");
    const plot::Color c = BLUES(w);
    char rgb[8];
    std::snprintf(rgb, sizeof rgb, "#%02lx%02lx%02lx", std::lround(c.r * 255),
                  std::lround(c.g * 255), std::lround(c.b * 255));
    return web::object({{"w", web::str(live::weight_text(w))},
                        {"bg", web::str(rgb)},
                        {"white", web::boolean(w > 0.5f)}});
}

}  // namespace

// Applies one line-mode key (an unknown one, "" included, changes nothing) and returns the
// view: the tokens, query i's row step by step, its output, the n×n weights, the status line.
extern "C" const char* widget(const char* key) {
    const live::Model& m = model();
    const int n = m.n();
    live::Action a;
    if (live::parse_line_key(key, n, a)) live::apply(view, a, n);
    const int i = view.query, c = view.causal ? 1 : 0;
    const Tensor mask = causal_mask(n);  // (n, n)
    std::vector<std::string> tokens, steps, grid;
    for (int j = 0; j < n; j++) {
        tokens.push_back(web::str(live::token_name(j)));
        steps.push_back(web::object({{"k", web::str(live::row_text(m.K, j))},
                                     {"dot", web::str(fixed(m.QKt.at({i, j}), 4))},
                                     {"score", web::str(live::score_text(m.scores[c].at({i, j})))},
                                     {"w", web::str(live::weight_text(m.attn[c].at({i, j})))},
                                     {"v", web::str(live::row_text(m.V, j))},
                                     {"hidden", web::boolean(c && mask.at({i, j}) != 0)}}));
        std::vector<std::string> row;
        for (int k = 0; k < n; k++) row.push_back(cell(m.attn[c].at({j, k})));
        grid.push_back(web::array(row));
    }
    const int d_k = int(m.Q.size(1));
    return web::answer(web::object({{"tokens", web::array(tokens)},
                                    {"query", std::to_string(i)},
                                    {"causal", web::boolean(c)},
                                    {"q", web::str(live::row_text(m.Q, i))},
                                    {"d_k", std::to_string(d_k)},
                                    {"sqrt_d_k", web::str(fixed(std::sqrt(double(d_k)), 4))},
                                    {"steps", web::array(steps)},
                                    {"out", web::str(live::row_text(m.out[c], i))},
                                    {"grid", web::array(grid)},
                                    {"status", web::str(live::status_text(m, view))}}));
}
