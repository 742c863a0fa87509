// Chapter 2 prints the article's table digit for digit (numpy-exact draws, numpy's pairwise
// sums), for the default flags and for another flag set recorded with numpy 1.24.2 running the
// article's script; it writes figure 1 where --figure-dir says. Its numpy arithmetic
// (chapters/2-scaling/numpy_math.h) is checked on values whose sum depends on the order.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <unistd.h>
#include <vector>

#include "chapters/2-scaling/numpy_math.h"
#include "tests/util.h"

TEST_CASE("chapter 2: default output equals the article's table, and figure 1 is written") {
    const std::string dir = "/tmp/transformer-test-ch2-" + std::to_string(::getpid());
    auto r = testutil::run("2-scaling", "--figure-dir " + dir);
    CHECK(r.exit_code == 0);
    CHECK(r.err == "");
    CHECK(r.out == testutil::read_file("tests/expected/2-scaling.txt"));
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
    auto r = testutil::run("2-scaling", "--seed 1 --trials 3000 --dims 3,10,100,1000 --keys 5 --no-figures");
    CHECK(r.exit_code == 0);
    CHECK(r.out == testutil::read_file("tests/data/rng-2-scaling-seed1.txt"));
}

TEST_CASE("chapter 2: the output does not depend on the number of threads") {
    // The draws are made in parallel pieces spliced into numpy's exact stream, and the trials
    // are independent: any thread count prints the same digits. 9 keys: a group of 8 and one.
    const std::string args = "--seed 1 --trials 3000 --dims 3,10,100,1000 --keys 5 --no-figures";
    const std::string expected = testutil::read_file("tests/data/rng-2-scaling-seed1.txt");
    for (const char* threads : {"1", "2", "3", "7"}) {
        auto r = testutil::run("2-scaling", args + " --threads " + threads);
        CHECK_MESSAGE(r.exit_code == 0, threads);
        CHECK_MESSAGE(r.out == expected, threads);
    }
    // /usr/bin/python3 (numpy 1.24.2) running the article's loop with seed 5, 700 trials,
    // d_k = 1, 33, 700 and 9 keys.
    const std::string nine =
        "d_k=    1  로짓 표준편차   0.78 | 최대확률 0.298 → 0.298 | 기울기 지표 0.7956 → 0.7956\n"
        "d_k=   33  로짓 표준편차   5.23 | 최대확률 0.811 → 0.333 | 기울기 지표 0.2630 → 0.7906\n"
        "d_k=  700  로짓 표준편차  24.25 | 최대확률 0.965 → 0.342 | 기울기 지표 0.0502 → 0.7874\n";
    for (const char* threads : {"1", "4"}) {
        auto r = testutil::run("2-scaling", std::string("--seed 5 --trials 700 --dims 1,33,700 --keys 9 "
                                                        "--no-figures --threads ") + threads);
        CHECK_MESSAGE(r.exit_code == 0, threads);
        CHECK_MESSAGE(r.out == nine, threads);
    }
}

TEST_CASE("chapter 2: bad flags -> exit 2 and one line on stderr") {
    for (const char* args : {"--trials 0", "--keys 0", "--keys 65", "--dims 4,0", "--dims 4,x",
                             "--seed -1", "--threads -1", "--bogus"}) {
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
