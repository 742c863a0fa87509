// Section 1, "순환을 버리면 무엇이 남는가": self-attention on four tokens.
//
// Every token of X becomes a query that looks at every token of the same sentence:
//   Q = X W_Q,  K = X W_K,  V = X W_V,  Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V
// The weights are the article's hand-picked integers (in practice they are learned).
//
//   build/bin/1-self-attention                 the article's output
//   build/bin/1-self-attention --mask causal   the widget's causal toggle: token i sees j <= i
//   build/bin/1-self-attention --explain 1     every step for the query of token 1
//
// Read attention.h first (the article's listing: scaled_dot_product_attention and the causal
// mask), then this file: the article's four tokens, the printed block, --explain, and the
// figure at the end.
#include <cmath>
#include <cstdio>
#include <string>

#include "chapters/1-self-attention/attention.h"
#include "common/cli.h"
#include "common/format.h"
#include "common/plot/plot.h"

namespace {

// The article's widget as a picture (drawn at the end of this file).
void draw_figure(const Tensor& plain, const Tensor& causal, const std::string& path);

}  // namespace

int main(int argc, char** argv) {
    cli::Parser cli("1-self-attention", "Section 1: self-attention on the article's 4 tokens");
    std::string mask_name = "none";
    int explain = 0;
    cli.choice("--mask", mask_name, {"none", "causal"}, "causal: row i sees only keys j <= i");
    cli.option("--explain", explain, "print each step for query token I (1..4); 0 = off", "I");
    std::string figure_dir = "figures";
    bool no_figures = false;
    cli.figures(figure_dir, no_figures, "1-self-attention.png");
    cli.parse(argc, argv);

    // Four tokens, d_model = d_k = 4. One row of X per token.
    Tensor X = Tensor::from({{0, 0, 1, 0}, {1, 1, 1, 0}, {1, 1, 0, 1}, {0, 0, 0, 1}});
    Tensor W_Q = Tensor::from({{0, -1, -1, -1}, {-1, 1, 1, -1}, {0, -1, 1, 1}, {0, -1, -1, 0}});
    Tensor W_K = Tensor::from({{0, -1, 0, 1}, {1, -1, 0, 1}, {1, 1, -1, -1}, {0, 1, 1, 0}});
    Tensor W_V = Tensor::from({{1, 0, 2, 0}, {0, 2, 0, 1}, {2, 1, 0, 0}, {0, 0, 1, 2}});
    const int n = int(X.size(0));
    if (explain < 0 || explain > n)
        cli.fail("--explain " + std::to_string(explain) + " is not a token: use 1.." +
                 std::to_string(n) + " (or 0 for off)");

    // Query, key and value: three roles for the same tokens.
    Tensor Q = matmul(X, W_Q), K = matmul(X, W_K), V = matmul(X, W_V);  // (n, d_k) twice, (n, d_v)

    // The causal mask hides the upper triangle: -inf before softmax, exactly 0 after.
    Tensor mask = mask_name == "causal" ? causal_mask(n) : Tensor();
    auto [out, attn] = scaled_dot_product_attention(Q, K, V, mask);  // (n, d_v), (n, n)

    // print("어텐션 가중치:\n", attn): Python's print puts a space between its arguments.
    std::printf("어텐션 가중치:\n %s\n", torch_str(attn).c_str());
    std::printf("출력:\n %s\n", torch_str(out).c_str());

    int status = 0;  // a figure that cannot be written still lets --explain print
    if (!no_figures) {
        try {
            Tensor plain = mask.defined() ? scaled_dot_product_attention(Q, K, V).second : attn;
            Tensor causal = scaled_dot_product_attention(Q, K, V, causal_mask(n)).second;
            draw_figure(plain, causal, figure_dir + "/1-self-attention.png");
        } catch (const std::exception& e) {
            std::fprintf(stderr, "1-self-attention: error: %s\n", e.what());
            status = 1;
        }
    }

    if (explain == 0) return status;
    // One row of the computation by hand: the same numbers, one step at a time.
    const int i = explain - 1;
    const int d_k = int(Q.size(1));
    auto row = [](const Tensor& t, int r) {  // Q, K and V hold integers here; `out` does not
        std::string s = "[";
        for (int j = 0; j < t.size(1); j++) s += (j ? ", " : "") + py_repr(t.at({r, j}));
        return s + "]";
    };
    std::printf("\n%d번 토큰의 쿼리 q_%d = %s\n", explain, explain, row(Q, i).c_str());
    std::printf("1) 키와의 내적 q·k_j:\n");
    std::vector<double> s(n);
    for (int j = 0; j < n; j++) {
        double dot = 0;
        for (int c = 0; c < d_k; c++) dot += double(Q.at({i, c})) * K.at({j, c});
        s[j] = dot / std::sqrt(double(d_k));
        std::printf("   k_%d = %s  ->  q·k_%d = %s\n", j + 1, row(K, j).c_str(), j + 1,
                    fixed(dot, 4).c_str());
    }
    std::printf("2) √d_k(= %s)로 나눔:", fixed(std::sqrt(double(d_k)), 4).c_str());
    for (int j = 0; j < n; j++) {
        bool hidden = mask.defined() && mask.at({i, j}) != 0;
        std::printf(" %s", hidden ? "-inf" : fixed(s[j], 4).c_str());
    }
    std::printf("%s\n", mask.defined() ? "  (causal 마스크: j > i는 -inf)" : "");
    std::printf("3) softmax 가중치:");
    for (int j = 0; j < n; j++) std::printf(" %s", fixed(attn.at({i, j}), 4).c_str());
    std::printf("  (합 = 1)\n4) V의 행을 가중합:\n   ");
    for (int j = 0; j < n; j++)
        std::printf("%s%s × V_%d", j ? " + " : "", fixed(attn.at({i, j}), 4).c_str(), j + 1);
    std::string o = "[";
    for (int c = 0; c < out.size(1); c++) o += (c ? ", " : "") + fixed(out.at({i, c}), 4);
    std::printf("\n   = %s]\n", o.c_str());
    return status;
}

// ---- the figure ------------------------------------------------------------------------------

namespace {

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
