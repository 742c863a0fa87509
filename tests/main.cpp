// The doctest runner: every tests/*.cpp links into one binary, build/bin/tests (and the CUDA
// cases into build/bin/cuda-tests). doctest's own main, plus the exit check every program of
// the project has: a report that could not be written (`tests > /dev/full`) is not a success.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest.h>

#include <cstdio>
#include <cstring>

#include "common/program/cli.h"

int main(int argc, char** argv) {
    // Unbuffered: a test's forked child that ends through exit() would write its copy of what
    // is buffered again, and a slice's log would list a case twice.
    std::setvbuf(stdout, nullptr, _IONBF, 0);
    const int failed = doctest::Context(argc, argv).run();
    // Set after the run: a case that builds a cli::Parser names its own program for the check.
    const char* slash = argc > 0 ? std::strrchr(argv[0], '/') : nullptr;
    cli::check_stdout_at_exit(slash ? slash + 1 : argc > 0 ? argv[0] : "tests");
    return failed;
}
