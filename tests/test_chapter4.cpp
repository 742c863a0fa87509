// Chapter 4: shuffling tokens commutes with self-attention (rounding noise only) until the
// positional encoding is added; the encoding itself has the properties the article describes.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <unistd.h>

#include "chapters/1-self-attention/attention.h"
#include "chapters/4-positional-encoding/positional_encoding.h"
#include "tests/util.h"

namespace {
// The number after ": " on the line that starts with `label`.
double value_after(const std::string& out, const std::string& label) {
    size_t at = out.find(label);
    REQUIRE_MESSAGE(at != std::string::npos, "no line '" << label << "' in:\n" << out);
    return std::strtod(out.c_str() + at + label.size(), nullptr);
}
const std::string LINE1 = "계산 후 섞기 vs 섞은 후 계산, 최대 차이: ";
const std::string LINE2 = "위치 인코딩을 더한 뒤 같은 실험, 최대 차이: ";
}  // namespace

TEST_CASE("chapter 4: the article's two lines") {
    const std::string dir = "/tmp/transformer-test-ch4-" + std::to_string(::getpid());
    auto r = testutil::run("4-positional-encoding", "--figure-dir " + dir);
    CHECK(r.exit_code == 0);
    CHECK(r.err == "");
    // The article's block (tests/expected/4-positional-encoding.txt): same labels, same lines.
    const std::string article = testutil::read_file("tests/expected/4-positional-encoding.txt");
    CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 2);
    CHECK(r.out.rfind(LINE1, 0) == 0);
    CHECK(article.rfind(LINE1, 0) == 0);
    // Without positions the two orders agree up to float rounding (the article: 1.19e-07).
    CHECK(value_after(r.out, LINE1) < 1e-6);
    // The article prints 0.557053804397583. float32 matrix products summed in another order
    // (and torch's vectorised sin/cos, 1 ulp off glibc's at some angles) move the last one or
    // two float digits (we print 0.5570540428161621), so we compare within 1e-6, not exactly.
    CHECK(value_after(article, LINE2) == 0.557053804397583);
    CHECK(std::fabs(value_after(r.out, LINE2) - value_after(article, LINE2)) <= 1e-6);

    std::ifstream png(dir + "/4-positional-encoding.png", std::ios::binary);
    REQUIRE_MESSAGE(png.good(), "no " << dir << "/4-positional-encoding.png");
    char sig[8] = {};
    png.read(sig, 8);
    CHECK(std::string(sig + 1, 3) == "PNG");
    std::remove((dir + "/4-positional-encoding.png").c_str());
    ::rmdir(dir.c_str());
}

TEST_CASE("chapter 4: the identity permutation changes nothing, with or without positions") {
    auto r = testutil::run("4-positional-encoding", "--perm 0,1,2,3,4,5 --no-figures");
    CHECK(r.exit_code == 0);
    CHECK(r.out == LINE1 + "0.0\n" + LINE2 + "0.0\n");
}

TEST_CASE("chapter 4: other sizes and seeds keep the pattern") {
    auto r = testutil::run("4-positional-encoding",
                           "--seed 3 --n 8 --d 32 --perm 7,6,5,4,3,2,1,0 --no-figures");
    CHECK(r.exit_code == 0);
    CHECK(value_after(r.out, LINE1) < 1e-6);
    CHECK(value_after(r.out, LINE2) > 1e-2);
}

TEST_CASE("chapter 4: bad flags -> exit 2 and one line on stderr") {
    for (const char* args : {"--n 8", "--perm 0,1,2,3,4,4", "--perm 0,1,2", "--d 7", "--d 0",
                             "--n 0", "--seed -2", "--perm 1,x"}) {
        auto r = testutil::run("4-positional-encoding", std::string(args) + " --no-figures");
        CHECK_MESSAGE(r.exit_code == 2, args);
        CHECK_MESSAGE(r.out.empty(), args);
        CHECK_MESSAGE(std::count(r.err.begin(), r.err.end(), '\n') == 1, args << ": " << r.err);
    }
}

TEST_CASE("positional encoding: bounded, |PE(pos)|^2 = d/2, symmetric dot-product profile") {
    const int n = 64, d = 128;
    Tensor PE = positional_encoding(n, d);  // (64, 128)
    const float* pe = PE.data();
    auto dot = [&](int a, int b) {
        double s = 0;
        for (int c = 0; c < d; c++) s += double(pe[a * d + c]) * pe[b * d + c];
        return s;
    };
    for (int i = 0; i < n * d; i++) REQUIRE((pe[i] >= -1.0f && pe[i] <= 1.0f));
    // Each (sin, cos) pair has squared length 1, so every position has squared norm d/2.
    for (int pos = 0; pos < n; pos++)
        CHECK(dot(pos, pos) == doctest::Approx(d / 2.0).epsilon(1e-5));
    // PE(p).PE(p+o) = sum_i cos(w_i o): it depends on the distance only, the same on both sides,
    // and is largest at distance 0 (the article's right panel: 64 at o = 0).
    for (int o = 1; o <= 31; o++) {
        CHECK(dot(32, 32 + o) == doctest::Approx(dot(32, 32 - o)).epsilon(1e-5));
        CHECK(dot(32, 32 + o) == doctest::Approx(dot(10, 10 + o)).epsilon(1e-5));
        CHECK(dot(32, 32 + o) < dot(32, 32));
    }
    // Position 0: sin(0) = 0 and cos(0) = 1 in every pair.
    for (int c = 0; c < d; c++) CHECK(pe[c] == (c % 2 == 0 ? 0.0f : 1.0f));
}
