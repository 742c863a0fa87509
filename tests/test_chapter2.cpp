// Chapter 2 prints the article's table digit for digit (numpy-exact draws, numpy's pairwise
// sums), for the default flags and for other flag sets recorded with numpy 1.24.2 running the
// article's script; it writes figure 1 where --figure-dir says. Its numpy arithmetic
// (chapters/2-scaling/numpy_math.h) is checked on values whose sum depends on the order.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <unistd.h>
#include <vector>

#include "chapters/2-scaling/numpy_math.h"
#include "tests/util.h"

namespace {

// The article's block: the table's lines, before the blank line that starts what follows it.
std::string block(const std::string& out) {
    const size_t end = out.find("\n\n");
    return end == std::string::npos ? out : out.substr(0, end + 1);
}

}  // namespace

TEST_CASE("chapter 2: default output equals the article's table, and figure 1 is written") {
    const std::string dir = "/tmp/transformer-test-ch2-" + std::to_string(::getpid());
    auto r = testutil::run("2-scaling", "--figure-dir " + dir);
    CHECK(r.exit_code == 0);
    CHECK(r.err == "");
    CHECK(block(r.out) == testutil::read_file("tests/expected/2-scaling.txt"));
    std::ifstream png(dir + "/2-scaling.png", std::ios::binary);
    REQUIRE_MESSAGE(png.good(), "no " << dir << "/2-scaling.png");
    char sig[8] = {};
    png.read(sig, 8);
    CHECK(std::string(sig + 1, 3) == "PNG");
    std::remove((dir + "/2-scaling.png").c_str());
    ::rmdir(dir.c_str());
}

TEST_CASE("chapter 2: other flags print what the article's script prints for them") {
    // /usr/bin/python3 (numpy 1.24.2) running the article's loop with seed 1, 3000 trials,
    // d_k = 3, 10, 100, 1000 and 5 keys (tests/data/rng-2-scaling-seed1.txt).
    auto r = testutil::run("2-scaling",
                           "--seed 1 --trials 3000 --dims 3,10,100,1000 --keys 5 --no-figures");
    CHECK(r.exit_code == 0);
    CHECK(block(r.out) == testutil::read_file("tests/data/rng-2-scaling-seed1.txt"));
}

TEST_CASE("chapter 2: 9 keys and d_k = 1 print what the article's script prints") {
    // /usr/bin/python3 (numpy 1.24.2) running the article's loop with seed 5, 700 trials,
    // d_k = 1, 33, 700 and 9 keys.
    const std::string nine =
        "d_k=    1  로짓 표준편차   0.78 | 최대확률 0.298 → 0.298 | "
        "기울기 지표 0.7956 → 0.7956\n"
        "d_k=   33  로짓 표준편차   5.23 | 최대확률 0.811 → 0.333 | "
        "기울기 지표 0.2630 → 0.7906\n"
        "d_k=  700  로짓 표준편차  24.25 | 최대확률 0.965 → 0.342 | "
        "기울기 지표 0.0502 → 0.7874\n";
    auto r =
        testutil::run("2-scaling", "--seed 5 --trials 700 --dims 1,33,700 --keys 9 --no-figures");
    CHECK(r.exit_code == 0);
    CHECK(block(r.out) == nine);
}

namespace {
struct Row {
    int d_k;
    double logit_std, pmax_raw, pmax_scaled, grad_raw, grad_scaled;
};
// The table's rows, parsed back; a line that does not parse fails the test.
std::vector<Row> parse_table(const std::string& out) {
    std::vector<Row> rows;
    size_t at = 0;
    while (at < out.size()) {
        const size_t end = out.find('\n', at);
        REQUIRE_MESSAGE(end != std::string::npos, "unterminated line in " << out);
        const std::string line = out.substr(at, end - at);
        Row r{};
        REQUIRE_MESSAGE(std::sscanf(line.c_str(),
                                    "d_k=%d  로짓 표준편차 %lf | 최대확률 %lf → %lf | "
                                    "기울기 지표 %lf → %lf",
                                    &r.d_k, &r.logit_std, &r.pmax_raw, &r.pmax_scaled, &r.grad_raw,
                                    &r.grad_scaled) == 6,
                        line);
        rows.push_back(r);
        at = end + 1;
    }
    return rows;
}
}  // namespace

TEST_CASE("chapter 2: a small run is repeatable, one row per d_k, figure or not") {
    const std::string args = "--trials 200 --dims 4,64";
    auto a = testutil::run("2-scaling", args + " --no-figures");
    REQUIRE(a.exit_code == 0);
    CHECK(a.err == "");
    // The same flags give the same bytes; so does the run that also draws figure 1 (from its own
    // fresh generator, after the table).
    CHECK(testutil::run("2-scaling", args + " --no-figures").out == a.out);
    const std::string dir = "/tmp/transformer-test-ch2-small-" + std::to_string(::getpid());
    auto with_figure = testutil::run("2-scaling", args + " --figure-dir " + dir);
    CHECK(with_figure.exit_code == 0);
    CHECK(with_figure.out == a.out);
    CHECK(testutil::read_file_abs(dir + "/2-scaling.png").substr(1, 3) == "PNG");
    std::remove((dir + "/2-scaling.png").c_str());
    ::rmdir(dir.c_str());

    const std::vector<Row> rows = parse_table(block(a.out));
    REQUIRE(rows.size() == 2);
    CHECK(rows[0].d_k == 4);
    CHECK(rows[1].d_k == 64);
    for (const Row& r : rows) {
        INFO("d_k = " << r.d_k);
        for (double p : {r.pmax_raw, r.pmax_scaled}) {  // 8 keys: between uniform and one-hot
            CHECK(p >= 0.125);
            CHECK(p <= 1.0);
        }
        for (double g : {r.grad_raw, r.grad_scaled}) {  // sum p(1-p) <= 1 - 1/8
            CHECK(g > 0.0);
            CHECK(g <= 0.875);
        }
    }
    // The logits' spread grows like sqrt(d_k) (4 here); the division takes the peak back down
    // and the gradient back up.
    CHECK(rows[1].logit_std / rows[0].logit_std > 3.5);
    CHECK(rows[1].logit_std / rows[0].logit_std < 4.5);
    CHECK(rows[1].pmax_scaled < rows[1].pmax_raw - 0.3);
    CHECK(rows[1].grad_scaled > rows[1].grad_raw + 0.3);

    // d_k = 4 comes first in the stream: alone it prints the same row. Another seed does not.
    auto first = testutil::run("2-scaling", "--trials 200 --dims 4 --no-figures");
    CHECK(first.out == a.out.substr(0, a.out.find('\n') + 1));
    CHECK(testutil::run("2-scaling", args + " --seed 2 --no-figures").out != a.out);
}

TEST_CASE("chapter 2: bad flags -> exit 2 and one line on stderr") {
    for (const char* args : {"--trials 0", "--keys 0", "--keys 65", "--dims 4,0", "--dims 4,x",
                             "--dims 1048577", "--seed -1", "--threads 2", "--bogus"}) {
        auto r = testutil::run("2-scaling", std::string(args) + " --no-figures");
        CHECK_MESSAGE(r.exit_code == 2, args);
        CHECK_MESSAGE(r.out.empty(), args);
        CHECK_MESSAGE(std::count(r.err.begin(), r.err.end(), '\n') == 1, args << ": " << r.err);
    }
}

// ---- numpy_math.h --------------------------------------------------------------------------
// [1, e, e, ..., e] with e = 2^-53, half an ulp of 1: added to 1 one at a time, every e is lost
// (1 + e is a tie, rounded to even: 1), so a left-to-right sum is exactly 1. numpy's pairwise sum
// adds most of the e's among themselves first and keeps them. The expected sums below were
// worked out by hand from numpy's pairwise_sum (and checked with a Python transcription of it).
namespace {
std::vector<double> one_and_halves(size_t n) {
    std::vector<double> a(n, 0x1p-53);
    a[0] = 1.0;
    return a;
}
}  // namespace

TEST_CASE("chapter 2: np_sum adds pairwise as numpy does, not left to right") {
    const double u = 0x1p-52;  // an ulp of 1
    struct Case {
        size_t n;
        double sum;
    };
    for (const Case& c : {
             Case{7, 1.0},              // under 8: left to right, every e lost
             Case{8, 1.0 + 3 * u},      // ((1+e)+(e+e)) + ((e+e)+(e+e)) = (1 + u) + 2u
             Case{9, 1.0 + 4 * u},      // then + e: 1 + 3.5u, a tie, to even
             Case{16, 1.0 + 7 * u},     // r0 = 1, r1..r7 = 2e each
             Case{128, 1.0 + 56 * u},   // the largest block: r1..r7 = 16e each
             Case{129, 1.0 + 60 * u},   // halves of 64 and 65: (1 + 28u) + 32.5u, a tie, to even
             Case{1000, 1.0 + 493 * u}  // halves of 496 and 504, and so on down to 120 and 128
         }) {
        INFO("n = " << c.n);
        const std::vector<double> a = one_and_halves(c.n);
        double left_to_right = 0.0;
        for (double x : a)
            left_to_right += x;
        CHECK(left_to_right == 1.0);
        CHECK(np_sum(a) == c.sum);
        CHECK(np_sum(a.data(), a.size()) == c.sum);
        CHECK(np_mean(a) == c.sum / double(c.n));
    }
    CHECK(np_sum(std::vector<double>{}) == 0.0);
}

TEST_CASE("chapter 2: np_std is numpy's population standard deviation") {
    CHECK(np_std({1.0, 2.0, 3.0, 4.0}) == std::sqrt(1.25));  // mean 2.5, squares sum to 5
    CHECK(np_std({-2.0, 2.0}) == 2.0);
    CHECK(np_std(std::vector<double>(9, 0.25)) == 0.0);
    // Nine values: both means go through the pairwise sum (the 8-wide block, then one more).
    std::vector<double> z = one_and_halves(9);
    const double mean = (1.0 + 4 * 0x1p-52) / 9;
    std::vector<double> sq;
    for (double x : z)
        sq.push_back((x - mean) * (x - mean));
    CHECK(np_std(z) == std::sqrt(np_sum(sq) / 9));
}

TEST_CASE("chapter 2: np_matmul sums each row left to right and rounds every product") {
    // K (2, 3) @ q (3): plain values first.
    CHECK(np_matmul({1, 2, 3, 4, 5, 6}, {1, 0, -1}) == std::vector<double>{-2, -2});
    // Left to right: the row [1, e, ..., e] (8 values) against ones sums to exactly 1, where a
    // pairwise or blocked order would keep some of the e's.
    CHECK(np_matmul(one_and_halves(8), std::vector<double>(8, 1.0)) == std::vector<double>{1.0});
    // Each product rounded before it is added: (1 + 2^-30)^2 = 1 + 2^-29 + 2^-60 rounds to
    // 1 + 2^-29, and -1 + that is 2^-29. A fused multiply-add would keep the 2^-60.
    const double a = 1.0 + 0x1p-30;
    CHECK(np_matmul({-1.0, a}, {1.0, a}) == std::vector<double>{0x1p-29});
    CHECK_THROWS_AS(np_matmul({1, 2, 3}, {1, 2}), std::invalid_argument);
}

TEST_CASE("chapter 2: the gradient indicator falls as 1/sqrt(d_k): a log-log slope of -0.5") {
    // The fit itself, on exact power laws.
    CHECK(loglog_slope({4, 16, 64, 256}, {1, 0.5, 0.25, 0.125}) == doctest::Approx(-0.5));
    CHECK(loglog_slope({2, 3, 10}, {7, 7, 7}) == doctest::Approx(0.0));
    CHECK(loglog_slope({1, 10, 100}, {3, 30, 300}) == doctest::Approx(1.0));
    // The line under it (chapter 6 fits its gradient curves with it): y = 3 - 2x exactly, and
    // np.polyfit's slope 1.5 through (0, 0), (1, 2), (2, 3); one point has no slope.
    CHECK(polyfit_slope({-1, 0.5, 4}, {5, 2, -5}) == doctest::Approx(-2.0));
    CHECK(polyfit_slope({0, 1, 2}, {0, 2, 3}) == doctest::Approx(1.5));
    CHECK(std::isnan(polyfit_slope({3}, {1})));
    // The article's table at the default seed: the unscaled indicator's slope is within 0.05 of
    // -0.5 (it is -0.478 over d_k = 4 ... 1024; the curve bends at small d_k), the scaled one is
    // flat.
    auto r = testutil::run("2-scaling", "--no-figures");
    REQUIRE(r.exit_code == 0);
    const std::string key = "최소제곱): 스케일링 없음 ";
    const size_t at = r.out.find(key);
    REQUIRE(at != std::string::npos);
    double raw = 0, scaled = 0;
    REQUIRE(std::sscanf(r.out.c_str() + at + key.size(), "%lf, √d_k로 나눔 %lf", &raw, &scaled) ==
            2);
    CHECK(std::fabs(raw + 0.5) <= 0.05);
    CHECK(std::fabs(scaled) <= 0.01);
    CHECK(r.out.find("판정: 재현됨") != std::string::npos);
}

TEST_CASE("chapter 2: a d_k listed twice or one key is refused, never printed as nan") {
    // --dims 4,4 would fit a slope over one x (0/0) and --keys 1 take a log of 0, each printed
    // as -nan with a verdict and exit 0; both are refused up front.
    auto r = testutil::run("2-scaling", "--dims 4,4 --trials 10 --no-figures");
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(r.err ==
          "2-scaling: error: --dims lists 4 twice; the slope over d_k needs each d_k "
          "once\n");
    r = testutil::run("2-scaling", "--dims 1,2 --trials 10 --keys 1 --no-figures");
    CHECK(r.exit_code == 2);
    CHECK(r.err.rfind("2-scaling: error: --keys must be between 2 and 64", 0) == 0);
    r = testutil::run("2-scaling", "--dims 1,2 --trials 10 --keys 2 --no-figures");
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("nan") == std::string::npos);
}
