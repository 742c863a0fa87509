// common/program/cli: parsing, and the one-line errors a person sees for a bad flag.
#include "common/program/cli.h"
#include "tests/util.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
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
    // 3000 x 3000 tokens of width 512 hold about 3 TB; 2^31 trials about 86 GB: more than any
    // machine this runs on, so the programs say so before allocating anything.
    testutil::Run r = testutil::run("3-multi-head", "--batch 3000 --n 3000");
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(r.err.rfind("3-multi-head: error: --batch 3000 --n 3000 --d-model 512 --heads 8 need "
                      "about 2795 GB of memory, more than this machine's ",
                      0) == 0);
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


// That case's children end through exit(), after the test program has written the case before
// it: the test program's report names each case once (tests/main.cpp).
TEST_CASE("tests: a case before one that forks is reported once") {
    const auto r = testutil::run("tests", "--duration=true -tc='cli: sizes that cannot fit in*,"
                                          "cli: an exception nobody catches*'");
    CHECK(r.exit_code == 0);
    const std::string line = "s: cli: sizes that cannot fit in memory";
    size_t n = 0;
    for (size_t at = r.out.find(line); at != std::string::npos; at = r.out.find(line, at + 1)) n++;
    CHECK_MESSAGE(n == 1, r.out);
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
    // Nor these: leads 0xF5-0xFF, beyond U+10FFFF, overlong forms, a surrogate.
    CHECK(cli::quote("\xf8\x80\x80") == "'\\xf8\\x80\\x80'");
    CHECK(cli::quote("\xf5\x80\x80\x80") == "'\\xf5\\x80\\x80\\x80'");
    CHECK(cli::quote("\xf4\x90\x80\x80") == "'\\xf4\\x90\\x80\\x80'");
    CHECK(cli::quote("\xc1\x81\xe0\x80\xaf") == "'\\xc1\\x81\\xe0\\x80\\xaf'");
    CHECK(cli::quote("\xed\xa0\x80") == "'\\xed\\xa0\\x80'");
    CHECK(cli::quote("\xf0\x9f\x98\x80") == "'\xf0\x9f\x98\x80'");  // U+1F600 stays
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

// A checkout's path may hold spaces and Hangul, and every program a test starts goes through
// tests/util.h into a shell line: here one is reached through such a folder (a link to
// build/bin inside it) and run from there.
TEST_CASE("cli: a program at a path with a space and Hangul runs, in such a folder") {
    struct Link {
        std::filesystem::path path;
        ~Link() {
            std::error_code ignored;
            std::filesystem::remove(path, ignored);
        }
    };
    const std::string name = "내 작업 " + std::to_string(::getpid());
    std::filesystem::create_directory_symlink(".", std::string(PROJECT_BIN) + "/" + name);
    const Link link{std::string(PROJECT_BIN) + "/" + name};
    const testutil::Run r = testutil::run_in(link.path.string(), name + "/flashcards", "--help");
    CHECK_MESSAGE(r.exit_code == 0, r.err);
    CHECK(r.out.find("  --deck FILE ") != std::string::npos);
}

namespace {

// Runs build/bin/<program> <args> with stdout sent to `out` (a shell redirection target) and
// returns the exit code and stderr. timeout_s > 0: killed after that long (exit code 124).
std::pair<int, std::string> run_to(const std::string& program, const std::string& args,
                                   const std::string& out, int timeout_s = 0) {
    const std::string err = "/tmp/transformer-test-cli-" + std::to_string(::getpid()) + ".err";
    const std::string limit =
        timeout_s > 0 ? "timeout -k 5 " + std::to_string(timeout_s) + " " : std::string();
    const std::string cmd = limit + testutil::program_command(program) + " " +
                            args + " </dev/null >" + out + " 2>" + err;
    const int status = std::system(cmd.c_str());
    std::string text = testutil::read_file_abs(err);
    std::remove(err.c_str());
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, text};
}

}  // namespace

TEST_CASE("cli: output that cannot be written is an error, in every program") {
    // /dev/full: every write fails with ENOSPC. Before, every program exited 0 without a word.
    for (const char* program : {"1-self-attention", "2-scaling", "3-multi-head",
                                "4-positional-encoding", "5-blocks", "6-cost", "7-translate",
                                "8-ablations", "flashcards", "bench-gemm", "bench-layers"}) {
        CAPTURE(program);
        auto [code, err] = run_to(program, "--help", "/dev/full");
        CHECK(code == 1);
        CHECK(err == std::string(program) + ": error: cannot write output: No space left on "
                                            "device\n");
        CHECK(run_to(program, "--help", "/dev/null").first == 0);
    }
    // A real run: chapter 3's table, and the flash cards' summary.
    auto [code, err] = run_to("3-multi-head", "", "/dev/full");
    CHECK(code == 1);
    CHECK(err == "3-multi-head: error: cannot write output: No space left on device\n");
    std::tie(code, err) = run_to("flashcards", "--stats --progress /tmp/no-such-folder-" +
                                                   std::to_string(::getpid()) + "/p.tsv",
                                 "/dev/full");
    CHECK(code == 1);
    CHECK(err == "flashcards: error: cannot write output: No space left on device\n");
}

TEST_CASE("cli: a long run whose output cannot be written stops before its work, not after") {
    // Finding it only at the end, `6-cost > /dev/full` would measure its whole table (a minute)
    // and chapters 7 and 8 train for minutes or hours first. Each checks its first lines as it
    // prints them. The arguments make a run that did not stop far longer than the timeout,
    // which only bounds such a regression; it measures nothing.
    for (const auto& [program_, args] :
         {std::pair{"6-cost", "--no-figures --repeat 1000"},
          std::pair{"7-translate", "--no-figures --steps 100000"}, std::pair{"8-ablations", ""}}) {
        const char* program = program_;  // CAPTURE is a lambda: clang < 16 cannot capture a binding
        CAPTURE(program);
        auto [code, err] = run_to(program, args, "/dev/full", 60);
        CHECK(code == 1);
        CHECK(err == std::string(program) + ": error: cannot write output: No space left on "
                                            "device\n");
    }
}

TEST_CASE("cli: the test runners' report that cannot be written is a failure, not a pass") {
    // `tests > /dev/full` (and cuda-tests, built with CUDA=1) must not exit 0 with doctest's
    // result lost: the runner (tests/main.cpp) ends with the same check as every program. A
    // filter that selects no case keeps the child quick.
    std::vector<std::string> runners = {"tests"};
    if (std::filesystem::exists(std::string(PROJECT_BIN) + "/cuda-tests"))
        runners.push_back("cuda-tests");
    for (const std::string& runner : runners) {
        CAPTURE(runner);
        auto [code, err] = run_to(runner, "-tc=no-such-case", "/dev/full");
        CHECK(code == 1);
        CHECK(err == runner + ": error: cannot write output: a write to standard output failed\n");
        CHECK(run_to(runner, "-tc=no-such-case", "/dev/null").first == 0);
    }
}

TEST_CASE("cli: a line mode whose output cannot be written stops, however much input is left") {
    // `yes 3 | 1-self-attention --live > /dev/full`: each screen failed to print and the loop
    // read the next line, forever (the exit check only runs at the end of the input). Now the
    // first screen that cannot be written ends the program with the exit check's line.
    const std::string dir = "/tmp/transformer-test-cli-lines-" + std::to_string(::getpid());
    const std::string err = dir + "/err";
    std::filesystem::create_directories(dir);
    using Case = std::tuple<std::string, std::string, std::string>;  // keys, program, args
    for (const auto& [keys, program_, args] :
         {Case{"3", "1-self-attention", "--live"},
          Case{"right", "flashcards", "--progress " + dir + "/p.tsv"}}) {
        const std::string& program = program_;  // (clang < 16 cannot capture a binding)
        CAPTURE(program);
        const std::string cmd = "yes " + keys + " | timeout -k 5 60 " +
                                testutil::program_command(program) + " " + args +
                                " >/dev/full 2>" + err;
        const int status = std::system(cmd.c_str());
        CHECK((WIFEXITED(status) ? WEXITSTATUS(status) : -1) == 1);
        CHECK(testutil::read_file_abs(err) ==
              program + ": error: cannot write output: No space left on device\n");
    }
    std::filesystem::remove_all(dir);
}

TEST_CASE("cli: integers and numbers are written one way; out of range is said so") {
    long i = 7;
    using cli::NumberParse;
    for (const char* bad : {" 5", "5 ", "+5", "0x10", "5e2", "", "-", "1,000", "٣"}) {
        CAPTURE(bad);
        CHECK(cli::parse_int_checked(bad, -100, 100, i) == NumberParse::not_a_number);
    }
    CHECK(cli::parse_int_checked("-5", -100, 100, i) == NumberParse::ok);
    CHECK(i == -5);
    CHECK(cli::parse_int_checked("007", -100, 100, i) == NumberParse::ok);
    CHECK(i == 7);
    CHECK(cli::parse_int_checked("101", -100, 100, i) == NumberParse::out_of_range);
    CHECK(cli::parse_int_checked("99999999999999999999999", -100, 100, i) ==
          NumberParse::out_of_range);
    CHECK(i == 7);
    double d = 1;
    for (const char* bad : {"nan", "NaN", "inf", "-inf", "infinity", "0x1p3", " 1", "1 ", "+1",
                            "1e", "e5", ".", "1.2.3", ""}) {
        CAPTURE(bad);
        CHECK(cli::parse_double_checked(bad, d) == NumberParse::not_a_number);
    }
    CHECK(cli::parse_double_checked("1e999", d) == NumberParse::out_of_range);
    CHECK(cli::parse_double_checked("-2.5e-3", d) == NumberParse::ok);
    CHECK(d == -2.5e-3);
    CHECK(cli::parse_double_checked(".5", d) == NumberParse::ok);
    CHECK(d == 0.5);
    std::vector<int> v;
    CHECK_FALSE(cli::parse_int_list("4, 16", v));
    CHECK_FALSE(cli::parse_int_list("4,2147483648", v));
    std::string big;
    CHECK_FALSE(cli::parse_int_list("4,2147483648,x", v, &big));
    CHECK(big == "2147483648");  // the entry beyond int, for the message
    big.clear();
    CHECK_FALSE(cli::parse_int_list("4,x", v, &big));
    CHECK(big.empty());

    // In the programs: one line each, exit 2, before any work.
    struct Case {
        const char *program, *args, *err;
    };
    const Case cases[] = {
        {"3-multi-head", "--batch ' 5'", "bad value ' 5' for --batch: expected integer"},
        {"3-multi-head", "--batch '5 '", "bad value '5 ' for --batch: expected integer"},
        {"3-multi-head", "--batch +5", "bad value '+5' for --batch: expected integer"},
        {"3-multi-head", "--batch 2147483648",
         "bad value '2147483648' for --batch: out of range (an integer in "
         "-2147483647..2147483647)"},
        {"6-cost", "--mem-limit nan",
         "bad value 'nan' for --mem-limit: expected number (decimal, finite)"},
        {"6-cost", "--mem-limit inf",
         "bad value 'inf' for --mem-limit: expected number (decimal, finite)"},
        {"6-cost", "--mem-limit 0x1p3",
         "bad value '0x1p3' for --mem-limit: expected number (decimal, finite)"},
        {"7-translate", "--lr 1e999", "bad value '1e999' for --lr: out of range (a finite number)"},
        // warmup + repeat in one int would wrap: 2147483647 + 1, no timed run, 0.0 ms.
        {"6-cost", "--warmup 2147483647 --repeat 1",
         "bad value '2147483647' for --warmup: out of range (an integer in 0..1000000)"},
        {"6-cost", "--repeat 0",
         "bad value '0' for --repeat: out of range (an integer in "
         "1..1000000)"},
        {"6-cost", "--warmup -1",
         "bad value '-1' for --warmup: out of range (an integer in "
         "0..1000000)"},
        // batch * 512 must not wrap an int.
        {"bench-layers", "--batch 4194304",
         "bad value '4194304' for --batch: out of range (an integer in 1..65536)"},
        {"bench-gemm", "--sizes 70000", "--sizes must be between 1 and 65536"},
        {"bench-layers", "--heads 0", "--heads must be at least 1"},  // names --heads
        // A list entry past int is named as out of range, not as a malformed list.
        {"6-cost", "--seq-lens 4,99999999999",
         "bad value '4,99999999999' for --seq-lens: entry 99999999999 is out of range (integers "
         "from -2147483648 to 2147483647)"},
        {"bench-layers", "--seq-lens 0", "--seq-lens entries must be between 1 and 1048576"},
    };
    for (const Case& c : cases) {
        CAPTURE(c.args);
        testutil::Run r = testutil::run(c.program, c.args);
        CHECK(r.exit_code == 2);
        CHECK(r.out.empty());
        CHECK(r.err == std::string(c.program) + ": error: " + c.err + "\n");
    }
}

TEST_CASE("cli: bench-layers refuses a table beyond the machine before any cell runs") {
    // Bounded and checked against memory up front, not left to the generic out-of-memory line.
    testutil::Run r = testutil::run("bench-layers", "--seq-lens 1048576");
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(r.err.rfind("bench-layers: error: --seq-lens 1048576 --batch 8 --d-model 512 need about ",
                      0) == 0);
}

TEST_CASE("cli: a value never swallows the next flag, and '-' is not a file name") {
    // Else the weights would go to a file named --no-figures, and the figure be drawn.
    testutil::Run r = testutil::run("7-translate", "--steps 1 --save --no-figures");
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(r.err == "7-translate: error: --save needs a value (a file name, not empty), not the "
                   "flag '--no-figures' (for a value that starts with --, write --save=VALUE)\n");
    r = testutil::run("2-scaling", "--figure-dir --no-figures");
    CHECK(r.exit_code == 2);
    CHECK(r.err.rfind("2-scaling: error: --figure-dir needs a value", 0) == 0);
    CHECK_FALSE(std::filesystem::exists("--no-figures"));
    r = testutil::run("3-multi-head", "--batch --n 4");
    CHECK(r.err == "3-multi-head: error: --batch needs a value (integer), not the flag '--n' (for "
                   "a value that starts with --, write --batch=VALUE)\n");
    // A negative number is a value, not a flag.
    r = testutil::run("2-scaling", "--seed -1");
    CHECK(r.err.find("--seed must be a non-negative integer") != std::string::npos);
    // --help wins wherever it stands.
    r = testutil::run("7-translate", "--save --help");
    CHECK(r.exit_code == 0);
    CHECK(r.out.rfind("usage: 7-translate [options]", 0) == 0);
    // '-' would be a file named '-': refused with the way to mean one.
    r = testutil::run("7-translate", "--save -");
    CHECK(r.exit_code == 2);
    CHECK(r.err == "7-translate: error: bad value '-' for --save: '-' is not standard input or "
                   "output here; for a file named -, write ./-\n");
    r = testutil::run("flashcards", "--progress - --stats");
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("'-' is not standard input or output here") != std::string::npos);
}

TEST_CASE("cli: quote() with a limit cuts long bytes at a character and says how many") {
    CHECK(cli::quote(std::string_view("short"), 8) == "'short'");
    CHECK(cli::quote(std::string(3'000'000, 'x'), 8) == "'xxxxxxxx'...(3000000 bytes)");
    CHECK(cli::quote(std::string_view("가나다라"), 4) == "'가'...(12 bytes)");  // not mid-character
    CHECK(cli::quote(std::string("a\0b", 3), 8) == "'a\\x00b'");  // a NUL does not end it
}

TEST_CASE("cli: a figure folder that cannot be written is found before the long work") {
    // Checked at the start: else chapter 7 would train (and chapter 6 measure) first, then fail
    // to draw, and chapters 1, 4 and 5 print their results first.
    const std::string file = "/tmp/transformer-test-cli-figfile-" + std::to_string(::getpid());
    { std::ofstream(file) << "a file where the figure folder should be"; }
    const std::pair<const char*, const char*> runs[] = {
        {"7-translate", "--layers 1 --d-model 16 --heads 2 --batch 4 --steps 3"},
        {"6-cost", "--seq-lens 8 --batch 1 --d-model 8 --heads 2 --warmup 0 --repeat 1 "
                   "--path-lens 16"},
        {"2-scaling", "--trials 100 --dims 4"},
        {"1-self-attention", "--explain 2"},
        {"4-positional-encoding", ""},
        {"5-blocks", "--depths 6"}};
    for (const auto& run : runs) {
        const char *program = run.first, *args = run.second;  // clang 14 cannot capture a binding
        CAPTURE(program);
        testutil::Run r = testutil::run(program, std::string(args) + " --figure-dir " + file);
        CHECK(r.exit_code == 2);
        CHECK(r.out.empty());  // nothing trained or measured
        CHECK(r.err == std::string(program) + ": error: --figure-dir '" + file + "': " + file +
                           " is not a folder; choose another folder or pass --no-figures\n");
    }
    // --no-figures skips the check.
    CHECK(testutil::run("7-translate", "--figure-dir " + file + " --no-figures --steps 0 --layers "
                                       "1 --d-model 16 --heads 2")
              .exit_code == 0);
    std::remove(file.c_str());
}

TEST_CASE("cli: a figure's own name taken by a folder is found before the long work too") {
    // The name in the folder is checked with the folder: checked only when the figure is drawn,
    // chapter 6 would measure, chapter 7 train and chapter 8 run all its trainings first.
    const std::string dir = "/tmp/transformer-test-cli-figname-" + std::to_string(::getpid());
    const std::pair<const char*, const char*> runs[] = {
        {"6-cost", "--seq-lens 8 --batch 1 --d-model 8 --heads 2 --warmup 0 --repeat 1 "
                   "--path-lens 16"},
        {"7-translate", "--layers 1 --d-model 16 --heads 2 --batch 4 --steps 3"},
        {"8-ablations", "--only warmup --scale 0.01 --seeds 1"},
        {"2-scaling", "--trials 100 --dims 4"}};
    const char* taken[] = {"6-path-length.png", "7-translate.png", "8-warmup.png",
                           "2-scaling.png"};
    for (size_t k = 0; k < 4; k++) {
        const char *program = runs[k].first, *args = runs[k].second;
        CAPTURE(program);
        std::filesystem::remove_all(dir);
        std::filesystem::create_directories(dir + "/" + taken[k]);
        testutil::Run r = testutil::run(program, std::string(args) + " --figure-dir " + dir);
        CHECK(r.exit_code == 2);
        CHECK(r.out.empty());  // nothing trained or measured
        CHECK(r.err == std::string(program) + ": error: --figure-dir '" + dir + "': " + dir +
                           "/" + taken[k] +
                           " is a folder, where the figure goes; remove it, choose another "
                           "folder or pass --no-figures\n");
    }
    std::filesystem::remove_all(dir);
}

TEST_CASE("7-translate: --load with options that only training reads is refused") {
    // Not ignored without a word: --steps 500 --lr 3 --layers 4 mean nothing to a loaded model.
    testutil::Run r = testutil::run("7-translate", "--load w.bin --steps 500 --lr 3 --layers 4");
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(r.err == "7-translate: error: --load takes the model from the file and trains nothing, "
                   "so --layers, --steps, --lr would be ignored; drop them, or train without "
                   "--load\n");
}

TEST_CASE("cli: sizes that would overflow a chapter's int arithmetic are refused up front") {
    // 5-blocks: the feed-forward width 4 d overflowed int ("negative dimension in shape
    // (-1073741824, 1073741824)"); a vocabulary of 2^31 - 1 reached std::bad_alloc.
    testutil::Run r =
        testutil::run("5-blocks", "--d-model 1073741824 --heads 1 --depths 1 --no-figures");
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(r.err.rfind("5-blocks: error: --d-model 1073741824 --vocab 50 at L = 1 need about ", 0) ==
          0);
    r = testutil::run("5-blocks", "--vocab 2147483647 --depths 1 --no-figures");
    CHECK(r.exit_code == 2);
    CHECK(r.err.rfind("5-blocks: error: --d-model 64 --vocab 2147483647 at L = 1 need about ", 0) ==
          0);
    // With figures, the L = 24 stack the figure builds is the one judged: judged by --depths 1
    // at d 4096, it would be accepted, then run out of memory building it.
    r = testutil::run("5-blocks", "--depths 1 --d-model 4096 --heads 4 --table-only");
    CHECK(r.exit_code == 2);
    CHECK(r.err.rfind("5-blocks: error: --d-model 4096 --vocab 50 at L = 24 need about ", 0) == 0);
    // 7-translate: a batch of 2^31 - 1 sentences built for minutes (their tokens an int);
    // --steps 2147483647 counted its int loop past the end.
    r = testutil::run("7-translate", "--batch 2147483647");
    CHECK(r.err == "7-translate: error: bad value '2147483647' for --batch: out of range (an "
                   "integer in 1..1000000)\n");
    r = testutil::run("7-translate", "--steps 2147483647");
    CHECK(r.err == "7-translate: error: bad value '2147483647' for --steps: out of range (an "
                   "integer in 0..100000000)\n");
    r = testutil::run("7-translate", "--batch 1000000 --layers 24 --d-model 4096 --heads 8");
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(r.err.rfind("7-translate: error: --batch 1000000 --layers 24 --d-model 4096 need about ",
                      0) == 0);
}
