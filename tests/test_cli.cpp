// common/cli: parsing, and the one-line errors a person sees for a bad flag.
#include "common/cli.h"
#include "tests/util.h"

#include <algorithm>
#include <stdexcept>
#include <sys/wait.h>
#include <tuple>
#include <unistd.h>

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
    CHECK(r.err.rfind("2-scaling: error: --trials 2147483647 need about 86 GB", 0) == 0);
    // The defaults pass the same check.
    CHECK(testutil::run("3-multi-head", "--no-table").exit_code == 0);
}

TEST_CASE("cli: an exception nobody catches ends the program with one line and exit code 1") {
    // In a child process: a Parser installs the handler, then std::bad_alloc escapes.
    auto child = [](void (*body)()) {
        int fds[2];
        REQUIRE(::pipe(fds) == 0);
        pid_t pid = ::fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            ::dup2(fds[1], 2);
            cli::Parser cli("7-demo", "a program");
            // noexcept: the exception leaves here uncaught, as from a chapter's main (doctest's
            // own try around the test case must not catch it).
            [body]() noexcept { body(); }();
            std::_Exit(0);
        }
        ::close(fds[1]);
        std::string err;
        char buf[256];
        for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) err.append(buf, size_t(n));
        ::close(fds[0]);
        int status = 0;
        ::waitpid(pid, &status, 0);
        return std::make_pair(WIFEXITED(status) ? WEXITSTATUS(status) : -1, err);
    };
    auto [code, err] = child([] { throw std::bad_alloc(); });
    CHECK(code == 1);
    CHECK(err == "7-demo: error: out of memory: the sizes asked for need more than this machine "
                 "has; use smaller values\n");
    std::tie(code, err) = child([] { throw std::runtime_error("cannot open weights.bin"); });
    CHECK(code == 1);
    CHECK(err == "7-demo: error: cannot open weights.bin\n");
}
