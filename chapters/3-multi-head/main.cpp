// Section 3, "멀티헤드: 같은 예산을 여러 관점으로 쪼개기".
//
// Instead of one attention over d_model dims, h heads each attend over d_model / h dims. The
// printed shapes follow the tensor through the module.
// Beyond the article: the parameter count for h = 1 ... 16 under the paper's dimension split
// (always 4 d_model^2) and under independent full-size W_Q/W_K/W_V per head.
//
// Read multi_head_attention.h first (the article's listing; it calls section 1's attention in
// chapters/1-self-attention/attention.h), then this file.
#include <array>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "chapters/3-multi-head/multi_head_attention.h"
#include "common/nn.h"
#include "common/program/cli.h"
#include "common/program/format.h"
#include "common/random.h"

// The alternative the split avoids: every head gets its own full-size (d_model -> d_model)
// W_Q, W_K, W_V, and W_O maps the h * d_model concatenation back to d_model.
struct IndependentHeads : Module {
    std::vector<std::unique_ptr<Linear>> qkv;  // one (3 d_model, d_model) per head
    Linear proj;                               // (d_model, h * d_model)
    IndependentHeads(int d_model, int h) : proj(h * d_model, d_model, false) {
        for (int i = 0; i < h; i++)
            qkv.push_back(std::make_unique<Linear>(d_model, 3 * d_model, false));
    }
    void collect_parameters(const std::string& prefix, NamedTensors& out) const override {
        for (size_t i = 0; i < qkv.size(); i++)
            qkv[i]->collect_parameters(prefix + "qkv." + std::to_string(i), out);
        proj.collect_parameters(prefix + "proj", out);
    }
};

// The table's numbers of heads.
constexpr std::array<int, 5> TABLE_HEADS = {1, 2, 4, 8, 16};

struct Options {  // the command line, parsed and checked below main
    int d_model = 512, heads = 8, batch = 2, n = 10;
    bool no_table = false;
    Options(int argc, char** argv);
};

int main(int argc, char** argv) {
    const Options opt(argc, argv);
    // mha = MultiHeadAttention(d_model=512, n_heads=8); x = torch.randn(2, 10, 512)
    MultiHeadAttention mha(opt.d_model, opt.heads);
    mha.print_shapes = true;  // the listing's forward prints its intermediate shapes
    Tensor x = Tensor::from(torch_rng::randn(size_t(opt.batch) * opt.n * opt.d_model),
                            {opt.batch, opt.n, opt.d_model});  // (B, N, d_model)
    std::printf("입력       : %s\n", shape_str(x.shape()).c_str());
    Tensor y = mha(x);  // (B, N, d_model)
    std::printf("최종 출력  : %s\n", shape_str(y.shape()).c_str());
    std::printf("파라미터 수: %lld\n", (long long)mha.num_parameters());
    if (opt.no_table) return 0;

    // The same budget split h ways, against a full-size projection per head.
    std::printf("\n헤드 수에 따른 파라미터 수 (d_model = %d)\n", opt.d_model);
    std::printf(
        "   h |        차원 분할 (논문) |      헤드별 독립 W_Q/W_K/W_V\n");  // Hangul: 2 columns
    for (int h : TABLE_HEADS) {
        if (opt.d_model % h != 0) continue;
        int64_t split = MultiHeadAttention(opt.d_model, h).num_parameters();
        int64_t independent = IndependentHeads(opt.d_model, h).num_parameters();
        std::printf("%4d | %16s (%2lldd²) | %20s (%3lldd²)\n", h, with_commas(split).c_str(),
                    (long long)(split / (int64_t(opt.d_model) * opt.d_model)),
                    with_commas(independent).c_str(),
                    (long long)(independent / (int64_t(opt.d_model) * opt.d_model)));
    }
    std::printf("차원 분할에서는 h와 무관하게 4·d_model² = %s개입니다.\n",
                with_commas(4LL * opt.d_model * opt.d_model).c_str());
    return 0;
}

Options::Options(int argc, char** argv) {
    cli::Parser cli("3-multi-head", "Section 3: multi-head attention, shapes and parameter count");
    cli.option("--d-model", d_model, "model width d_model");
    cli.option("--heads", heads, "number of heads h (must divide d_model)");
    cli.option("--batch", batch, "batch size B");
    cli.option("--n", n, "tokens per sequence N");
    cli.flag("--no-table", no_table, "print only the article's block");
    cli.parse(argc, argv);
    if (d_model < 1 || heads < 1 || d_model % heads != 0)
        cli.fail("--d-model " + std::to_string(d_model) +
                 " must be a positive multiple of --heads " + std::to_string(heads));
    if (batch < 1 || n < 1) cli.fail("--batch and --n must be at least 1");
    // Held at once, in floats: the input and the layer's activations (about 11 (B, n, d)
    // tensors), Q K^T, the scores and the weights (3 (B, h, n, n): the division by sqrt(d_k)
    // keeps Q K^T for its backward), the layer's 4 d^2 weights, and the largest module of the
    // table, built while the layer still lives: TABLE_HEADS.back() heads with full-size
    // W_Q/W_K/W_V, 3 h d^2 + W_O's h d^2 = 4 h d^2 (64 d^2 for 16 heads, the table's last line).
    const double B = batch, N = n, d = d_model;
    const double table_weights = no_table ? 0 : 4.0 * TABLE_HEADS.back();
    cli.require_memory(4 * (11 * B * N * d + 3 * B * heads * N * N + (4 + table_weights) * d * d),
                       "--batch " + std::to_string(batch) + " --n " + std::to_string(n) +
                           " --d-model " + std::to_string(d_model) + " --heads " +
                           std::to_string(heads));
}
