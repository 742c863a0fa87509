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

TEST_CASE("chapter 2: bad flags -> exit 2 and one line on stderr") {
    for (const char* args : {"--trials 0", "--keys 0", "--keys 65", "--dims 4,0", "--dims 4,x",
                             "--seed -1", "--bogus"}) {
        auto r = testutil::run("2-scaling", std::string(args) + " --no-figures");
        CHECK_MESSAGE(r.exit_code == 2, args);
        CHECK_MESSAGE(r.out.empty(), args);
        CHECK_MESSAGE(std::count(r.err.begin(), r.err.end(), '\n') == 1, args << ": " << r.err);
    }
}
