// common/atomic_file: whole-or-nothing writes, one temporary name per process, symlinks written
// through, FIFOs and device nodes refused, temporary files of killed processes removed.
#include "common/atomic_file.h"
#include "tests/util.h"

#include <filesystem>
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
