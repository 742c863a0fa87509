// Bounded reads of regular files (see read_file.h).
#include "common/program/read_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "common/program/atomic_file.h"

namespace read_file {

std::string size_words(size_t bytes) {
    if (bytes >= (size_t(1) << 20) && bytes % (size_t(1) << 20) == 0)
        return std::to_string(bytes >> 20) + " MiB";
    if (bytes >= 1024 && bytes % 1024 == 0) return std::to_string(bytes >> 10) + " KiB";
    return std::to_string(bytes) + " bytes";
}

Result whole(const std::string& path, size_t max_bytes) {
    Result r;
    // Checked before opening, since opening some devices does something, and again on the file
    // actually opened (it may have been replaced in between); O_NONBLOCK keeps the open of a
    // FIFO from waiting for a writer.
    if (std::string what = atomic_file::not_regular(path); !what.empty()) {
        r.problem = "it is " + what + ", not a regular file";
        r.special = true;
        return r;
    }
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        r.missing = errno == ENOENT || errno == ENOTDIR;
        r.error_number = errno;
        r.problem = std::strerror(errno);
        return r;
    }
    struct stat st;
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        r.problem = "it is not a regular file";
        r.special = true;
        return r;
    }
    // The size stat reports is checked first (a 10 GB file is refused unread); the reads are
    // bounded too, for a file that grows and for files (such as /proc's) that report size 0.
    const std::string too_big = "it is larger than " + size_words(max_bytes);
    if (uint64_t(st.st_size) > max_bytes) {
        ::close(fd);
        r.problem = too_big;
        r.too_large = true;
        return r;
    }
    char buf[65536];
    while (true) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0) {
            if (errno == EINTR) continue;
            r.error_number = errno;
            r.problem = std::strerror(errno);
            break;
        }
        if (n == 0) break;
        if (r.bytes.size() + size_t(n) > max_bytes) {
            r.problem = too_big;
            r.too_large = true;
            break;
        }
        r.bytes.append(buf, size_t(n));
    }
    ::close(fd);
    if (!r.problem.empty()) r.bytes.clear();
    return r;
}

}  // namespace read_file
