// Section 5, "부품을 블록으로 조립하기": blocks, Post-LN vs Pre-LN, and the decoder.
//
// Where a block's LayerNorm sits (blocks.h: Post-LN, the paper's, or Pre-LN) changes how the
// gradient reaches the lower blocks. The article measures, right after initialisation, the qkv
// weight-gradient norm of the last block over the first for L = 6, 12, 24. Weights and data
// come from the torch-exact generator (torch.manual_seed(0) for the model, manual_seed(1) for
// the data), so the digits are torch's.
//
// After the table (the output starts with the article's own lines), first the feed-forward net
// as the prose before the listing describes it: about two thirds of a block's parameters, and
// ten 512-wide positions passing through it independently. Then the decoder's three claims are
// computed, not asserted:
//   (a) the causal mask: changing a later target token leaves earlier outputs exactly unchanged;
//   (b) teacher forcing: one forward pass predicts every target position;
//   (c) generation: one token per step, while the encoder runs once per sentence.
//
// Read blocks.h first (the article's listing: FeedForward, Block with Post-LN and Pre-LN side
// by side, Stack; MultiHeadAttention is section 3's, included from chapters/3-multi-head), then
// this file's measurement and feed_forward_claims(), then decoder.h and decoder.cpp
// (the decoder the prose describes) with decoder_demo() here, and the figure (5-blocks.png)
// drawn at the end.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "chapters/5-blocks/blocks.h"
#include "chapters/5-blocks/decoder.h"
#include "common/plot/plot.h"
#include "common/program/cli.h"
#include "common/program/format.h"
#include "common/program/terminal.h"
#include "common/random.h"

namespace {

constexpr LnPlacement PLACEMENTS[] = {LnPlacement::PostLN, LnPlacement::PreLN};

// One backward pass at initialisation; returns the qkv weight-gradient norm of every block.
std::vector<double> qkv_grad_norms(int L, LnPlacement placement, int d, int h, int vocab,
                                   int init_seed, int data_seed) {
    torch_rng::manual_seed(init_seed);
    Stack net(L, d, h, placement, vocab);
    torch_rng::manual_seed(data_seed);
    const int B = 8, N = 32;
    Tensor x = Tensor::from(torch_rng::randn(size_t(B) * N * d), {B, N, d});  // randn(8, 32, d)
    std::vector<int64_t> y = torch_rng::randint(0, vocab, size_t(B) * N);  // randint(0, V, (8, 32))
    cross_entropy(reshape(net(x), {-1, vocab}), y).backward();
    std::vector<double> g;  // b.attn.qkv.weight.grad.norm().item(): a float32 norm
    for (const auto& b : net.blocks) g.push_back(norm(b->attn.qkv.weight.grad()).item());
    return g;
}

// The L = 24 gradients per block, Post-LN against Pre-LN (drawn at the end of this file).
void draw_figure(const std::vector<double>& post, const std::vector<double>& pre,
                 const std::string& path);

// ---- the feed-forward net, as the prose before the listing describes it ------------------------
// "중간 차원이 4배로 넓어지므로 블록 파라미터의 약 3분의 2가 여기에 몰려 있습니다": counted on a
// Block of the paper's size. "512차원 벡터 열 개가 들어오면 열 개가 각각 독립적으로 통과하며 서로
// 아무 영향을 주지 않습니다": ten positions of 512 dims, one position's input changed, every other
// position's output compared.
void feed_forward_claims() {
    const int d = 512, h = 8;  // the paper's d_model and heads
    Block block(d, h, LnPlacement::PostLN);
    const int64_t attn = block.attn.num_parameters(), ff = block.ff.num_parameters();
    const int64_t ln = block.ln1.num_parameters() + block.ln2.num_parameters();
    const int64_t total = block.num_parameters();
    auto row = [&](const std::string& what, int64_t n, bool share = true) {
        const std::string label = what + std::string(size_t(32 - term::display_width(what)), ' ');
        std::printf("  %s %9s", label.c_str(), with_commas(n).c_str());
        if (share) std::printf("  %4.1f%%", 100.0 * double(n) / double(total));
        std::printf("\n");
    };
    std::printf("\n블록 하나의 파라미터 (d_model = %d, 헤드 %d개, 피드포워드 %d -> %d -> %d)\n",
                d, h, d, 4 * d, d);
    row("멀티헤드 어텐션 W_Q W_K W_V W_O", attn);
    row("피드포워드 W_1 b_1 W_2 b_2", ff);
    row("층 정규화 2개", ln);
    row("합계", total, false);
    const double share = double(ff) / double(total);
    std::printf("판정: %s — 피드포워드가 %.1f%%, 3분의 2는 66.7%% (어텐션 4·d², 피드포워드 "
                "8·d² + 5·d)\n",
                std::fabs(share - 2.0 / 3.0) < 0.02 ? "재현됨" : "재현되지 않음", 100 * share);

    // Position-wise: positions 0..9 of one sentence, the input at position 3 changed. Positions
    // are counted from 0, as section 4 counts them ("32번 위치" is PE[32]); tokens of a sentence
    // are counted from 1, as section 1 counts them ("1번 토큰"), and the output says which.
    torch_rng::manual_seed(3);
    FeedForward ffn(d);
    NoGradGuard no_grad;
    const int N = 10, j = 3;  // "512차원 벡터 열 개"
    Tensor x = Tensor::from(torch_rng::randn(size_t(N) * d), {1, N, d});  // (1, N, d)
    // (1, N, d): x with position j's input moved by 1 in every dimension
    Tensor x2 = Tensor::from(x.to_vector(), x.shape());
    for (int c = 0; c < d; c++)
        x2.data()[j * d + c] += 1.0f;
    Tensor y = ffn(x), y2 = ffn(x2);  // (1, N, d)
    double others = 0, same = 0;
    for (int i = 0; i < N; i++)
        for (int c = 0; c < d; c++) {
            const double diff = std::fabs(double(y.data()[i * d + c]) - y2.data()[i * d + c]);
            (i == j ? same : others) = std::max(i == j ? same : others, diff);
        }
    std::printf(
        "위치별 피드포워드 (d_model = %d): 위치 %d개(0~%d번) 중 %d번 위치의 입력만 "
        "바꾸면\n",
        d, N, N - 1, j);
    std::printf("    다른 위치 출력의 최대 차이: %s\n", py_repr(others).c_str());
    std::printf("    %d번 위치 출력의 최대 차이: %s\n", j, fixed(same, 4).c_str());
    std::printf("판정: %s — 다른 위치의 출력은 %s\n",
                others == 0 && same > 0 ? "재현됨" : "재현되지 않음",
                others == 0 ? "비트 하나 다르지 않음" : "달라짐");
}

// ---- the decoder, claim by claim ---------------------------------------------------------------
double max_abs_diff(const Tensor& a, const Tensor& b, int64_t from_t, int64_t to_t) {
    // Over target positions [from_t, to_t) of two (1, T, V) logit tensors.
    const int64_t V = a.size(-1);
    double m = 0;
    for (int64_t i = from_t * V; i < to_t * V; i++)
        m = std::max(m, double(std::fabs(a.data()[i] - b.data()[i])));
    return m;
}

void decoder_demo() {
    std::printf("\n디코더 블록 (d_model = 64, 헤드 4개, 2층, 초기화 직후)\n");
    torch_rng::manual_seed(0);
    const int V = 20, T = 8;
    const int64_t START = 1, END = 2;
    EncoderDecoder model(V, V, 64, 4, 2, LnPlacement::PostLN);
    NoGradGuard no_grad;
    std::vector<int64_t> src = {5, 9, 13, 4, 7, 11};
    std::vector<int64_t> tgt = {START, 8, 3, 15, 6, 12, 10, 17};
    Tensor memory = model.encode(src, {1, int64_t(src.size())});  // (1, S, d_model)

    // (a) Change the target token at position 5 (of 0..7, counted as above): positions 0..4
    // cannot see it.
    Tensor logits = model.decode(tgt, {1, T}, memory);  // (1, T, V)
    std::vector<int64_t> changed = tgt;
    changed[5] = 19;
    Tensor logits2 = model.decode(changed, {1, T}, memory);  // (1, T, V)
    std::printf("(a) causal 마스크: 위치 %d개(0~%d번) 중 5번 위치의 토큰을 바꾸면\n", T, T - 1);
    std::printf("    0~4번 위치 출력의 최대 차이: %s\n",
                py_repr(max_abs_diff(logits, logits2, 0, 5)).c_str());
    std::printf("    5~7번 위치 출력의 최대 차이: %s\n",
                fixed(max_abs_diff(logits, logits2, 5, T), 4).c_str());

    // (b) Teacher forcing: the whole target goes in at once, every position is predicted.
    std::printf("(b) Teacher Forcing: 정답 %d개 토큰을 한 번에 넣은 순전파 1회 -> 로짓 %s,\n", T,
                shape_str(logits.shape()).c_str());
    std::printf("    위치마다 다음 토큰 예측 %d개가 동시에 나옵니다\n", T);

    // (c) Greedy generation: the encoder once, the decoder once per new token, until the end
    // token or the length limit. Untrained, this model does not pick the end token within the
    // limit, so it is the limit that stops it; the line says which of the two did.
    model.encoder_calls = model.decoder_calls = 0;
    const int max_len = 10;
    std::vector<int64_t> out = model.greedy_decode(src, START, END, max_len);
    std::string toks;
    for (int64_t t : out) toks += (toks.empty() ? "" : " ") + std::to_string(t);
    const bool ended = !out.empty() && out.back() == END;
    std::printf("(c) 생성: 시작 토큰에서 출발해 %zu개 토큰 [%s]\n", out.size(), toks.c_str());
    if (ended)
        std::printf("    끝 토큰(%lld)을 내어 멈췄습니다\n", (long long)END);
    else
        std::printf("    끝 토큰(%lld)이 나오지 않아 길이 한도 %d개에서 멈췄습니다 (학습 전)\n",
                    (long long)END, max_len);
    std::printf("    인코더 호출 %d회, 디코더 호출 %d회 (토큰마다 1회)\n", model.encoder_calls,
                model.decoder_calls);
}

struct Options {  // the command line, parsed and checked below main
    std::vector<int> depths = {6, 12, 24};
    int init_seed = 0, data_seed = 1, d_model = 64, heads = 4, vocab = 50, digits = 1;
    std::string figure_dir = "figures";
    bool no_figures = false, table_only = false;
    Options(int argc, char** argv);
};
// g.back() / g.front(), or the run ends (exit code 1) where that is no finite ratio.
double last_over_first(const std::vector<double>& g, int L, const char* name);

}  // namespace

int main(int argc, char** argv) {
    const Options opt(argc, argv);
    std::vector<double> fig_post, fig_pre;
    int status = 0;  // a figure that cannot be written still lets the decoder's section print
    for (int L : opt.depths) {
        std::string line = "L=" + std::string(L < 10 ? " " : "") + std::to_string(L);
        for (LnPlacement p : PLACEMENTS) {
            std::vector<double> g = qkv_grad_norms(L, p, opt.d_model, opt.heads, opt.vocab,
                                                   opt.init_seed, opt.data_seed);
            const char* name = p == LnPlacement::PreLN ? "Pre-LN " : "Post-LN";
            const std::string ratio = fixed(last_over_first(g, L, name), opt.digits);
            line += std::string(" | ") + name + " 마지막/첫 블록 = " + ratio + "배";
            if (L == 24) (p == LnPlacement::PreLN ? fig_pre : fig_post) = g;
        }
        std::printf("%s\n", line.c_str());
        cli::flush_stdout_or_exit();
    }

    if (!opt.no_figures) {
        if (fig_post.empty()) {  // the figure is about L = 24 even when the table skipped it
            fig_post = qkv_grad_norms(24, LnPlacement::PostLN, opt.d_model, opt.heads, opt.vocab,
                                      opt.init_seed, opt.data_seed);
            fig_pre = qkv_grad_norms(24, LnPlacement::PreLN, opt.d_model, opt.heads, opt.vocab,
                                     opt.init_seed, opt.data_seed);
        }
        try {
            draw_figure(fig_post, fig_pre, opt.figure_dir + "/5-blocks.png");
        } catch (const std::exception& e) {  // said, and the decoder's section still prints
            std::fprintf(stderr, "5-blocks: error: %s\n", cli::error_text(e));
            status = 1;
        }
    }
    if (!opt.table_only) {
        feed_forward_claims();  // the prose before the listing, after the article's own lines
        decoder_demo();
    }
    return status;
}

namespace {

Options::Options(int argc, char** argv) {
    cli::Parser cli("5-blocks",
                    "Section 5: Post-LN vs Pre-LN gradients at initialisation; the decoder");
    cli.option("--depths", depths, "numbers of blocks L");
    cli.option("--init-seed", init_seed, "torch.manual_seed before building the model");
    cli.option("--data-seed", data_seed, "torch.manual_seed before drawing x and y");
    cli.option("--d-model", d_model, "model width d");
    cli.option("--heads", heads, "attention heads h (must divide d)");
    cli.option("--vocab", vocab, "vocabulary size of the head and the targets");
    cli.option("--digits", digits, "decimals of the printed ratios");
    cli.figures(figure_dir, no_figures, "5-blocks.png");
    cli.flag("--table-only", table_only, "print only the article's table");
    cli.flag("--no-decoder", table_only, "the same as --table-only");
    cli.parse(argc, argv);
    for (int L : depths)
        if (L < 1 || L > 256)
            cli.fail("--depths: " + std::to_string(L) + " blocks is not in 1..256");
    if (d_model < 1 || heads < 1 || d_model % heads != 0)
        cli.fail("--d-model " + std::to_string(d_model) +
                 " must be a positive multiple of --heads " + std::to_string(heads));
    if (d_model < 2)
        cli.fail(
            "--d-model 1: LayerNorm over one feature outputs 0, so every gradient is 0 and "
            "their ratio 0/0; use --d-model 2 or more");
    if (vocab < 2) cli.fail("--vocab must be at least 2");
    if (digits < 0 || digits > 17) cli.fail("--digits must be in 0..17");
    {
        // Held at once, in floats, for the deepest stack: its weights and their gradients (12 d^2
        // per block, the head d x vocab), and the activations of 8 x 32 positions (about 20 d
        // per block, 3 vocab for the logits). Beyond the machine, refused here, before int sizes
        // such as the feed-forward width 4 d could overflow. The figure builds L = 24 whatever
        // --depths says, so with figures that stack counts too.
        const double L = std::max(*std::max_element(depths.begin(), depths.end()),
                                  no_figures ? 0 : 24),
                     d = d_model, V = vocab;
        cli.require_memory(4 * (2 * (L * 12 * d * d + d * V) + 256 * (L * 20 * d + 3 * V)),
                           "--d-model " + std::to_string(d_model) + " --vocab " +
                               std::to_string(vocab) + " at L = " + std::to_string(int(L)));
    }
    cli.check_figure_dir({"5-blocks.png"});  // before the table's gradients
}

double last_over_first(const std::vector<double>& g, int L, const char* name) {
    const double ratio = g.back() / g.front();
    if (std::isfinite(ratio)) return ratio;  // a NaN or an overflow is not a ratio to print
    std::fflush(stdout);
    std::fprintf(stderr,
                 "5-blocks: error: L = %d, %s: the last and first blocks' gradient norms %g and "
                 "%g give no finite ratio; try other --d-model, --heads or seeds\n",
                 L, name, g.back(), g.front());
    std::exit(1);
}

// ---- the figure ------------------------------------------------------------------------------

void draw_figure(const std::vector<double>& post, const std::vector<double>& pre,
                 const std::string& path) {
    std::vector<double> idx;
    for (size_t i = 0; i < post.size(); i++) idx.push_back(double(i + 1));
    plot::Figure fig(7, 4, 150);
    plot::Axes& ax = fig.subplot(1, 1, 0);
    ax.plot(idx, post, "o-", "Post-LN");
    ax.plot(idx, pre, "s-", "Pre-LN");
    ax.set_xlabel("블록 번호 (1 = 입력 쪽)");
    ax.set_ylabel("qkv 가중치 기울기 노름");
    ax.set_title("L = " + std::to_string(post.size()) + ": 초기화 직후 블록별 기울기");
    ax.set_ylim(0, 1.1 * std::max(*std::max_element(post.begin(), post.end()),
                                  *std::max_element(pre.begin(), pre.end())));
    ax.grid(0.3);
    ax.legend();
    fig.tight_layout();
    fig.save_png(path);
}

}  // namespace
