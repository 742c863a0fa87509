// Chapter 2 prints the article's table digit for digit (numpy-exact draws, numpy's pairwise
// sums), for the default flags and for another flag set recorded with numpy 1.24.2 running the
// article's script; it writes figure 1 where --figure-dir says.
#include <algorithm>
#include <string>
#include <unistd.h>

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
