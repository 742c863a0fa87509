// Chapter 7 (beyond the article): the whole encoder-decoder, trained from scratch on a tiny
// translation task, on the CPU, in about a minute.
//
// The task: Sino-Korean number words to Arabic numerals, 1 ... 99999.
//   삼천이백일 -> 3201      만오천 -> 15000      구만구천구백구십구 -> 99999
// The input is a sequence of Hangul syllables, the output a sequence of digits, and the two
// lengths differ (만오천: 3 syllables, 5 digits), so this is the N-to-M case the article says the
// encoder-decoder exists for. Zero digits are silent in the words; the model has to put them back.
//
// What the article explains in prose, in order:
//   1. The model: token embeddings * sqrt(d_model) + the sinusoidal encoding, N encoder blocks,
//      N decoder blocks (causal self-attention, then encoder-decoder attention on the encoder's
//      top output), the output head (chapters/5-blocks/decoder.h: EncoderDecoder).
//   2. Teacher forcing: the decoder reads <시작> d1 d2 ... dk and must predict d1 ... dk <끝>,
//      every position in one forward pass; cross-entropy ignores the padding.
//   3. Adam with the paper's warm-up: lrate = d_model^-0.5 * min(step^-0.5, step * warmup^-1.5).
//   4. Generation: greedy, autoregressive, from <시작> until <끝>, on 1000 numbers that never
//      appeared in training; the score is exact match (every digit right, and nothing more).
//   5. The figure: the loss curve, and the encoder-decoder attention of one example: which
//      syllables each output digit looked at (the alignment the model learned by itself).
//
// The defaults (2 + 2 blocks, d_model 64, 4 heads, Pre-LN, 2000 steps of 64 sentences, one
// thread) were tuned for accuracy per CPU second: about a minute of one core reaches 99% or more.
// Two choices beyond the paper, both explained where they are made: the embeddings start small
// enough for the positional encoding to be heard, and short numbers are drawn more often.
//
// Read korean_numbers.h (the source language), then this file top to bottom: vocabularies,
// batches, teacher forcing, main() (training, saving, evaluation), the figure at the end. The
// model is section 5's, in chapters/5-blocks/decoder.h (built on blocks.h, section 3's
// MultiHeadAttention and section 4's positional_encoding); Adam and the warm-up schedule are in
// common/optim.h.
#if __has_include(<malloc.h>)  // mallopt: glibc (macOS has no malloc.h)
#include <malloc.h>
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "chapters/5-blocks/decoder.h"
#include "chapters/7-translate/korean_numbers.h"
#include "common/cli.h"
#include "common/optim.h"
#include "common/parallel.h"
#include "common/plot/plot.h"
#include "common/random.h"
#include "common/serialize.h"

namespace kn = korean_numbers;

// ---- vocabularies ------------------------------------------------------------------------------
// Source: 0 = padding, 1..13 = the syllables 일 이 삼 사 오 육 칠 팔 구 십 백 천 만.
// Target: 0 = padding, 1 = <시작>, 2 = <끝>, 3..12 = the digits 0..9.
constexpr int64_t SRC_PAD = 0, TGT_PAD = 0, BOS = 1, EOS = 2, DIGIT0 = 3;
constexpr int SRC_VOCAB = 14, TGT_VOCAB = 13;
constexpr int64_t IGNORE = -100;        // cross_entropy's ignore_index: padded targets
constexpr int MAX_DIGITS = 5;           // 99999
constexpr int HELDOUT = 1000;           // numbers kept out of training
constexpr uint64_t HELDOUT_SEED = 2017; // fixed, so every run is scored on the same numbers

namespace {

std::vector<int64_t> source_ids(int64_t n) {
    std::vector<int64_t> ids;
    const auto& set = kn::syllable_set();
    for (const std::string& s : kn::syllables(kn::to_words(n)))
        ids.push_back(1 + (std::find(set.begin(), set.end(), s) - set.begin()));
    return ids;
}

std::vector<int64_t> target_ids(int64_t n) {
    std::vector<int64_t> ids;
    for (char c : std::to_string(n)) ids.push_back(DIGIT0 + (c - '0'));
    return ids;
}

std::string target_text(const std::vector<int64_t>& ids) {  // stops at <끝>
    std::string s;
    for (int64_t t : ids) {
        if (t == EOS) break;
        s += t >= DIGIT0 ? std::string(1, char('0' + t - DIGIT0)) : t == BOS ? "<시작>" : "<pad>";
    }
    return s;
}

}  // namespace

// ---- batches -----------------------------------------------------------------------------------
// B sentences padded to the longest: src (B, S), its padding mask (B, 1, 1, S) that hides padded
// keys from every query of every head, decoder input (B, T) = <시작> d1..dk, targets d1..dk <끝>.
struct Batch {
    int64_t B = 0, S = 0, T = 0;
    std::vector<int64_t> src, tgt_in, tgt_out;
    Tensor src_mask;    // (B, 1, 1, S): 1 where the key is padding
    int64_t tokens = 0; // real (non-padding) source and target tokens, for tokens/s
};

namespace {

Batch make_batch(const std::vector<int64_t>& numbers, bool with_targets = true) {
    Batch b;
    b.B = int64_t(numbers.size());
    std::vector<std::vector<int64_t>> srcs, tgts;
    for (int64_t n : numbers) {
        srcs.push_back(source_ids(n));
        tgts.push_back(target_ids(n));
        b.S = std::max(b.S, int64_t(srcs.back().size()));
        b.T = std::max(b.T, int64_t(tgts.back().size()) + 1);
    }
    b.src.assign(size_t(b.B * b.S), SRC_PAD);
    if (with_targets) {
        b.tgt_in.assign(size_t(b.B * b.T), TGT_PAD);
        b.tgt_out.assign(size_t(b.B * b.T), IGNORE);
    }
    for (int64_t i = 0; i < b.B; i++) {
        const auto &s = srcs[i], &t = tgts[i];
        std::copy(s.begin(), s.end(), b.src.begin() + i * b.S);
        b.tokens += int64_t(s.size());
        if (!with_targets) continue;
        b.tgt_in[i * b.T] = BOS;  // shifted right: position k reads d_k, predicts d_{k+1}
        for (size_t k = 0; k < t.size(); k++) {
            b.tgt_in[i * b.T + 1 + k] = t[k];
            b.tgt_out[i * b.T + k] = t[k];
        }
        b.tgt_out[i * b.T + t.size()] = EOS;
        b.tokens += int64_t(t.size()) + 1;
    }
    b.src_mask = padding_mask(b.src, {b.B, b.S}, SRC_PAD);
    return b;
}

// Teacher forcing: the whole target in one pass; the mean cross-entropy over real tokens.
Tensor batch_loss(const EncoderDecoder& model, const Batch& b) {
    Tensor memory = model.encode(b.src, {b.B, b.S}, b.src_mask);                // (B, S, d)
    Tensor logits = model.decode(b.tgt_in, {b.B, b.T}, memory, b.src_mask);     // (B, T, V)
    return cross_entropy(reshape(logits, {b.B * b.T, TGT_VOCAB}), b.tgt_out, IGNORE);
}

// ---- greedy decoding, many sentences at once --------------------------------------------------
// EncoderDecoder::greedy_decode_batch (chapters/5-blocks/decoder.cpp): the encoder runs once for
// the batch, then each step feeds every sentence's prefix through the decoder together and
// appends each sentence's most likely next token, from <시작> until <끝>.
std::vector<std::vector<int64_t>> greedy_decode_batch(const EncoderDecoder& model,
                                                      const std::vector<int64_t>& numbers) {
    Batch b = make_batch(numbers, false);
    return model.greedy_decode_batch(b.src, {b.B, b.S}, b.src_mask, BOS, EOS, MAX_DIGITS + 1,
                                     TGT_PAD);
}

// The loss curve and one example's encoder-decoder attention (drawn at the end of this file).
void draw_figure(const std::vector<double>& losses, const EncoderDecoder& model, int64_t example,
                 const std::string& path);

}  // namespace

int main(int argc, char** argv) {
    cli::Parser cli("7-translate",
                    "Chapter 7: train an encoder-decoder to read Korean number words (1..99999)");
    int layers = 2, d_model = 64, heads = 4, steps = 2000, batch = 64, warmup = 200, seed = 0;
    int threads = 1;
    double lr = 1.0;
    std::string save_path, load_path, figure_dir = "figures";
    bool pre_ln = false, post_ln = false, no_figures = false;  // Pre-LN unless --post-ln
    cli.option("--layers", layers, "encoder blocks = decoder blocks N");
    cli.option("--d-model", d_model, "model width d_model");
    cli.option("--heads", heads, "attention heads h (must divide d_model)");
    cli.option("--steps", steps, "training steps (batches)");
    cli.option("--batch", batch, "sentences per batch");
    cli.option("--lr", lr, "factor on the paper's learning-rate schedule");
    cli.option("--warmup", warmup, "warm-up steps of the schedule");
    cli.option("--seed", seed, "seed of the weights and of the training order");
    cli.flag("--pre-ln", pre_ln, "LayerNorm before each sublayer (Xiong et al. 2020; the default)");
    cli.flag("--post-ln", post_ln, "LayerNorm after each residual sum (the paper)");
    cli.option("--threads", threads, "OpenMP threads (default 1: small matrices, shared machines)");
    cli.option("--save", save_path, "write the trained weights to FILE");
    cli.option("--load", load_path, "read weights from FILE, skip training, evaluate");
    cli.option("--figure-dir", figure_dir, "where to write 7-translate.png");
    cli.flag("--no-figures", no_figures, "do not write the figure");
    cli.parse(argc, argv);
    if (pre_ln && post_ln) cli.fail("--pre-ln and --post-ln exclude each other; give one");
    if (layers < 1 || layers > 24) cli.fail("--layers must be in 1..24");
    if (d_model < 1 || heads < 1 || d_model % heads != 0)
        cli.fail("--d-model " + std::to_string(d_model) +
                 " must be a positive multiple of --heads " + std::to_string(heads));
    if (steps < 0) cli.fail("--steps must be >= 0");
    if (batch < 1) cli.fail("--batch must be >= 1");
    if (warmup < 1) cli.fail("--warmup must be >= 1");
    if (!(lr > 0)) cli.fail("--lr must be > 0");
    if (threads < 1 || threads > 256) cli.fail("--threads must be in 1..256");
    // One thread by default. The matrices here are small (a few hundred rows of 64), so a second
    // thread saves little, and on a shared machine every parallel region ends in a barrier that
    // waits for a thread the OS may have parked: measured under load, 2 threads ran 9x slower.
    omp_set_num_threads(threads);
    // Pre-LN by default: at this budget it reached 99% in fewer steps than Post-LN did.
    LnPlacement placement = post_ln ? LnPlacement::PostLN : LnPlacement::PreLN;
    // Every training step allocates and frees the same few hundred buffers. Keep freed memory in
    // the heap instead of handing it back to the kernel (and taking page faults to get it again).
#if defined(M_MMAP_THRESHOLD)
    mallopt(M_MMAP_THRESHOLD, 1 << 30);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif

    // The fixed held-out set: a shuffle of 1..99999 under a constant seed; the first 1000 are
    // never trained on, whatever --seed says.
    std::vector<int64_t> numbers(kn::MAX_VALUE);
    std::iota(numbers.begin(), numbers.end(), 1);
    auto shuffle = [](std::vector<int64_t>& v, torch_rng::Generator& g) {  // Fisher-Yates
        for (size_t i = v.size(); i-- > 1;) std::swap(v[i], v[g.random64() % (i + 1)]);
    };
    torch_rng::Generator split_gen(HELDOUT_SEED);
    shuffle(numbers, split_gen);
    std::vector<int64_t> heldout(numbers.begin(), numbers.begin() + HELDOUT);
    std::vector<int64_t> train(numbers.begin() + HELDOUT, numbers.end());

    // Load first: the file's hyper-parameters decide the model's shape.
    serialize::Checkpoint ck;
    if (!load_path.empty()) {
        try {
            ck = serialize::load(load_path);
            layers = int(ck.get("layers"));
            d_model = int(ck.get("d_model"));
            heads = int(ck.get("n_heads"));
            placement = ck.get("pre_ln") ? LnPlacement::PreLN : LnPlacement::PostLN;
            if (layers < 1 || layers > 24 || d_model < 1 || d_model > 4096 || heads < 1 ||
                d_model % heads != 0)
                throw std::runtime_error(load_path + ": implausible model size (layers " +
                                         std::to_string(layers) + ", d_model " +
                                         std::to_string(d_model) + ", heads " +
                                         std::to_string(heads) + "); is the file corrupt?");
            if (ck.get("src_vocab") != SRC_VOCAB || ck.get("tgt_vocab") != TGT_VOCAB)
                throw std::runtime_error(load_path + ": vocabulary sizes differ from this task's");
        } catch (const std::exception& e) {
            std::fprintf(stderr, "7-translate: error: %s\n", e.what());
            return 1;
        }
    }

    torch_rng::manual_seed(uint64_t(seed));
    EncoderDecoder model(SRC_VOCAB, TGT_VOCAB, d_model, heads, layers, placement);
    // nn.Embedding draws N(0, 1), and the paper multiplies by sqrt(d_model): each token vector
    // would be ~8x longer than its positional encoding (entries in [-1, 1]), and this task is all
    // about positions (which digit goes where). Drawn N(0, 1/d_model) instead, the scaled
    // embedding and the positional encoding start at the same size.
    for (Tensor* E : {&model.src_embed.weight, &model.tgt_embed.weight})
        for (int64_t i = 0; i < E->numel(); i++) E->data()[i] /= std::sqrt(float(d_model));
    std::printf(
        "과제: 한자어 수사 -> 아라비아 숫자 (1 ~ %lld), 학습 %zu개, 평가 %zu개 (학습에 없음)\n",
        (long long)kn::MAX_VALUE, train.size(), heldout.size());
    std::printf("모델: 인코더 %d층 + 디코더 %d층, d_model = %d, 헤드 %d개, %s, 파라미터 %lld개\n",
                layers, layers, d_model, heads, placement_name(placement),
                (long long)model.num_parameters());

    std::vector<double> losses;
    if (!load_path.empty()) {
        try {
            serialize::Named stored;
            for (auto& nt : ck.tensors)
                if (nt.first == "history.loss") {
                    losses.assign(nt.second.data(), nt.second.data() + nt.second.numel());
                } else {
                    stored.push_back(nt);
                }
            ck.tensors = stored;
            serialize::copy_into(ck, model.named_parameters(), load_path);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "7-translate: error: %s\n", e.what());
            return 1;
        }
        std::printf("가중치를 %s에서 불러왔습니다 (학습 생략)\n", load_path.c_str());
    } else {
        std::printf(
            "학습: %d스텝, 배치 %d문장, Adam(0.9, 0.98, 1e-9), warm-up %d스텝, lr 배율 %g\n", steps,
            batch, warmup, lr);
        optim::Adam adam(model.parameters());
        torch_rng::Generator order_gen(uint64_t(seed) + 1);  // the training order
        shuffle(train, order_gen);
        size_t cursor = 0;
        using clock = std::chrono::steady_clock;
        auto t0 = clock::now(), t_last = t0;
        int64_t tokens_since = 0;
        double loss_since = 0;
        int n_since = 0;
        std::vector<bool> is_heldout(size_t(kn::MAX_VALUE) + 1, false);
        for (int64_t n : heldout) is_heldout[size_t(n)] = true;
        // Seven in eight training numbers come from the shuffled training set in turn (a new
        // shuffle each epoch). The eighth picks its digit count 1..5 first, then a number of that
        // length: numbers below 1000 are 1% of the range, and without this the model meets 삼십일
        // too rarely to learn it.
        auto draw = [&]() -> int64_t {
            if (order_gen.random64() % 8 == 0) {
                for (;;) {
                    const int64_t digits = 1 + int64_t(order_gen.random64() % MAX_DIGITS);
                    const int64_t lo = int64_t(std::pow(10, digits - 1)), hi = 10 * lo - 1;
                    const int64_t n = lo + int64_t(order_gen.random64() % uint64_t(hi - lo + 1));
                    if (!is_heldout[size_t(n)]) return n;
                }
            }
            if (cursor == train.size()) {
                shuffle(train, order_gen);
                cursor = 0;
            }
            return train[cursor++];
        };
        for (int step = 1; step <= steps; step++) {
            std::vector<int64_t> ns;
            while (int(ns.size()) < batch) ns.push_back(draw());
            Batch b = make_batch(ns);
            Tensor loss = batch_loss(model, b);
            loss.backward();
            adam.step(optim::noam_lr(step, d_model, warmup, lr));
            adam.zero_grad();
            losses.push_back(loss.item());
            tokens_since += b.tokens;
            loss_since += loss.item();
            n_since++;
            if (step % 100 == 0 || step == steps) {
                auto now = clock::now();
                double dt = std::chrono::duration<double>(now - t_last).count();
                std::printf("스텝 %5d/%d  손실 %.4f  lr %.2e  %6.0f 토큰/초\n", step, steps,
                            loss_since / n_since, optim::noam_lr(step, d_model, warmup, lr),
                            double(tokens_since) / std::max(dt, 1e-9));
                std::fflush(stdout);
                t_last = now;
                tokens_since = 0;
                loss_since = 0;
                n_since = 0;
            }
        }
        std::printf("학습 시간 %.1f초\n",
                    std::chrono::duration<double>(clock::now() - t0).count());
    }

    if (!save_path.empty()) {
        serialize::HParams hp = {
            {"layers", layers},       {"d_model", d_model},
            {"n_heads", heads},       {"pre_ln", placement == LnPlacement::PreLN},
            {"src_vocab", SRC_VOCAB}, {"tgt_vocab", TGT_VOCAB}};
        serialize::Named tensors = model.named_parameters();
        std::vector<float> lv(losses.begin(), losses.end());
        tensors.push_back({"history.loss", Tensor::from(lv, {int64_t(lv.size())})});
        try {
            serialize::save(save_path, hp, tensors);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "7-translate: error: %s\n", e.what());
            return 1;
        }
        std::printf("가중치를 %s에 저장했습니다\n", save_path.c_str());
    }

    // ---- evaluation: greedy generation on the held-out numbers ----------------------------------
    auto t_eval = std::chrono::steady_clock::now();
    std::vector<std::vector<int64_t>> preds = greedy_decode_batch(model, heldout);
    int correct = 0;
    std::vector<size_t> wrong;
    for (size_t i = 0; i < heldout.size(); i++) {
        // Exact match: every digit, then <끝> (a missing end token is wrong too).
        std::vector<int64_t> want = target_ids(heldout[i]);
        want.push_back(EOS);
        bool ok = preds[i].size() >= want.size() &&
                  std::equal(want.begin(), want.end(), preds[i].begin());
        correct += ok;
        if (!ok) wrong.push_back(i);
    }
    std::printf("\n평가 (그리디 생성, 학습에 없던 %zu개): 정확히 일치 %d개 = %.1f%% (%.2f초)\n",
                heldout.size(), correct, 100.0 * correct / double(heldout.size()),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t_eval).count());
    // A handful of examples: the first held-out numbers, then up to 4 mistakes.
    std::vector<size_t> show = {0, 1, 2, 3, 4, 5};
    for (size_t k = 0; k < wrong.size() && k < 4; k++)
        if (std::find(show.begin(), show.end(), wrong[k]) == show.end()) show.push_back(wrong[k]);
    for (size_t i : show) {
        bool ok = std::find(wrong.begin(), wrong.end(), i) == wrong.end();
        std::string words = kn::to_words(heldout[i]);
        std::printf("  %s%*s -> %-6s %s", words.c_str(),
                    int(2 * (9 - kn::syllables(words).size())), "", target_text(preds[i]).c_str(),
                    ok ? "O" : "X");
        if (!ok) std::printf(" (정답 %lld)", (long long)heldout[i]);
        std::printf("\n");
    }

    if (!no_figures) {
        // The example for the attention map: the first held-out number with a silent zero and
        // five digits, so the model had to insert a digit no syllable names.
        int64_t example = heldout[0];
        for (int64_t n : heldout)
            if (n >= 10000 && std::to_string(n).find('0') != std::string::npos) {
                example = n;
                break;
            }
        try {
            draw_figure(losses, model, example, figure_dir + "/7-translate.png");
        } catch (const std::exception& e) {
            std::fprintf(stderr, "7-translate: error: %s\n", e.what());
            return 1;
        }
    }
    return 0;
}

// ---- the figure --------------------------------------------------------------------------------
namespace {

void draw_figure(const std::vector<double>& losses, const EncoderDecoder& model, int64_t example,
                 const std::string& path) {
    plot::Figure fig(losses.empty() ? 6 : 12, 4.5, 150);
    const int cols = losses.empty() ? 1 : 2;
    if (!losses.empty()) {
        plot::Axes& ax = fig.subplot(1, cols, 0);
        std::vector<double> steps(losses.size());
        std::iota(steps.begin(), steps.end(), 1.0);
        ax.plot(steps, losses, {.fmt = "-", .lw = 1, .label = "배치 손실", .alpha = 0.35});
        // A running mean over 25 steps shows the trend under the batch-to-batch noise.
        std::vector<double> smooth;
        double acc = 0;
        for (size_t i = 0; i < losses.size(); i++) {
            acc += losses[i];
            if (i >= 25) acc -= losses[i - 25];
            smooth.push_back(acc / double(std::min<size_t>(i + 1, 25)));
        }
        ax.plot(steps, smooth, {.fmt = "-", .lw = 2, .label = "이동 평균 (25스텝)"});
        ax.set_yscale("log");
        ax.use_plain_log_labels('y', {1.0, 2.0, 5.0});
        ax.set_xlabel("학습 스텝");
        ax.set_ylabel("교차 엔트로피 (로그 축)");
        ax.set_title("학습 손실 (teacher forcing)");
        ax.grid(0.3);
        ax.legend();
    }
    // Generate, then read the last decoder layer's encoder-decoder attention, averaged over heads.
    std::vector<int64_t> pred = greedy_decode_batch(model, {example})[0];
    std::vector<int64_t> tgt_in{BOS};
    for (int64_t t : pred)
        if (t != EOS && t != TGT_PAD) tgt_in.push_back(t);
    {
        NoGradGuard no_grad;
        Batch b = make_batch({example}, false);
        Tensor memory = model.encode(b.src, {1, b.S}, b.src_mask);
        // Causal: row k here is exactly the attention the generation step k used.
        model.decode(tgt_in, {1, int64_t(tgt_in.size())}, memory, b.src_mask);
    }
    const Tensor& A = model.decoder.back()->cross_attn.last_attn;  // (1, h, T, S)
    const int64_t h = A.size(1), T = A.size(2), S = A.size(3);
    std::vector<double> avg(size_t(T * S), 0.0);
    for (int64_t k = 0; k < h; k++)
        for (int64_t i = 0; i < T * S; i++) avg[i] += A.data()[k * T * S + i] / double(h);
    plot::Axes& ax = fig.subplot(1, cols, cols - 1);
    plot::Image& im = ax.imshow(avg, int(T), int(S), {.cmap = "Blues", .vmin = 0, .vmax = 1});
    fig.colorbar(im, ax);
    std::vector<std::string> syl = kn::syllables(kn::to_words(example)), out_labels;
    std::vector<double> xt, yt;
    for (int64_t j = 0; j < S; j++) xt.push_back(double(j));
    for (int64_t i = 0; i < T; i++) {
        yt.push_back(double(i));
        out_labels.push_back(i + 1 < T ? target_text({tgt_in[i + 1]}) : "<끝>");
    }
    ax.set_xticks(xt, syl);
    ax.set_yticks(yt, out_labels);
    for (int64_t i = 0; i < T; i++)
        for (int64_t j = 0; j < S; j++) {
            double v = avg[i * S + j];
            char buf[16];
            std::snprintf(buf, sizeof buf, "%.2f", v);
            ax.text(double(j), double(i), buf,
                    {.ha = plot::center, .va = plot::center,
                     .color = v > 0.5 ? plot::white : plot::black, .size = 8});
        }
    ax.set_xlabel("입력 음절 (인코더)");
    ax.set_ylabel("출력 숫자 (디코더)");
    ax.set_title(kn::to_words(example) + " → " + target_text(pred) +
                 ": 인코더-디코더 어텐션 (마지막 층, 헤드 평균)");
    fig.tight_layout();
    fig.save_png(path);
}

}  // namespace
