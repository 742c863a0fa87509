// common/cli: parsing, and the one-line errors a person sees for a bad flag.
#include "common/cli.h"
#include "tests/util.h"

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
