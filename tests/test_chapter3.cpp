// Chapter 3 (section 3's MultiHeadAttention): its parameter count for any number of heads, the
// program's output against the article's block, and its memory check before it allocates.
#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "chapters/3-multi-head/multi_head_attention.h"
#include "tests/util.h"

TEST_CASE("chapter 3: MultiHeadAttention keeps 4 d_model^2 parameters for any number of heads") {
    for (int h : {1, 2, 4, 8, 16}) CHECK(MultiHeadAttention(512, h).num_parameters() == 1048576);
    CHECK_THROWS_WITH_AS(MultiHeadAttention(10, 3), doctest::Contains("not divisible"),
                         std::invalid_argument);
}

TEST_CASE("chapter 3: default output starts with the article's block") {
    auto r = testutil::run("3-multi-head");
    CHECK(r.exit_code == 0);
    std::string expected = testutil::read_file("tests/expected/3-multi-head.txt");
    CHECK(r.out.substr(0, expected.size()) == expected);
    CHECK(r.out.find("  16 |        1,048,576 ( 4d²) |           16,777,216 ( 64d²)") !=
          std::string::npos);
    CHECK(testutil::run("3-multi-head", "--d-model 100 --heads 3").exit_code == 2);
}

TEST_CASE("chapter 3: the memory check counts the table's largest module, as the table does") {
    // Held at once: 11 (B, n, d) activations, 3 (B, h, n, n), the layer's 4 d^2 and the
    // table's largest module (16 independent heads: the d^2 count its last line prints). At
    // d_model 131072 that is more memory than any machine here has, so the program says how
    // much before it allocates anything, and the figure must include all of the table's d^2.
    auto table = testutil::run("3-multi-head");
    REQUIRE(table.exit_code == 0);
    long largest = 0;  // the largest "(NNd²)" of the table
    for (size_t at = table.out.find("d²)"); at != std::string::npos;
         at = table.out.find("d²)", at + 1)) {
        const size_t open = table.out.rfind('(', at);
        largest = std::max(largest, std::stol(table.out.substr(open + 1, at - open - 1)));
    }
    CHECK(largest == 64);
    const double B = 1, N = 1, h = 8, d = 131072;
    const double bytes = 4 * (11 * B * N * d + 3 * B * h * N * N + (4 + largest) * d * d);
    auto r = testutil::run("3-multi-head", "--d-model 131072 --batch 1 --n 1");
    CHECK(r.exit_code == 2);
    char gb[32];
    std::snprintf(gb, sizeof gb, "%.0f", bytes / 1e9);
    CHECK_MESSAGE(r.err.find(std::string("need about ") + gb + " GB") != std::string::npos, r.err);
}

TEST_CASE("chapter 3: the memory check counts the three (B, h, n, n) matrices the layer holds") {
    // Q K^T, the scores (its division by sqrt(d_k) keeps Q K^T for the backward) and the
    // softmax weights live at once: 3 (B, h, n, n) floats. Counted as 2, a size the machine
    // cannot hold would pass the check, to meet the OOM killer minutes later.
    auto r = testutil::run("3-multi-head", "--batch 1 --n 100000 --d-model 8 --heads 8 --no-table");
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    // 4 bytes * (3 * 8 * 100000^2 + 11 * 100000 * 8 + 4 * 8^2) = 960.04 GB
    CHECK_MESSAGE(r.err.rfind("3-multi-head: error: --batch 1 --n 100000 --d-model 8 --heads 8 "
                              "need about 960 GB of memory, more than this machine's ",
                              0) == 0,
                  r.err);
}
