// common/program/serialize's loader against crafted files: shapes whose products overflow, a size
// that is not what the header declares, read errors, and names that carry escape codes.
#include "common/program/serialize.h"
#include "tests/util.h"
#include "tests/weights_bytes.h"

#include <cmath>
#include <fstream>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

using weights_bytes::Builder;

std::string tmp(const std::string& name) {
    return "/tmp/serialize-test-" + std::to_string(::getpid()) + "-" + name;
}

// The message serialize::load throws for the file `bytes` ("" when it loads).
std::string load_error(const std::string& bytes) {
    const std::string path = tmp("w.bin");
    weights_bytes::write_file(path, bytes);
    std::string err;
    try {
        serialize::load(path);
    } catch (const std::runtime_error& e) {
        err = e.what();
    }
    std::remove(path.c_str());
    return err;
}

}  // namespace

TEST_CASE("serialize: a shape whose element count overflows is refused, never wraps to 0") {
    // (2^31, 2^31) floats are 2^64 bytes: 0 in 64 bits. No data bytes follow; the checksum is
    // recomputed. A wrapped count would pass the size check, then read through a null pointer.
    const int64_t big = int64_t(1) << 31;
    for (const std::vector<int64_t>& shape :
         {std::vector<int64_t>{big, big}, {big, big, 4}, {big, 2, big}, {4, big, big, big},
          {1 << 30, 1 << 30, 16}, {big, big, big, big, big, big, big, big}}) {
        CAPTURE(shape.size());
        const std::string err = load_error(Builder().head({}, 1).tensor("w", shape, 0).done());
        CHECK(err.rfind(tmp("w.bin") + ": tensor 'w' declares shape (", 0) == 0);
        CHECK(err.find("more values than the 0 bytes left in the file hold") != std::string::npos);
    }
    // A zero dimension holds no data, but the others are still bounded (2^62).
    CHECK(load_error(Builder().head({}, 1).tensor("w", {big, big, 0}, 0).done()).empty());
    CHECK(load_error(Builder().head({}, 1).tensor("w", {big, big, 2, 0}, 0).done()) ==
          tmp("w.bin") + ": tensor 'w' declares shape (2147483648, 2147483648, 2, 0), whose "
                         "other dimensions multiply past 2^62 (corrupt file)");
    CHECK(load_error(Builder().head({}, 1).tensor("w", {3, 0}, 0).done()).empty());
    // A product that fits exactly loads.
    CHECK(load_error(Builder().head({{"layers", 1}}, 1).tensor("w", {2, 3}, 6).done()).empty());
    // Counts that the file cannot hold are refused before any loop runs over them.
    std::string many = Builder().put<uint32_t>(1).put<uint32_t>(0xFFFFFFFF).done();
    CHECK(load_error(many) == tmp("w.bin") + ": truncated or corrupt file (declares 4294967295 "
                                             "hyper-parameters, more than the 0 bytes left can "
                                             "hold)");
    many = Builder().head({}, 0xFFFFFFF0).done();
    CHECK(load_error(many).find("declares 4294967280 tensors") != std::string::npos);
}

TEST_CASE("serialize: the header is read first; a size it does not declare is refused") {
    // Bytes appended after a whole file: refused by the sizes, naming both.
    const std::string whole = Builder().head({}, 1).tensor("w", {2}, 2).done();
    REQUIRE(load_error(whole).empty());
    std::string grown = whole.substr(0, whole.size() - 8) + std::string(16, '\0');
    grown = weights_bytes::rechecksum(grown + std::string(8, '\0'));
    CHECK(load_error(grown) == tmp("w.bin") + ": its header declares " +
                                   std::to_string(whole.size()) + " bytes, the file has " +
                                   std::to_string(grown.size()) +
                                   " (truncated, or bytes appended; save it again)");

    // A 4 GiB file (sparse: no disk used) whose header declares 8 floats. Loaded with 256 MiB of
    // address space: reading the file before its header would end in std::bad_alloc.
    const std::string path = tmp("huge.bin");
    const std::string small = Builder().head({}, 1).tensor("w", {8}, 8).done();
    weights_bytes::write_file(path, small);
    REQUIRE(::truncate(path.c_str(), off_t(4) << 30) == 0);
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        // The address space in use now (thread stacks and all), plus 256 MiB.
        std::ifstream status("/proc/self/status");
        size_t kb = 0;
        for (std::string key; status >> key;)
            if (key == "VmSize:") status >> kb;
        rlimit lim{(kb << 10) + (size_t(256) << 20), (kb << 10) + (size_t(256) << 20)};
        ::setrlimit(RLIMIT_AS, &lim);
        std::string msg = "loaded";
        try {
            serialize::load(path);
        } catch (const std::exception& e) {
            msg = e.what();
        }
        ssize_t n = ::write(fds[1], msg.data(), msg.size());
        ::_exit(n == ssize_t(msg.size()) ? 0 : 1);
    }
    ::close(fds[1]);
    std::string got;
    char buf[512];
    for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) got.append(buf, size_t(n));
    ::close(fds[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status));
    CHECK(got == path + ": its header declares " + std::to_string(small.size()) +
                     " bytes, the file has 4294967296 (truncated, or bytes appended; save it "
                     "again)");
    std::remove(path.c_str());
}

TEST_CASE("serialize: a read error names the file") {
    // /proc/self/mem: a regular file whose first bytes cannot be read (the message names it, not
    // libstdc++'s "basic_filebuf::underflow error reading the file").
    try {
        serialize::load("/proc/self/mem");
        FAIL("/proc/self/mem loaded");
    } catch (const std::runtime_error& e) {
        CHECK(std::string(e.what()) == "/proc/self/mem: cannot read: Input/output error");
    }
    // A folder, and a file of another kind, by name.
    CHECK_THROWS_WITH_AS(serialize::load("/tmp"), "/tmp: is a folder, not a weights file",
                         std::runtime_error);
    CHECK_THROWS_WITH_AS(serialize::load("/proc/cpuinfo"),
                         "/proc/cpuinfo: not a weights file (bad magic; expected one written by "
                         "--save)",
                         std::runtime_error);
}

TEST_CASE("serialize: names from the file are quoted, escaped and cut in its messages") {
    // An escape sequence that clears the screen, a NUL, a newline: shown as text.
    std::string err = load_error(
        Builder().head({}, 1).tensor(std::string("a\x1b[2J\0b\n", 8), {2, 2}, 0).done());
    CHECK(err.find("tensor 'a\\x1b[2J\\x00b\\n' declares shape (2, 2)") != std::string::npos);
    // A 60000-byte name: 64 bytes of it and its length.
    err = load_error(Builder().head({}, 1).tensor(std::string(60000, 'x'), {9}, 0).done());
    CHECK(err.find("tensor '" + std::string(64, 'x') + "'...(60000 bytes) declares") !=
          std::string::npos);
    CHECK(err.size() < 300);
    // A NaN, named the same way.
    std::string nan = Builder().head({}, 1).tensor("w\x07", {1}, 0).put<float>(NAN).done();
    CHECK(load_error(nan) == tmp("w.bin") + ": tensor 'w\\x07' holds NaN or infinite values "
                                            "(saved from a diverged run?)");
}
