// Section 4, "순서를 어떻게 알려줄 것인가": self-attention cannot see word order.
//
// Nothing in softmax(Q K^T / sqrt(d_k)) V refers to positions, so shuffling the input tokens just
// shuffles the output rows: attn(X)[perm] == attn(X[perm]) up to float rounding. Adding a
// position-dependent vector to each token (the sinusoidal encoding of the paper) breaks that
// symmetry. The numbers come from np.random.default_rng(7), exactly as in the article.
//
// Read positional_encoding.h first (the article's listing), then this file: the experiment in
// main(), with section 1's attention (chapters/1-self-attention/attention.h), and figure 2 at
// the end: the sine dimensions of a 64 x 128 encoding, and the dot products of position 32's
// encoding with its neighbours 32 +- 31.
#include <cmath>
#include <cstdio>
#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "chapters/1-self-attention/attention.h"
#include "chapters/4-positional-encoding/positional_encoding.h"
#include "common/plot/plot.h"
#include "common/program/cli.h"
#include "common/program/format.h"
#include "common/random.h"

namespace {

// torch.tensor(g.standard_normal((rows, cols)) / scale, dtype=torch.float32): the division is in
// float64, then each value rounds to float32.
Tensor normal_matrix(numpy::Generator& g, int64_t rows, int64_t cols, double scale) {
    std::vector<double> z = g.standard_normal(size_t(rows * cols));  // C order: row by row
    std::vector<float> v(z.size());
    for (size_t i = 0; i < z.size(); i++) v[i] = float(scale == 1.0 ? z[i] : z[i] / scale);
    return Tensor::from(v, {rows, cols});
}

// Figure 2, as the article's figure script draws it (at the end of this file).
void draw_figure(const std::string& path);

struct Options {  // the command line, parsed and checked below main
    long seed = 7;
    int n = 6, d = 16;
    std::vector<int> perm = {3, 0, 5, 1, 4, 2};
    std::string figure_dir = "figures";
    bool no_figures = false;
    Options(int argc, char** argv);
};

}  // namespace

int main(int argc, char** argv) {
    const Options opt(argc, argv);
    // X (n, d) and the three projections (d, d), scaled by 1/sqrt(d) so the scores stay O(1).
    const int n = opt.n, d = opt.d;
    numpy::Generator g{uint64_t(opt.seed)};
    Tensor X = normal_matrix(g, n, d, 1.0);                   // (n, d)
    Tensor W_Q = normal_matrix(g, d, d, std::sqrt(double(d)));  // (d, d)
    Tensor W_K = normal_matrix(g, d, d, std::sqrt(double(d)));  // (d, d)
    Tensor W_V = normal_matrix(g, d, d, std::sqrt(double(d)));  // (d, d)

    // Self-attention alone: no positions anywhere.
    auto attn_only = [&](const Tensor& x) {
        return scaled_dot_product_attention(matmul(x, W_Q), matmul(x, W_K), matmul(x, W_V)).first;
    };
    const std::vector<int64_t> p(opt.perm.begin(), opt.perm.end());

    // Shuffle after vs before: the same rows, so the difference is rounding noise.
    float diff = max(abs(index_select(attn_only(X), p) - attn_only(index_select(X, p)))).item();
    std::printf("계산 후 섞기 vs 섞은 후 계산, 최대 차이: %s\n", py_repr(diff).c_str());

    // With the encoding added, a token's vector depends on where it stands.
    Tensor PE = positional_encoding(n, d);  // (n, d)
    float diff_pe =
        max(abs(index_select(attn_only(X + PE), p) - attn_only(index_select(X, p) + PE))).item();
    std::printf("위치 인코딩을 더한 뒤 같은 실험, 최대 차이: %s\n", py_repr(diff_pe).c_str());

    if (!opt.no_figures) {
        try {
            draw_figure(opt.figure_dir + "/4-positional-encoding.png");
        } catch (const std::exception& e) {
            std::fprintf(stderr, "4-positional-encoding: error: %s\n", cli::error_text(e));
            return 1;
        }
    }
    return 0;
}

namespace {

Options::Options(int argc, char** argv) {
    cli::Parser cli("4-positional-encoding",
                    "Section 4: attention ignores order until positions are added (figure 2)");
    cli.option("--seed", seed, "np.random.default_rng seed for X, W_Q, W_K, W_V");
    cli.option("--n", n, "number of tokens");
    cli.option("--d", d, "model width d (even)");
    cli.option("--perm", perm, "the shuffle: a permutation of 0..n-1, comma-separated");
    cli.figures(figure_dir, no_figures, "4-positional-encoding.png (figure 2)");
    cli.parse(argc, argv);
    if (seed < 0) cli.fail("--seed must be a non-negative integer (numpy rejects negative seeds)");
    if (n < 1 || n > 4096) cli.fail("--n must be between 1 and 4096");
    if (d < 2 || d > 4096 || d % 2 != 0) cli.fail("--d must be an even number between 2 and 4096");
    {
        std::vector<int> sorted = perm;
        std::sort(sorted.begin(), sorted.end());
        std::vector<int> identity(n);
        std::iota(identity.begin(), identity.end(), 0);
        if (sorted != identity)
            cli.fail("--perm must be a permutation of 0.." + std::to_string(n - 1) +
                     " (with --n, give a --perm of that length too)");
    }
    cli.check_figure_dir({"4-positional-encoding.png"});  // up front, as every chapter that draws
}

// ---- the figure ------------------------------------------------------------------------------

// Figure 2, as the article's figure script draws it.
void draw_figure(const std::string& path) {
    const int n = 64, d = 128;
    Tensor PE = positional_encoding(n, d);  // (64, 128)
    const float* pe = PE.data();

    // Left: PE[:, 0::2], the sine dimensions (64 positions x 64 dims).
    std::vector<double> sines(size_t(n) * (d / 2));
    for (int pos = 0; pos < n; pos++)
        for (int i = 0; i < d / 2; i++) sines[size_t(pos) * (d / 2) + i] = pe[pos * d + 2 * i];

    // Right: PE[32] @ PE[32 + o] for o = -31..31 (float32 dot products, as numpy computes them).
    std::vector<double> offs, dots;
    for (int o = -31; o <= 31; o++) {
        float dot = 0;
        for (int c = 0; c < d; c++) dot += pe[32 * d + c] * pe[(32 + o) * d + c];
        offs.push_back(o);
        dots.push_back(dot);
    }

    plot::Figure fig(11, 4, 150);
    plot::Axes& left = fig.subplot(1, 2, 0);
    plot::Image& im = left.imshow(sines, n, d / 2, {.cmap = "RdBu_r", .vmin = -1, .vmax = 1});
    left.set_xlabel("사인 차원 인덱스 i");
    left.set_ylabel("위치");
    left.set_title("위치 인코딩 행렬 (사인 차원만)");
    fig.colorbar(im, left);

    plot::Axes& right = fig.subplot(1, 2, 1);
    right.plot(offs, dots);
    right.set_xlabel("기준 위치(32)로부터의 거리");
    right.set_ylabel("내적");
    right.set_title("위치 인코딩 사이의 유사도");
    right.grid(0.3);
    fig.tight_layout();
    fig.save_png(path);
}

}  // namespace
