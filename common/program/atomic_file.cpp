// Whole-or-nothing file writes (atomic_file.h).
#include "common/program/atomic_file.h"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <csignal>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace atomic_file {

std::string parent_dir(const std::string& path) {
    size_t slash = path.find_last_of('/');
    if (slash == std::string::npos) return ".";
    if (slash == 0) return "/";
    return path.substr(0, slash);
}

namespace {

// ---- RemoveOnSignal ---------------------------------------------------------------------------
constexpr int GUARDED[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
char g_guarded_path[4096];                                      // the file a fatal signal removes
volatile sig_atomic_t g_guarding = 0;                           // 1 while a RemoveOnSignal lives
struct sigaction g_before[sizeof GUARDED / sizeof GUARDED[0]];  // the dispositions it found
bool g_replaced[sizeof GUARDED / sizeof GUARDED[0]];            // which of them it replaced

// Installed only over the default action (which ends the process): a signal the program
// ignores or handles itself is left alone, since a program that survives it still wants its
// file (under nohup, SIGHUP is ignored; chapter 7's Ctrl-C handler asks for a save).
void remove_then_end(int sig) {
    if (g_guarding) ::unlink(g_guarded_path);
    ::signal(sig, SIG_DFL);  // the default action: the process ends as the signal says
    ::raise(sig);
}

bool is_default(const struct sigaction& sa) {
    return !(sa.sa_flags & SA_SIGINFO) && sa.sa_handler == SIG_DFL;
}

}  // namespace

RemoveOnSignal::RemoveOnSignal(const std::string& path) {
    if (g_guarding || path.size() >= sizeof g_guarded_path) return;
    std::memcpy(g_guarded_path, path.c_str(), path.size() + 1);
    struct sigaction sa {};
    sa.sa_handler = remove_then_end;
    sigemptyset(&sa.sa_mask);
    for (int sig : GUARDED)
        sigaddset(&sa.sa_mask, sig);  // one handler at a time
    for (size_t i = 0; i < sizeof GUARDED / sizeof GUARDED[0]; i++) {
        ::sigaction(GUARDED[i], nullptr, &g_before[i]);
        g_replaced[i] = is_default(g_before[i]);
        if (g_replaced[i]) ::sigaction(GUARDED[i], &sa, nullptr);
    }
    g_guarding = 1;
    active_ = true;
}

RemoveOnSignal::~RemoveOnSignal() {
    if (!active_) return;
    for (size_t i = 0; i < sizeof GUARDED / sizeof GUARDED[0]; i++)
        if (g_replaced[i]) ::sigaction(GUARDED[i], &g_before[i], nullptr);
    g_guarding = 0;
}

namespace {

std::string base_name(const std::string& path) {
    size_t slash = path.find_last_of('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string kind(mode_t mode) {
    if (S_ISREG(mode)) return "";
    if (S_ISDIR(mode)) return "a folder";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device node";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

}  // namespace

void make_folders(const std::string& dir) {
    struct stat st;
    if (::stat(dir.c_str(), &st) == 0) {
        if (S_ISDIR(st.st_mode)) return;
        throw Error(dir + " is not a folder");
    }
    std::string up = parent_dir(dir);
    if (up != dir) make_folders(up);
    if (::mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST)
        throw Error("cannot create " + dir + ": " + std::strerror(errno));
}

std::string resolve(const std::string& path) {
    std::string target = path;
    for (int hops = 0; hops < 40; hops++) {
        struct stat lst;
        if (::lstat(target.c_str(), &lst) != 0 || !S_ISLNK(lst.st_mode)) break;
        char buf[4096];
        ssize_t n = ::readlink(target.c_str(), buf, sizeof buf - 1);
        if (n <= 0) break;
        std::string to(buf, size_t(n));
        target = to[0] == '/' ? to : parent_dir(target) + "/" + to;
    }
    return target;
}

namespace {

// The part of the temporary name before ".tmp.<pid>": the file name itself, or for a long one
// its first bytes (cut at a character boundary), '~' and 16 hex digits of FNV-1a-64 of it.
// 232 + ".tmp." + a pid of up to 10 digits + leeway stays under NAME_MAX = 255.
std::string temp_stem(const std::string& base) {
    constexpr size_t MAX_STEM = 232;
    if (base.size() <= MAX_STEM) return base;
    uint64_t h = 0xcbf29ce484222325ULL;
    for (unsigned char c : base) h = (h ^ c) * 0x100000001b3ULL;
    size_t keep = MAX_STEM - 17;
    while (keep > 0 && (static_cast<unsigned char>(base[keep]) & 0xC0) == 0x80) keep--;
    char hash[24];
    std::snprintf(hash, sizeof hash, "~%016llx", static_cast<unsigned long long>(h));
    return base.substr(0, keep) + hash;
}

std::string temp_prefix(const std::string& target) {
    const std::string dir = parent_dir(target), stem = temp_stem(base_name(target)) + ".tmp.";
    return target.find('/') == std::string::npos ? stem : (dir == "/" ? "/" : dir + "/") + stem;
}

}  // namespace

std::string temp_name(const std::string& target) {
    return temp_prefix(target) + std::to_string(::getpid());
}

void check_writable(const std::string& path, bool create_folders) {
    const std::string target = resolve(path), dir = parent_dir(target);
    if (std::string what = not_regular(target); !what.empty())
        throw Error(target + " is " + what + ", not a regular file");
    if (base_name(target).size() > 255)  // NAME_MAX on Linux, macOS and the BSDs
        throw Error("cannot write " + target + ": " + std::strerror(ENAMETOOLONG));
    struct stat st;
    if (::stat(target.c_str(), &st) != 0 && errno != ENOENT)
        throw Error("cannot write " + target + ": " + std::strerror(errno));
    if (create_folders) make_folders(dir);
    const std::string tmp = temp_name(target);
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) throw Error("cannot create " + tmp + ": " + std::strerror(errno));
    ::close(fd);
    ::unlink(tmp.c_str());
}

void check_folder_writable(const std::string& dir) {
    make_folders(dir);
    check_writable((dir.empty() || dir.back() == '/' ? dir : dir + "/") + ".write-test", false);
}

std::string not_regular(const std::string& path) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return "";
    return kind(st.st_mode);
}

int remove_stale(const std::string& target) {
    const std::string prefix = base_name(temp_prefix(target)), dir = parent_dir(target);
    DIR* d = ::opendir(dir.c_str());
    if (!d) return 0;
    int removed = 0;
    while (dirent* e = ::readdir(d)) {
        std::string name = e->d_name;
        if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
        std::string digits = name.substr(prefix.size());
        if (digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos)
            continue;
        const pid_t pid = pid_t(std::stol(digits));
        if (pid <= 0 || pid == ::getpid()) continue;
        if (::kill(pid, 0) == 0 || errno != ESRCH) continue;  // alive (or not ours to ask)
        std::string path = dir + "/" + name;
        struct stat st;
        if (::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::unlink(path.c_str()) == 0)
            removed++;
    }
    ::closedir(d);
    return removed;
}

void write(const std::string& path, std::string_view bytes, const Options& options) {
    const std::string target = resolve(path), dir = parent_dir(target);
    if (std::string what = not_regular(target); !what.empty())
        throw Error(target + " is " + what + ", not a regular file");
    if (options.create_folders) make_folders(dir);
    remove_stale(target);

    const std::string tmp = temp_name(target);
    const RemoveOnSignal guard(tmp);  // Ctrl-C while this runs leaves no temporary file
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0666);
    if (fd < 0) throw Error("cannot create " + tmp + ": " + std::strerror(errno));
    struct stat old;
    if (options.keep_mode && ::stat(target.c_str(), &old) == 0) ::fchmod(fd, old.st_mode & 07777);
    auto abandon = [&](const std::string& step, int err, bool open) {
        if (open) ::close(fd);
        ::unlink(tmp.c_str());
        throw Error(step + " " + tmp + ": " + std::strerror(err));
    };
    const char* data = bytes.data();
    size_t left = bytes.size();
    while (left > 0) {
        ssize_t n = ::write(fd, data, left);
        if (n < 0) {
            if (errno == EINTR) continue;
            abandon("write", errno, true);
        }
        data += n;
        left -= size_t(n);
    }
    if (::fsync(fd) != 0) abandon("fsync", errno, true);
    if (::close(fd) != 0) abandon("close", errno, false);
    if (::rename(tmp.c_str(), target.c_str()) != 0) abandon("rename", errno, false);
    // The rename itself is durable only once the folder is synced.
    int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        ::fsync(dfd);
        ::close(dfd);
    }
}

}  // namespace atomic_file
