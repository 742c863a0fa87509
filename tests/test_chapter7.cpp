// Chapter 7's pieces: Sino-Korean number words, Adam with warm-up, teacher-forced training,
// greedy decoding (one sentence and batched) with a hand-set model, the weights file.
#include <doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "chapters/5-blocks/decoder.h"
#include "chapters/7-translate/checkpoint.h"
#include "chapters/7-translate/korean_numbers.h"
#include "chapters/7-translate/train.h"
#include "common/kernels/gemm.h"
#include "common/optim.h"
#include "common/program/serialize.h"
#include "common/random.h"
#include "tests/util.h"

namespace kn = korean_numbers;

TEST_CASE("translate: Sino-Korean number words follow the reading rules") {
    const std::pair<int64_t, const char*> cases[] = {
        {1, "일"},          {2, "이"},           {10, "십"},       {11, "십일"},
        {20, "이십"},       {99, "구십구"},      {100, "백"},      {101, "백일"},
        {110, "백십"},      {111, "백십일"},     {1000, "천"},     {1001, "천일"},
        {1010, "천십"},     {2100, "이천백"},    {3201, "삼천이백일"}, {10000, "만"},
        {10001, "만일"},    {10010, "만십"},     {15000, "만오천"}, {20000, "이만"},
        {21000, "이만천"},  {11111, "만천백십일"}, {60006, "육만육"},
        {99999, "구만구천구백구십구"}};
    for (const auto& c : cases) {
        const int64_t n = c.first;  // plain names: clang 14 cannot capture a binding
        const char* words = c.second;
        CHECK_MESSAGE(kn::to_words(n) == words, n);
        CHECK(kn::from_words(words) == n);
    }
    CHECK_THROWS_AS(kn::to_words(0), std::out_of_range);
    CHECK_THROWS_AS(kn::to_words(-5), std::out_of_range);
    CHECK_THROWS_AS(kn::to_words(100000), std::out_of_range);  // 십만 is out of range
}

TEST_CASE("translate: every number in 1..99999 reads back, no two share their words") {
    std::set<std::string> seen;
    size_t longest = 0;
    for (int64_t n = 1; n <= kn::MAX_VALUE; n++) {
        std::string w = kn::to_words(n);
        REQUIRE(kn::from_words(w) == n);
        seen.insert(w);
        longest = std::max(longest, kn::syllables(w).size());
    }
    CHECK(seen.size() == size_t(kn::MAX_VALUE));
    CHECK(longest == 9);  // 구만구천구백구십구
}

TEST_CASE("translate: syllables and malformed words") {
    CHECK(kn::syllables("만오천") == std::vector<std::string>{"만", "오", "천"});
    CHECK(kn::syllables("").empty());
    CHECK_THROWS_AS(kn::syllables("\xEB\xA7"), std::invalid_argument);  // cut inside 만
    CHECK_THROWS_AS(kn::syllables("\xF5\x80\x80\x80"), std::invalid_argument);  // no such lead
    CHECK_THROWS_AS(kn::syllables("\xC1\x81"), std::invalid_argument);          // an overlong 'A'
    CHECK(kn::syllable_set().size() == 13);
    for (const char* bad : {"일십", "일만", "십십", "천만", "이삼", "", "영", "오a"})
        CHECK_THROWS_AS(kn::from_words(bad), std::invalid_argument);
}

TEST_CASE("translate: the paper's learning-rate schedule") {
    // Linear warm-up to the peak d^-0.5 * warmup^-0.5 at step = warmup, then 1/sqrt(step).
    const double d = 512, w = 4000;
    CHECK(optim::noam_lr(1, 512, 4000) == doctest::Approx(std::pow(d, -0.5) * std::pow(w, -1.5)));
    CHECK(optim::noam_lr(4000, 512, 4000) == doctest::Approx(std::pow(d * w, -0.5)));
    CHECK(optim::noam_lr(16000, 512, 4000) ==
          doctest::Approx(std::pow(d, -0.5) * std::pow(16000.0, -0.5)));
    CHECK(optim::noam_lr(2000, 512, 4000) ==
          doctest::Approx(0.5 * optim::noam_lr(4000, 512, 4000)));
    CHECK(optim::noam_lr(100, 64, 10, 2.0) == doctest::Approx(2.0 * optim::noam_lr(100, 64, 10)));
    CHECK_THROWS(optim::noam_lr(0, 512, 4000));
}

TEST_CASE("translate: Adam matches torch.optim.Adam on two steps") {
    // torch: p = [1., -2., 3.]; Adam([p], lr=0.1, betas=(0.9, 0.98), eps=1e-9);
    //   loss = (p**2).sum() -> step; loss = (p**3).sum() -> step
    Tensor p = Tensor::from({1.0f, -2.0f, 3.0f}, {3}).requires_grad_();
    optim::Adam adam({p});
    sum(p * p).backward();
    adam.step(0.1);
    // After one step every weight moves by lr against the sign of its gradient.
    CHECK(testutil::allclose(p.to_vector(), {0.9f, -1.9f, 2.9f}, 1e-6, 1e-6, "step 1"));
    adam.zero_grad();
    sum(p * p * p).backward();
    adam.step(0.1);
    // Hand computation of torch's rule in double (m, v bias-corrected with t = 2).
    std::vector<float> want;
    const double w0[3] = {1, -2, 3}, w1[3] = {0.9, -1.9, 2.9};
    for (int i = 0; i < 3; i++) {
        double g1 = 2 * w0[i], g2 = 3 * w1[i] * w1[i];
        double m = 0.9 * (0.1 * g1) + 0.1 * g2, v = 0.98 * (0.02 * g1 * g1) + 0.02 * g2 * g2;
        double mh = m / (1 - 0.81), vh = v / (1 - 0.98 * 0.98);
        want.push_back(float(w1[i] - 0.1 * mh / (std::sqrt(vh) + 1e-9)));
    }
    CHECK(testutil::allclose(p.to_vector(), want, 1e-5, 1e-5, "step 2"));
    CHECK(adam.steps() == 2);
}

// ---- a tiny encoder-decoder on the task itself ---------------------------------------------
namespace {

// Source ids 1..13 for the syllables (0 = padding); target 1 = start, 2 = end, 3.. = digits.
struct TinyBatch {
    std::vector<int64_t> src, tgt_in, tgt_out;
    int64_t B, S, T;
    Tensor mask;
};

TinyBatch tiny_batch(const std::vector<int64_t>& numbers) {
    TinyBatch b{{}, {}, {}, int64_t(numbers.size()), 0, 0, Tensor()};
    for (int64_t n : numbers) {
        b.S = std::max<int64_t>(b.S, int64_t(kn::syllables(kn::to_words(n)).size()));
        b.T = std::max<int64_t>(b.T, int64_t(std::to_string(n).size()) + 1);
    }
    for (int64_t n : numbers) {
        auto syl = kn::syllables(kn::to_words(n));
        const auto& set = kn::syllable_set();
        for (int64_t j = 0; j < b.S; j++)
            b.src.push_back(j < int64_t(syl.size())
                                ? 1 + (std::find(set.begin(), set.end(), syl[j]) - set.begin())
                                : 0);
        std::string digits = std::to_string(n);
        for (int64_t j = 0; j < b.T; j++) {
            b.tgt_in.push_back(j == 0                        ? 1
                               : j <= int64_t(digits.size()) ? 3 + digits[j - 1] - '0'
                                                             : 0);
            b.tgt_out.push_back(j < int64_t(digits.size()) ? 3 + digits[j] - '0'
                                : j == int64_t(digits.size()) ? 2 : -100);
        }
    }
    b.mask = translate::padding_mask(b.src, {b.B, b.S}, 0);
    return b;
}

Tensor tiny_loss(const EncoderDecoder& m, const TinyBatch& b) {
    Tensor memory = m.encode(b.src, {b.B, b.S}, b.mask);
    Tensor logits = m.decode(b.tgt_in, {b.B, b.T}, memory, b.mask);
    return cross_entropy(reshape(logits, {b.B * b.T, 13}), b.tgt_out, -100);
}

}  // namespace

TEST_CASE("translate: a few teacher-forced Adam steps lower the loss") {
    for (LnPlacement norm : {LnPlacement::PostLN, LnPlacement::PreLN}) {
        torch_rng::manual_seed(0);
        EncoderDecoder model(14, 13, 16, 2, 1, norm);
        optim::Adam adam(model.parameters());
        TinyBatch b = tiny_batch({3201, 15000, 7, 99999, 10001, 420, 86, 50505});
        CHECK(b.mask.shape() == Shape{8, 1, 1, 9});
        float first = 0, last = 0;
        for (int step = 1; step <= 30; step++) {
            Tensor loss = tiny_loss(model, b);
            loss.backward();
            adam.step(optim::noam_lr(step, 16, 10, 1.0));
            adam.zero_grad();
            (step == 1 ? first : last) = loss.item();
        }
        MESSAGE(std::string(placement_name(norm)) << ": loss " << first << " -> " << last);
        CHECK(std::isfinite(last));
        CHECK(last < 0.5f * first);
    }
}

TEST_CASE("translate: train's evaluate runs every so many steps and after the last") {
    translate::ModelConfig mc{.layers = 1, .d_model = 16, .heads = 2};
    auto model = translate::make_model(mc);
    translate::TrainConfig tc;
    tc.steps = 5;
    tc.batch = 4;
    tc.warmup = 2;
    tc.evaluate_every = 2;
    std::vector<int> at;
    std::vector<double> seconds;
    tc.evaluate = [&](int step, double s) {
        at.push_back(step);
        seconds.push_back(s);
    };
    const translate::TrainResult r = translate::train(*model, {3201, 15000, 7, 99999}, {}, tc);
    CHECK(at == std::vector<int>{2, 4, 5});
    CHECK(std::is_sorted(seconds.begin(), seconds.end()));
    CHECK(seconds.front() >= 0);
    CHECK(seconds.back() <= r.seconds);
    CHECK(r.losses.size() == 5);
}

TEST_CASE("translate: padding in the source changes nothing for the real tokens") {
    torch_rng::manual_seed(3);
    EncoderDecoder model(14, 13, 16, 2, 1, LnPlacement::PostLN);
    NoGradGuard no_grad;
    TinyBatch alone = tiny_batch({15000});                 // S = 3, no padding
    TinyBatch padded = tiny_batch({15000, 99999});         // S = 9: 15000 gets 6 pads
    Tensor la = model.decode(alone.tgt_in, {1, alone.T},
                             model.encode(alone.src, {1, 3}, alone.mask), alone.mask);
    Tensor lp = model.decode(padded.tgt_in, {2, padded.T},
                             model.encode(padded.src, {2, 9}, padded.mask), padded.mask);
    // 15000's 6 target positions are the first 6 of 2 x 6 rows.
    CHECK(testutil::allclose(lp.data(), la.data(), size_t(la.numel()), 1e-5, 1e-4, "logits"));
}

namespace {

// A model whose answer is known: every sublayer silenced except the encoder-decoder attention,
// which (with W_Q = 0) averages the source's unpadded positions. Target token t lives in dim t,
// source token s in dim 8 + s, both large enough that the positional encoding is noise. The head
// then reads "current token" and "source token" and picks
//   from <start>: 3 if the source is token 1, 5 if it is token 2;  3 -> 4 -> <end>,
//   5 -> 6 -> 7 -> <end>.
void hand_set(EncoderDecoder& m) {
    for (auto& [name, t] : m.named_parameters()) {
        bool ln_weight =
            name.find("ln") != std::string::npos || name.find("norm") != std::string::npos;
        float v = ln_weight && name.size() >= 6 && name.substr(name.size() - 6) == "weight" ? 1 : 0;
        Tensor p = t;
        for (int64_t i = 0; i < p.numel(); i++) p.data()[i] = v;
    }
    const int d = 16;
    for (int t = 0; t < 8; t++) m.tgt_embed.weight.data()[t * d + t] = 100;
    m.src_embed.weight.data()[1 * d + 9] = 100;
    m.src_embed.weight.data()[2 * d + 10] = 100;
    m.src_embed.weight.data()[0 * d + 10] =
        100;  // padding looks like token 2: the mask must hide it
    CrossAttention& ca = m.decoder[0]->cross_attn;
    for (int i = 0; i < d; i++) {
        ca.kv.weight.data()[(d + i) * d + i] = 1;  // W_V = I (rows d..2d-1 of the stacked kv)
        ca.proj.weight.data()[i * d + i] = 100;   // W_O = 100 I
    }
    float* W = m.head.weight.data();  // (8, 16)
    auto edge = [&](int from, int to) { W[to * d + from] = 1; };
    edge(1, 3), edge(1, 5), edge(3, 4), edge(4, 2), edge(5, 6), edge(6, 7), edge(7, 2);
    W[3 * d + 9] = 0.5f;   // source token 1 favours 3 (a tie-break for <start>)
    W[5 * d + 10] = 0.5f;  // source token 2 favours 5
}

}  // namespace

TEST_CASE("translate: greedy decoding with a hand-set model gives the known tokens") {
    torch_rng::manual_seed(0);
    EncoderDecoder m(3, 8, 16, 2, 1, LnPlacement::PreLN);
    hand_set(m);
    using V = std::vector<int64_t>;
    CHECK(m.greedy_decode({1}, 1, 2, 10) == V{3, 4, 2});
    CHECK(m.greedy_decode({2, 2, 2}, 1, 2, 10) == V{5, 6, 7, 2});
    CHECK(m.greedy_decode({2, 2, 2}, 1, 2, 2) == V{5, 6});  // max_len cuts it short
    // Batched: sentence 0 is [1, pad, pad]; unmasked, the pads (dressed as token 2) would win.
    V src = {1, 0, 0, 2, 2, 2};
    Tensor mask = translate::padding_mask(src, {2, 3}, 0);
    m.decoder_calls = m.encoder_calls = 0;
    auto out = translate::greedy_decode_batch(m, src, {2, 3}, mask, 1, 2, 10, 0);
    REQUIRE(out.size() == 2);
    CHECK(out[0] == V{3, 4, 2});
    CHECK(out[1] == V{5, 6, 7, 2});
    CHECK(m.encoder_calls == 1);
    CHECK(m.decoder_calls == 4);  // one step per token of the longest sentence
    auto cut = translate::greedy_decode_batch(m, src, {2, 3}, mask, 1, 2, 3, 0);
    CHECK(cut[1] == V{5, 6, 7});
    auto unmasked = translate::greedy_decode_batch(m, src, {2, 3}, Tensor(), 1, 2, 10, 0);
    CHECK(unmasked[0] == V{5, 6, 7, 2});  // the mask is what made sentence 0 right
}

// ---- the weights file -------------------------------------------------------------------------
namespace {

std::string tmp_path(const char* name) {
    return "/tmp/translate-test-" + std::to_string(::getpid()) + "-" + name;
}

}  // namespace

TEST_CASE("translate: weights save and load round trip, bad files refused") {
    torch_rng::manual_seed(1);
    EncoderDecoder a(14, 13, 16, 2, 1, LnPlacement::PostLN);
    torch_rng::manual_seed(2);
    EncoderDecoder b(14, 13, 16, 2, 1, LnPlacement::PostLN);
    const std::string path = tmp_path("w.bin");
    serialize::save(path, {{"layers", 1}, {"d_model", 16}}, a.named_parameters());
    serialize::Checkpoint ck = serialize::load(path);
    CHECK(ck.get("layers") == 1);
    CHECK(ck.get("d_model") == 16);
    CHECK_THROWS(ck.get("n_heads"));
    serialize::copy_into(ck, b.named_parameters(), path);
    TinyBatch batch = tiny_batch({3201, 15000, 7});
    {
        NoGradGuard no_grad;
        Tensor la = tiny_loss(a, batch), lb = tiny_loss(b, batch);
        CHECK(la.item() == lb.item());  // bit-identical weights, identical outputs
    }
    CHECK(a.greedy_decode({1, 2, 3}, 1, 2, 6) == b.greedy_decode({1, 2, 3}, 1, 2, 6));

    // Truncated anywhere: refused with the file's name and what is wrong.
    std::ifstream in(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string cut = tmp_path("cut.bin");
    for (size_t keep : {size_t(0), size_t(5), size_t(30), bytes.size() / 2, bytes.size() - 1}) {
        std::ofstream(cut, std::ios::binary).write(bytes.data(), std::streamsize(keep));
        try {
            serialize::load(cut);
            FAIL("a file cut to " << keep << " bytes loaded");
        } catch (const std::runtime_error& e) {
            std::string msg = e.what();
            CHECK_MESSAGE(msg.find(cut) == 0, msg);
            CHECK_MESSAGE(msg.find('\n') == std::string::npos, msg);
            CHECK_MESSAGE((msg.find("truncated") != std::string::npos ||
                           msg.find("magic") != std::string::npos),
                          msg);
        }
    }
    // One flipped bit in the data: the checksum catches it.
    std::string flipped = bytes;
    flipped[flipped.size() / 2] ^= 0x10;
    std::ofstream(cut, std::ios::binary).write(flipped.data(), std::streamsize(flipped.size()));
    CHECK_THROWS_WITH_AS(serialize::load(cut), doctest::Contains("checksum"), std::runtime_error);
    // A model of another shape is refused by name.
    torch_rng::manual_seed(1);
    EncoderDecoder wide(14, 13, 32, 2, 1, LnPlacement::PostLN);
    CHECK_THROWS_WITH_AS(serialize::copy_into(ck, wide.named_parameters(), path),
                         doctest::Contains("shape"), std::runtime_error);
    CHECK_THROWS_WITH_AS(serialize::load(tmp_path("missing.bin")), doctest::Contains("cannot open"),
                         std::runtime_error);
    std::remove(path.c_str());
    std::remove(cut.c_str());
}

TEST_CASE("translate: the chapter trains, saves, reloads the same answers, refuses a cut file") {
    const std::string w = tmp_path("ch7.bin");
    const std::string tiny =
        "--layers 1 --d-model 16 --heads 2 --batch 16 --warmup 10 --no-figures";
    auto trained = testutil::run("7-translate", tiny + " --steps 20 --save " + w);
    REQUIRE_MESSAGE(trained.exit_code == 0, trained.err);
    CHECK(trained.out.find("스텝    20/20") != std::string::npos);
    auto pos = trained.out.find("평가 (그리디");
    REQUIRE(pos != std::string::npos);
    auto loaded = testutil::run("7-translate", "--load " + w + " --no-figures");
    REQUIRE_MESSAGE(loaded.exit_code == 0, loaded.err);
    auto lpos = loaded.out.find("평가 (그리디");
    REQUIRE(lpos != std::string::npos);
    // Same weights, same held-out set: the evaluation and examples print the same (timing aside).
    auto strip_time = [](std::string s) {
        auto a = s.find("% ("), b = s.find("초)", a);
        if (a != std::string::npos && b != std::string::npos) s.erase(a, b - a);
        return s;
    };
    CHECK(strip_time(loaded.out.substr(lpos)) == strip_time(trained.out.substr(pos)));

    std::ifstream in(w, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string cut = tmp_path("ch7-cut.bin");
    std::ofstream(cut, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size() - 100));
    auto refused = testutil::run("7-translate", "--load " + cut + " --no-figures");
    CHECK(refused.exit_code != 0);
    CHECK(refused.out.empty());
    CHECK_MESSAGE(refused.err.find(cut + ": truncated") != std::string::npos, refused.err);
    CHECK(std::count(refused.err.begin(), refused.err.end(), '\n') == 1);
    // The figure: written where --figure-dir says, a PNG.
    const std::string dir = tmp_path("fig");
    auto drawn = testutil::run("7-translate", "--load " + w + " --figure-dir " + dir);
    REQUIRE_MESSAGE(drawn.exit_code == 0, drawn.err);
    std::ifstream png(dir + "/7-translate.png", std::ios::binary);
    char magic[8] = {};
    png.read(magic, 8);
    CHECK(std::string(magic + 1, 3) == "PNG");
    std::remove((dir + "/7-translate.png").c_str());
    std::remove(dir.c_str());
    auto bad_flag = testutil::run("7-translate", "--d-model 30 --heads 4");
    CHECK(bad_flag.exit_code != 0);
    CHECK(bad_flag.err.find("--heads") != std::string::npos);
    std::remove(w.c_str());
    std::remove(cut.c_str());
}

TEST_CASE("translate: a save that cannot happen is refused before training, with its reason") {
    const std::string tiny =
        "--layers 1 --d-model 16 --heads 2 --batch 16 --warmup 10 --steps 3 --no-figures";
    // A missing folder: named, and no training step ran (no 스텝 line, nothing on stdout).
    auto missing = testutil::run("7-translate", tiny + " --save /no/such/dir/x.bin");
    CHECK(missing.exit_code == 1);
    CHECK(missing.out.empty());
    CHECK_MESSAGE(missing.err == "7-translate: error: /no/such/dir/x.bin: the folder /no/such/dir "
                                 "does not exist; create it or save elsewhere\n",
                  missing.err);
    // A folder given as the file.
    const std::string dir = tmp_path("a-folder");
    ::mkdir(dir.c_str(), 0755);
    auto folder = testutil::run("7-translate", tiny + " --save " + dir);
    CHECK(folder.exit_code == 1);
    CHECK(folder.out.empty());
    CHECK(folder.err.find(dir + ": is a folder") != std::string::npos);
    // --load of a folder names the file and what it is.
    auto load_dir = testutil::run("7-translate", "--load " + dir);
    CHECK(load_dir.exit_code == 1);
    CHECK(load_dir.err == "7-translate: error: " + dir + ": is a folder, not a weights file\n");
    ::rmdir(dir.c_str());
    auto same = testutil::run("7-translate", "--load x.bin --save x.bin");
    CHECK(same.exit_code == 2);
}

TEST_CASE("translate: --norm post|pre chooses where the LayerNorm sits; --help names each value") {
    const std::string tiny =
        "--layers 1 --d-model 16 --heads 2 --batch 8 --warmup 2 --steps 2 --no-figures";
    auto post = testutil::run("7-translate", tiny + " --norm post");
    REQUIRE_MESSAGE(post.exit_code == 0, post.err);
    CHECK(post.out.find("헤드 2개, Post-LN, 파라미터") != std::string::npos);
    auto pre = testutil::run("7-translate", tiny);
    CHECK(pre.out.find("헤드 2개, Pre-LN, 파라미터") != std::string::npos);
    CHECK(testutil::run("7-translate", "--norm sideways").exit_code == 2);
    CHECK(testutil::run("7-translate", "--pre-ln").exit_code == 2);  // gone: it did nothing
    CHECK(testutil::run("7-translate", "--save ''").exit_code == 2);
    auto help = testutil::run("7-translate", "--help");
    for (const char* s : {"--norm pre|post", "--save FILE", "--load FILE", "--figure-dir DIR"})
        CHECK_MESSAGE(help.out.find(s) != std::string::npos, s);
    // The default is stated once, by the parser, not also in the option's text.
    CHECK(help.out.find("default 1") == std::string::npos);
}

TEST_CASE("translate: a diverged run says so, exits 1 and saves nothing; NaN weights are refused") {
    const std::string w = tmp_path("diverged.bin");
    std::remove(w.c_str());
    auto r = testutil::run("7-translate",
                           "--layers 1 --d-model 16 --heads 2 --batch 16 "
                           "--steps 50 --lr 1e6 --warmup 1 --no-figures --save " +
                               w);
    CHECK(r.exit_code == 1);
    CHECK_MESSAGE(r.err.find("training diverged at step") != std::string::npos, r.err);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(r.out.find("평가 (그리디") == std::string::npos);  // no evaluation of a broken model
    CHECK(::access(w.c_str(), F_OK) != 0);                   // and no file
    CHECK(testutil::run("7-translate", "--lr inf").exit_code == 2);
    CHECK(testutil::run("7-translate", "--lr nan").exit_code == 2);
    // A checksum-valid file whose weights are not numbers is refused by name.
    torch_rng::manual_seed(1);
    EncoderDecoder m(14, 13, 16, 2, 1, LnPlacement::PreLN);
    m.head.bias.data()[3] = std::nanf("");
    serialize::save(w, {{"layers", 1}}, m.named_parameters());
    CHECK_THROWS_WITH_AS(serialize::load(w), doctest::Contains("'head.bias' holds NaN"),
                         std::runtime_error);
    std::remove(w.c_str());
}

TEST_CASE("translate: --load checks a file's declared shape before building a model") {
    using translate::ModelConfig;
    const std::string w = tmp_path("declared.bin");
    auto refused = [&](serialize::HParams hp, const std::string& why) {
        torch_rng::manual_seed(1);
        EncoderDecoder m(14, 13, 16, 2, 1, LnPlacement::PreLN);
        serialize::save(w, hp, m.named_parameters());
        auto r = testutil::run("7-translate", "--load " + w + " --no-figures");
        CHECK(r.exit_code == 1);
        CHECK(r.out.empty());
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
        CHECK_MESSAGE(r.err.find("7-translate: error: " + w + ": " + why) == 0, r.err);
    };
    const serialize::HParams ok = {{"layers", 1}, {"d_model", 16},   {"n_heads", 2},
                                   {"pre_ln", 1}, {"src_vocab", 14}, {"tgt_vocab", 13}};
    auto with = [&](const char* name, int64_t v) {
        serialize::HParams hp = ok;
        for (auto& [k, x] : hp)
            if (k == name) x = v;
        return hp;
    };
    // 24 layers at d_model 4096 would be a 40 GB model: refused from the file's 8205 values.
    serialize::HParams big = with("layers", 24);
    for (auto& [k, x] : big)
        if (k == "d_model") x = 4096;
    refused(big, "declares 24 layers at d_model 4096");
    refused(with("layers", (int64_t(1) << 32) + 2), "layers = 4294967298 is outside 1..24");
    refused({{"d_model", 16}}, "has no hyper-parameter \"layers\"");
    refused(with("tgt_vocab", 12), "its vocabulary sizes differ");
    serialize::HParams both = ok;
    both.push_back({"learned_positions", 1});
    both.push_back({"no_positions", 1});
    refused(both, "learned_positions and no_positions are both set");
    // The count the check uses is the model's own.
    for (LnPlacement p : {LnPlacement::PostLN, LnPlacement::PreLN})
        for (translate::Positions pos :
             {translate::Positions::sinusoidal, translate::Positions::learned,
              translate::Positions::none}) {
            ModelConfig c;
            c.layers = 2, c.d_model = 24, c.heads = 3, c.placement = p, c.positions = pos;
            CHECK(translate::parameter_count(c) == translate::make_model(c)->num_parameters());
        }
    std::remove(w.c_str());
}

TEST_CASE("translate: saving writes through a link, and never leaves or shares a temporary file") {
    torch_rng::manual_seed(1);
    EncoderDecoder m(14, 13, 16, 2, 1, LnPlacement::PreLN);
    const std::string dir = tmp_path("links");
    ::mkdir(dir.c_str(), 0755);
    const std::string target = dir + "/real.bin", link = dir + "/link.bin";
    REQUIRE(::symlink("real.bin", link.c_str()) == 0);  // dangling until the first save
    serialize::save(link, {{"layers", 1}}, m.named_parameters());
    struct stat st;
    REQUIRE(::lstat(link.c_str(), &st) == 0);
    CHECK(S_ISLNK(st.st_mode));  // still a link
    CHECK(serialize::load(target).get("layers") == 1);
    // A killed save's leftover (a process that no longer exists) goes at the next save; a live
    // process's temporary file is not touched.
    pid_t child = ::fork();
    if (child == 0) ::_exit(0);
    ::waitpid(child, nullptr, 0);
    const std::string stale = target + ".tmp." + std::to_string(child);
    const std::string live = target + ".tmp." + std::to_string(::getppid());
    std::ofstream(stale) << "half";
    std::ofstream(live) << "busy";
    serialize::save(link, {{"layers", 2}}, m.named_parameters());
    CHECK(::access(stale.c_str(), F_OK) != 0);
    CHECK(::access(live.c_str(), F_OK) == 0);
    CHECK(serialize::load(target).get("layers") == 2);
    // Only the file, the link and the live one remain: the save's own temporary was renamed.
    int entries = 0;
    if (DIR* d = ::opendir(dir.c_str())) {
        while (dirent* e = ::readdir(d)) entries += e->d_name[0] != '.';
        ::closedir(d);
    }
    CHECK(entries == 3);
    std::remove(live.c_str());
    std::remove(link.c_str());
    std::remove(target.c_str());
    ::rmdir(dir.c_str());
}

TEST_CASE("translate: two processes saving to one name each write whole files of their own") {
    // Before, both used "<path>.tmp": one process's rename could put the other's bytes in place
    // (or fail), while it reported success. Now each writes "<path>.tmp.<pid>".
    const std::string w = tmp_path("race.bin");
    pid_t kids[2];
    for (int k = 0; k < 2; k++) {
        kids[k] = ::fork();
        if (kids[k] == 0) {
            torch_rng::manual_seed(uint64_t(k));
            EncoderDecoder m(14, 13, 16, 2, 1 + k, LnPlacement::PreLN);
            try {
                for (int i = 0; i < 40; i++) serialize::save(w, {{"layers", 1 + k}},
                                                             m.named_parameters());
            } catch (...) {
                ::_exit(1);
            }
            ::_exit(0);
        }
    }
    testutil::check_children_exit_zero(kids);
    serialize::Checkpoint ck = serialize::load(w);  // whole and checksum-valid
    const int64_t layers = ck.get("layers");
    CHECK((layers == 1 || layers == 2));
    torch_rng::manual_seed(uint64_t(layers - 1));
    EncoderDecoder same(14, 13, 16, 2, int(layers), LnPlacement::PreLN);
    CHECK_NOTHROW(serialize::copy_into(ck, same.named_parameters(), w));  // its own tensors
    std::remove(w.c_str());
}

TEST_CASE("translate: batched small matmul (attention sizes) equals sgemm bit for bit") {
    // ops.cpp computes tiny batched products with a direct loop; it must round exactly as sgemm.
    torch_rng::manual_seed(5);
    for (auto [M, K, N] : {std::array<int64_t, 3>{9, 16, 9}, {6, 16, 9}, {1, 7, 5}, {17, 33, 64}}) {
        const int64_t Bt = 3;
        Tensor a = Tensor::from(torch_rng::randn(size_t(Bt * M * K)), {Bt, M, K}).requires_grad_();
        Tensor b = Tensor::from(torch_rng::randn(size_t(Bt * K * N)), {Bt, K, N}).requires_grad_();
        Tensor g = Tensor::from(torch_rng::randn(size_t(Bt * M * N)), {Bt, M, N});
        Tensor c = matmul(a, b);
        c.backward(g);
        for (int64_t t = 0; t < Bt; t++) {
            std::vector<float> c_ref(size_t(M * N)), ga_ref(size_t(M * K)), gb_ref(size_t(K * N));
            const float *A = a.data() + t * M * K, *B = b.data() + t * K * N,
                        *G = g.data() + t * M * N;
            sgemm(false, false, int(M), int(N), int(K), 1, A, int(K), B, int(N), 0, c_ref.data(),
                  int(N));
            sgemm(false, true, int(M), int(K), int(N), 1, G, int(N), B, int(N), 0, ga_ref.data(),
                  int(K));
            sgemm(true, false, int(K), int(N), int(M), 1, A, int(K), G, int(N), 0, gb_ref.data(),
                  int(N));
            CHECK(std::memcmp(c_ref.data(), c.data() + t * M * N, c_ref.size() * 4) == 0);
            CHECK(std::memcmp(ga_ref.data(), a.grad().data() + t * M * K, ga_ref.size() * 4) == 0);
            CHECK(std::memcmp(gb_ref.data(), b.grad().data() + t * K * N, gb_ref.size() * 4) == 0);
        }
    }
}

TEST_CASE("7-translate: Ctrl-C with --save keeps the weights trained so far") {
    // Saved only after the last step, an interrupt at step 700 of 2000 would leave nothing.
    const std::string dir = "/tmp/transformer-test-interrupt-" + std::to_string(::getpid());
    ::mkdir(dir.c_str(), 0700);
    const std::string save = dir + "/w.bin", out = dir + "/out.txt";
    const pid_t pid = testutil::spawn("7-translate",
                                      {"--layers", "1", "--d-model", "16", "--heads", "2",
                                       "--batch", "4", "--steps", "1000000", "--save", save,
                                       "--no-figures"},
                                      out);
    // Wait for the first progress line (step 100), then interrupt.
    bool training = false;
    for (int tries = 0; tries < 300 && !training; tries++) {  // up to 30 s
        ::usleep(100000);
        training = testutil::read_file_abs(out).find("스텝   100/") != std::string::npos;
    }
    CHECK(training);
    ::kill(pid, SIGINT);
    int status = 0;
    ::waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 130);
    const std::string said = testutil::read_file_abs(out);
    CHECK(said.find("가중치를 " + save + "에 저장했습니다\n") != std::string::npos);
    CHECK(said.find("스텝에서 멈췄습니다 (신호 2)") != std::string::npos);
    // The file is a whole checkpoint: it loads, and nothing else is left in the folder.
    translate::Loaded l = translate::load_model(save);
    CHECK(l.losses.size() >= 100);
    DIR* d = ::opendir(dir.c_str());
    int entries = 0;
    while (dirent* e = ::readdir(d))
        entries += e->d_name[0] != '.';
    ::closedir(d);
    CHECK(entries == 2);  // w.bin and out.txt
    std::remove(save.c_str());
    std::remove(out.c_str());
    ::rmdir(dir.c_str());
}

TEST_CASE("7-translate: a checkpoint with a negative loss or a hyper-parameter twice is refused") {
    // Both have right checksums. Loaded, the losses would be drawn on a log axis, and which of
    // two `layers` the model was built with would be the reader's guess.
    const std::string path = "/tmp/transformer-test-ckpt-" + std::to_string(::getpid()) + ".bin";
    translate::ModelConfig mc;
    mc.layers = 1, mc.d_model = 16, mc.heads = 2;
    auto model = translate::make_model(mc);
    translate::save_model(path, *model, mc, {2.5, -1.0});
    std::string err;
    try {
        translate::load_model(path);
    } catch (const std::exception& e) {
        err = e.what();
    }
    CHECK(err == path + ": history.loss holds a negative loss (-1.000000); the file is corrupt");
    serialize::save(path, {{"layers", 1}, {"layers", 2}}, {});
    err.clear();
    try {
        serialize::load(path);
    } catch (const std::exception& e) {
        err = e.what();
    }
    CHECK(err.find("hyper-parameter 'layers' appears twice (corrupt file)") != std::string::npos);
    translate::save_model(path, *model, mc, {2.5, 0.5});  // as written by a run: it loads
    CHECK(translate::load_model(path).losses.size() == 2);
    // A model without position vectors says so, and comes back as one.
    mc.positions = translate::Positions::none;
    translate::save_model(path, *translate::make_model(mc), mc, {2.5});
    CHECK(translate::load_model(path).config.positions == translate::Positions::none);
    std::remove(path.c_str());
}

TEST_CASE("translate: without position vectors the encoder sees a set") {
    // Section 4: self-attention alone cannot tell an order from its permutations. With no
    // position vectors, the encoder's output for a permuted source is the same rows permuted
    // (to float rounding: the sums run in another order); with sinusoids it is not.
    for (auto pos : {translate::Positions::none, translate::Positions::sinusoidal}) {
        translate::ModelConfig mc;
        mc.layers = 1, mc.d_model = 16, mc.heads = 2, mc.positions = pos;
        auto m = translate::make_model(mc);
        NoGradGuard no_grad;
        const std::vector<int64_t> src = {3, 5, 7, 9}, reversed = {9, 7, 5, 3};  // (1, 4) ids
        const Tensor a = m->encode(src, {1, 4}), b = m->encode(reversed, {1, 4});  // (1, 4, 16)
        double most = 0;
        for (int64_t i = 0; i < 4; i++)
            for (int64_t j = 0; j < 16; j++)
                most = std::max(most, double(std::fabs(a.at({0, i, j}) - b.at({0, 3 - i, j}))));
        CAPTURE(int(pos));
        if (pos == translate::Positions::none) CHECK(most < 1e-5);
        else CHECK(most > 0.1);
    }
}
