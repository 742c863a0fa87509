// common/program/atomic_file: whole-or-nothing writes, one temporary name per process, symlinks
// written through, FIFOs and device nodes refused, temporary files of killed processes removed.
#include "common/program/atomic_file.h"
#include "tests/util.h"

#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

namespace fs = std::filesystem;

std::string fresh_dir(const std::string& name) {
    std::string dir = "/tmp/transformer-atomic-" + std::to_string(::getpid()) + "-" + name;
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir;
}

// The message of the atomic_file::Error that fn throws ("" if none).
template <class Fn>
std::string error_of(Fn fn) {
    try {
        fn();
    } catch (const atomic_file::Error& e) {
        return e.what();
    }
    return "";
}

// A process id that no process has any more: a child that has exited and been reaped.
pid_t dead_pid() {
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) ::_exit(0);
    ::waitpid(pid, nullptr, 0);
    return pid;
}

int entries(const std::string& dir) {
    int n = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir))
        n++;
    return n;
}

}  // namespace

TEST_CASE("atomic_file: writes the bytes, creates folders, keeps the mode, leaves nothing") {
    std::string dir = fresh_dir("write"), path = dir + "/a/b/out.bin";
    atomic_file::write(path, std::string("one\0two", 7));
    CHECK(testutil::read_file_abs(path) == std::string("one\0two", 7));
    CHECK(entries(dir + "/a/b") == 1);  // no temporary file left
    CHECK(atomic_file::temp_name(path) == path + ".tmp." + std::to_string(::getpid()));
    fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write);
    atomic_file::write(path, "three");
    CHECK(testutil::read_file_abs(path) == "three");
    CHECK(fs::status(path).permissions() == (fs::perms::owner_read | fs::perms::owner_write));
    // A file where a folder must be: one line naming it.
    CHECK(error_of([&] { atomic_file::write(path + "/x", "y"); }) == path + " is not a folder");
    fs::remove_all(dir);
}

TEST_CASE("atomic_file: a symlink is written through, a FIFO or a folder is refused") {
    std::string dir = fresh_dir("kinds");
    fs::create_symlink("real.txt", dir + "/link.txt");  // its target does not exist yet
    atomic_file::write(dir + "/link.txt", "through");
    CHECK(fs::is_symlink(dir + "/link.txt"));
    CHECK(testutil::read_file_abs(dir + "/real.txt") == "through");

    REQUIRE(::mkfifo((dir + "/fifo").c_str(), 0644) == 0);
    CHECK(atomic_file::not_regular(dir + "/fifo") == "a FIFO");
    CHECK(error_of([&] { atomic_file::write(dir + "/fifo", "x"); }) ==
          dir + "/fifo is a FIFO, not a regular file");
    CHECK(fs::is_fifo(dir + "/fifo"));  // not renamed over
    fs::create_symlink("fifo", dir + "/fifo-link");
    CHECK(error_of([&] { atomic_file::write(dir + "/fifo-link", "x"); }) ==
          dir + "/fifo is a FIFO, not a regular file");
    fs::create_directories(dir + "/folder");
    CHECK(error_of([&] { atomic_file::write(dir + "/folder", "x"); }) ==
          dir + "/folder is a folder, not a regular file");
    CHECK(atomic_file::not_regular("/dev/null") == "a device node");
    CHECK(atomic_file::not_regular(dir + "/real.txt").empty());
    CHECK(atomic_file::not_regular(dir + "/missing").empty());
    fs::remove_all(dir);
}

TEST_CASE("atomic_file: temporary files of processes that are gone are removed at the next write") {
    std::string dir = fresh_dir("stale"), path = dir + "/progress.tsv";
    const std::string dead = path + ".tmp." + std::to_string(dead_pid());
    const std::string alive = path + ".tmp." + std::to_string(::getppid());  // still running
    const std::string other = dir + "/other.tsv.tmp." + std::to_string(dead_pid());
    const std::string not_a_pid = path + ".tmp.backup";
    for (const std::string& p : {dead, alive, other, not_a_pid}) {
        atomic_file::write(p + "-", "left over");
        fs::rename(p + "-", p);
    }
    atomic_file::write(path, "new");
    CHECK_FALSE(fs::exists(dead));  // its process is gone
    CHECK(fs::exists(alive));       // may still be writing
    CHECK(fs::exists(other));       // another file's
    CHECK(fs::exists(not_a_pid));   // not one of ours
    CHECK(testutil::read_file_abs(path) == "new");
    fs::remove_all(dir);
}

TEST_CASE("atomic_file: two processes writing the same file at once never mix their bytes") {
    std::string dir = fresh_dir("race"), path = dir + "/w.bin";
    const std::string a(1 << 20, 'a'), b(1 << 19, 'b');
    pid_t kids[2];
    for (int k = 0; k < 2; k++) {
        kids[k] = ::fork();
        REQUIRE(kids[k] >= 0);
        if (kids[k] == 0) {
            for (int i = 0; i < 30; i++)
                atomic_file::write(path, k == 0 ? a : b);
            ::_exit(0);
        }
    }
    testutil::check_children_exit_zero(kids);
    std::string got = testutil::read_file_abs(path);
    CHECK((got == a || got == b));
    CHECK(entries(dir) == 1);
    fs::remove_all(dir);
}

TEST_CASE("atomic_file: a legal name of 246 to 255 bytes is written through a short temporary") {
    // "<name>.tmp.<pid>" exceeded NAME_MAX (255) for these: every save failed.
    std::string dir = fresh_dir("long");
    for (size_t len : {size_t(230), size_t(232), size_t(233), size_t(246), size_t(250),
                       size_t(255)}) {
        CAPTURE(len);
        const std::string name = std::string(len - 4, 'n') + ".tsv";
        const std::string path = dir + "/" + name, tmp = atomic_file::temp_name(path);
        CHECK(atomic_file::parent_dir(tmp) == dir);  // in the same folder
        const std::string tmp_base = tmp.substr(dir.size() + 1);
        CHECK(tmp_base.size() <= 255);
        if (len <= 232) CHECK(tmp == path + ".tmp." + std::to_string(::getpid()));
        atomic_file::check_writable(path, false);
        atomic_file::write(path, "first");
        atomic_file::write(path, "second");
        CHECK(testutil::read_file_abs(path) == "second");
    }
    CHECK(entries(dir) == 6);  // no temporary file left
    // Two long names that share their first 240 bytes have different temporary names.
    const std::string a = dir + "/" + std::string(240, 'x') + "a", b = dir + "/" +
                          std::string(240, 'x') + "b";
    CHECK(atomic_file::temp_name(a) != atomic_file::temp_name(b));
    // Multi-byte characters are not cut in half.
    const std::string hangul = dir + "/" + [] {
        std::string s;
        for (int i = 0; i < 84; i++) s += "가";  // 252 bytes
        return s;
    }();
    const std::string t = atomic_file::temp_name(hangul);
    CHECK(t.size() - dir.size() - 1 <= 255);
    CHECK(t.substr(dir.size() + 1).find("가가~") != std::string::npos);
    // A long name's leftover from a killed process is removed like a short one's.
    const std::string path = dir + "/" + std::string(250, 'k');
    const std::string stem = atomic_file::temp_name(path);
    const std::string dead = stem.substr(0, stem.rfind('.') + 1) + std::to_string(dead_pid());
    { std::ofstream(dead) << "left over"; }
    atomic_file::write(path, "new");
    CHECK_FALSE(fs::exists(dead));
    // One byte more than NAME_MAX is refused by the check, before any work, in one line.
    const std::string too_long = dir + "/" + std::string(256, 'z');
    CHECK(error_of([&] { atomic_file::check_writable(too_long, false); }) ==
          "cannot write " + too_long + ": File name too long");
    fs::remove_all(dir);
}

TEST_CASE("atomic_file: check_writable and check_folder_writable say what a write would") {
    std::string dir = fresh_dir("check");
    atomic_file::check_folder_writable(dir + "/new/sub");  // created, a file can go there
    CHECK(fs::is_directory(dir + "/new/sub"));
    CHECK(entries(dir + "/new/sub") == 0);  // the probe is gone
    { std::ofstream(dir + "/file") << "x"; }
    CHECK(error_of([&] { atomic_file::check_folder_writable(dir + "/file"); }) ==
          dir + "/file is not a folder");
    CHECK(error_of([&] { atomic_file::check_writable(dir + "/missing/x", false); })
              .rfind("cannot create " + dir + "/missing/x.tmp.", 0) == 0);
    if (::geteuid() != 0) {  // root writes into a read-only folder all the same
        fs::create_directories(dir + "/ro");
        fs::permissions(dir + "/ro", fs::perms::owner_read | fs::perms::owner_exec);
        CHECK(error_of([&] { atomic_file::check_folder_writable(dir + "/ro"); })
                  .find("Permission denied") != std::string::npos);
        fs::permissions(dir + "/ro", fs::perms::owner_all);
    }
    fs::remove_all(dir);
}

namespace {

// The temporary file of the write under way in this process, and the signal to raise once it
// exists: SIGALRM's handler (every 0.2 ms) checks for it with stat, which a handler may call, so
// the signal lands inside the write (after its guard is made) on however loaded a machine.
char g_tmp[4096];
int g_raise = 0;
void raise_once_writing(int) {
    struct stat st;
    if (::stat(g_tmp, &st) == 0) {
        ::raise(g_raise);
        return;
    }
    ::ualarm(200, 0);
}

// In a child: `sig` raised in the middle of a 64 MB atomic_file::write to `target`, with
// `before` as sig's disposition. Returns the child's wait status; exits 0 when the write ended.
int write_interrupted(const std::string& target, int sig, void (*before)(int)) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        ::signal(sig, before);  // doctest's crash handler out: as in a program
        const std::string tmp = atomic_file::temp_name(atomic_file::resolve(target));
        std::memcpy(g_tmp, tmp.c_str(), tmp.size() + 1);
        g_raise = sig;
        ::signal(SIGALRM, raise_once_writing);
        const std::string bytes(64 << 20, 'x');
        ::ualarm(200, 0);
        try {
            atomic_file::write(target, bytes);
        } catch (const atomic_file::Error&) {
            ::_exit(3);
        }
        ::_exit(0);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return status;
}

volatile sig_atomic_t g_handled = 0;

}  // namespace

TEST_CASE("atomic_file: a fatal signal during a write leaves no temporary file") {
    // Ctrl-C during a big write (a 7-translate --save) must not leave big.bin.tmp.<pid>.
    const std::string dir = fresh_dir("signal"), target = dir + "/big.bin";
    const int status = write_interrupted(target, SIGINT, SIG_DFL);
    REQUIRE(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == SIGINT);
    CHECK(!fs::exists(target));  // never half there
    CHECK(fs::is_empty(dir));    // and no big.bin.tmp.<pid>
    fs::remove_all(dir);
}

TEST_CASE("atomic_file: a signal the program ignores or handles leaves its write alone") {
    // Under nohup SIGHUP is ignored, and chapter 7 handles Ctrl-C itself to save: the write must
    // still end whole, not find its temporary file removed at the rename.
    const std::string dir = fresh_dir("survive");
    int status = write_interrupted(dir + "/a.bin", SIGHUP, SIG_IGN);
    CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    CHECK(fs::file_size(dir + "/a.bin") == size_t(64) << 20);
    status = write_interrupted(dir + "/b.bin", SIGINT, [](int) { g_handled = 1; });
    CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    CHECK(fs::file_size(dir + "/b.bin") == size_t(64) << 20);
    CHECK(entries(dir) == 2);  // no temporary left beside them
    fs::remove_all(dir);
}

TEST_CASE("atomic_file: RemoveOnSignal removes its file only where the signal ends the process") {
    const std::string dir = fresh_dir("guard");
    auto run = [&](void (*before)(int)) {
        const std::string path = dir + "/f";
        std::ofstream(path) << "x";
        pid_t pid = ::fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            ::signal(SIGTERM, before);
            {
                const atomic_file::RemoveOnSignal guard(path);
                ::raise(SIGTERM);
            }
            ::raise(SIGTERM);            // after the guard: as before it
            ::_exit(g_handled ? 8 : 7);  // reached only when SIGTERM did not end it
        }
        int status = 0;
        ::waitpid(pid, &status, 0);
        const bool removed = !fs::exists(path);
        fs::remove(path);
        return std::make_pair(status, removed);
    };
    auto [dies, removed] = run(SIG_DFL);
    CHECK((WIFSIGNALED(dies) && WTERMSIG(dies) == SIGTERM));
    CHECK(removed);
    auto [ignored, removed_ignored] = run(SIG_IGN);
    CHECK((WIFEXITED(ignored) && WEXITSTATUS(ignored) == 7));
    CHECK(!removed_ignored);
    auto [handled, removed_handled] = run([](int) { g_handled = 1; });  // its handler ran
    CHECK((WIFEXITED(handled) && WEXITSTATUS(handled) == 8));
    CHECK(!removed_handled);
    // Outside a guard the file stays: the guard, not the signal, removes it.
    const std::string other = dir + "/kept";
    std::ofstream(other) << "x";
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        ::signal(SIGTERM, SIG_DFL);
        { const atomic_file::RemoveOnSignal guard(other + ".other"); }
        ::raise(SIGTERM);
        ::_exit(0);
    }
    ::waitpid(pid, nullptr, 0);
    CHECK(fs::exists(other));
    fs::remove_all(dir);
}
