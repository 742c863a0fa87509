// The Makefile's OpenMP probe, against a compiler that has no OpenMP (g++ refusing -fopenmp, as
// Apple's clang does): left to itself the build becomes OPENMP=0 and says so in one line;
// OPENMP=1 stops at once with one line naming both ways out, not a wall of link errors.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "common/kernels/parallel.h"
#include "tests/child.h"
#include "tests/util.h"

namespace {

struct Make {
    int exit_code;
    std::string out;  // stdout and stderr together
};

// `make -s ARGS` in the project (or the copy of it at root), from an empty environment but ENV:
// a make that runs the tests hands down its jobserver and its variables (OPENMP=0 among them, in
// that build).
Make run_make(const std::string& args, const std::string& env = "",
              const std::string& root = PROJECT_ROOT) {
    const std::string out = "/tmp/transformer-test-make-" + std::to_string(::getpid()) + ".out";
    const std::string cmd = "env -i PATH=\"$PATH\" " + env + " make -s -C " +
                            testutil::quote(root) + " " + args + " >" + out + " 2>&1";
    const int status = std::system(cmd.c_str());
    Make m{WIFEXITED(status) ? WEXITSTATUS(status) : -1, testutil::read_file_abs(out)};
    std::remove(out.c_str());
    return m;
}

// `make -s help` with the given variables; only the probes run (no compiling).
Make make_help(const std::string& vars) { return run_make("help NVCC= " + vars); }

std::vector<std::string> lines_starting(const std::string& text, const std::string& prefix) {
    std::vector<std::string> found;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        if (line.find(prefix) != std::string::npos) found.push_back(line);
    return found;
}

}  // namespace

// The tree's layout is set by hand in places clang-format would change (tables, lambda
// arguments): `make format` reformats the lines a change touched and leaves every other as it is.
TEST_CASE("build: make format reformats the changed lines, no others") {
    if (std::system("command -v git-clang-format >/dev/null 2>&1") != 0) {
        MESSAGE("not run: no git-clang-format (Debian's clang-format; make format installs it)");
        return;
    }
    std::string recipe = run_make("-n format NVCC=").out;  // its last line is the recipe's own
    recipe.erase(recipe.find_last_not_of('\n') + 1);
    recipe.erase(0, recipe.rfind('\n') + 1);
    const std::string dir = "/tmp/transformer-test-format-" + std::to_string(::getpid());
    std::filesystem::create_directories(dir);
    std::filesystem::copy_file(std::string(PROJECT_ROOT) + "/.clang-format",
                               dir + "/.clang-format");
    const auto write = [&](const char* text) { std::ofstream(dir + "/a.cpp") << text; };
    write("int  a =  1;\nint  b =  2;\n");
    const std::string git = "cd '" + dir + "' && git -c user.name=t -c user.email=t ";
    REQUIRE(std::system((git + "init -q && git add -A && " + git + "commit -qm a").c_str()) == 0);
    write("int  a =  1;\nint  b =  3;\n");  // a one-line change
    CHECK(std::system(("cd '" + dir + "' && " + recipe + " >/dev/null").c_str()) == 0);
    CHECK(testutil::read_file_abs(dir + "/a.cpp") == "int  a =  1;\nint b = 3;\n");
    std::filesystem::remove_all(dir);
}

TEST_CASE("build: a compiler without OpenMP is reported in one line") {
    if (std::system("command -v make >/dev/null 2>&1 && command -v g++ >/dev/null 2>&1") != 0) {
        MESSAGE("not run: this machine has no make or no g++ to wrap");
        return;
    }
    const std::string dir = "/tmp/transformer-test-cxx-" + std::to_string(::getpid());
    std::filesystem::create_directories(dir);
    const std::string cxx = dir + "/c++";
    {
        std::ofstream f(cxx);
        f << "#!/bin/sh\n"
             "for a; do case $a in -fopenmp) echo \"unsupported option '$a'\" >&2; exit 1;; "
             "esac; done\nexec g++ \"$@\"\n";
    }
    std::filesystem::permissions(cxx, std::filesystem::perms::owner_all);

    // Unset: an OPENMP=0 build, one line that says so and how to get threads.
    Make automatic = make_help("CXX=" + cxx);
    CHECK(automatic.exit_code == 0);
    auto said = lines_starting(automatic.out, "openmp:");
    REQUIRE_MESSAGE(said.size() == 1, automatic.out);
    CHECK(said[0].find("OPENMP=0") != std::string::npos);
    CHECK(said[0].find("libomp") != std::string::npos);

    // Asked for: stop with one line, naming the runtime to install and OPENMP=0.
    Make asked = make_help("CXX=" + cxx + " OPENMP=1");
    CHECK(asked.exit_code != 0);
    said = lines_starting(asked.out, "openmp:");
    REQUIRE_MESSAGE(said.size() == 1, asked.out);
    CHECK(said[0].find("make OPENMP=0") != std::string::npos);
    CHECK(std::count(asked.out.begin(), asked.out.end(), '\n') == 1);

    // Said outright: no line at all.
    Make serial = make_help("CXX=" + cxx + " OPENMP=0");
    CHECK(serial.exit_code == 0);
    CHECK(lines_starting(serial.out, "openmp:").empty());
    std::filesystem::remove_all(dir);
}

TEST_CASE("build: a probe that cannot run stops make, naming why, and blames no compiler") {
    if (std::system("command -v make >/dev/null 2>&1") != 0) {
        MESSAGE("not run: this machine has no make");
        return;
    }
    // A TMPDIR that names no folder: the probe's mktemp fails. Taken for the compiler's answer,
    // it made an OPENMP=0 build that said the compiler had no OpenMP.
    const std::string missing = "/tmp/transformer-test-no-folder-" + std::to_string(::getpid());
    Make m = run_make("help NVCC=", "TMPDIR=" + missing);
    CHECK(m.exit_code != 0);
    CHECK_MESSAGE(lines_starting(m.out, "openmp:").empty(), m.out);
    CHECK_MESSAGE(m.out.find("TMPDIR") != std::string::npos, m.out);
    CHECK_MESSAGE(m.out.find(missing) != std::string::npos, m.out);
    CHECK_MESSAGE(std::count(m.out.begin(), m.out.end(), '\n') == 1, m.out);
    // A RUNNER that runs nothing: no program runs, an OpenMP one no more than any other.
    m = make_help("RUNNER=false");
    CHECK(m.exit_code != 0);
    CHECK_MESSAGE(lines_starting(m.out, "openmp:").empty(), m.out);
    CHECK_MESSAGE(m.out.find("not even an empty one") != std::string::npos, m.out);
}

TEST_CASE("build: a change of compiler flags rebuilds what it changes, and nothing else") {
    // No object depended on its flags: `make OPENMP=0 chapters` in a built tree linked objects
    // built with OpenMP (undefined omp_get_num_threads), and ARCH_FLAGS or CXX rebuilt nothing.
    // In an empty $(BUILD), the stamps of one configuration are made and two objects stand as
    // if compiled with it: one of the library, and an emulator kernel, which also depends on its
    // instrumentation. Dry runs with other flags then list what each change rebuilds.
    if (std::system("command -v make >/dev/null 2>&1") != 0) {
        MESSAGE("not run: this machine has no make");
        return;
    }
    const std::string build = "/tmp/transformer-test-flags-" + std::to_string(::getpid());
    const std::string library = build + "/obj/common/random.o",
                      kernel = build + "/emu/cuda/softmax.o";
    // OPENMP=0 as the configuration built: its probe is the quickest.
    const Make made = run_make("NVCC= OPENMP=0 BUILD=" + build + " " + build + "/stamps/cxx " +
                               build + "/stamps/emu");
    REQUIRE_MESSAGE(made.exit_code == 0, made.out);
    for (const std::string& o : {library, kernel}) {  // (newer than the stamps)
        std::filesystem::create_directories(std::filesystem::path(o).parent_path());
        std::ofstream(o).put('\n');
    }
    const auto rebuilt = [&](const std::string& vars) {  // which of the two make would compile
        const Make m =
            run_make("-n NVCC= BUILD=" + build + " " + vars + " " + library + " " + kernel);
        REQUIRE_MESSAGE(m.exit_code == 0, m.out);
        std::string which;
        std::istringstream in(m.out);
        for (std::string word, prev; in >> word; prev = word)
            if (prev == "-o") which += word == library ? "lib " : word == kernel ? "kernel " : "";
        return which;
    };
    CHECK(rebuilt("OPENMP=0") == "");
    CHECK(rebuilt("OPENMP=0 EMU_RACECHECK=0") == "kernel ");
    CHECK(rebuilt("OPENMP=0 ARCH_FLAGS=-march=x86-64") == "lib kernel ");
    CHECK(rebuilt("") == "lib kernel ");  // OpenMP's
    CHECK(rebuilt("OPENMP=0") == "");     // the dry runs changed nothing
    std::filesystem::remove_all(build);
}

TEST_CASE("build: a copied checkout's tests run its own programs on its own files") {
    // The tests ran the programs and read the files at paths compiled into them: in a copy whose
    // chapter 3 was broken, chapter 3's test ran the original's program, and passed. Here a copy
    // of this test program, in a copy of the checkout that holds a broken chapter 3 and its own
    // expected output, runs that test: it fails, on the copy's program and the copy's file.
    namespace fs = std::filesystem;
    if (*PROJECT_RUNNER) {  // the broken chapter is a shell script, which a RUNNER cannot start
        MESSAGE("skipped: under " PROJECT_RUNNER " a shell script cannot stand for a program");
        return;
    }
    const fs::path self = fs::read_symlink("/proc/self/exe"), root = PROJECT_ROOT;
    const fs::path in_root = fs::relative(self.parent_path(), root);
    if (in_root.empty() || *in_root.begin() == "..") {
        MESSAGE("not run: the build folder is outside the checkout, so no copy holds it");
        return;
    }
    // In the build folder: one file system, where the test program can be linked, not copied.
    const fs::path copy = self.parent_path().parent_path() /
                          ("test-copy-" + std::to_string(::getpid())),
                   bin = copy / in_root;
    fs::create_directories(bin);
    fs::create_directories(copy / "tests/expected");
    std::error_code linked;
    fs::create_hard_link(self, bin / self.filename(), linked);
    if (linked) fs::copy_file(self, bin / self.filename());
    std::ofstream(bin / "3-multi-head") << "#!/bin/sh\necho BROKEN\n";
    fs::permissions(bin / "3-multi-head", fs::perms::owner_all);
    std::ofstream(copy / "tests/expected/3-multi-head.txt") << "the copy's own expected output\n";
    const std::string out = (copy / "out").string(),
                      cmd = "cd '" + copy.string() + "' && '" + (bin / self.filename()).string() +
                            "' -tc='chapter 3: default output*' >'" + out + "' 2>&1";
    const int status = std::system(cmd.c_str());
    const std::string said = testutil::read_file_abs(out);
    CHECK_MESSAGE(!(WIFEXITED(status) && WEXITSTATUS(status) == 0), said);
    CHECK_MESSAGE(said.find("BROKEN") != std::string::npos, said);
    CHECK_MESSAGE(said.find("the copy's own expected output") != std::string::npos, said);
    fs::remove_all(copy);
}

TEST_CASE("build: without OpenMP, one thread answers every question the kernels ask") {
    // common/kernels/parallel.h stands in for <omp.h> in an OPENMP=0 build; with OpenMP it is
    // <omp.h>.
    if (parallel::OPENMP) {
        CHECK(omp_get_max_threads() >= 1);
    } else {
        MESSAGE("an OPENMP=0 build: every kernel runs on one thread");
        CHECK(omp_get_max_threads() == 1);
        omp_set_num_threads(4);  // ignored: there is one thread
        CHECK(omp_get_max_threads() == 1);
    }
    CHECK(omp_in_parallel() == 0);
    CHECK(omp_get_thread_num() == 0);
    CHECK(omp_get_num_threads() == 1);
}

namespace {

// The files a dry run of `make GOAL` would write (each compile's and link's `-o PATH`), with
// $(BUILD) in an empty folder so that nothing is up to date.
std::vector<std::string> would_write(const std::string& goal, const std::string& build) {
    const Make m = run_make("-n " + goal + " BUILD=" + build);
    const std::string said = goal + ":\n" + m.out;
    REQUIRE_MESSAGE(m.exit_code == 0, said);
    std::vector<std::string> paths;
    std::istringstream in(m.out);
    for (std::string word, prev; in >> word; prev = word)
        if (prev == "-o") paths.push_back(word);
    std::sort(paths.begin(), paths.end());
    return paths;
}

}  // namespace

TEST_CASE("build: what make builds beside chapter 7 are units that make test would build") {
    // `make` starts `make prebuild` while chapter 7 trains; a unit it names that no rule makes
    // (a build folder renamed) would fail a fresh clone's `make` after all its chapters ran.
    if (std::system("command -v make >/dev/null 2>&1") != 0) {
        MESSAGE("not run: this machine has no make");
        return;
    }
    const std::string build = "/tmp/transformer-test-prebuild-" + std::to_string(::getpid());
    const std::vector<std::string> prebuild = would_write("prebuild", build);
    const std::vector<std::string> all = would_write("build", build);
    std::filesystem::remove_all(build);
    CHECK(prebuild.size() >= 5);
    for (const std::string& unit : prebuild)
        CHECK_MESSAGE(std::binary_search(all.begin(), all.end(), unit), unit);
}

TEST_CASE("build: in a checkout at a path with a space, the recipes quote the path") {
    // make's functions split words at spaces: a recipe that hands one the checkout's absolute
    // path names a file beside the checkout (make sanitize's object once overwrote "/tmp/내" for
    // a checkout at "/tmp/내 작업/..."). Dry runs of make sanitize (its sub-make's build
    // included) and emu-racecheck (the emulator's recipes) in such a checkout, a tree of links
    // to this one's sources: wherever its path appears, a quote opens it.
    if (std::system("command -v make >/dev/null 2>&1") != 0) {
        MESSAGE("not run: this machine has no make");
        return;
    }
    const std::string dir = "/tmp/transformer-test-space-" + std::to_string(::getpid());
    const std::string root = dir + "/내 작업/transformer", quoted = testutil::quote(root);
    const std::string cmd = "rm -rf '" + dir + "' && mkdir -p " + quoted + " && cd " +
                            testutil::quote(PROJECT_ROOT) + " && cp -rs \"$PWD\"/Makefile " +
                            "\"$PWD\"/common \"$PWD\"/chapters \"$PWD\"/cuda \"$PWD\"/bench " +
                            "\"$PWD\"/tests " + quoted;
    REQUIRE(std::system(cmd.c_str()) == 0);
    const Make m = run_make("-n NVCC= sanitize emu-racecheck", "", root);
    CHECK_MESSAGE(m.exit_code == 0, m.out);
    CHECK(m.out.find("report_path.o") != std::string::npos);  // (both recipes were reached)
    CHECK(m.out.find("emu/cuda/sgemm.lb.ii") != std::string::npos);
    std::filesystem::remove_all(dir);
    for (size_t at = 0; (at = m.out.find(root, at)) != std::string::npos; at++) {
        const size_t from = m.out.rfind('\n', at) + 1;  // (npos + 1: the first line)
        CHECK_MESSAGE((at > 0 && (m.out[at - 1] == '\'' || m.out[at - 1] == '"')),
                      "unquoted in: " << m.out.substr(from, m.out.find('\n', at) - from));
    }
}

// make sanitize empties its report folder first: a second run in one tree would empty the
// first's. With its lock held (env runs flock, which runs make), a dry run is refused in one line.
TEST_CASE("sanitize: a second make sanitize in one tree is refused, naming the first") {
    const std::string dir = "/tmp/transformer-test-san-lock-" + std::to_string(::getpid());
    std::filesystem::create_directories(dir);
    const Make m = run_make("-n NVCC= sanitize SAN_BUILD=" + dir,
                            "flock " + testutil::quote(dir + "/.lock"));
    CHECK(m.exit_code != 0);
    CHECK_MESSAGE(m.out.find("sanitize: another make sanitize runs in this tree (" + dir +
                             "/.lock): wait for it to end\n") != std::string::npos,
                  m.out);
    std::filesystem::remove_all(dir);
}

#if defined(__SANITIZE_ADDRESS__)
// make sanitize only: tests/san/report_path.cpp, linked into its programs.
extern "C" void san_report_path(const char* prefix);

TEST_CASE("sanitize: an ASan and a UBSan report of a forked child reach the report folder") {
    // make sanitize counts the reports in its folder, so one that went to a child's captured
    // stderr instead (UBSan's, before report_path.cpp) would pass unseen. Each child here points
    // its runtimes at a folder of its own, so the count of the real run stays clean.
    const std::string dir = "/tmp/transformer-test-san-" + std::to_string(::getpid());
    std::filesystem::create_directories(dir);
    const auto report_of = [&](const std::string& name, auto fault) {
        const std::string prefix = dir + "/" + name;
        const testutil::ChildResult r = testutil::in_child([&] {
            san_report_path(prefix.c_str());
            fault();
            return std::string("no report");
        });
        CHECK_MESSAGE(!r.exited, name);
        std::string text;
        for (const auto& f : std::filesystem::directory_iterator(dir))
            if (f.path().filename().string().rfind(name + ".", 0) == 0)
                text += testutil::read_file_abs(f.path().string());
        return text;
    };
    struct alignas(16) Vec4 {
        float x, y, z, w;
    };
    const std::string ub = report_of("ubsan", [] {
        alignas(16) char bytes[48] = {};
        volatile int offset = 4;  // a misaligned 16-byte load: UBSan's alignment check
        const Vec4 v = *reinterpret_cast<const Vec4*>(bytes + offset);
        std::printf("%g\n", double(v.x));
    });
    CHECK_MESSAGE(ub.find("runtime error:") != std::string::npos, ub);
    const std::string asan = report_of("asan", [] {
        std::vector<int> v(3);
        volatile int past = 3;  // one past the end: a heap-buffer-overflow
        std::printf("%d\n", v.data()[past]);
    });
    CHECK_MESSAGE(asan.find("ERROR: AddressSanitizer") != std::string::npos, asan);
    std::filesystem::remove_all(dir);
}
#endif
