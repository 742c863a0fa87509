// The helpers declared in text.h.
#include "chapters/flashcards/text.h"

#include "common/program/atomic_file.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace cards {

std::string at(const std::string& path, int line) {
    return path + ":" + std::to_string(line) + ": ";
}

std::string_view trim(std::string_view s) {
    size_t a = s.find_first_not_of(" \t");
    if (a == std::string_view::npos) return {};
    size_t b = s.find_last_not_of(" \t");
    return s.substr(a, b - a + 1);
}

std::vector<std::string_view> split_lines(std::string_view text) {
    std::vector<std::string_view> lines;
    size_t i = 0;
    while (i < text.size()) {
        size_t j = text.find('\n', i);
        if (j == std::string_view::npos) j = text.size();
        std::string_view line = text.substr(i, j - i);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        lines.push_back(line);
        i = j + 1;
    }
    return lines;
}

bool parse_nonneg(std::string_view s, int& out) {
    if (s.empty() || s.size() > 9) return false;
    int v = 0;
    for (char ch : s) {
        if (ch < '0' || ch > '9') return false;
        v = v * 10 + (ch - '0');
    }
    out = v;
    return true;
}

std::string read_whole(const std::string& path, bool& missing, std::string& error,
                       int* error_number) {
    missing = false;
    if (error_number) *error_number = 0;
    // Only a regular file is read: a FIFO would block forever, a device node never end.
    // (Checked before opening, since opening some devices does something, and after it, on the
    // file actually opened; O_NONBLOCK keeps the open of a FIFO from waiting for a writer.)
    if (std::string what = atomic_file::not_regular(path); !what.empty()) {
        error = "it is " + what + ", not a regular file";
        return {};
    }
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        missing = errno == ENOENT || errno == ENOTDIR;
        if (error_number) *error_number = errno;
        error = std::strerror(errno);
        return {};
    }
    struct stat st;
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        error = "it is not a regular file";
        ::close(fd);
        return {};
    }
    const std::string too_large = "it is larger than " + std::to_string(MAX_FILE_BYTES >> 20) +
                                  " MiB, more than a deck or progress file holds";
    if (size_t(st.st_size) > MAX_FILE_BYTES) {  // refused unread: a 10 GB file costs nothing
        error = too_large;
        ::close(fd);
        return {};
    }
    std::string text;
    char buf[65536];
    while (true) {
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (error_number) *error_number = errno;
            error = std::strerror(errno);
            ::close(fd);
            return {};
        }
        if (n == 0) break;
        text.append(buf, size_t(n));
        if (text.size() > MAX_FILE_BYTES) {  // it grew after the fstat
            error = too_large;
            ::close(fd);
            return {};
        }
    }
    ::close(fd);
    return text;
}

}  // namespace cards
