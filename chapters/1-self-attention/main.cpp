// Section 1, "순환을 버리면 무엇이 남는가": self-attention on four tokens.
//
// Every token of X becomes a query that looks at every token of the same sentence:
//   Q = X W_Q,  K = X W_K,  V = X W_V,  Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V
// The weights are the article's hand-picked integers (in practice they are learned).
//
//   build/bin/1-self-attention                 the article's output
//   build/bin/1-self-attention --mask causal   the widget's causal toggle: token i sees j <= i
//   build/bin/1-self-attention --explain 1     every step for the query of token 1
//   build/bin/1-self-attention --live          the article's widget, live in the terminal
//
// The folder, in reading order:
//   attention.h   the article's listing: scaled_dot_product_attention and the causal mask
//   tokens.h      the four tokens and the weights W_Q, W_K, W_V
//   main.cpp      this file: the four tokens, the printed block, --explain, and the figure at
//                 the end
//   live.h, .cpp  --live: the widget (its numbers, the screen, the key map, the line mode)
//   web/          the widget as a web page: live.h's numbers compiled to WebAssembly
#include <cmath>
#include <cstdio>
#include <string>

#include "chapters/1-self-attention/attention.h"
#include "chapters/1-self-attention/live.h"
#include "chapters/1-self-attention/tokens.h"
#include "common/plot/plot.h"
#include "common/program/cli.h"
#include "common/program/format.h"

namespace {

const char* ABOUT =
    "Section 1: self-attention on the article's 4 tokens\n"
    "\n"
    "--live is the article's widget in the terminal (also `make widget`). Choose the query\n"
    "token with a click, Left/Right (or Up/Down, the wheel) or 1-4: its row shows q_i, the dot\n"
    "products q·k_j, the division by √d_k, the softmax weights and the sum of V's rows. m (or\n"
    "a click on the toggle) switches the causal mask: -inf above the diagonal, weight exactly 0\n"
    "(shown as 0). q, Esc or Ctrl-D quits. --mask and --explain I choose where it starts.\n"
    "With TERM=dumb, stdin or stdout not a terminal, or --plain: one key per line (1-4 or 3번,\n"
    "left, right, m, q; the end of the input quits) and each screen printed as plain text,\n"
    "80 columns wide for a pipe. An unknown line stops it with exit code 2, naming the line.\n"
    "  example: printf '3\\nm\\nq\\n' | 1-self-attention --live";

// The article's widget as a picture (drawn at the end of this file).
void draw_figure(const Tensor& plain, const Tensor& causal, const std::string& path);

struct Options {  // the command line, parsed and checked below main
    std::string mask_name = "none";
    int explain = 0;
    std::string figure_dir = "figures";
    bool no_figures = false, live = false, plain = false;
    Options(int argc, char** argv);
};

}  // namespace

int main(int argc, char** argv) {
    const Options opt(argc, argv);
    // Four tokens, d_model = d_k = 4 (tokens.h). One row of X per token: X (n, d_model), W_Q,
    // W_K, W_V (d_model, d_k).
    const auto [X, W_Q, W_K, W_V] = article_tokens();
    const int n = int(X.size(0));

    // Query, key and value: three roles for the same tokens.
    Tensor Q = matmul(X, W_Q), K = matmul(X, W_K), V = matmul(X, W_V);  // (n, d_k) twice, (n, d_v)

    // The widget runs on these tensors, with and without the mask (live.h), instead of printing.
    if (opt.live) {
        try {
            return live::run(live::Model(Q, K, V),
                             {.query = opt.explain > 0 ? opt.explain - 1 : 0,
                              .causal = opt.mask_name == "causal"},
                             opt.plain);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "1-self-attention: error: %s\n", cli::error_text(e));
            return 1;
        }
    }

    // The causal mask hides the upper triangle: -inf before softmax, exactly 0 after.
    Tensor mask = opt.mask_name == "causal" ? causal_mask(n) : Tensor();
    auto [out, attn] = scaled_dot_product_attention(Q, K, V, mask);  // (n, d_v), (n, n)

    // print("어텐션 가중치:\n", attn): Python's print puts a space between its arguments.
    std::printf("어텐션 가중치:\n %s\n", torch_str(attn).c_str());
    std::printf("출력:\n %s\n", torch_str(out).c_str());

    int status = 0;  // a figure that cannot be written still lets --explain print
    if (!opt.no_figures) {
        try {
            // the weights (n, n), without and with the causal mask
            Tensor plain = mask.defined() ? scaled_dot_product_attention(Q, K, V).second : attn;
            Tensor causal = scaled_dot_product_attention(Q, K, V, causal_mask(n)).second;
            draw_figure(plain, causal, opt.figure_dir + "/1-self-attention.png");
        } catch (const std::exception& e) {
            std::fprintf(stderr, "1-self-attention: error: %s\n", cli::error_text(e));
            status = 1;
        }
    }

    if (opt.explain == 0) return status;
    // One row of the computation by hand, one step at a time: the dot products and scores as
    // the widget takes them from the listing's expressions (live.h), then the printed block's
    // weights and output.
    const live::Model steps(Q, K, V);
    const int i = opt.explain - 1, c = mask.defined() ? 1 : 0;
    const int d_k = int(Q.size(1));
    auto row = live::row_text;  // Q, K and V hold integers: "[-1., -1., -1., -2.]", as --live
    std::printf("\n%d번 토큰의 쿼리 q_%d = %s\n", opt.explain, opt.explain, row(Q, i).c_str());
    std::printf("1) 키와의 내적 q·k_j:\n");
    for (int j = 0; j < n; j++)
        std::printf("   k_%d = %s  ->  q·k_%d = %s\n", j + 1, row(K, j).c_str(), j + 1,
                    fixed(steps.QKt.at({i, j}), 4).c_str());
    std::printf("2) √d_k(= %s)로 나눔:", fixed(std::sqrt(double(d_k)), 4).c_str());
    for (int j = 0; j < n; j++) {
        float score = steps.scores[c].at({i, j});
        std::printf(" %s", std::isinf(score) ? "-inf" : fixed(score, 4).c_str());
    }
    std::printf("%s\n", c ? "  (causal 마스크: j > i는 -inf)" : "");
    std::printf("3) softmax 가중치:");
    for (int j = 0; j < n; j++)
        std::printf(" %s", fixed(attn.at({i, j}), 4).c_str());
    double weight_sum = 0;  // the row's weights added up, as the reader would check them
    for (int j = 0; j < n; j++) weight_sum += attn.at({i, j});
    std::printf("  (합 = %s)\n4) V의 행을 가중합:\n", fixed(weight_sum, 4).c_str());
    for (int j = 0; j < n; j++)
        std::printf("   V_%d = %s\n", j + 1, row(V, j).c_str());
    std::printf("   ");
    for (int j = 0; j < n; j++)
        std::printf("%s%s × V_%d", j ? " + " : "", fixed(attn.at({i, j}), 4).c_str(), j + 1);
    std::string o = "[";
    for (int d = 0; d < out.size(1); d++)
        o += (d ? ", " : "") + fixed(out.at({i, d}), 4);
    std::printf("\n   = %s]\n", o.c_str());
    return status;
}

namespace {

Options::Options(int argc, char** argv) {
    cli::Parser cli("1-self-attention", ABOUT);
    cli.choice("--mask", mask_name, {"none", "causal"}, "causal: row i sees only keys j <= i");
    cli.option("--explain", explain, "print each step for query token I (1..4); 0 = off", "I");
    cli.figures(figure_dir, no_figures, "1-self-attention.png");
    cli.flag("--live", live, "the article's widget in the terminal (see above); q quits");
    cli.flag("--plain", plain, "with --live: one key per line, plain screens, even in a terminal");
    cli.parse(argc, argv);
    if (plain && !live) cli.fail("--plain only changes --live: add --live, or drop --plain");
    if (explain < 0 || explain > 4)  // the article's four tokens, the rows of main's X
        cli.fail("--explain " + std::to_string(explain) +
                 " is not a token: use 1..4 (or 0 for off)");
    if (!live) cli.check_figure_dir({"1-self-attention.png"});  // --live draws none
}

// ---- the figure ------------------------------------------------------------------------------

// The article's widget as a picture: the weights without and with the causal mask.
void draw_figure(const Tensor& plain, const Tensor& causal, const std::string& path) {
    plot::Figure fig(11, 4.5, 150);
    const Tensor* weights[] = {&plain, &causal};
    const char* titles[] = {"어텐션 가중치 (마스크 없음)", "어텐션 가중치 (causal 마스크)"};
    const int n = int(plain.size(0));
    std::vector<double> ticks;
    std::vector<std::string> labels;
    for (int j = 0; j < n; j++) {
        ticks.push_back(j);
        labels.push_back(std::to_string(j + 1) + "번");
    }
    for (int k = 0; k < 2; k++) {
        plot::Axes& ax = fig.subplot(1, 2, k);
        plot::Image& im =
            ax.imshow(weights[k]->to_vector(), n, n, {.cmap = "Blues", .vmin = 0, .vmax = 1});
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) {
                float w = weights[k]->at({i, j});
                ax.text(j, i, fixed(w, 4), {.ha = plot::center, .va = plot::center,
                                            .color = w > 0.5f ? plot::white : plot::black});
            }
        ax.set_xticks(ticks, labels);
        ax.set_yticks(ticks, labels);
        ax.set_xlabel("키 토큰 j");
        ax.set_ylabel("쿼리 토큰 i");
        ax.set_title(titles[k]);
        fig.colorbar(im, ax);
    }
    fig.tight_layout();
    fig.save_png(path);
}

}  // namespace
