// bench-gemm's peers (bench/peers.h, bench/peer_child.h, bench/blis.h, bench/child.h): a child
// that hangs is killed at its time limit; the result checker passes every right product and
// rejects a planted wrong one; the best peer and the ratio of each cell, and the table; which
// BLIS arch is forced; and bench-gemm itself with a peer that hangs, crashes, computes a wrong
// product or is not there. Nothing here times anything.
#include "bench/child.h"

#include <string>
#include <vector>

#include "tests/util.h"

TEST_CASE("peers: a child past its time limit is killed, and said so") {
    // A peer that hangs would hold bench-gemm forever: run_child kills it at the limit.
    std::vector<std::string> lines;
    auto keep = [&](const std::string& line) { lines.push_back(line); };
    CHECK(bench::run_child({"sh", "-c", "echo started; exec sleep 30"}, {}, keep, 0.5) ==
          bench::TIMED_OUT);
    CHECK(lines == std::vector<std::string>{"started\n"});  // what it said before, kept
    // Within its limit a child's lines and exit status are as without one.
    lines.clear();
    CHECK(bench::run_child({"sh", "-c", "echo a; printf b; exit 3"}, {}, keep, 30) == 3);
    CHECK(lines == std::vector<std::string>{"a\n", "b"});
    lines.clear();
    CHECK(bench::run_child({"sh", "-c", "kill -SEGV $$"}, {}, keep, 30) == 128 + SIGSEGV);
}
