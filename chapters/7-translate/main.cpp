// Chapter 7 (beyond the article): the whole encoder-decoder, trained from scratch on a tiny
// translation task, on the CPU.
//
// The task: Sino-Korean number words to Arabic numerals, 1 ... 99999.
//   삼천이백일 -> 3201      만오천 -> 15000      구만구천구백구십구 -> 99999
// The input is a sequence of Hangul syllables, the output a sequence of digits, and the two
// lengths differ (만오천: 3 syllables, 5 digits): a sequence-to-sequence task, what the article's
// opening (seq2seq and its fixed-length bottleneck) and its title's encoder-decoder are about.
// Zero digits are silent in the words; the model has to put them back.
//
// In order (2 and 4 are section 5's prose; 1 adds the paper's embedding scale to section 5's
// model; 3 is the paper's optimiser and the warm-up section 5 names but does not write out):
//   1. The model: token embeddings * sqrt(d_model) + the sinusoidal encoding, N encoder blocks,
//      N decoder blocks (causal self-attention, then encoder-decoder attention on the encoder's
//      top output), the output head (chapters/5-blocks/decoder.h: EncoderDecoder).
//   2. Teacher forcing: the decoder reads <시작> d1 d2 ... dk and must predict d1 ... dk <끝>,
//      every position in one forward pass; cross-entropy ignores the padding.
//   3. Adam with the paper's warm-up: lrate = d_model^-0.5 * min(step^-0.5, step * warmup^-1.5).
//   4. Generation: greedy, autoregressive, from <시작> until <끝>, on 1000 numbers that never
//      appeared in training; the score (beyond the article) is exact match (every digit right,
//      and nothing more).
//   5. The figure (beyond the article): the loss curve, and the encoder-decoder attention of
//      one example: which syllables each output digit looked at (the alignment it learned).
//
// The defaults (2 + 2 blocks, d_model 64, 4 heads, Pre-LN, 2000 steps of 64 sentences, one
// thread) are chosen for accuracy per CPU second.
// Two choices beyond the paper, both explained where they are made: the embeddings start small
// enough for the positional encoding to be heard, and short numbers are drawn more often.
//
// Read in this order:
//   korean_numbers.h  the source language: 삼천이백일 <-> 3201
//   task.h/.cpp       vocabularies, batches, the teacher-forced loss, greedy decoding, the split
//   train.h/.cpp      the model as this task builds it (section 5's, or with learned position
//                     tables), and the training loop
//   main.cpp          this file: training, saving, evaluation; the options and the figure last
//   checkpoint.h/.cpp the weights file, checked before a model is built from it
//   attention_probe.h/.cpp  the attention weights of a module's last forward, which the
//                     figure reads (the listings do not keep them)
//   peer_torch.py     the same model and step in PyTorch, which `make bench` times beside ours
// Adam and the warm-up schedule are in common/optim.h.
#if __has_include(<malloc.h>)  // mallopt: glibc (macOS has no malloc.h)
#include <malloc.h>
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "chapters/5-blocks/decoder.h"
#include "chapters/7-translate/attention_probe.h"
#include "chapters/7-translate/checkpoint.h"
#include "chapters/7-translate/korean_numbers.h"
#include "chapters/7-translate/task.h"
#include "chapters/7-translate/train.h"
#include "common/kernels/parallel.h"
#include "common/plot/plot.h"
#include "common/program/cli.h"
#include "common/program/serialize.h"

namespace kn = korean_numbers;
using namespace translate;

namespace {

// The signal that asked the training to stop (SIGINT, SIGTERM), or 0.
volatile std::sig_atomic_t g_stop_signal = 0;

// The loss curve and one example's encoder-decoder attention (drawn at the end of this file).
void draw_figure(const std::vector<double>& losses, EncoderDecoder& model, int64_t example,
                 const std::string& path);

struct Options {  // the command line, parsed and checked below main
    ModelConfig mc;
    TrainConfig tc;
    int threads = 1;
    std::string save_path, load_path, figure_dir = "figures";
    bool no_figures = false;
    Options(int argc, char** argv);
};

}  // namespace

int main(int argc, char** argv) {
    Options opt(argc, argv);
    ModelConfig& mc = opt.mc;
    TrainConfig& tc = opt.tc;
    omp_set_num_threads(opt.threads);
    // Every training step allocates and frees the same few hundred buffers. Keep freed memory in
    // the heap instead of handing it back to the kernel (and taking page faults to get it again).
#if defined(M_MMAP_THRESHOLD)
    mallopt(M_MMAP_THRESHOLD, 1 << 30);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif

    const Split split = split_numbers();

    // Load first: the file's hyper-parameters decide the model's shape.
    std::unique_ptr<EncoderDecoder> model;
    std::vector<double> losses;
    if (!opt.load_path.empty()) {
        try {
            Loaded l = load_model(opt.load_path);
            mc = l.config;
            model = std::move(l.model);
            losses = std::move(l.losses);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "7-translate: error: %s\n", cli::error_text(e));
            return 1;
        }
    } else {
        model = make_model(mc);
    }
    std::printf(
        "과제: 한자어 수사 -> 아라비아 숫자 (1 ~ %lld), 학습 %zu개, 평가 %zu개 (학습에 없음)\n",
        (long long)kn::MAX_VALUE, split.train.size(), split.heldout.size());
    std::printf("모델: 인코더 %d층 + 디코더 %d층, d_model = %d, 헤드 %d개, %s, 파라미터 %lld개\n",
                mc.layers, mc.layers, mc.d_model, mc.heads, placement_name(mc.placement),
                (long long)model->num_parameters());

    if (!opt.load_path.empty()) {
        std::printf("가중치를 %s에서 불러왔습니다 (학습 생략)\n", opt.load_path.c_str());
    } else {
        std::printf(
            "학습: %d스텝, 배치 %d문장, Adam(0.9, 0.98, 1e-9), warm-up %d스텝, lr 배율 %g\n",
            tc.steps, tc.batch, tc.warmup, tc.lr);
        // Checked before the training starts (stdout on a full disk ends the run here); the
        // step lines below are only flushed, so that a write failing mid-run does not cost the
        // weights --save is to keep: the exit check reports it at the end.
        cli::flush_stdout_or_exit();
        tc.report = [&](int step, double loss, double lr, double tokens_per_s) {
            std::printf("스텝 %5d/%d  손실 %.4f  lr %.2e  %6.0f 토큰/초\n", step, tc.steps, loss,
                        lr, tokens_per_s);
            std::fflush(stdout);
        };
        // With --save, Ctrl-C (or SIGTERM) stops the training after the step it is in, and the
        // weights trained so far are saved before the program ends (with 128 + the signal, 130
        // for Ctrl-C, as interrupted) rather than lost with the rest. A second Ctrl-C ends it at
        // once. Only the training is guarded: from the save on, signals act as they always do.
        if (!opt.save_path.empty()) {
            for (int sig : {SIGINT, SIGTERM})
                std::signal(sig, [](int s) {
                    g_stop_signal = s;
                    std::signal(s, SIG_DFL);
                });
            tc.stop = [] { return g_stop_signal != 0; };
        }
        TrainResult r = train(*model, split.train, split.heldout, tc);
        for (int sig : {SIGINT, SIGTERM})
            std::signal(sig, SIG_DFL);
        losses = r.losses;
        if (r.diverged_at) {
            std::fprintf(stderr,
                         "7-translate: error: training diverged at step %d (the loss is %s): "
                         "nothing was saved; try a smaller --lr or a longer --warmup\n",
                         r.diverged_at, std::isnan(r.losses.back()) ? "nan" : "infinite");
            return 1;
        }
        std::printf("학습 시간 %.1f초\n", r.seconds);
    }

    if (!opt.save_path.empty()) {
        try {
            save_model(opt.save_path, *model, mc, losses);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "7-translate: error: %s\n", cli::error_text(e));
            return 1;
        }
        std::printf("가중치를 %s에 저장했습니다\n", opt.save_path.c_str());
        if (g_stop_signal) {  // interrupted: what was trained is kept, the rest is not run
            std::printf(
                "학습을 %zu스텝에서 멈췄습니다 (신호 %d); 평가와 그림은 건너뜁니다. 이어서 "
                "평가하려면: 7-translate --load %s\n",
                losses.size(), int(g_stop_signal), opt.save_path.c_str());
            return 128 + int(g_stop_signal);
        }
    }

    // ---- evaluation: greedy generation on the held-out numbers ----------------------------------
    const std::vector<int64_t>& heldout = split.heldout;
    auto t_eval = std::chrono::steady_clock::now();
    std::vector<std::vector<int64_t>> preds = greedy_decode_batch(*model, heldout);
    const Score sc = score(heldout, preds);
    std::printf("\n평가 (그리디 생성, 학습에 없던 %zu개): 정확히 일치 %d개 = %.1f%% (%.2f초)\n",
                heldout.size(), sc.correct, sc.percent(heldout.size()),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t_eval).count());
    // A handful of examples: the first held-out numbers, then up to 4 mistakes.
    const std::vector<size_t>& wrong = sc.wrong;
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

    if (!opt.no_figures) {
        // The example for the attention map: the first held-out number with a silent zero and
        // five digits, so the model had to insert a digit no syllable names.
        int64_t example = heldout[0];
        for (int64_t n : heldout)
            if (n >= 10000 && std::to_string(n).find('0') != std::string::npos) {
                example = n;
                break;
            }
        try {
            draw_figure(losses, *model, example, opt.figure_dir + "/7-translate.png");
        } catch (const std::exception& e) {
            std::fprintf(stderr, "7-translate: error: %s\n", cli::error_text(e));
            return 1;
        }
    }
    return 0;
}

namespace {

Options::Options(int argc, char** argv) {
    cli::Parser cli("7-translate",
                    "Chapter 7: train an encoder-decoder to read Korean number words (1..99999)");
    std::string norm = "pre";
    cli.option("--layers", mc.layers, "encoder blocks = decoder blocks N");
    // Bounds on the counts that multiply: d_model as a weights file may declare it, steps and
    // warm-up steps as int loop counters, sentences per batch times their tokens.
    cli.option("--d-model", mc.d_model, "model width d_model").range(1, 4096);
    cli.option("--heads", mc.heads, "attention heads h (must divide d_model)");
    cli.choice("--norm", norm, {"pre", "post"},
               "pre: LayerNorm before each sublayer (Xiong et al. 2020); post: after each "
               "residual sum (the paper)");
    cli.option("--steps", tc.steps, "training steps (batches)").range(0, 100'000'000);
    cli.option("--batch", tc.batch, "sentences per batch").range(1, 1'000'000);
    cli.option("--lr", tc.lr, "factor on the paper's learning-rate schedule");
    cli.option("--warmup", tc.warmup, "warm-up steps of the schedule").range(1, 100'000'000);
    cli.option("--seed", mc.seed, "seed of the weights and of the training order");
    // One thread by default. The matrices here are small (a few hundred rows of 64), so a second
    // thread saves little, and on a shared machine every parallel region ends in a barrier that
    // waits for a thread the OS may have parked.
    cli.option("--threads", threads,
               "OpenMP threads (one suits these small matrices on a shared machine)");
    cli.path("--save", save_path,
             "write the trained weights to FILE (Ctrl-C while training stops and saves them)");
    cli.path("--load", load_path, "read weights from FILE, skip training, evaluate");
    cli.figures(figure_dir, no_figures, "7-translate.png");
    cli.parse(argc, argv);
    if (mc.layers < 1 || mc.layers > 24) cli.fail("--layers must be in 1..24");
    if (mc.d_model < 1 || mc.heads < 1 || mc.d_model % mc.heads != 0)
        cli.fail("--d-model " + std::to_string(mc.d_model) +
                 " must be a positive multiple of --heads " + std::to_string(mc.heads));
    if (tc.steps < 0) cli.fail("--steps must be >= 0");
    if (tc.batch < 1) cli.fail("--batch must be >= 1");
    if (tc.warmup < 1) cli.fail("--warmup must be >= 1");
    if (!(tc.lr > 0) || !std::isfinite(tc.lr)) cli.fail("--lr must be a finite number > 0");
    if (threads < 1 || threads > 256) cli.fail("--threads must be in 1..256");
    if (!load_path.empty() && !save_path.empty() && load_path == save_path)
        cli.fail("--load and --save name the same file; give --save another name");
    // The loaded file decides the model and nothing is trained: these would be ignored.
    if (!load_path.empty()) {
        std::string ignored;
        for (const char* o : {"--layers", "--d-model", "--heads", "--norm", "--steps", "--batch",
                              "--lr", "--warmup", "--seed"})
            if (cli.given(o)) ignored += std::string(ignored.empty() ? "" : ", ") + o;
        if (!ignored.empty())
            cli.fail("--load takes the model from the file and trains nothing, so " + ignored +
                     " would be ignored; drop them, or train without --load");
    }
    if (load_path.empty()) {
        // Held at once while training, in floats: the weights, their gradients and Adam's two
        // moments; per token of a batch (about 12 per sentence, source and target) and per
        // block, some 40 d_model activations and 3 attention rows of 12 per head.
        const double d = mc.d_model, L = mc.layers, tokens = 12.0 * tc.batch;
        const double params = double(parameter_count(mc));
        cli.require_memory(4 * (4 * params + tokens * 2 * L * (40 * d + 3 * 12 * mc.heads)),
                           "--batch " + std::to_string(tc.batch) + " --layers " +
                               std::to_string(mc.layers) + " --d-model " +
                               std::to_string(mc.d_model));
    }
    cli.check_figure_dir({"7-translate.png"});  // before the training
    tc.seed = mc.seed;
    // Pre-LN by default: with this short warm-up it trains in fewer steps than Post-LN.
    mc.placement = norm == "post" ? LnPlacement::PostLN : LnPlacement::PreLN;
    // A save that would fail is found now, not after the training it was meant to keep.
    if (!save_path.empty()) {
        try {
            serialize::check_writable(save_path);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "7-translate: error: %s\n", cli::error_text(e));
            std::exit(1);
        }
    }
}

// ---- the figure --------------------------------------------------------------------------------

void draw_figure(const std::vector<double>& losses, EncoderDecoder& model, int64_t example,
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
        // Decades only, written 10^k: the loss spans about five of them.
        ax.set_yscale("log");
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
    Tensor A;  // (1, h, T, S)
    {
        NoGradGuard no_grad;
        AttentionProbe probe(model.decoder.back()->cross_attn);
        Batch b = make_batch({example}, false);
        Tensor memory = model.encode(b.src, {1, b.S}, b.src_mask);
        // Causal: row k here is exactly the attention the generation step k used.
        model.decode(tgt_in, {1, int64_t(tgt_in.size())}, memory, b.src_mask);
        A = probe.weights(b.src_mask);
    }
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
    ax.set_xlabel("입력 음절 (인코더) · 마지막 층, 헤드 평균");
    ax.set_ylabel("출력 숫자 (디코더)");
    ax.set_title("인코더-디코더 어텐션: " + kn::to_words(example) + " → " + target_text(pred));
    fig.tight_layout();
    fig.save_png(path);
}

}  // namespace
