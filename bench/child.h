// The benchmarks' peers run as child processes: started without a shell (execvp, so a --peer
// or PEER_PYTHON value is one program name and never shell text), with extra environment
// variables set for the child only, and their stdout read line by line. A child dies with the
// benchmark that started it.
#pragma once

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <functional>
#include <poll.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <utility>
#include <vector>

#if defined(__linux__)
#include <sys/prctl.h>
#endif

extern char** environ;

namespace bench {

// run_child's answer for a child that ran past its time limit (as timeout(1) says it).
constexpr int TIMED_OUT = 124;

// Runs argv (argv[0] looked up on PATH when it has no '/') with `env` added to this process's
// environment, calls on_line for each line of its stdout (its stderr is ours); returns its exit
// status, 128 + the signal's number when a signal ended it, 127 when it could not be started,
// -1 when no child could be made (said on stderr, with the reason), TIMED_OUT when it ran past
// timeout_s seconds (> 0; 0: no limit): it is then killed (SIGKILL), so a peer that hangs costs
// the benchmark its limit and no more. The child gets SIGKILL when this process ends (Linux: the
// parent-death signal): a SIGTERM from a process manager reaches the benchmark alone, and its
// peer would otherwise run on, re-parented to init, timing for nobody (a PyTorch peer then ends
// in a BrokenPipeError, an OpenBLAS child keeps every core busy). SIGKILL, not SIGTERM: a peer
// holds nothing to clean up, and a --peer program that handles SIGTERM still ends.
inline int run_child(const std::vector<std::string>& argv,
                     const std::vector<std::pair<std::string, std::string>>& env,
                     const std::function<void(const std::string&)>& on_line, double timeout_s = 0) {
    // Everything the child needs is built here: between fork and exec a child of a threaded
    // process may only make async-signal-safe calls (no malloc, no setenv, no printf).
    std::vector<char*> args;
    for (const std::string& a : argv)
        args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    std::vector<std::string> extra;
    for (const auto& [k, v] : env)
        extra.push_back(k + "=" + v);
    std::vector<char*> envp;
    for (char** e = environ; *e; e++) {
        bool replaced = false;
        for (const auto& [k, v] : env)
            replaced |= std::strncmp(*e, k.c_str(), k.size()) == 0 && (*e)[k.size()] == '=';
        if (!replaced) envp.push_back(*e);
    }
    for (std::string& e : extra)
        envp.push_back(e.data());
    envp.push_back(nullptr);

    // fd: the child's stdout; failed: closed by a successful exec (O_CLOEXEC), or carrying the
    // errno of a failed one, which the parent puts into words (strerror is not for a child).
    int fd[2], failed[2];
    auto no_child = [&](int err) {  // said here: the caller knows only the -1
        std::fprintf(stderr, "%s: cannot start it: %s\n", argv[0].c_str(), std::strerror(err));
        return -1;
    };
    if (::pipe(fd) != 0) return no_child(errno);
    if (::pipe2(failed, O_CLOEXEC) != 0) {
        const int err = errno;
        ::close(fd[0]);
        ::close(fd[1]);
        return no_child(err);
    }
    std::fflush(stdout);
    std::fflush(stderr);
    [[maybe_unused]] const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) {
        const int err = errno;
        for (int f : {fd[0], fd[1], failed[0], failed[1]})
            ::close(f);
        return no_child(err);
    }
    if (pid == 0) {
#if defined(__linux__)
        // The signal comes when the thread that forked ends; that thread waits for the child
        // below, so it ends before the child only when the whole process does. A parent that
        // ended before prctl is caught by the check after it (the child has a new parent then).
        if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) {
            const int err = errno;
            (void)!::write(failed[1], &err, sizeof err);
            ::_exit(127);
        }
        if (::getppid() != parent) ::_exit(127);
#endif
        ::dup2(fd[1], STDOUT_FILENO);
        ::close(fd[0]);
        ::close(fd[1]);
        ::close(failed[0]);
        ::execvpe(args[0], args.data(), envp.data());
        const int err = errno;
        (void)!::write(failed[1], &err, sizeof err);
        ::_exit(127);
    }
    ::close(fd[1]);
    ::close(failed[1]);
    int exec_errno = 0;
    if (::read(failed[0], &exec_errno, sizeof exec_errno) == ssize_t(sizeof exec_errno))
        std::fprintf(stderr, "%s: cannot run it: %s\n", argv[0].c_str(), std::strerror(exec_errno));
    ::close(failed[0]);
    // The child's stdout is read as it comes (poll, so the time limit holds while it says
    // nothing); at the limit the child is killed and its output no longer read (a process it
    // started may hold the pipe open).
    const auto start = std::chrono::steady_clock::now();
    bool timed_out = false;
    std::string line;
    char buf[4096];
    for (;;) {
        int wait_ms = -1;
        if (timeout_s > 0) {
            const double left =
                timeout_s -
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            if (left <= 0) {
                ::kill(pid, SIGKILL);
                timed_out = true;
                break;
            }
            wait_ms = int(std::min(left * 1000 + 1, 60000.0));
        }
        pollfd p{fd[0], POLLIN, 0};
        const int ready = ::poll(&p, 1, wait_ms);
        if (ready < 0 && errno != EINTR) break;
        if (ready <= 0) continue;
        const ssize_t got = ::read(fd[0], buf, sizeof buf);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        for (ssize_t i = 0; i < got; i++) {
            line += buf[i];
            if (buf[i] == '\n') on_line(line), line.clear();
        }
    }
    if (!line.empty()) on_line(line);
    ::close(fd[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (timed_out) return TIMED_OUT;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace bench
