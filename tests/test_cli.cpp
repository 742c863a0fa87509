// common/cli: parsing, and the one-line errors a person sees for a bad flag.
#include "common/cli.h"
#include "tests/util.h"

#include <algorithm>

TEST_CASE("cli parses integers, numbers and comma lists") {
    long i;
    double d;
    std::vector<int> v;
    CHECK(cli::parse_int("42", i));
    CHECK(i == 42);
    CHECK_FALSE(cli::parse_int("4x", i));
    CHECK_FALSE(cli::parse_int("", i));
    CHECK(cli::parse_double("1e-3", d));
    CHECK(d == 1e-3);
    CHECK_FALSE(cli::parse_double("abc", d));
    CHECK(cli::parse_int_list("4,16,64", v));
    CHECK(v == std::vector<int>{4, 16, 64});
    CHECK_FALSE(cli::parse_int_list("4,,16", v));
    CHECK_FALSE(cli::parse_int_list("4,", v));
}

TEST_CASE("cli: sizes that cannot fit in memory are refused in one line, not by a crash") {
    // 3000 x 3000 tokens of width 512 hold about 2 TB; 2^31 trials about 86 GB: more than any
    // machine this runs on, so the programs say so before allocating anything.
    testutil::Run r = testutil::run("3-multi-head", "--batch 3000 --n 3000");
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(r.err.rfind("3-multi-head: error: --batch 3000 --n 3000 --d-model 512 --heads 8 need "
                      "about 1931 GB of memory, more than this machine's ", 0) == 0);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    r = testutil::run("2-scaling", "--trials 2147483647 --dims 4 --no-figures");
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(r.err.rfind("2-scaling: error: --trials 2147483647 for 1 d_k need about 86 GB", 0) == 0);
    // The defaults pass the same check.
    CHECK(testutil::run("3-multi-head", "--no-table").exit_code == 0);
}
