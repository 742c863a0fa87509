// Runs a test's planted fault in a forked child, so that a fault no check catches kills the
// child, not the test run: used by the emulator's tests and by emu-racecheck.
#pragma once
#include <doctest.h>

#include <csignal>
#include <exception>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace testutil {

struct ChildResult {
    bool exited;       // the child returned normally (a signal: false)
    std::string text;  // what f() returned (an error message, or ""), or its exception's text
};

// f() -> std::string runs in the child. default_segv: an uncaught fault ends the child quietly
// (SIG_DFL) instead of reaching doctest's handler; leave it false where the emulator's own
// SIGSEGV handler must name guard-page faults.
template <class F>
ChildResult in_child(F f, bool default_segv = false) {
    int fd[2];
    REQUIRE(pipe(fd) == 0);
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        close(fd[0]);
        if (default_segv) signal(SIGSEGV, SIG_DFL);
        std::string text;
        try {
            text = f();
        } catch (const std::exception& e) {
            text = std::string("exception: ") + e.what();
        }
        if (write(fd[1], text.data(), text.size()) < 0) _exit(3);
        _exit(0);
    }
    close(fd[1]);
    std::string text;
    char buf[4096];
    for (ssize_t n; (n = read(fd[0], buf, sizeof buf)) > 0;)
        text.append(buf, size_t(n));
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    return {WIFEXITED(status) && WEXITSTATUS(status) == 0, text};
}

}  // namespace testutil
