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

TEST_CASE("cli: quote() keeps a value on one line and out of the terminal's control") {
    CHECK(cli::quote("causal") == "'causal'");
    CHECK(cli::quote("") == "''");
    CHECK(cli::quote("8\n9") == "'8\\n9'");
    CHECK(cli::quote("\x1b[2J") == "'\\x1b[2J'");
    CHECK(cli::quote("a\tb\rc\\d'e") == "'a\\tb\\rc\\\\d\\'e'");
    CHECK(cli::quote("\x7f\x01") == "'\\x7f\\x01'");
    CHECK(cli::quote("마스크") == "'마스크'");  // UTF-8 text stays
    CHECK(cli::quote("\xc2\x9b"
                     "2J") == "'\\xc2\\x9b2J'");               // C1 CSI: escaped
    CHECK(cli::quote("\xff\xe0\x80") == "'\\xff\\xe0\\x80'");  // not UTF-8
}

TEST_CASE("cli: a bad value is shown quoted and escaped, in one line") {
    // An escape sequence would clear the screen; a newline would split the error in two.
    testutil::Run r = testutil::run("1-self-attention", "--mask \"$(printf '\\033[2J')\"");
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(r.err ==
          "1-self-attention: error: bad value '\\x1b[2J' for --mask: expected none or "
          "causal\n");
    r = testutil::run("5-blocks", "--heads \"$(printf '8\\n9')\"");
    CHECK(r.exit_code == 2);
    CHECK(r.err == "5-blocks: error: bad value '8\\n9' for --heads: expected integer\n");
    r = testutil::run("2-scaling", "\"$(printf 'x\\ny')\"");
    CHECK(r.err ==
          "2-scaling: error: unexpected argument 'x\\ny': every option is a --flag "
          "(see --help)\n");
    r = testutil::run("2-scaling", "\"$(printf '%sx\\033' --)\"");
    CHECK(r.err == "2-scaling: error: unknown flag '--x\\x1b' (see --help)\n");
}

TEST_CASE("cli: --figure-dir \"\" is refused by every chapter that draws, before any work") {
    // "" + "/NAME.png" would be a file in / (as root, written there).
    for (const char* program :
         {"1-self-attention", "2-scaling", "4-positional-encoding", "5-blocks", "6-cost"}) {
        CAPTURE(program);
        testutil::Run r = testutil::run(program, "--figure-dir ''");
        CHECK(r.exit_code == 2);
        CHECK(r.out.empty());
        CHECK(r.err == std::string(program) +
                           ": error: bad value '' for --figure-dir: expected a folder name, not "
                           "empty (. for this folder)\n");
    }
    testutil::Run r = testutil::run("flashcards", "--progress ''");  // not "$HOME is not set"
    CHECK(r.exit_code == 2);
    CHECK(r.err ==
          "flashcards: error: bad value '' for --progress: expected a file name, not "
          "empty\n");
}

TEST_CASE("cli: --help names what each option takes") {
    testutil::Run r = testutil::run("1-self-attention", "--help");
    CHECK(r.exit_code == 0);
    for (const char* s :
         {"  --mask none|causal ", "  --explain I ", "  --figure-dir DIR ", "  --no-figures "})
        CHECK_MESSAGE(r.out.find(s) != std::string::npos, std::string(s));
    r = testutil::run("2-scaling", "--help");
    for (const char* s : {"  --seed N ", "  --dims LIST ", "  --figure-dir DIR "})
        CHECK_MESSAGE(r.out.find(s) != std::string::npos, std::string(s));
    r = testutil::run("6-cost", "--help");
    for (const char* s : {"  --device cpu|cuda ", "  --seq-lens LIST ", "  --mem-limit MB "})
        CHECK_MESSAGE(r.out.find(s) != std::string::npos, std::string(s));
    r = testutil::run("flashcards", "--help");
    for (const char* s : {"  --deck FILE ", "  --progress FILE "})
        CHECK_MESSAGE(r.out.find(s) != std::string::npos, std::string(s));
    for (const char* program : {"1-self-attention", "2-scaling", "3-multi-head",
                                "4-positional-encoding", "5-blocks", "6-cost", "flashcards"}) {
        r = testutil::run(program, "--help");
        CHECK_MESSAGE(r.out.find(" VALUE ") == std::string::npos, std::string(program));
    }
}
