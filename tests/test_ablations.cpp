// Chapter 8 (ablations): the pieces its experiments are built from, checked on small sizes, and
// the facts its claims rest on (the first step's self-attention weight is exactly 1, removing
// every encoder-decoder head leaves the decoder blind, a learned position table has no vector
// past its length and leaves rows it never reached untouched), and the program's determinism.
#include <doctest.h>

#include <cmath>
#include <csignal>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "chapters/1-self-attention/attention.h"
#include "chapters/8-ablations/experiments.h"
#include "chapters/8-ablations/runner.h"
#include "common/random.h"
#include "tests/util.h"

using namespace ablations;
using translate::Batch;
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
double first_digit(const EncoderDecoder& m, const std::vector<int64_t>& numbers, FirstStep w) {
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
        Tensor logits = first_step_logits(*m, b, FirstStep::intact);
        for (const auto& blk : m->decoder) {
            const Tensor& a = blk->self_attn.last_attn;  // (B, h, 1, 1)
            CHECK(a.shape() == Shape{12, 2, 1, 1});
            for (int64_t i = 0; i < a.numel(); i++)
                CHECK(a.data()[i] == 1.0f);
        }
        // The step taken apart is the step generation takes, bit for bit.
        NoGradGuard no_grad;
        Tensor memory = m->encode(b.src, {b.B, b.S}, b.src_mask);
        Tensor ref =
            m->decode(std::vector<int64_t>(12, translate::BOS), {12, 1}, memory, b.src_mask);
        CHECK(max(abs(ref - logits)).item() == 0.0f);
        // Replacing self-attention's output by its batch mean changes nothing in the first
        // layer (every sentence's first position is the same <시작>).
        Tensor s = first_step_logits(*m, b, FirstStep::self_mean);
        CHECK(s.shape() == logits.shape());
    }
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
    mha.head_mask = Tensor::from({0.0f, 1.0f}, {2});
    CHECK(testutil::allclose(mha(x).to_vector(), by_hand(true, {0, 1}).to_vector(), 1e-6, 1e-5));
    mha.head_mask = Tensor();
    mha.scale_scores = false;
    CHECK(testutil::allclose(mha(x).to_vector(), by_hand(false, {1, 1}).to_vector(), 1e-6, 1e-5));
    CHECK_FALSE(
        testutil::allclose(mha(x).to_vector(), by_hand(true, {1, 1}).to_vector(), 1e-6, 1e-5));
    // set_head_mask and set_score_scaling reach every attention of an encoder-decoder.
    translate::ModelConfig c;
    c.layers = 2, c.d_model = 8, c.heads = 2;
    auto m = translate::make_model(c);
    CHECK(head_count(*m) == 12);
    std::vector<float> keep(12, 1.0f);
    keep[11] = 0;  // cross-attention, layer 2, head 2
    set_head_mask(*m, keep);
    CHECK(m->decoder[1]->cross_attn.head_mask.to_vector() == std::vector<float>{1, 0});
    CHECK(m->encoder[0]->attn.head_mask.to_vector() == std::vector<float>{1, 1});
    CHECK_THROWS_AS(set_head_mask(*m, std::vector<float>(11, 1.0f)), std::invalid_argument);
    set_score_scaling(*m, false);
    CHECK_FALSE(m->decoder[1]->cross_attn.scale_scores);
    CHECK_FALSE(m->encoder[1]->attn.scale_scores);
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
}

TEST_CASE(
    "ablations: a learned position table has no vector past its rows, and rows no "
    "sentence reached keep their start") {
    translate::ModelConfig c;
    c.layers = 1, c.d_model = 16, c.heads = 2, c.positions = Positions::learned;
    auto m = translate::make_model(c);
    REQUIRE(m->src_pos);
    CHECK(m->src_pos->weight.shape() == Shape{LEARNED_POSITIONS, 16});
    const std::vector<int64_t> long_src(size_t(LEARNED_POSITIONS) + 1, 3);
    CHECK_THROWS_AS(m->encode(long_src, {1, LEARNED_POSITIONS + 1}), std::out_of_range);
    CHECK_NOTHROW(
        m->encode(std::vector<int64_t>(size_t(LEARNED_POSITIONS), 3), {1, LEARNED_POSITIONS}));
    // Training on numbers below 100 (at most 3 syllables, 구십구; 2 digits after <시작>) moves
    // rows 0..2 of each table only; the rest is bit for bit what it was.
    const std::vector<float> src0 = m->src_pos->weight.to_vector(),
                             tgt0 = m->tgt_pos->weight.to_vector();
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
        CHECK(row_moved(m->src_pos->weight, src0, r) == (r < 3));
        CHECK(row_moved(m->tgt_pos->weight, tgt0, r) == (r < 3));
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

TEST_CASE("ablations: the program's numbers do not depend on how many runs go at once") {
    const std::string args = "--only warmup,positions --scale 0.01 --no-figures";
    auto one = testutil::run("8-ablations", args + " --jobs 1");
    auto two = testutil::run("8-ablations", args + " --jobs 2");
    REQUIRE_MESSAGE(one.exit_code == 0, one.err);
    REQUIRE_MESSAGE(two.exit_code == 0, two.err);
    auto tables = [](const std::string& out) { return out.substr(out.find('\n')); };
    CHECK(tables(one.out) == tables(two.out));
    CHECK(one.err.empty());  // no progress line when stderr is not a terminal
    for (const char* claim : {"5절 \"원 논문이 학습률 워밍업", "4절 학습된 위치 벡터"})
        CHECK(one.out.find(claim) != std::string::npos);
    CHECK(one.out.find("판정: ") != std::string::npos);
    CHECK(one.out.find("2절") == std::string::npos);  // only what --only asked for
    auto bad = testutil::run("8-ablations", "--only sideways");
    CHECK(bad.exit_code == 2);
    CHECK(bad.err.find("unknown claim 'sideways'") != std::string::npos);
    CHECK(testutil::run("8-ablations", "--scale 0").exit_code == 2);
}
