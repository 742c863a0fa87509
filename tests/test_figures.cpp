// The committed figures/ are what the chapters draw now: each deterministic chapter is run
// again into a temporary folder and its PNG compared byte for byte (a stale figure fails).
// Chapter 6 (timings) is not deterministic and chapter 7 trains for a minute; they are checked
// by their own tests instead.
#include <filesystem>

#include "tests/util.h"

TEST_CASE("figures: committed PNGs of the deterministic chapters are up to date") {
    const std::string dir = "/tmp/transformer-figures-" + std::to_string(::getpid());
    std::filesystem::create_directories(dir);
    struct Case {
        const char* program;
        const char* extra;  // flags that skip work the figure does not need
    };
    for (const Case& c : {Case{"1-self-attention", ""}, Case{"2-scaling", ""},
                          Case{"4-positional-encoding", ""}, Case{"5-blocks", "--no-decoder"}}) {
        INFO(c.program);
        auto r = testutil::run(c.program, std::string("--figure-dir ") + dir + " " + c.extra);
        REQUIRE(r.exit_code == 0);
        std::string name = std::string(c.program) + ".png";
        std::string fresh = testutil::read_file_abs(dir + "/" + name);
        std::string committed = testutil::read_file("figures/" + name);
        CHECK_MESSAGE(fresh == committed,
                      "figures/" << name << " is stale: run `make` and commit it");
    }
    std::filesystem::remove_all(dir);
}
