// Chapter 8 (ablations): the pieces its experiments are built from, checked on small sizes, and
// the facts its claims rest on (the first step's self-attention weight is exactly 1, removing
// every encoder-decoder head leaves the decoder blind, a learned position table has no vector
// past its length and leaves rows it never reached untouched), and the program's determinism.
#include <doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "chapters/1-self-attention/attention.h"
#include "chapters/7-translate/attention_probe.h"
#include "chapters/8-ablations/figures.h"
#include "chapters/8-ablations/machinery/records.h"
#include "chapters/8-ablations/machinery/runner.h"
#include "chapters/8-ablations/machinery/tsv.h"
#include "chapters/8-ablations/report.h"
#include "chapters/8-ablations/rnn.h"
#include "chapters/8-ablations/runs.h"
#include "chapters/8-ablations/stats.h"
#include "common/optim.h"
#include "common/program/format.h"
#include "common/random.h"
#include "tests/cross_attention.h"
#include "tests/util.h"

using namespace ablations;
using translate::Batch;
using translate::LEARNED_POSITIONS;
using translate::make_batch;

namespace {

std::vector<int64_t> some_numbers(int n, uint64_t seed) {
    torch_rng::Generator g(seed);
    std::vector<int64_t> v;
    for (int i = 0; i < n; i++)
        v.push_back(1 + int64_t(g.random64() % 99999));
    return v;
}

// Percent of sentences whose first generated digit is right, from first_step_logits.
double first_digit(EncoderDecoder& m, const std::vector<int64_t>& numbers, FirstStep w) {
    Batch b = make_batch(numbers, false);
    Tensor logits = first_step_logits(m, b, w);  // (B, 1, V)
    const int64_t V = logits.size(-1);
    int right = 0;
    for (int64_t i = 0; i < b.B; i++) {
        const float* row = logits.data() + i * V;
        right +=
            std::max_element(row, row + V) - row == translate::target_ids(numbers[size_t(i)])[0];
    }
    return 100.0 * right / double(b.B);
}

}  // namespace

TEST_CASE("ablations: the first step sees <시작> alone: its self-attention weight is exactly 1") {
    for (LnPlacement p : {LnPlacement::PostLN, LnPlacement::PreLN}) {
        translate::ModelConfig c;
        c.layers = 2, c.d_model = 16, c.heads = 2, c.placement = p;
        auto m = translate::make_model(c);
        const std::vector<int64_t> numbers = some_numbers(12, 3);
        Batch b = make_batch(numbers, false);
        std::vector<std::unique_ptr<AttentionProbe>> probes;
        for (const auto& blk : m->decoder)
            probes.push_back(std::make_unique<AttentionProbe>(blk->self_attn));
        Tensor logits = first_step_logits(*m, b, FirstStep::intact);
        for (const auto& probe : probes) {
            const Tensor a = probe->weights(causal_mask(1));  // (B, h, 1, 1)
            CHECK(a.shape() == Shape{12, 2, 1, 1});
            for (int64_t i = 0; i < a.numel(); i++)
                CHECK(a.data()[i] == 1.0f);
        }
        // The step intact is the step generation takes, bit for bit.
        NoGradGuard no_grad;
        Tensor memory = m->encode(b.src, {b.B, b.S}, b.src_mask);
        auto decode = [&] {
            return m->decode(std::vector<int64_t>(12, translate::BOS), {12, 1}, memory, b.src_mask);
        };
        const Tensor ref = decode();
        CHECK(max(abs(ref - logits)).item() == 0.0f);
        // Each replacement changes the step, and leaves the model as it was.
        for (FirstStep w :
             {FirstStep::self_mean, FirstStep::cross_mean, FirstStep::cross_uniform}) {
            Tensor s = first_step_logits(*m, b, w);
            CHECK(s.shape() == logits.shape());
            CHECK(max(abs(s - ref)).item() > 0.0f);
            CHECK(max(abs(decode() - ref)).item() == 0.0f);
        }
    }
}

TEST_CASE("ablations: the previous article's model: its size, padding it never reads, training") {
    // About chapter 7's model's parameters (the opening's comparison is at equal size): the
    // narrowest width whose count is not below the Transformer's, so the baseline is not the
    // smaller model.
    auto count = [](int64_t H) { return 36 * H * H + 94 * H + 13; };
    RNNsearch full;
    CHECK(full.num_parameters() == count(RNN_HIDDEN));
    CHECK(RNNsearch(RNN_HIDDEN - 1).num_parameters() == count(RNN_HIDDEN - 1));
    const int64_t transformer = translate::make_model({})->num_parameters();
    CHECK(transformer == 234765);
    CHECK(count(RNN_HIDDEN) >= transformer);
    CHECK(count(RNN_HIDDEN - 1) < transformer);

    // A sentence padded in a batch reads as it does alone: the forward LSTM never sees the
    // padding before a real token, the backward one reads each sentence from its own end, and
    // the scores hide padded positions. So its annotations, first state and every step's
    // logits are the ones it gets alone (to float rounding: the GEMMs' row blocks differ).
    torch_rng::manual_seed(4);
    RNNsearch m(8);
    NoGradGuard no_grad;
    const std::vector<int64_t> both = {7, 99999};  // 칠; 구만구천구백구십구 (9 syllables)
    const Batch b2 = make_batch(both, false), b1 = make_batch({7}, false);
    REQUIRE(b2.S == 9);
    REQUIRE(b1.S == 1);
    const RNNsearch::Encoded e2 = m.encode(b2.src, b2.B, b2.S), e1 = m.encode(b1.src, 1, 1);
    const std::vector<float> a2 = e2.annotations.to_vector(), a1 = e1.annotations.to_vector();
    CHECK(testutil::allclose(std::vector<float>(a2.begin(), a2.begin() + 16), a1, 1e-6, 1e-5,
                             "annotations"));
    const std::vector<float> s0 = e2.s0.to_vector();  // (2, 8)
    CHECK(testutil::allclose(std::vector<float>(s0.begin(), s0.begin() + 8), e1.s0.to_vector(),
                             1e-6, 1e-5, "s_0"));
    Tensor s2 = e2.s0, m2 = Tensor::zeros({2, 8}), s1 = e1.s0, m1 = Tensor::zeros({1, 8});
    for (int64_t y : {int64_t(translate::BOS), translate::DIGIT0 + 7}) {
        Tensor alpha;
        const std::vector<float> l2 = m.step(e2, {y, y}, s2, m2, &alpha).to_vector();
        const std::vector<float> l1 = m.step(e1, {y}, s1, m1).to_vector();
        CHECK(testutil::allclose(std::vector<float>(l2.begin(), l2.begin() + 13), l1, 1e-5, 1e-5,
                                 "logits"));
        CHECK(alpha.shape() == Shape{2, 1, 9});
        for (int64_t j = 1; j < 9; j++)  // the short sentence's padded positions
            CHECK(alpha.data()[j] == 0.0f);
    }
    // The backward LSTM's first annotation has read the whole source; the forward's has read
    // one syllable: so ←h_1 of 구만... differs from that of 구 alone, →h_1 does not.
    const Batch b9 = make_batch({9}, false);
    const std::vector<float> a9 = m.encode(b9.src, 1, 1).annotations.to_vector();
    const std::vector<float> long0(a2.begin() + 9 * 16, a2.begin() + 9 * 16 + 16);
    CHECK(testutil::allclose(std::vector<float>(long0.begin(), long0.begin() + 8),
                             std::vector<float>(a9.begin(), a9.begin() + 8), 1e-6, 1e-5, "fwd"));
    CHECK(std::vector<float>(long0.begin() + 8, long0.end()) !=
          std::vector<float>(a9.begin() + 8, a9.end()));
}

TEST_CASE("ablations: a few teacher-forced steps lower the LSTM's loss; greedy reads every token") {
    torch_rng::manual_seed(0);
    RNNsearch m(16);
    optim::Adam adam(m.parameters());
    const std::vector<int64_t> numbers = {3201, 15000, 7, 99999, 10001, 420, 86, 50505};
    const Batch b = make_batch(numbers);
    float first = 0, last = 0;
    for (int step = 1; step <= 30; step++) {
        Tensor loss = rnn_batch_loss(m, b);
        loss.backward();
        adam.step(optim::noam_lr(step, 16, 10, 1.0));
        adam.zero_grad();
        (step == 1 ? first : last) = loss.item();
    }
    MESSAGE("loss " << first << " -> " << last);
    CHECK(std::isfinite(last));
    CHECK(last < 0.5f * first);
    // Generation ends each sentence at <끝> or after MAX_DIGITS + 1 tokens, and the score is
    // the share of sentences right.
    const auto out = rnn_greedy_decode(m, numbers);
    REQUIRE(out.size() == numbers.size());
    int right = 0;
    for (size_t i = 0; i < out.size(); i++) {
        CHECK(!out[i].empty());
        CHECK(out[i].size() <= size_t(translate::MAX_DIGITS + 1));
        for (size_t k = 0; k + 1 < out[i].size(); k++) CHECK(out[i][k] != translate::EOS);
        right += translate::exact(numbers[i], out[i]);
    }
    CHECK(rnn_exact_match(m, numbers) == doctest::Approx(100.0 * right / 8));
}

TEST_CASE("ablations: head masks remove heads, the unscaled switch drops 1/sqrt(d_k)") {
    torch_rng::manual_seed(4);
    MultiHeadAttention mha(8, 2);
    Tensor x = Tensor::from(torch_rng::randn(3 * 8), {1, 3, 8});
    NoGradGuard no_grad;
    // The heads by hand: q, k, v of head k are columns 4k..4k+3 of each third of x W_qkv^T.
    Tensor qkv = mha.qkv(x);  // (1, 3, 24)
    auto head = [&](int part, int k) {
        std::vector<float> v;
        for (int t = 0; t < 3; t++)
            for (int c = 0; c < 4; c++)
                v.push_back(qkv.data()[t * 24 + part * 8 + k * 4 + c]);
        return Tensor::from(v, {3, 4});
    };
    auto by_hand = [&](bool scaled, const std::vector<float>& keep) {
        std::vector<float> concat(3 * 8);
        for (int k = 0; k < 2; k++) {
            Tensor s = matmul(head(0, k), transpose(head(1, k), 0, 1));
            if (scaled) s = s / 2.0f;                       // sqrt(d_k = 4)
            Tensor o = matmul(softmax(s, -1), head(2, k));  // (3, 4)
            for (int t = 0; t < 3; t++)
                for (int c = 0; c < 4; c++)
                    concat[t * 8 + k * 4 + c] = o.data()[t * 4 + c] * keep[k];
        }
        return mha.proj(Tensor::from(concat, {1, 3, 8}));
    };
    CHECK(testutil::allclose(mha(x).to_vector(), by_hand(true, {1, 1}).to_vector(), 1e-6, 1e-5));
    set_head_mask(mha, {0.0f, 1.0f});
    CHECK(testutil::allclose(mha(x).to_vector(), by_hand(true, {0, 1}).to_vector(), 1e-6, 1e-5));
    set_head_mask(mha, {1.0f, 1.0f});
    set_score_scaling(mha, false);
    CHECK(testutil::allclose(mha(x).to_vector(), by_hand(false, {1, 1}).to_vector(), 1e-6, 1e-5));
    CHECK_FALSE(
        testutil::allclose(mha(x).to_vector(), by_hand(true, {1, 1}).to_vector(), 1e-6, 1e-5));
    set_score_scaling(mha, true);  // the hook goes
    CHECK(mha.qkv.hooks.empty());
    CHECK_THROWS_AS(set_head_mask(mha, {1.0f}), std::invalid_argument);
    // set_head_mask and set_score_scaling reach every attention of an encoder-decoder: W_O's
    // pre-hook scales each head's 4 columns, the Q projection's hook the Q columns by sqrt(4).
    translate::ModelConfig c;
    c.layers = 2, c.d_model = 8, c.heads = 2;
    auto m = translate::make_model(c);
    CHECK(head_count(*m) == 12);
    std::vector<float> keep(12, 1.0f);
    keep[11] = 0;  // cross-attention, layer 2, head 2
    set_head_mask(*m, keep);
    const Tensor ones8 = Tensor::ones({1, 8}), ones24 = Tensor::ones({1, 24});
    // Compared entry by entry: GCC 12 at -O2 -march=native (Zen 4) builds the literal
    // std::vector<float>{1, 1, 1, 1, 0, 0, 0, 0} as eight ones in some contexts.
    const std::vector<float> cross =
        m->decoder[1]->cross_attn.proj.hooks.run_pre(ones8).to_vector();
    REQUIRE(cross.size() == 8);
    for (size_t j = 0; j < 8; j++)
        CHECK(cross[j] == (j < 4 ? 1.0f : 0.0f));
    CHECK(m->encoder[0]->attn.proj.hooks.run_pre(ones8).to_vector() == std::vector<float>(8, 1));
    CHECK_THROWS_AS(set_head_mask(*m, std::vector<float>(11, 1.0f)), std::invalid_argument);
    set_score_scaling(*m, false);
    CHECK(m->decoder[1]->cross_attn.q.hooks.run(ones8, ones8).to_vector() ==
          std::vector<float>(8, 2));
    std::vector<float> q_only(24, 1.0f);
    std::fill(q_only.begin(), q_only.begin() + 8, 2.0f);
    CHECK(m->encoder[1]->attn.qkv.hooks.run(ones8, ones24).to_vector() == q_only);
    CHECK(m->decoder[0]->self_attn.qkv.hooks.run(ones8, ones24).to_vector() == q_only);
}

TEST_CASE("ablations: the variants are the operations they name, bit for bit, gradients too") {
    // The switches written into the attention (q * sqrt(d_k) before section 1's attention, each
    // head's output times its mask entry before the concat) against the hooks on the listing:
    // the same outputs and the same gradients, to the bit.
    torch_rng::manual_seed(7);
    const int d = 12, h = 3, dh = 4;
    MultiHeadAttention mha(d, h);
    const std::vector<float> keep = {1.0f, 0.0f, 0.5f};
    const Tensor x0 = Tensor::from(torch_rng::randn(2 * 5 * d), {2, 5, d});
    const Tensor mask = causal_mask(5);
    auto grads = [&](const Tensor& x, const Tensor& y) {
        sum(y * y).backward();
        std::vector<std::vector<float>> g = {x.grad().to_vector(),
                                             mha.qkv.weight.grad().to_vector(),
                                             mha.proj.weight.grad().to_vector(), y.to_vector()};
        mha.zero_grad();
        return g;
    };
    const std::vector<float> plain = mha(x0, mask).to_vector();  // the listing, no hooks
    Tensor x = x0.detach().requires_grad_();
    Tensor qkv5 = permute(reshape(mha.qkv(x), {2, 5, 3, h, dh}), {2, 0, 3, 1, 4});
    Tensor q = select(qkv5, 0) * std::sqrt(float(dh));  // the division, undone
    Tensor o = scaled_dot_product_attention(q, select(qkv5, 1), select(qkv5, 2), mask).first;
    o = o * reshape(Tensor::from(keep, {h}), {1, h, 1, 1});
    const auto written = grads(x, mha.proj(reshape(transpose(o, 1, 2), {2, 5, d})));
    set_score_scaling(mha, false);
    set_head_mask(mha, keep);
    Tensor x2 = x0.detach().requires_grad_();
    const auto hooked = grads(x2, mha(x2, mask));
    for (size_t i = 0; i < written.size(); i++) {
        CAPTURE(i);
        CHECK(hooked[i] == written[i]);
    }
    CHECK(written[3] != plain);  // the switches do something
}

TEST_CASE("ablations: without residuals every Post-LN block is LayerNorm(Sublayer(x))") {
    // The hooks against the blocks written without the residual: the same logits and the same
    // gradients, to float rounding (the block adds x + (Sublayer(x) - x)); with the residuals
    // back, the listing to the bit; Pre-LN refuses.
    torch_rng::manual_seed(5);
    EncoderDecoder m(14, 13, 16, 2, 1, LnPlacement::PostLN);
    const std::vector<int64_t> src = {3, 4, 5, 6, 7, 8}, tgt = {1, 2, 3, 4};  // (2, 3), (2, 2)
    auto run = [&](bool hooked) {
        Tensor logits;
        if (hooked) {
            logits = m.decode(tgt, {2, 2}, m.encode(src, {2, 3}));
        } else {  // the blocks without their residuals, written out
            const Block& e = *m.encoder[0];
            const DecoderBlock& d = *m.decoder[0];
            Tensor x = m.embed(m.src_embed, src, {2, 3});
            x = e.ln1(e.attn(x));
            const Tensor memory = e.ln2(e.ff(x));
            Tensor y = m.embed(m.tgt_embed, tgt, {2, 2});
            y = d.ln1(d.self_attn(y, causal_mask(2)));
            y = d.ln2(d.cross_attn(y, memory));
            logits = m.head(d.ln3(d.ff(y)));
        }
        sum(logits * logits).backward();
        std::vector<std::vector<float>> out = {logits.to_vector()};
        for (const auto& [name, p] : m.named_parameters())
            out.push_back(p.grad().to_vector());
        m.zero_grad();
        return out;
    };
    const std::vector<std::vector<float>> listing = run(true);
    const std::vector<std::vector<float>> written = run(false);
    set_residuals(m, false);
    const std::vector<std::vector<float>> hooked = run(true);
    // Each tensor to float rounding: its largest difference within 1e-5 of its largest value
    // (float32 rounds at 6e-8; the sums that cancel carry larger terms than they leave: the
    // largest ratio here is 1.2e-6).
    for (size_t i = 0; i < written.size(); i++) {
        double diff = 0, most = 0;
        for (size_t j = 0; j < written[i].size(); j++) {
            diff = std::max(diff, double(std::fabs(hooked[i][j] - written[i][j])));
            most = std::max(most, double(std::fabs(written[i][j])));
        }
        CAPTURE(i);
        CHECK(diff <= 1e-5 * most);
    }
    CHECK(hooked[0] != listing[0]);  // the switch does something
    set_residuals(m, true);
    CHECK(run(true) == listing);
    EncoderDecoder pre(14, 13, 16, 2, 1, LnPlacement::PreLN);
    CHECK_THROWS_AS(set_residuals(pre, false), std::invalid_argument);
    set_residuals(pre, true);  // nothing to restore
}

TEST_CASE("ablations: the probe reads the weights section 1's attention computed, bit for bit") {
    // MultiHeadAttention and CrossAttention (memory = x, section 3's weights split into q and
    // kv): the probe's weights are the listing's own, recomputed by hand; with the scaling off
    // the probe sees the scores the attention saw; and the probe leaves no hook behind.
    torch_rng::manual_seed(4);
    const int d = 12, h = 3, dh = 4;
    MultiHeadAttention mha(d, h);
    CrossAttention ca(d, h);
    testutil::copy_weights(mha, ca);
    const Tensor x = Tensor::from(torch_rng::randn(2 * 5 * d), {2, 5, d});
    const Tensor pad = Tensor::from({0, 0, 0, 0, 1, 0, 0, 0, 1, 1}, {2, 1, 1, 5});
    NoGradGuard no_grad;
    auto by_hand = [&](float q_scale, const Tensor& mask) {  // (2, h, 5, 5), qkv's hooks aside
        Tensor qkv5 = permute(reshape(linear(x, mha.qkv.weight, Tensor()), {2, 5, 3, h, dh}),
                              {2, 0, 3, 1, 4});
        return scaled_dot_product_attention(select(qkv5, 0) * q_scale, select(qkv5, 1),
                                            select(qkv5, 2), mask)
            .second.to_vector();
    };
    for (bool scaled : {true, false}) {
        CAPTURE(scaled);
        set_score_scaling(mha, scaled);
        set_score_scaling(ca, scaled);
        const float q_scale = scaled ? 1.0f : std::sqrt(float(dh));
        {
            AttentionProbe p(mha), pc(ca);
            CHECK_THROWS_AS(p.weights(), std::logic_error);
            mha(x, pad);
            ca(x, x, pad);
            CHECK(p.weights(pad).to_vector() == by_hand(q_scale, pad));
            CHECK(testutil::allclose(pc.weights(pad).to_vector(), p.weights(pad).to_vector(), 1e-6,
                                     0));
            CHECK(p.weights(pad).shape() == Shape{2, h, 5, 5});
        }
        CHECK(mha.qkv.hooks.post.size() == (scaled ? 0u : 1u));
        CHECK(ca.kv.hooks.empty());
    }
    // A head removed from both: still the same module.
    const std::vector<float> plain = mha(x).to_vector();
    set_head_mask(mha, {1.0f, 0.0f, 1.0f});
    set_head_mask(ca, {1.0f, 0.0f, 1.0f});
    CHECK(testutil::allclose(ca(x, x).to_vector(), mha(x).to_vector(), 1e-5, 0));
    CHECK_FALSE(testutil::allclose(mha(x).to_vector(), plain, 1e-3, 0));
}

TEST_CASE("ablations: without its encoder-decoder heads a trained decoder cannot read the source") {
    // A small model trained briefly reads the first digit of most numbers; with every cross-
    // attention head removed (or its output replaced by the batch mean) it reads it no better
    // than guessing the commonest first digit.
    translate::ModelConfig c;
    c.layers = 1, c.d_model = 32, c.heads = 2;
    auto m = translate::make_model(c);
    translate::TrainConfig tc;
    tc.steps = 300, tc.batch = 32, tc.warmup = 30;
    const translate::Split split = translate::split_numbers();
    translate::train(*m, split.train, split.heldout, tc);
    const std::vector<int64_t> test(split.heldout.begin(), split.heldout.begin() + 300);
    const double intact = first_digit(*m, test, FirstStep::intact);
    const double mean_cross = first_digit(*m, test, FirstStep::cross_mean);
    std::vector<float> keep(size_t(head_count(*m)), 1.0f);
    for (int i = 2 * c.heads; i < 3 * c.heads; i++)
        keep[size_t(i)] = 0.0f;  // every cross head
    set_head_mask(*m, keep);
    const double masked = first_digit(*m, test, FirstStep::intact);
    MESSAGE("first digit right: intact " << intact << "%, cross heads masked " << masked
                                         << "%, cross output averaged " << mean_cross << "%");
    CHECK(intact >= 60);
    CHECK(masked <= 25);
    CHECK(mean_cross <= 25);

    // Pruning chooses on validation only. Validation A and test B hold different numbers; the
    // same A with another test set C gives the same single-head scores, order and count, while
    // another validation set changes the scores the order is sorted by.
    set_head_mask(*m, std::vector<float>(size_t(head_count(*m)), 1.0f));
    const std::vector<int64_t> A(split.heldout.begin(), split.heldout.begin() + 150),
        B(split.heldout.begin() + 150, split.heldout.begin() + 300),
        C(split.train.begin(), split.train.begin() + 150);
    const Pruning ab = prune(*m, A, B), ac = prune(*m, A, C), cb = prune(*m, C, B);
    CHECK(ab.alone_validation == ac.alone_validation);
    CHECK(ab.order == ac.order);
    CHECK(ab.curve_validation == ac.curve_validation);
    CHECK(ab.can_go == ac.can_go);
    CHECK(ab.curve_test != ac.curve_test);  // the test sets differ, and so do their scores
    CHECK(ab.alone_validation != cb.alone_validation);  // the order reads the validation set
    CHECK(ab.curve_test.size() == size_t(head_count(*m)));
    std::vector<int> sorted(ab.order.size());
    std::iota(sorted.begin(), sorted.end(), 0);
    std::stable_sort(sorted.begin(), sorted.end(), [&](int a, int b) {
        return ab.alone_validation[size_t(a)] > ab.alone_validation[size_t(b)];
    });
    CHECK(ab.order == sorted);  // least harmful on validation first
    // The count: the longest prefix of the order that costs validation under 1 point.
    int can_go = 0;
    while (can_go < int(ab.curve_validation.size()) &&
           ab.curve_validation[size_t(can_go)] > ab.full_validation - 1)
        can_go++;
    CHECK(ab.can_go == can_go);
    CHECK(ab.third_test == ab.curve_test[size_t(third_of_heads(head_count(*m)) - 1)]);
}

TEST_CASE(
    "ablations: a learned position table has no vector past its rows, and rows no "
    "sentence reached keep their start") {
    translate::ModelConfig c;
    c.layers = 1, c.d_model = 16, c.heads = 2, c.positions = translate::Positions::learned;
    auto m = translate::make_model(c);
    const auto* learned = dynamic_cast<const translate::LearnedPositionsModel*>(m.get());
    REQUIRE(learned);
    const Embedding &src_pos = learned->src_pos, &tgt_pos = learned->tgt_pos;
    CHECK(src_pos.weight.shape() == Shape{LEARNED_POSITIONS, 16});
    // Its parameters: the encoder-decoder's, with the two tables before the head.
    const NamedTensors named = m->named_parameters();
    REQUIRE(named.size() >= 4);
    CHECK(named[named.size() - 4].first == "src_pos.weight");
    CHECK(named[named.size() - 3].first == "tgt_pos.weight");
    CHECK(named.back().first == "head.bias");
    const std::vector<int64_t> long_src(size_t(LEARNED_POSITIONS) + 1, 3);
    CHECK_THROWS_AS(m->encode(long_src, {1, LEARNED_POSITIONS + 1}), std::out_of_range);
    CHECK_NOTHROW(
        m->encode(std::vector<int64_t>(size_t(LEARNED_POSITIONS), 3), {1, LEARNED_POSITIONS}));
    // Training on numbers below 100 (at most 3 syllables, 구십구; 2 digits after <시작>) moves
    // rows 0..2 of each table only; the rest is bit for bit what it was.
    const std::vector<float> src0 = src_pos.weight.to_vector(), tgt0 = tgt_pos.weight.to_vector();
    std::vector<int64_t> small;
    for (int64_t n = 1; n < 100; n++)
        small.push_back(n);
    translate::TrainConfig tc;
    tc.steps = 5, tc.batch = 16, tc.warmup = 5, tc.max_digits = 2;
    translate::train(*m, small, {}, tc);
    auto row_moved = [](const Tensor& w, const std::vector<float>& before, int64_t r) {
        for (int64_t k = 0; k < w.size(1); k++)
            if (w.data()[r * w.size(1) + k] != before[size_t(r * w.size(1) + k)]) return true;
        return false;
    };
    for (int64_t r = 0; r < LEARNED_POSITIONS; r++) {
        CAPTURE(r);
        CHECK(row_moved(src_pos.weight, src0, r) == (r < 3));
        CHECK(row_moved(tgt_pos.weight, tgt0, r) == (r < 3));
    }
}

TEST_CASE(
    "ablations: the job runner returns each job's numbers exactly, in order, and names "
    "a failure") {
    std::vector<Job> jobs;
    for (int k = 0; k < 5; k++)
        jobs.push_back({"job" + std::to_string(k), double(k), [k](Progress& p) {
                            Record r;
                            for (int s = 1; s <= 3; s++)
                                p(s, 3);
                            r.put("k", k);
                            r.put("odd", {0.1, 1.0 / 3.0, -2e-310, INFINITY, 1e300});
                            r.put("empty", std::vector<double>{});
                            return r;
                        }});
    std::vector<Record> out = run_jobs(jobs, 2, false);
    REQUIRE(out.size() == 5);
    for (int k = 0; k < 5; k++) {
        CHECK(out[size_t(k)].value("k") == k);
        CHECK(out[size_t(k)].get("odd") ==
              std::vector<double>{0.1, 1.0 / 3.0, -2e-310, INFINITY, 1e300});
        CHECK(out[size_t(k)].get("empty").empty());
    }
    CHECK_THROWS_AS(out[0].get("missing"), std::runtime_error);
    jobs.push_back({"thrower", 1, [](Progress&) -> Record { throw std::runtime_error("no"); }});
    jobs.push_back({"crasher", 1, [](Progress&) -> Record {
                        std::signal(SIGABRT, SIG_DFL);  // not doctest's handler: a plain crash
                        std::abort();
                        return {};
                    }});
    try {
        run_jobs(jobs, 3, false);
        FAIL("failed jobs were not reported");
    } catch (const std::runtime_error& e) {
        const std::string msg = e.what();
        CHECK_MESSAGE(msg.find("thrower: no") != std::string::npos, msg);
        CHECK_MESSAGE(msg.find("crasher: killed by signal") != std::string::npos, msg);
    }
}

TEST_CASE("ablations: the table: every comparison names its runs, its label and its figure") {
    std::set<std::string> runs, claims, in_claims, used_keys;
    for (const RunSpec& r : RUNS) {
        CHECK_MESSAGE(runs.insert(r.name).second, r.name);  // each run declared once
        CHECK(&run_spec(r.name) == &r);
        CHECK(r.steps >= r.warmup);
        // The neighbour task reads neither a variant nor lr, the LSTM no variant: there a
        // record would declare what its training did not do.
        if (r.recipe == train_neighbour || r.recipe == train_lstm)
            CHECK_MESSAGE(!r.variant, r.name);
        if (r.recipe == train_neighbour) CHECK_MESSAGE(r.lr == 1, r.name);
        // Every key declared in KEYS: its length, its range and what it measures.
        for (const char* key : r.keys) {
            CAPTURE(key);
            CHECK_NOTHROW(key_spec(key));
            used_keys.insert(key);
        }
    }
    for (const auto& [key, value] : run_settings(RUNS[0], 1.0, 0))
        used_keys.insert(key);
    for (const KeySpec& k : KEYS) {
        CAPTURE(k.name);
        CHECK(used_keys.count(k.name));  // no key declared that no run writes
        CHECK(std::string(k.meaning).size() > 10);
        CHECK(&key_spec(k.name) == &k);  // each declared once
    }
    CHECK_THROWS_AS(run_spec("nowhere"), std::invalid_argument);
    for (const ClaimSpec& c : CLAIMS) {
        CAPTURE(c.name);
        CHECK(claims.insert(c.name).second);
        CHECK(bool(c.draw));  // every claim has its figure
        CHECK(bool(c.report));  // and its report
        for (const char* run : c.runs) {
            CHECK_MESSAGE(runs.count(run), run);
            in_claims.insert(run);
        }
    }
    CHECK(in_claims == runs);  // every run is read by some claim
    // A run:key of a claim's: one of its runs, a key that run declares.
    auto check_run_key = [&](const ClaimSpec& claim, const std::string& run_key) {
        CAPTURE(run_key);
        const std::string run = run_key.substr(0, run_key.find(':')),
                          key = run_key.substr(run_key.find(':') + 1);
        REQUIRE(runs.count(run));
        const std::vector<const char*>& keys = run_spec(run).keys;
        CHECK(std::find(keys.begin(), keys.end(), key) != keys.end());
        CHECK(std::find(claim.runs.begin(), claim.runs.end(), run) != claim.runs.end());
    };
    for (const ClaimSpec& c : CLAIMS) {
        CHECK(&claim_spec(c.name) == &c);
        for (const Setting& s : c.settings)
            check_run_key(c, s.run_key);
    }
    CHECK_THROWS_AS(claim_spec("nowhere"), std::invalid_argument);
    for (const ClaimSpec& c : CLAIMS) {
        std::set<std::string> labels;
        for (const ComparisonSpec& k : COMPARISONS)
            if (k.claim == std::string(c.name)) CHECK(labels.insert(k.label).second);
        CHECK_MESSAGE(!labels.empty(), c.name);  // every claim has a comparison
    }
    for (const ComparisonSpec& k : COMPARISONS) {
        CAPTURE(k.variant);
        CHECK(std::string(k.label) != "");
        REQUIRE(claims.count(k.claim));
        if (k.weight != 0)
            check_run_key(claim_spec(k.claim), k.baseline);
        else
            CHECK(std::string(k.baseline).empty());  // the variant alone
        check_run_key(claim_spec(k.claim), k.variant);
        CHECK(k.floor >= 0);
    }
    // The figure's columns are named by each comparison's own label, whatever the order.
    std::vector<Comparison> reversed;
    for (auto it = COMPARISONS.rbegin(); it != COMPARISONS.rend(); ++it)
        reversed.push_back(compare(*it, {1, 2}, {3, 5}));
    for (const ClaimSpec& c : CLAIMS) {
        std::vector<std::string> expect;
        for (const Comparison& k : reversed)
            if (k.spec->claim == std::string(c.name) && std::string(k.spec->unit) == "%p")
                expect.push_back(k.spec->label);
        CHECK(comparison_labels(reversed, c.name) == expect);
    }
    ComparisonSpec renamed = COMPARISONS[0];
    renamed.label = "renamed";
    CHECK(comparison_labels({compare(renamed, {1, 2}, {3, 5})}, renamed.claim) ==
          std::vector<std::string>{"renamed"});
    // A fresh block trains on --seed's seeds plus its offset, and its records say so.
    CHECK(run_settings(run_spec("nb-4-fresh"), 1.0, 3).at(0) ==
          std::pair<std::string, double>{"seed", 2003});
    CHECK(run_settings(run_spec("nb-4"), 1.0, 3).at(0) ==
          std::pair<std::string, double>{"seed", 3});
    // The jobs: every run for every seed, named run/seed, the budget the table gives.
    const std::vector<Job> jobs = all_jobs(0.5, {3, 4});
    REQUIRE(jobs.size() == 2 * RUNS.size());
    for (size_t i = 0; i < jobs.size(); i++)
        CHECK(jobs[i].name == std::string(RUNS[i % RUNS.size()].name) + "/" +
                                  std::to_string(3 + int(i / RUNS.size())));
    CHECK(steps_of("scaled-256", 0.5) == 200);
    CHECK(warmup_of("warm-post", 1) == 100);
}

TEST_CASE("ablations: the fixed sets of the positions experiment") {
    const LengthSplit s = length_split();
    CHECK(s.heldout.size() == 1000);
    CHECK(s.train.size() == 8999);
    CHECK(s.five_digit.size() == 1000);
    std::set<int64_t> seen(s.train.begin(), s.train.end());
    for (int64_t n : s.heldout)
        CHECK(seen.insert(n).second);  // disjoint, all below 10000
    CHECK(*seen.rbegin() == 9999);
    CHECK(*seen.begin() == 1);
    for (int64_t n : s.five_digit)
        CHECK((n >= 10000 && n <= 99999));
    CHECK(length_split().five_digit == s.five_digit);  // fixed: the same every time
    CHECK(scaled_steps(2000, 0.05) == 100);
    CHECK(scaled_steps(3, 0.01) == 1);
}

TEST_CASE("ablations: the splits are disjoint, and none scores chapter 7's tuned numbers") {
    const ThreeWay t = three_way_split();
    const std::vector<int64_t> tuned_list = translate::split_numbers().heldout;
    const std::set<int64_t> tuned(tuned_list.begin(), tuned_list.end());
    CHECK(t.tuned == tuned_list);
    CHECK(t.validation.size() == 1000);
    CHECK(t.test.size() == 1000);
    std::set<int64_t> seen;
    for (const auto* set : {&t.train, &t.validation, &t.test, &t.tuned})
        for (int64_t n : *set)
            CHECK(seen.insert(n).second);
    CHECK(seen.size() == 99999);
    CHECK(t.never_train().size() == 3000);
    // §4's sets score none of the tuned numbers either.
    const LengthSplit ls = length_split();
    for (const auto* set : {&ls.heldout, &ls.five_digit})
        for (int64_t n : *set)
            CHECK(tuned.count(n) == 0);
    // §4's second experiment: training sources at most POS2_MAX_SYLLABLES long, scored longer.
    const SourceLengthSplit s = source_length_split();
    CHECK(s.long_test.size() == 1000);
    std::set<int64_t> excluded(s.excluded.begin(), s.excluded.end());
    for (int64_t n : s.train) {
        CHECK(int(translate::source_ids(n).size()) <= POS2_MAX_SYLLABLES);
        CHECK(excluded.count(n) == 0);
    }
    for (int64_t n : s.long_test) {
        CHECK(int(translate::source_ids(n).size()) > POS2_MAX_SYLLABLES);
        CHECK(excluded.count(n) == 1);
        CHECK(tuned.count(n) == 0);
    }
    for (int64_t n : t.never_train())
        CHECK(excluded.count(n) == 1);
    CHECK(!s.in_range_test.empty());
    for (int64_t n : s.in_range_test) {
        CHECK(int(translate::source_ids(n).size()) <= POS2_MAX_SYLLABLES);
        CHECK(std::find(t.test.begin(), t.test.end(), n) != t.test.end());
    }
    // §3's second experiment: the targets (the class of x_{i-1} - x_{i+1}, cyclic: y + 9), and
    // test and validation sequences that are all different.
    CHECK(neighbour_targets({3, 1, 4, 1, 5, 9, 2, 6}) ==
          std::vector<int64_t>{14, 8, 9, 8, 1, 12, 12, 8});
    CHECK(neighbour_targets({9, 0, 0, 0, 0, 0, 0, 0}) ==
          std::vector<int64_t>{9, 18, 9, 9, 9, 9, 9, 0});  // the extremes: 0 - 9 and 9 - 0
    const std::vector<int64_t> nb = neighbour_test_set(), nbv = neighbour_validation_set();
    CHECK(nb.size() == size_t(1000 * NB_LENGTH));
    CHECK(nbv.size() == size_t(1000 * NB_LENGTH));
    std::set<std::vector<int64_t>> seqs;
    for (const auto* set : {&nb, &nbv})
        for (size_t i = 0; i < set->size(); i += NB_LENGTH)
            seqs.insert(std::vector<int64_t>(set->begin() + long(i),
                                             set->begin() + long(i + NB_LENGTH)));
    CHECK(seqs.size() == 2000);  // no sequence twice, none in both sets
    CHECK(neighbour_validation_set() == nbv);  // fixed
    CHECK(seed_list(100, 3) == std::vector<int>{100, 101, 102});
}

TEST_CASE("ablations: the t interval, clipped, and floored by the items' binomial spread") {
    CHECK(t_975(1) == 12.706);
    CHECK(t_975(4) == 2.776);
    CHECK(t_975(30) == 2.042);
    CHECK_THROWS_AS(t_975(0), std::invalid_argument);
    // mean ± t_{0.975, n-1} s / sqrt(n): {1, 2, 3}: mean 2, s = 1, half-width 4.303 / sqrt(3).
    const Interval ci = t_interval({1, 2, 3});
    CHECK(ci.n == 3);
    CHECK(ci.mean == doctest::Approx(2));
    CHECK(ci.high - ci.mean == doctest::Approx(4.303 / std::sqrt(3.0)));
    CHECK(ci.mean - ci.low == doctest::Approx(4.303 / std::sqrt(3.0)));
    CHECK(std::isinf(t_interval({5}).low));
    // Equal values: the floor is the spread.
    const Interval floored = t_interval({4, 4, 4}, 2.0);
    CHECK(floored.high - floored.mean == doctest::Approx(4.303 * 2 / std::sqrt(3.0)));
    const Interval c = clipped({5, -3, 12, 4}, 0, 10);
    CHECK((c.low == 0 && c.high == 10 && c.mean == 5));
    // Agresti-Coull: 0 of 1000 items is not a certain 0.
    CHECK(binomial_sd(0, 1000) == doctest::Approx(100 * std::sqrt(2.0 / 1004 * 1002 / 1004 /
                                                                  1000)));
    CHECK(binomial_sd(50, 1000) == doctest::Approx(100 * std::sqrt(502.0 / 1004 * 502 / 1004 /
                                                                   1000)));
    CHECK(rule_text({Side::below, -20}) == "<-20");
    CHECK(rule_text({Side::above, -1}) == ">-1");
    CHECK(rule_text({Side::within, 2}) == "±2");
}

namespace {

// The sign-flip p by enumerating every pattern, as its definition reads.
double sign_flip_by_hand(const std::vector<double>& x, double center) {
    const size_t n = x.size();
    double observed = 0;
    for (double v : x)
        observed += v - center;
    size_t reach = 0;
    for (uint64_t mask = 0; mask < (uint64_t(1) << n); mask++) {
        double s = 0;
        for (size_t i = 0; i < n; i++)
            s += (mask >> i & 1 ? -1 : 1) * (x[i] - center);
        reach += std::fabs(s) >= std::fabs(observed) - 1e-9;
    }
    return double(reach) / double(uint64_t(1) << n);
}

}  // namespace

TEST_CASE("ablations: the exact tests against hand counts and scipy's values") {
    // Sign flips: five differences all one way, 2 of 32 patterns reach the observed |sum|.
    CHECK(sign_flip_p({3, 1, 4, 1, 5}, 0) == 2.0 / 32);
    CHECK(sign_flip_p({-31, -29, -33, -30, -32}, -20) == 2.0 / 32);
    CHECK(sign_flip_p({-31, -29, -33, -30, -32, -28, -35, -40}, -20) == 2.0 / 256);
    CHECK(sign_flip_p({0, 0, 0}, 0) == 1.0);       // nothing to flip
    CHECK(sign_flip_p({-20, -20}, -20) == 1.0);    // every value at the center
    CHECK(sign_flip_p({}, 0) == 1.0);
    CHECK(sign_flip_p({1, -1}, 0) == 1.0);
    // {2, -1, 3}: sums 4 (observed), 6, 2, 0 and their negatives: |sum| >= 4 in 4 of 8.
    CHECK(sign_flip_p({2, -1, 3}, 0) == 4.0 / 8);
    torch_rng::Generator g(47);
    for (size_t n : {1, 2, 5, 9, 14, 19}) {  // odd and even halves; ties of equal magnitudes
        std::vector<double> x;
        for (size_t i = 0; i < n; i++)
            x.push_back(double(int(g.random64() % 21)) - 8);
        CAPTURE(n);
        CHECK(sign_flip_p(x, 1.5) == doctest::Approx(sign_flip_by_hand(x, 1.5)));
        CHECK(sign_flip_p(x, 0) == doctest::Approx(sign_flip_by_hand(x, 0)));
    }
    CHECK(sign_flip_p(std::vector<double>(30, 1.0), 0) == doctest::Approx(2.0 / (1 << 30)));
    // scipy.stats.binomtest(k, n, 0.5).pvalue and .proportion_ci(0.95, 'exact') (scipy 1.10.1).
    CHECK(binomial_p(0, 5) == doctest::Approx(0.0625));
    CHECK(binomial_p(5, 5) == doctest::Approx(0.0625));
    CHECK(binomial_p(3, 5) == doctest::Approx(1.0));
    CHECK(binomial_p(1, 10) == doctest::Approx(0.021484375));
    CHECK(binomial_p(7, 20) == doctest::Approx(0.26317596435546875));
    auto ci = binomial_interval(0, 5);
    CHECK((ci.first == 0 && ci.second == doctest::Approx(0.5218237501049814)));
    ci = binomial_interval(3, 5);
    CHECK(ci.first == doctest::Approx(0.14663279963467254));
    CHECK(ci.second == doctest::Approx(0.9472550494736843));
    ci = binomial_interval(1, 10);
    CHECK(ci.first == doctest::Approx(0.0025285785444625728));
    CHECK(ci.second == doctest::Approx(0.44501611702819543));
    CHECK(binomial_interval(5, 5).second == 1.0);
    // scipy.stats.fisher_exact([[a, n1 - a], [b, n2 - b]]), two-sided (scipy 1.10.1).
    CHECK(fisher_p(4, 4, 0, 4) == doctest::Approx(0.028571428571428567));
    CHECK(fisher_p(5, 5, 0, 5) == doctest::Approx(0.007936507936507938));
    CHECK(fisher_p(3, 5, 1, 5) == doctest::Approx(0.5238095238095238));
    CHECK(fisher_p(7, 10, 2, 10) == doctest::Approx(0.06977851869492736));
    CHECK(fisher_p(0, 5, 0, 5) == doctest::Approx(1.0));
    CHECK(fisher_p(10, 12, 3, 12) == doctest::Approx(0.012278137799742322));
    // Newcombe (1998), method 10, his example 56/70 against 48/80: 0.0524 to 0.3339.
    const auto nc = newcombe_interval(48, 80, 56, 70);
    CHECK(nc.first == doctest::Approx(0.0524).epsilon(0.001));
    CHECK(nc.second == doctest::Approx(0.3339).epsilon(0.001));
    CHECK(newcombe_interval(5, 5, 0, 5).first >= -1.0);
    // Holm by hand: sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1: 0.02, 0.03, 0.06, 0.04,
    // made non-decreasing: 0.02, 0.03, 0.06, 0.06.
    std::vector<double> adj = holm({0.01, 0.04, 0.03, 0.005});
    const std::vector<double> expect = {0.03, 0.06, 0.06, 0.02};
    for (size_t i = 0; i < adj.size(); i++)
        CHECK(adj[i] == doctest::Approx(expect[i]));
    // A family of 6 of which 4 ran: times 6, 5, 4, 3: 0.03, 0.05, 0.12, 0.12 (then capped at 1).
    adj = holm({0.01, 0.04, 0.03, 0.005}, 6);
    const std::vector<double> expect6 = {0.05, 0.12, 0.12, 0.03};
    for (size_t i = 0; i < adj.size(); i++)
        CHECK(adj[i] == doctest::Approx(expect6[i]));
    CHECK(holm({0.5, 0.9}) == std::vector<double>{1.0, 1.0});
}

TEST_CASE("ablations: verdicts on synthetic records: floors, spread, range and the family") {
    const Rule below{Side::below, -20}, above{Side::above, -1};
    // A planted diverged baseline (seed 2 scored 0, as a diverged run does): left out and
    // counted, not a difference of 0 - 0.
    const ComparisonSpec graded{"x", "§0", "exact_pp", "a:exact", "b:exact", below, "x",
                                Family::exploratory, Test::graded, 20};
    Comparison c = compare(graded, {90, 92, 0, 91, 89, 93, 90, 88},
                           {60, 61, 0, 62, 59, 60, 58, 61});
    CHECK(c.valid == std::vector<bool>{true, true, false, true, true, true, true, true});
    CHECK(c.valid_count == 7);
    CHECK(c.ci.n == 7);
    CHECK(c.ci.mean == doctest::Approx((-30 - 31 - 29 - 30 - 33 - 32 - 27) / 7.0));
    CHECK(c.p == doctest::Approx(2.0 / 128));
    CHECK(c.verdict == Verdict::reproduced);
    // A claim of "no drop" (above -1) whose baseline diverged on most seeds: 0 - 0 is no
    // support; too few valid seeds leave it undecided whatever the test.
    for (Test t : {Test::graded, Test::count, Test::fisher}) {
        CAPTURE(int(t));
        const ComparisonSpec no_drop{"x", "§0", "exact_pp", "a:exact", "b:exact", above, "x",
                                     Family::primary, t, 20};
        std::vector<Comparison> family = {
            compare(no_drop, {0, 0, 0, 0, 98, 97}, {0, 0, 0, 0, 98, 97})};
        judge_family(family, 1);
        CHECK(family[0].valid_count == 2);
        CHECK(family[0].too_few);
        CHECK(family[0].verdict == Verdict::undecided);
        CHECK(std::isnan(family[0].p_adj));
        const auto rows = summary_tsv(family);
        CHECK(rows.find("\tundecided\t2\t") != std::string::npos);
    }
    // The opening's clock: +inf seconds where a run never reached the level. A seed where the
    // LSTM never did is on the claim's side, one where only the Transformer never did is not,
    // and one where neither did is no evidence: left out.
    {
        const ComparisonSpec clock{"x", "§0", "seeds_pct", "a:s", "b:s", {Side::below, 0}, "x",
                                   Family::exploratory, Test::count, 0, 0.5};
        const double inf = INFINITY;
        c = compare(clock, {inf, 10, 10, inf, 8, 6}, {inf, 3, 2, 4, 3, inf});
        CHECK(c.valid == std::vector<bool>{false, true, true, true, true, true});
        CHECK(c.valid_count == 5);
        CHECK(c.successes_variant == 4);
        CHECK(c.p == doctest::Approx(binomial_p(4, 5)));
    }
    // Equal seeds: never a zero-width interval, never p = 0; five of them cannot decide.
    c = compare(graded, {50, 50, 50, 50, 50}, {20, 20, 20, 20, 20});
    CHECK(c.ci.high - c.ci.low > 0.5);
    CHECK(c.p == 2.0 / 32);
    CHECK(c.verdict == Verdict::undecided);
    c = compare(graded, {0, 0, 0, 0, 0}, {0, 0, 0, 0, 0});  // no baseline learned
    CHECK(c.verdict == Verdict::undecided);
    CHECK(c.valid_count == 0);
    const ComparisonSpec zero{"x", "§0", "exact_pp", "a:exact", "b:exact", below, "x"};
    c = compare(zero, {0, 0, 0, 0, 0}, {0, 0, 0, 0, 0});  // no floor: 0 - 0 everywhere
    CHECK(c.ci.high > c.ci.low);
    CHECK(c.p == 2.0 / 32);  // five zeros, all above -20
    CHECK(c.verdict == Verdict::undecided);
    // The interval stays in the range the mean can take: variant in 0..100, so the mean
    // difference in [-mean(baseline), 100 - mean(baseline)].
    c = compare(graded, {99, 99.5, 98, 99.8, 97}, {99, 2, 98, 99.8, 97});
    const double mb = (99 + 99.5 + 98 + 99.8 + 97) / 5;
    CHECK(t_interval(c.diff).high > 100 - mb);  // the unclipped one leaves it
    CHECK(c.ci.high <= 100 - mb);
    CHECK(c.ci.low >= -mb);
    c = compare(graded, {30, 25, 40, 35, 33}, {0, 0, 0, 0, 30});
    CHECK(t_interval(c.diff).low < -(30 + 25 + 40 + 35 + 33) / 5.0);
    CHECK(c.ci.low >= -(30 + 25 + 40 + 35 + 33) / 5.0);
    // Seed counts: the share's interval is Clopper-Pearson's, in 0..100.
    const ComparisonSpec count{"x", "§0", "seeds_pct", "a:exact", "b:exact", above, "x",
                               Family::exploratory, Test::count, 20};
    c = compare(count, {97, 99, 99, 96, 99}, {95, 2, 99, 96, 99});
    CHECK(c.successes_variant == 3);
    CHECK(c.ci.mean == doctest::Approx(60));
    CHECK(c.ci.low == doctest::Approx(14.663279963467254));
    CHECK(c.p == doctest::Approx(1.0));
    // Half the baseline, seed by seed: 0.1 - 65.4 / 2 < 0 and so on.
    ComparisonSpec half = count;
    half.rule = {Side::below, 0};
    half.weight = 0.5;
    c = compare(half, {65.4, 53.6, 43.9, 53.2, 63.1}, {0.1, 0, 0, 30, 0});
    CHECK(c.diff[0] == doctest::Approx(0.1 - 32.7));
    CHECK(c.successes_variant == 4);  // 30 > 53.2 / 2
    CHECK(summary_tsv({c}).find("\t0.5*a:exact\t") != std::string::npos);
    // The variant alone against an absolute level.
    ComparisonSpec alone = count;
    alone.baseline = "";
    alone.weight = 0;
    alone.rule = {Side::above, 50};
    c = compare(alone, {}, {3.7, 14.5, 8.8, 5.4, 7.7});
    CHECK(c.valid_count == 5);
    CHECK(c.successes_variant == 0);
    CHECK(c.verdict == Verdict::undecided);  // p = 2/32
    CHECK(summary_tsv({c}).find("\t-\tb:exact\t0.00\t0.00\t52.18\t5\t>50\tundecided\t5\t") !=
          std::string::npos);
    // Fisher: the seeds reaching 50, baseline's against the variant's; the failed baseline
    // seed is left out of both arms.
    const ComparisonSpec fisher{"x", "§0", "seeds_pp", "a:exact", "b:exact", {Side::below, 0},
                                "x", Family::primary, Test::fisher, 20};
    // An identity: printed, never judged.
    const ComparisonSpec identity{"x", "§0", "first_digit_pp", "a:exact", "b:exact", below,
                                  "x", Family::identity};
    std::vector<Comparison> family = {
        compare(fisher, {96.6, 95.7, 97.3, 94.2, 0}, {0, 0, 0, 0, 0}),
        compare(fisher, {52, 71, 93, 61, 96}, {0, 0, 0, 0, 0}),
        compare(identity, {100, 100, 100}, {12, 11, 12})};
    CHECK(family[0].valid_count == 4);
    CHECK(family[0].p == doctest::Approx(0.028571428571428567));
    CHECK(family[1].p == doctest::Approx(0.007936507936507938));
    CHECK(family[0].verdict == Verdict::reproduced);  // alone, each is below 5%
    CHECK(family[1].verdict == Verdict::reproduced);
    CHECK(family[2].verdict == Verdict::by_construction);
    // Holm over a family of 3 (one not run): 0.0079 * 3 = 0.024, then 0.0286 * 2 = 0.057.
    judge_family(family, 3);
    CHECK(family[1].p_adj == doctest::Approx(3 * 0.007936507936507938));
    CHECK(family[0].p_adj == doctest::Approx(2 * 0.028571428571428567));
    CHECK(family[1].verdict == Verdict::reproduced);
    CHECK(family[0].verdict == Verdict::undecided);
    CHECK(family[2].verdict == Verdict::by_construction);
    CHECK(std::isnan(family[2].p));
    CHECK(family[0].ci.low >= -100);
    // A comparison's TSV line, every field.
    const ComparisonSpec spec{"x", "§0", "exact_pp", "a:exact", "b:exact", below, "x"};
    c = compare(spec, {90, 80, 85}, {60, 55, 62});
    CHECK(c.diff == std::vector<double>{-30, -25, -23});
    CHECK(c.verdict == Verdict::undecided);  // three seeds: p = 2/8
    CHECK(summary_tsv({c}) == std::string(SUMMARY_HEADER) +
                                  "\nx\t§0\texact_pp\ta:exact\tb:exact\t-26.00\t-34.96\t-17.04\t3\t"
                                  "<-20\tundecided\t3\tsign-flip\texploratory\t0.2500\t-\n");
    CHECK(summary_tsv({family[2]}).find("\tholds_by_construction\t3\tidentity\tidentity\t-\t-\n") !=
          std::string::npos);
    CHECK(seeds_path("figures/8-ablations.tsv") == "figures/8-ablations-seeds.tsv");
    CHECK(seeds_path("a.b/summary") == "a.b/summary-seeds.tsv");
}

namespace {

std::vector<std::vector<std::string>> tsv_rows(const std::string& text) {
    std::vector<std::vector<std::string>> rows;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        std::vector<std::string> f;
        size_t from = 0;
        for (size_t tab; (tab = line.find('\t', from)) != std::string::npos; from = tab + 1)
            f.push_back(line.substr(from, tab - from));
        f.push_back(line.substr(from));
        rows.push_back(f);
    }
    return rows;
}

// A TSV row's verdict as its p decides it: p_adj for a primary comparison, p for an
// exploratory one; rejected at 5%, the direction from diff (a seed count's: its share).
void check_verdict(const std::vector<std::string>& f) {
    CAPTURE(f[0] + " " + f[4]);
    const std::string &verdict = f[10], &family = f[13];
    if (family == "identity") {
        CHECK(verdict == "holds_by_construction");
        return;
    }
    const std::string& p = family == "primary" ? f[15] : f[14];
    if (p == "-" || std::stod(p) >= 0.05) {
        CHECK(verdict == "undecided");
        return;
    }
    CHECK(std::stoi(f[11]) >= MIN_VALID_SEEDS);
    const double d = std::stod(f[5]);
    const std::string& th = f[9];
    const std::string pm = "±";
    bool claim_side = false;
    if (f[12] == "binomial") claim_side = d > 50;
    else if (th.rfind("<", 0) == 0) claim_side = d < std::stod(th.substr(1));
    else if (th.rfind(">", 0) == 0) claim_side = d > std::stod(th.substr(1));
    else if (th.rfind(pm, 0) == 0) claim_side = std::fabs(d) < std::stod(th.substr(pm.size()));
    CHECK(verdict == (claim_side ? "reproduced" : "not_reproduced"));
}

}  // namespace

TEST_CASE("ablations: --summary is the same file twice and whatever the runs at once") {
    const std::string dir = "/tmp/transformer-test-ablations-" + std::to_string(::getpid());
    // Every setting of two claims, and the neighbour task's two of the heads claim (--runs):
    // each kind of test (sign-flip, binomial, Fisher), whole reports and a partial one.
    const std::string args =
        "--only residual,positions,heads --runs warm-post,noresid-post,pos-sin,pos-learned,"
        "pos2-sin,pos2-learned,nb-4,nb-1 --seeds 2 --scale 0.01 --no-figures";
    auto one = testutil::run("8-ablations", args + " --jobs 1 --summary " + dir + "-1.tsv");
    auto two = testutil::run("8-ablations", args + " --jobs 2 --summary " + dir + "-2.tsv");
    REQUIRE_MESSAGE(one.exit_code == 0, one.err);
    REQUIRE_MESSAGE(two.exit_code == 0, two.err);
    const std::string a = testutil::read_file_abs(dir + "-1.tsv"),
                      b = testutil::read_file_abs(dir + "-2.tsv");
    std::remove((dir + "-1.tsv").c_str());
    std::remove((dir + "-2.tsv").c_str());
    CHECK(a == b);
    auto tables = [](const std::string& out) {  // without the first line and the wall time
        const size_t from = out.find('\n'), to = out.rfind("\n전체 시간: ");
        return out.substr(from, to - from);
    };
    CHECK(tables(one.out) == tables(two.out));
    CHECK(one.out.find("\n전체 시간: ") != std::string::npos);
    CHECK(one.err.empty());  // no progress line when stderr is not a terminal
    for (const char* claim : {"5절 잔차 연결", "4절 학습된 위치 벡터", "두 번째 실험: 숫자 8개"})
        CHECK(one.out.find(claim) != std::string::npos);
    CHECK(one.out.find("판정: ") != std::string::npos);
    CHECK(one.out.find("2절") == std::string::npos);  // only what --only asked for
    CHECK(one.out.find("7장의 모델(d_model = 64") == std::string::npos);  // nor base, heads-1
    const auto rows = tsv_rows(a);
    // The header, the neighbour task's comparison, 3 positions and the residual comparison.
    REQUIRE(rows.size() == 6);
    CHECK(rows[1][3] == "nb-4:digit_accuracy");
    CHECK(rows[0] == std::vector<std::string>{"claim", "section", "metric", "baseline", "variant",
                                              "diff", "ci_low", "ci_high", "seeds", "threshold",
                                              "verdict", "valid", "test", "family", "p",
                                              "p_adj"});
    for (size_t i = 1; i < rows.size(); i++) {
        CAPTURE(i);
        REQUIRE(rows[i].size() == 16);
        CHECK(rows[i][8] == "2");
        CHECK(std::stoi(rows[i][11]) <= 2);
        if (rows[i][11] != "0") {
            CHECK(std::stod(rows[i][6]) <= std::stod(rows[i][5]));
            CHECK(std::stod(rows[i][5]) <= std::stod(rows[i][7]));
        }
        CHECK(rows[i][10] == "undecided");  // two seeds are too few for any verdict
        check_verdict(rows[i]);
    }
    // Every seed's values beside the summary, the same whatever the runs at once.
    const std::string seeds1 = testutil::read_file_abs(dir + "-1-seeds.tsv"),
                      seeds2 = testutil::read_file_abs(dir + "-2-seeds.tsv");
    std::remove((dir + "-1-seeds.tsv").c_str());
    std::remove((dir + "-2-seeds.tsv").c_str());
    CHECK(seeds1 == seeds2);
    const auto seed_rows = tsv_rows(seeds1);
    REQUIRE(seed_rows.size() > 1);
    CHECK(seed_rows[0] == std::vector<std::string>{"claim", "run", "metric", "seed", "value"});
    std::vector<std::string> warm_post_seeds;
    for (const auto& row : seed_rows)
        if (row[0] == "residual" && row[1] == "warm-post" && row[2] == "exact")
            warm_post_seeds.push_back(row[3]);
    CHECK(warm_post_seeds == std::vector<std::string>{"0", "1"});
}

TEST_CASE("ablations: bad options are refused before any training") {
    auto bad = testutil::run("8-ablations", "--only sideways");
    CHECK(bad.exit_code == 2);
    CHECK(bad.err.find("unknown claim 'sideways'") != std::string::npos);
    CHECK(testutil::run("8-ablations", "--scale 0").exit_code == 2);
    for (const char* args : {"--runs sideways", "--only warmup --runs nb-4"}) {
        auto r = testutil::run("8-ablations", args);
        CAPTURE(args);
        CHECK(r.exit_code == 2);
        CHECK(r.out.empty());
        CHECK(r.err.find("--runs: '") != std::string::npos);
    }
    for (const char* args : {"--seed 2147483647", "--seed -1", "--seeds 0", "--seeds 31"}) {
        auto r = testutil::run("8-ablations", args);
        CAPTURE(args);
        CHECK(r.exit_code == 2);
        CHECK(r.out.empty());  // nothing trained
    }
    CHECK(testutil::run("8-ablations", "--seed 2147483647").err.find("--seed must be in") !=
          std::string::npos);
    // A figure folder that is a file, or a summary in a missing folder: found up front.
    const std::string file = "/tmp/transformer-test-ablations-file-" + std::to_string(::getpid());
    std::fclose(std::fopen(file.c_str(), "w"));
    auto fig = testutil::run("8-ablations", "--only warmup --figure-dir " + file);
    CHECK(fig.exit_code == 2);
    CHECK(fig.out.empty());
    CHECK_MESSAGE(fig.err.find(file) != std::string::npos, fig.err);
    auto sum =
        testutil::run("8-ablations", "--only warmup --no-figures --summary " + file + "/x/y.tsv");
    CHECK(sum.exit_code == 2);
    CHECK(sum.out.empty());
    std::remove(file.c_str());
    // --help: one default per option line.
    auto help = testutil::run("8-ablations", "--help");
    CHECK(help.exit_code == 0);
    std::istringstream lines(help.out);
    for (std::string line; std::getline(lines, line);) {
        CAPTURE(line);
        const size_t first = line.find("(default");
        CHECK((first == std::string::npos ||
               line.find("(default", first + 1) == std::string::npos));
    }
}

namespace {

// Every comparison recomputed from a committed per-seed file (seeds_tsv), Holm's family
// included, and the values it read ("claim run:key" -> every seed's, in seed order).
struct FromSeeds {
    std::map<std::string, std::vector<double>> values;
    std::vector<Comparison> comparisons;
};
FromSeeds from_seeds(const std::string& file) {
    FromSeeds out;
    const auto rows = tsv_rows(testutil::read_file(file));
    REQUIRE(rows.size() > 1);
    CHECK(rows[0] == std::vector<std::string>{"claim", "run", "metric", "seed", "value"});
    for (size_t i = 1; i < rows.size(); i++)
        out.values[rows[i][0] + " " + rows[i][1] + ":" + rows[i][2]].push_back(
            std::stod(rows[i][4]));
    for (const ComparisonSpec& spec : COMPARISONS) {
        const std::string claim = spec.claim;
        const std::vector<double> v = out.values.at(claim + " " + spec.variant);
        out.comparisons.push_back(
            compare(spec, spec.weight == 0 ? std::vector<double>{}
                                           : out.values.at(claim + " " + spec.baseline),
                    v));
    }
    judge_family(out.comparisons);
    return out;
}

}  // namespace

namespace {

// The lines of `file` between its line that starts `<!-- NAME:begin` and the one that starts
// `<!-- NAME:end`.
std::string block_of(const std::string& file, const std::string& name) {
    const std::string text = testutil::read_file(file);
    const size_t begin = text.find("<!-- " + name + ":begin"),
                 end = text.find("<!-- " + name + ":end");
    REQUIRE(begin != std::string::npos);
    REQUIRE(end != std::string::npos);
    const size_t first = text.find('\n', begin) + 1;
    return text.substr(first, end - first);
}

// What bench/claims-table.sh prints with `args`.
std::string claims_table(const std::string& args) {
    const std::string root = PROJECT_ROOT,
                      out = "/tmp/transformer-test-claims-table-" + std::to_string(::getpid());
    const std::string cmd =
        testutil::quote(root + "/bench/claims-table.sh") + " " + args + " >" + out + " 2>&1";
    CHECK(std::system(cmd.c_str()) == 0);
    const std::string text = testutil::read_file_abs(out);
    std::remove(out.c_str());
    return text;
}

// The guide's text (chapters/8-ablations/README.md) on one line: its sentences as tests build
// them.
std::string guide_text() {
    std::string text = testutil::read_file("chapters/8-ablations/README.md");
    std::replace(text.begin(), text.end(), '\n', ' ');
    return text;
}

}  // namespace

TEST_CASE("ablations: the guide's and the README's claims tables are what claims-table.sh makes") {
    // figures/8-ablations.tsv is what `make ablations` wrote; its rows follow the rule, and the
    // guide's table between the claims markers is the script's output for it; the README's
    // between its verdicts markers is the script's for the two K = 9 summaries.
    const std::string tsv = testutil::read_file("figures/8-ablations.tsv");
    const auto rows = tsv_rows(tsv);
    REQUIRE(rows.size() == COMPARISONS.size() + 1);
    CHECK(rows[0].size() == 16);
    for (size_t i = 1; i < rows.size(); i++) {
        CAPTURE(i);
        const ComparisonSpec& spec = COMPARISONS[i - 1];
        REQUIRE(rows[i].size() == 16);
        CHECK(rows[i][0] == spec.claim);
        CHECK(rows[i][3] == (spec.weight == 0   ? std::string("-")
                             : spec.weight == 1 ? std::string(spec.baseline)
                                                : "0.5*" + std::string(spec.baseline)));
        CHECK(rows[i][4] == spec.variant);
        CHECK(rows[i][9] == rule_text(spec.rule));
        CHECK(rows[i][12] == test_id(spec));
        CHECK(rows[i][13] == family_id(spec.family));
        CHECK(std::stoi(rows[i][8]) >= 3);
        CHECK(std::stoi(rows[i][11]) <= std::stoi(rows[i][8]));
        CHECK(std::stod(rows[i][6]) <= std::stod(rows[i][5]));
        CHECK(std::stod(rows[i][5]) <= std::stod(rows[i][7]));
        check_verdict(rows[i]);
    }
    // The summary is what the committed per-seed values give: every comparison recomputed
    // from figures/8-ablations-seeds.tsv, Holm's family included, is the same TSV.
    CHECK(summary_tsv(from_seeds("figures/8-ablations-seeds.tsv").comparisons) == tsv);
    const std::string table =
        claims_table(testutil::quote(std::string(PROJECT_ROOT) + "/figures/8-ablations.tsv"));
    CHECK(block_of("chapters/8-ablations/README.md", "claims") == table);
    // The README's short table: one row per primary comparison, its verdict in either block.
    const std::string verdicts = claims_table("--verdicts");
    CHECK(block_of("README.md", "verdicts") == verdicts);
    size_t primaries = 0;
    for (const ComparisonSpec& spec : COMPARISONS)
        primaries += spec.family == Family::primary;
    CHECK(std::count(verdicts.begin(), verdicts.end(), '\n') == long(primaries + 2));
    // Every row of the TSV is in the table: its family, test, estimate and interval, its valid
    // seeds, its p's and its verdict.
    for (size_t i = 1; i < rows.size(); i++) {
        const auto& f = rows[i];
        const std::string row = "| " + f[13] + " | " + f[12] + " | " + f[2] + " | " + f[3] +
                                " | " + f[4] + " | " + f[5] + " [" + f[6] + ", " + f[7] +
                                "] | " + f[11] + " / " + f[8] + " | " + f[9] + " | " + f[14] +
                                " | " + f[15] + " | " + f[10] + " |";
        CHECK_MESSAGE(table.find(row) != std::string::npos, row);
    }
}

TEST_CASE("ablations: the second block of seeds: its files agree, and the guide says them") {
    // Seeds 100-104 (`make ablations ABLATIONS_ARGS="--seed 100"`, whose summary and per-seed
    // file build/ablations-partial/ holds, committed as figures/8-ablations-100.tsv and
    // figures/8-ablations-seeds-100.tsv): the summary is what its per-seed file gives, and the
    // guide's sentences on the two blocks are made from the two per-seed files.
    const FromSeeds first = from_seeds("figures/8-ablations-seeds.tsv"),
                    second = from_seeds("figures/8-ablations-seeds-100.tsv");
    CHECK(summary_tsv(second.comparisons) == testutil::read_file("figures/8-ablations-100.tsv"));
    std::set<std::string> seeds;
    const auto rows = tsv_rows(testutil::read_file("figures/8-ablations-seeds-100.tsv"));
    for (size_t i = 1; i < rows.size(); i++)
        seeds.insert(rows[i][3]);
    // Seeds 100-104, and 2100-2104 for the runs on a fresh block (seed_offset 2000).
    CHECK(seeds == std::set<std::string>{"100", "101", "102", "103", "104", "2100", "2101",
                                         "2102", "2103", "2104"});
    std::string verdicts;
    for (size_t i = 0; i < COMPARISONS.size(); i++) {
        if (COMPARISONS[i].family != Family::primary) continue;
        const Verdict a = first.comparisons[i].verdict, b = second.comparisons[i].verdict;
        CAPTURE(COMPARISONS[i].variant);
        // No primary verdict is reproduced in one block and not reproduced in the other.
        CHECK_FALSE(((a == Verdict::reproduced && b == Verdict::not_reproduced) ||
                     (a == Verdict::not_reproduced && b == Verdict::reproduced)));
        verdicts += (verdicts.empty() ? "" : "; ") + std::string(COMPARISONS[i].variant) + " " +
                    verdict_id(a) + " / " + verdict_id(b);
    }
    auto mean = [](const FromSeeds& block, const std::string& key) {
        const std::vector<double>& v = block.values.at(key);
        return fixed(std::accumulate(v.begin(), v.end(), 0.0) / double(v.size()), 2);
    };
    const std::string sin = "positions pos2-sin:exact_long_source",
                      learned = "positions pos2-learned:exact_long_source";
    const std::string sentence =
        "Primary verdicts, seeds 0-4 / 100-104: " + verdicts +
        ". On the 8-9-syllable sources exact match averages " + mean(first, sin) + "% / " +
        mean(second, sin) + "% with sinusoids and " + mean(first, learned) + "% / " +
        mean(second, learned) + "% with a learned table.";
    const std::string guide = guide_text();
    CHECK_MESSAGE(guide.find(sentence) != std::string::npos, sentence);
    // The guide's sentence on the deep runs and the order claim, from both per-seed files.
    auto reaching = [](const FromSeeds& block, const std::string& key) {  // "k/n" at >= 50%
        const std::vector<double>& v = block.values.at(key);
        return std::to_string(std::count_if(v.begin(), v.end(), [](double x) { return x >= 50; })) +
               "/" + std::to_string(v.size());
    };
    auto both = [&](const std::string& key) {
        return reaching(first, "warmup " + key) + " / " + reaching(second, "warmup " + key);
    };
    const std::string deep =
        "Seeds reaching 50% exact match, 0-4 / 100-104: Post-LN with the warm-up " +
        both("warm-post:exact") + "; without it at the paper's peak lr " +
        both("nowarm-post:exact") + ", at lr/3 " + both("nowarm-post-lr33:exact") +
        ", at lr/10 " + both("nowarm-post-lr10:exact") + "; Pre-LN without it at lr " +
        both("nowarm-pre:exact") + ", at lr/3 " + both("nowarm-pre-lr33:exact") + ", at lr/10 " +
        both("nowarm-pre-lr10:exact") + "; Post-LN with the warm-up and without residual " +
        "connections " + reaching(first, "residual noresid-post:exact") + " / " +
        reaching(second, "residual noresid-post:exact") +
        ". Without position vectors exact match averages " + mean(first, "order nopos:exact") +
        "% / " + mean(second, "order nopos:exact") + "%, with sinusoids " +
        mean(first, "order base:exact") + "% / " + mean(second, "order base:exact") + "%.";
    CHECK_MESSAGE(guide.find(deep) != std::string::npos, deep);
    // The guide's sentence on the opening and on the neighbour task's fresh seeds.
    auto clock = [](const FromSeeds& block, const std::string& key) {  // mean of those reached
        double sum = 0;
        int n = 0;
        for (double v : block.values.at(key))
            if (!std::isinf(v)) sum += v, n++;
        return (n ? fixed(sum / n, 1) : std::string("-")) + " s (" + std::to_string(n) + "/" +
               std::to_string(block.values.at(key).size()) + ")";
    };
    auto count_side = [](const FromSeeds& block, size_t i) {  // k/n of a count comparison
        const Comparison& c = block.comparisons.at(i);
        return std::to_string(c.successes_variant) + "/" + std::to_string(c.valid_count);
    };
    size_t time_row = 0, steps_row = 0;
    for (size_t i = 0; i < COMPARISONS.size(); i++) {
        const std::string v = COMPARISONS[i].variant;
        if (v == "base:seconds_to_level") time_row = i;
        if (v == "nb-1-fresh:steps_to_99") steps_row = i;
    }
    REQUIRE(time_row > 0);
    REQUIRE(steps_row > 0);
    const std::string opening =
        "Seeds 0-4 / 100-104: exact match averages " + mean(first, "opening base:exact") +
        "% / " + mean(second, "opening base:exact") + "% for the Transformer and " +
        mean(first, "opening lstm:exact") + "% / " + mean(second, "opening lstm:exact") +
        "% for the LSTM; training seconds to 90% on validation average " +
        clock(first, "opening base:seconds_to_level") + " / " +
        clock(second, "opening base:seconds_to_level") + " for the Transformer and " +
        clock(first, "opening lstm:seconds_to_level") + " / " +
        clock(second, "opening lstm:seconds_to_level") +
        " for the LSTM (in parentheses: the seeds that get there); the Transformer takes less than "
        "half the LSTM's time on " + count_side(first, time_row) + " / " +
        count_side(second, time_row) + " seeds. On the neighbour task's fresh seeds one head "
        "needs more steps to 99% than four on " + count_side(first, steps_row) + " / " +
        count_side(second, steps_row) + " seeds.";
    CHECK_MESSAGE(guide.find(opening) != std::string::npos, opening);
}

TEST_CASE("ablations: nine seeds a block: the files agree, and the guide says the verdicts") {
    // `make ablations ABLATIONS_SEEDS=9` (seeds 0-8) and with --seed 100 (100-108), the fewest
    // seeds at which a sign-flip or binomial primary can pass Holm over ten (2/2^9 < 0.05/10):
    // kept as figures/8-ablations-k9.tsv, figures/8-ablations-100-k9.tsv and their per-seed
    // files. Each summary is what its per-seed file gives, and the guide's sentence on them is
    // made from the two per-seed files.
    std::vector<FromSeeds> blocks;
    for (const int first : {0, 100}) {
        const std::string tag = first ? "-100-k9" : "-k9";
        blocks.push_back(from_seeds("figures/8-ablations-seeds" + tag + ".tsv"));
        CHECK(summary_tsv(blocks.back().comparisons) ==
              testutil::read_file("figures/8-ablations" + tag + ".tsv"));
        std::set<std::string> seeds, want;
        const auto rows = tsv_rows(testutil::read_file("figures/8-ablations-seeds" + tag + ".tsv"));
        for (size_t i = 1; i < rows.size(); i++)
            seeds.insert(rows[i][3]);
        for (int k = 0; k < 9; k++) {  // and the fresh block's (seed_offset 2000)
            want.insert(std::to_string(first + k));
            want.insert(std::to_string(2000 + first + k));
        }
        CHECK(seeds == want);
        for (const Comparison& c : blocks.back().comparisons)
            CHECK(c.baseline.size() == 9);
    }
    std::string verdicts;
    for (size_t i = 0; i < COMPARISONS.size(); i++) {
        if (COMPARISONS[i].family != Family::primary) continue;
        const Verdict a = blocks[0].comparisons[i].verdict, b = blocks[1].comparisons[i].verdict;
        CAPTURE(COMPARISONS[i].variant);
        // No primary verdict is reproduced in one block and not reproduced in the other.
        CHECK_FALSE(((a == Verdict::reproduced && b == Verdict::not_reproduced) ||
                     (a == Verdict::not_reproduced && b == Verdict::reproduced)));
        verdicts += (verdicts.empty() ? "" : "; ") + std::string(COMPARISONS[i].variant) + " " +
                    verdict_id(a) + " / " + verdict_id(b);
    }
    const std::string sentence = "Primary verdicts with nine seeds, 0-8 / 100-108: " + verdicts +
                                 ".";
    CHECK_MESSAGE(guide_text().find(sentence) != std::string::npos, sentence);
}

namespace {

// The processes whose parent is `pid` (from /proc).
std::vector<pid_t> children_of(pid_t pid) {
    std::vector<pid_t> out;
    for (const auto& e : std::filesystem::directory_iterator("/proc")) {
        const std::string name = e.path().filename().string();
        if (name.find_first_not_of("0123456789") != std::string::npos) continue;
        std::ifstream f(e.path() / "stat");
        std::string line;
        std::getline(f, line);
        const size_t close = line.rfind(')');
        if (close == std::string::npos) continue;
        char state = 0;
        int ppid = 0;
        if (std::sscanf(line.c_str() + close + 1, " %c %d", &state, &ppid) == 2 && ppid == pid)
            out.push_back(pid_t(std::stoi(name)));
    }
    return out;
}

}  // namespace

TEST_CASE("ablations: when the runner is terminated, its runs end with it") {
#if defined(__linux__)
    // The runner in a process of its own, with two jobs that stay silent for 30 s (as a run
    // does while it evaluates): a job that learned of its parent's end only at its next write
    // to the pipe would train on long after a SIGTERM to 8-ablations alone.
    const pid_t runner = ::fork();
    REQUIRE(runner >= 0);
    if (runner == 0) {
        ::signal(SIGTERM, SIG_DFL);  // as in 8-ablations (doctest's crash handler is not)
        std::vector<ablations::Job> jobs;
        for (const char* name : {"a", "b"})
            jobs.push_back({name, 1.0, [](ablations::Progress&) {
                                ::sleep(30);
                                return ablations::Record{};
                            }});
        ablations::run_jobs(jobs, 2, false);
        ::_exit(0);
    }
    std::vector<pid_t> kids;
    for (int tries = 0; tries < 100 && kids.size() < 2; tries++) {  // up to 10 s
        ::usleep(100000);
        kids = children_of(runner);
    }
    REQUIRE(kids.size() == 2);  // both jobs started
    ::kill(runner, SIGTERM);    // as a process manager stops it: the parent alone
    ::waitpid(runner, nullptr, 0);
    bool any = true;
    for (int tries = 0; tries < 50 && any; tries++) {  // up to 5 s, well short of their 30
        ::usleep(100000);
        any = false;
        for (pid_t k : kids)
            any |= testutil::runs(k);
    }
    CHECK(!any);
    if (any)  // they outlived it: end them (only then, or a reused pid could be hit)
        for (pid_t k : kids)
            if (testutil::runs(k)) ::kill(k, SIGKILL);
#endif
}

TEST_CASE("ablations: kept records are reused by the same jobs and context, and only by them") {
    const std::string dir = "/tmp/transformer-test-keep-" + std::to_string(::getpid());
    std::filesystem::remove_all(dir);
    const std::string ran = dir + ".ran";  // one line per job actually run
    std::remove(ran.c_str());
    auto job = [&](const std::string& name, double value) {
        return ablations::Job{name, 1.0, [=](ablations::Progress&) {
                                  std::ofstream(ran, std::ios::app) << name << "\n";
                                  ablations::Record r;
                                  r.put("x", {value, 1.0 / 3.0});
                                  return r;
                              }};
    };
    auto runs_so_far = [&] {
        std::ifstream f(ran);
        int n = 0;
        for (std::string line; std::getline(f, line);)
            n++;
        return n;
    };
    const std::vector<ablations::Job> jobs = {job("a/0", 1.5), job("b/0", -2.25)};
    int reused = -1;
    auto first = ablations::run_jobs(jobs, 2, false, {dir, "scale=1"}, &reused);
    CHECK(reused == 0);
    CHECK(runs_so_far() == 2);
    auto again = ablations::run_jobs(jobs, 2, false, {dir, "scale=1"}, &reused);
    CHECK(reused == 2);
    CHECK(runs_so_far() == 2);  // nothing trained again
    for (size_t k = 0; k < 2; k++)
        CHECK(again[k].get("x") == first[k].get("x"));                 // bit for bit
    ablations::run_jobs(jobs, 2, false, {dir, "scale=0.5"}, &reused);  // other settings: run
    CHECK(reused == 0);
    CHECK(runs_so_far() == 4);
    // A record cut short (no END) is not taken: that job runs again.
    for (const auto& e : std::filesystem::directory_iterator(dir))
        if (e.path().filename().string().rfind("a_0-", 0) == 0) {
            std::string text = testutil::read_file_abs(e.path().string());
            std::ofstream(e.path()) << text.substr(0, text.find("END"));
        }
    ablations::run_jobs(jobs, 2, false, {dir, "scale=1"}, &reused);
    CHECK(reused == 1);
    CHECK(runs_so_far() == 5);
    std::filesystem::remove_all(dir);
    std::remove(ran.c_str());
}

namespace {

// The neighbour task's run nb-1 for seed 0 at --scale 0.01 (10 steps), trained in this process:
// a record as its job writes it, with the job's own check.
const Job& tiny_nb1_job() {
    static const std::vector<Job> jobs = all_jobs(0.01, {0});
    for (const Job& j : jobs)
        if (j.name == "nb-1/0") return j;
    throw std::logic_error("no nb-1/0");
}

// The kept record files of `dir` whose names start with `stem` ("nb-1_0-").
std::vector<std::string> kept_files(const std::string& dir, const std::string& stem) {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(dir))
        if (e.path().filename().string().rfind(stem, 0) == 0) out.push_back(e.path().string());
    return out;
}

}  // namespace

TEST_CASE("ablations: a record whose keys, lengths or values its job cannot write is refused") {
    const Job& job = tiny_nb1_job();
    Progress quiet;
    const Record good = job.run(quiet);
    REQUIRE(job.check(good) == "");
    CHECK(good.get("loss").size() == 10);
    CHECK(good.get("validation_accuracy_curve").size() == 1);  // the one after the last step
    struct Case {
        const char* what;
        std::function<void(Record&)> change;
        const char* problem;
    };
    const std::vector<Case> cases = {
        {"an empty curve",
         [](Record& r) { r.put("validation_accuracy_curve", std::vector<double>{}); },
         "validation_accuracy_curve has 0 values, not 1"},
        {"a longer curve", [](Record& r) { r.put("validation_accuracy_curve", {5, 7}); },
         "validation_accuracy_curve has 2 values, not 1"},
        {"one head too many", [](Record& r) { r.put("head_left_weight", {0.5, 0.5}); },
         "head_left_weight has 2 values, not 1"},
        {"a missing key",
         [](Record& r) {
             Record less;
             for (const auto& [k, v] : r.items)
                 if (k != "digit_accuracy") less.put(k, v);
             r = less;
         },
         "no digit_accuracy"},
        {"a key of another run", [](Record& r) { r.put("exact_five_digit", 3.0); },
         "a key exact_five_digit that nb-1 does not write"},
        {"a percentage above 100", [](Record& r) { r.put("digit_accuracy", 250.0); },
         "digit_accuracy holds 250"},
        {"NaN where a number must be",
         [](Record& r) { r.put("max_head_left_weight", std::nan("")); },
         "max_head_left_weight holds nan"},
        {"a step that is not one", [](Record& r) { r.put("diverged_at", 11.0); },
         "diverged_at 11 is not a step of 10"},
        {"a fractional step", [](Record& r) { r.put("validation_steps", 9.5); },
         "validation_steps holds 9.5"},
        {"another seed's record", [](Record& r) { r.put("seed", 1.0); }, "seed holds 1"},
        {"another budget's record", [](Record& r) { r.put("steps", 20.0); }, "steps holds 20"},
        {"another model's record", [](Record& r) { r.put("heads", 4.0); }, "heads holds 4"},
        {"a loss curve cut short", [](Record& r) { r.put("loss", {1.0, 2.0}); },
         "loss has 2 values, not 10"},
    };
    for (const Case& c : cases) {
        CAPTURE(c.what);
        Record bad = good;
        c.change(bad);
        const std::string problem = job.check(bad);
        CHECK_MESSAGE(problem.find(c.problem) != std::string::npos, problem);
    }
    // A diverged run's curve ends at the step it diverged at.
    Record diverged = good;
    diverged.put("diverged_at", 4.0);
    diverged.put("loss", {2.0, 1.5, 1.2, std::nan("")});
    CHECK(job.check(diverged) == "");
}

TEST_CASE("ablations: a kept record its job cannot have written is named and trained again") {
    const std::string dir = "/tmp/transformer-test-kept-bad-" + std::to_string(::getpid());
    std::filesystem::remove_all(dir);
    const std::string args = "--only heads --runs nb-4,nb-1 --seeds 1 --scale 0.01 --no-figures "
                             "--keep " + dir;
    auto first = testutil::run("8-ablations", args);
    REQUIRE_MESSAGE(first.exit_code == 0, first.err);
    const std::vector<std::string> files = kept_files(dir, "nb-1_0-");
    REQUIRE(files.size() == 1);
    const std::string path = files[0], whole = testutil::read_file_abs(path);
    auto table = [](const std::string& out) {  // the heads claim's report, without the times
        const size_t from = out.find("\n== "), to = out.rfind("\n전체 시간: ");
        return from == std::string::npos ? out : out.substr(from, to - from);
    };
    // Lists that disagree with the job, a garbled line, a cut: each named, the run trained again
    // to the same numbers, and the record written whole again.
    for (const std::string& bad :
         {std::string("R validation_accuracy_curve 0"),
          std::string("R validation_accuracy_curve 2 5 5"),
          std::string("R digit_accuracy 0"), std::string("R digit_accuracy 1 nan x")}) {
        CAPTURE(bad);
        std::string text;
        std::istringstream in(whole);
        for (std::string line; std::getline(in, line);)
            text += (line.rfind("R " + bad.substr(2, bad.find(' ', 2) - 2) + " ", 0) == 0
                         ? bad
                         : line) +
                    "\n";
        std::ofstream(path, std::ios::trunc) << text;
        auto again = testutil::run("8-ablations", args, "", 120);
        CHECK_MESSAGE(again.exit_code == 0, again.err);
        CHECK(again.err.find("8-ablations: warning: " + path + ": ") == 0);
        CHECK(again.err.find("nb-1/0 is trained again") != std::string::npos);
        CHECK(std::count(again.err.begin(), again.err.end(), '\n') == 1);
        CHECK(table(again.out) == table(first.out));
        CHECK(testutil::read_file_abs(path) == whole);
    }
    std::filesystem::remove_all(dir);
}

TEST_CASE("ablations: a FIFO or a device where a kept record goes stops the run in one line") {
    const std::string dir = "/tmp/transformer-test-kept-special-" + std::to_string(::getpid());
    std::filesystem::remove_all(dir);
    const std::string args =
        "--only heads --runs nb-1 --seeds 1 --scale 0.01 --no-figures --keep " + dir;
    auto first = testutil::run("8-ablations", args);
    REQUIRE_MESSAGE(first.exit_code == 0, first.err);
    const std::vector<std::string> files = kept_files(dir, "nb-1_0-");
    REQUIRE(files.size() == 1);
    const std::string path = files[0];
    std::remove(path.c_str());
    REQUIRE(::mkfifo(path.c_str(), 0600) == 0);
    auto fifo = testutil::run("8-ablations", args, "", 60);  // a blocked open() would time out
    CHECK(fifo.exit_code == 1);
    CHECK(fifo.err == "8-ablations: error: --keep: " + path +
                          ": it is a FIFO, not a regular file; remove it or choose another "
                          "folder\n");
    std::remove(path.c_str());
    std::filesystem::create_symlink("/dev/zero", path);  // once read to 4 GB before training
    auto zero = testutil::run("8-ablations", args, "", 60);
    CHECK(zero.exit_code == 1);
    CHECK(zero.err.find(path + ": it is a device node, not a regular file") != std::string::npos);
    std::remove(path.c_str());
    {  // a regular file past the bound: named, not read, the run trained again
        std::ofstream f(path);
        f << "R x 1 1\n";
    }
    std::filesystem::resize_file(path, MAX_KEPT_BYTES + 1);  // sparse: no disk used
    auto big = testutil::run("8-ablations", args, "", 120);
    CHECK_MESSAGE(big.exit_code == 0, big.err);
    CHECK(big.err.find(path + ": it is larger than 16 MiB; nb-1/0 is trained again") !=
          std::string::npos);
    CHECK(std::filesystem::file_size(path) < 100000);
    std::filesystem::remove_all(dir);
}

TEST_CASE("ablations: out of memory or of open files, one line that names the problem") {
    if (*PROJECT_RUNNER) {
        MESSAGE("skipped: under " PROJECT_RUNNER " a limit would hold the runner too");
        return;
    }
#if defined(__SANITIZE_ADDRESS__)
    MESSAGE("skipped: ASan maps terabytes of shadow memory and opens files of its own");
    return;
#endif
    const std::string tmp = "/tmp/transformer-test-ablations-limit-" + std::to_string(::getpid());
    auto under = [&](const std::string& limit) {  // stderr of two runs under `ulimit LIMIT`
        const std::string cmd = "exec </dev/null >/dev/null 2>" + tmp + ".err && ulimit " + limit +
                                " && exec " + testutil::program_command("8-ablations") +
                                " --runs base,nb-4 --seeds 1 --scale 0.001 --no-figures" +
                                " --partial-dir " + tmp;
        CHECK(WEXITSTATUS(std::system(cmd.c_str())) == 1);
        const std::string err = testutil::read_file_abs(tmp + ".err");
        std::remove((tmp + ".err").c_str());
        std::filesystem::remove_all(tmp);
        return err;
    };
    // The pipe to the second run: strerror's reason.
    CHECK(under("-n 5") ==
          "8-ablations: error: cannot create a pipe for a job: Too many open files\n");
    // The runs' std::bad_alloc, in chapter 7's words (cli::error_text).
    const std::string err = under("-v 50000");
    CHECK_MESSAGE(err.find("base/0: out of memory: the sizes asked for need more than this "
                           "machine has; use smaller values") != std::string::npos,
                  err);
}

TEST_CASE("ablations: only the full default run writes the committed summary and figures") {
    const std::string dir = "/tmp/transformer-test-partial-" + std::to_string(::getpid());
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir + "/figures");
    const std::string outputs = " --summary " + dir + "/figures/8-ablations.tsv --figure-dir " +
                                dir + "/figures --partial-dir " + dir + "/partial";
    auto part = testutil::run("8-ablations",
                              "--only heads --runs nb-4,nb-1 --seeds 1 --scale 0.01" + outputs);
    REQUIRE_MESSAGE(part.exit_code == 0, part.err);
    CHECK(std::filesystem::is_empty(dir + "/figures"));
    CHECK(std::filesystem::exists(dir + "/partial/8-ablations.tsv"));
    CHECK(std::filesystem::exists(dir + "/partial/8-ablations-seeds.tsv"));
    CHECK(part.out.find("부분 실행: 요약과 그림은 " + dir + "/partial에 씁니다") !=
          std::string::npos);
    // Each setting that makes a run partial, refused from figures/ before any training: the
    // partial folder is checked instead (a file there stops it).
    std::filesystem::remove_all(dir + "/partial");
    std::ofstream(dir + "/partial") << "a file";
    for (const char* args : {"--only heads", "--runs base", "--scale 0.5", "--seeds 3",
                             "--seed 100"}) {
        CAPTURE(args);
        auto r = testutil::run("8-ablations", std::string(args) + outputs);
        CHECK(r.exit_code == 2);
        CHECK(r.err.find("--partial-dir '" + dir + "/partial'") != std::string::npos);
    }
    // make ablations passes a partial folder under build/.
    const std::string makefile = testutil::read_file("Makefile");
    CHECK(makefile.find("--partial-dir $(BUILD)/ablations-partial") != std::string::npos);
    std::filesystem::remove_all(dir);
}
