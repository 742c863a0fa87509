// Chapter 8's job runner (see runner.h): fork, a pipe per child, poll.
#include "chapters/8-ablations/machinery/runner.h"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "common/kernels/parallel.h"
#include "common/program/atomic_file.h"
#include "common/program/cli.h"
#include "common/program/read_file.h"
#include "common/program/terminal.h"

namespace ablations {

void Record::put(const std::string& name, std::vector<double> values) {
    for (auto& [k, v] : items)
        if (k == name) {
            v = std::move(values);
            return;
        }
    items.push_back({name, std::move(values)});
}

const std::vector<double>& Record::get(const std::string& name) const {
    for (const auto& [k, v] : items)
        if (k == name) return v;
    throw std::runtime_error("a job's record has no \"" + name + "\"");
}

namespace {

void write_all(int fd, const std::string& s) {
    size_t done = 0;
    while (done < s.size()) {
        const ssize_t n = ::write(fd, s.data() + done, s.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) ::_exit(3);  // the parent is gone: nobody wants the result
        done += size_t(n);
    }
}


// One "R name count v1 v2 ..." line into `record`; false if it is not one: a name of letters,
// digits and '_', a count that the values match exactly, and nothing else on the line. A name
// given twice is not one either (a record holds each once).
bool parse_record_line(const std::string& line, Record& record) {
    if (line.rfind("R ", 0) != 0) return false;
    const char* p = line.c_str() + 2;
    const char* space = std::strchr(p, ' ');
    if (!space || space == p || space - p > 64) return false;
    std::string name(p, size_t(space - p));
    for (char c : name)
        if (!std::isalnum((unsigned char)c) && c != '_') return false;
    for (const auto& item : record.items)
        if (item.first == name) return false;
    if (!std::isdigit((unsigned char)space[1])) return false;  // strtol would skip blanks
    errno = 0;
    char* end = nullptr;
    const long n = std::strtol(space + 1, &end, 10);
    if (end == space + 1 || n < 0 || errno == ERANGE) return false;
    // Every value takes at least two bytes (" 0"): a count the line cannot hold is refused
    // before anything is allocated.
    if (size_t(n) > line.size() / 2) return false;
    std::vector<double> values;
    values.reserve(size_t(n));
    for (long i = 0; i < n; i++) {
        if (*end != ' ' || std::isspace((unsigned char)end[1])) return false;  // one blank
        char* next = nullptr;
        values.push_back(std::strtod(end + 1, &next));
        if (next == end + 1) return false;
        end = next;
    }
    if (*end != '\0') return false;
    record.put(name, values);
    return true;
}

// The child's side: run the job, send its record (format_record).
[[noreturn]] void run_child(const Job& job, int fd) {
    omp_set_num_threads(1);  // one core per job: the jobs themselves run in parallel
    Progress progress(fd);
    try {
        Record r = job.run(progress);
        write_all(fd, format_record(r));
        ::_exit(0);
    } catch (const std::exception& e) {
        write_all(fd, std::string("ERR ") + cli::error_text(e) + "\n");
        ::_exit(1);
    }
}

struct Running {
    size_t job;
    pid_t pid;
    int fd;
    std::string buffer;  // bytes read, not yet a whole line
    Record record;
    std::string error;
    bool ended = false;
    int done = 0, total = 0;  // the last progress it reported
};

// One line of a child's output.
void take_line(Running& r, const std::string& line) {
    if (line.rfind("P ", 0) == 0) {
        std::sscanf(line.c_str() + 2, "%d %d", &r.done, &r.total);
    } else if (line.rfind("R ", 0) == 0) {
        if (!parse_record_line(line, r.record)) r.error = "a garbled result line";
    } else if (line == "END") {
        r.ended = true;
    } else if (line.rfind("ERR ", 0) == 0) {
        r.error = line.substr(4);
    }
}

// FNV-1a, 64 bits: the key of a kept record.
uint64_t fnv1a(const std::string& s, uint64_t h = 1469598103934665603ull) {
    for (unsigned char c : s)
        h = (h ^ c) * 1099511628211ull;
    return h;
}

// The program's own bytes, hashed once: kept records belong to one build. Where the file
// cannot be read (no /proc), nothing can tell builds apart, so --keep refuses to work.
uint64_t program_hash() {
    static const uint64_t h = [] {
        std::ifstream f("/proc/self/exe", std::ios::binary);
        std::stringstream ss;
        ss << f.rdbuf();
        if (!f || ss.str().empty())
            throw std::runtime_error(
                "--keep: cannot read this program's own file "
                "(/proc/self/exe) to tell one build's records from "
                "another's; run without --keep");
        return fnv1a(ss.str());
    }();
    return h;
}

// keep.dir/<job name, '/' as '_'>-<hex key>.rec
std::string kept_path(const Keep& keep, const std::string& job_name) {
    std::string stem = job_name;
    std::replace(stem.begin(), stem.end(), '/', '_');
    char hex[20];
    std::snprintf(hex, sizeof hex, "%016llx",
                  (unsigned long long)fnv1a(job_name + "\n" + keep.context, program_hash()));
    return keep.dir + "/" + stem + "-" + hex + ".rec";
}

}  // namespace

std::string format_record(const Record& r) {
    std::string out;
    char buf[32];
    for (const auto& [name, values] : r.items) {
        out += "R " + name + " " + std::to_string(values.size());
        for (double v : values) {
            std::snprintf(buf, sizeof buf, " %.17g", v);
            out += buf;
        }
        out += "\n";
    }
    return out + "END\n";
}

bool read_kept(const std::string& path, const Job& job, Record& out, std::string& problem,
               bool& special) {
    problem.clear();
    const read_file::Result file = read_file::whole(path, MAX_KEPT_BYTES);
    special = file.special;
    if (file.missing) return false;
    if (!file.problem.empty()) return problem = file.problem, false;
    Record r;
    size_t from = 0, line_no = 0;
    while (from < file.bytes.size()) {
        const size_t nl = file.bytes.find('\n', from);
        if (nl == std::string::npos) break;
        const std::string line = file.bytes.substr(from, nl - from);
        from = nl + 1;
        line_no++;
        if (line == "END") {
            if (from != file.bytes.size()) return problem = "bytes after its END line", false;
            if (job.check) problem = job.check(r);
            if (!problem.empty()) return false;
            out = std::move(r);
            return true;
        }
        if (!parse_record_line(line, r))
            return problem = "line " + std::to_string(line_no) + " is not \"R name count values\"",
                   false;
    }
    problem = "no END line: not written whole";
    return false;
}

void Progress::operator()(int done, int total) {
    if (fd_ < 0) return;
    const int permille = total > 0 ? int(1000.0 * done / total) : 0;
    if (permille == last_ && done != total) return;  // at most ~1000 lines per job
    last_ = permille;
    write_all(fd_, "P " + std::to_string(done) + " " + std::to_string(total) + "\n");
}

std::vector<Record> run_jobs(const std::vector<Job>& jobs, int parallel, bool show_progress,
                             const Keep& keep, int* reused) {
    std::vector<Record> records(jobs.size());
    std::vector<size_t> order;  // the jobs to run: those without a kept record
    size_t finished = 0;
    if (reused) *reused = 0;
    std::vector<std::string> warnings;  // kept files not taken, said before the runs start
    for (size_t j = 0; j < jobs.size(); j++) {
        if (!keep.dir.empty()) {
            const std::string path = kept_path(keep, jobs[j].name);
            std::string problem;
            bool special = false;
            if (read_kept(path, jobs[j], records[j], problem, special)) {
                finished++;
                if (reused) ++*reused;
                continue;
            }
            if (special)  // it could never be replaced by the job's record: stop before any run
                throw std::runtime_error("--keep: " + path + ": " + problem +
                                         "; remove it or choose another folder");
            if (!problem.empty())
                warnings.push_back("8-ablations: warning: " + path + ": " + problem + "; " +
                                   jobs[j].name + " is trained again");
        }
        order.push_back(j);
    }
    for (const std::string& w : warnings)
        std::fprintf(stderr, "%s\n", w.c_str());
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return jobs[a].cost > jobs[b].cost; });
    std::vector<std::string> failures;
    std::vector<Running> running;
    size_t next = 0;
    std::fflush(stdout);
    std::fflush(stderr);
    term::ProgressLine progress_line;
    auto draw = [&] {
        if (!show_progress) return;
        std::string line = "  8-ablations: " + std::to_string(finished) + "/" +
                           std::to_string(jobs.size()) + " 끝남";
        for (const Running& r : running)
            line += " · " + jobs[r.job].name + " " + std::to_string(r.done) + "/" +
                    std::to_string(r.total);
        progress_line.show(line);
    };
    while (next < order.size() || !running.empty()) {
        while (next < order.size() && int(running.size()) < std::max(1, parallel)) {
            int fds[2];
            if (::pipe(fds) != 0)
                throw std::runtime_error(std::string("cannot create a pipe for a job: ") +
                                         std::strerror(errno));
            const size_t j = order[next++];
            [[maybe_unused]] const pid_t parent = ::getpid();
            const pid_t pid = ::fork();
            if (pid < 0)
                throw std::runtime_error("cannot start a process for " + jobs[j].name + ": " +
                                         std::strerror(errno));
            if (pid == 0) {
#if defined(__linux__)
                // A run outlives nothing: when 8-ablations ends (Ctrl-C reaches the whole
                // process group, but SIGTERM or SIGKILL from a process manager only the parent),
                // its runs get SIGTERM. Without it they would train on until their next write
                // to the pipe failed, which a run that is evaluating does not make for seconds.
                ::prctl(PR_SET_PDEATHSIG, SIGTERM);
                if (::getppid() != parent) ::_exit(1);  // the parent ended before prctl
#endif
                ::close(fds[0]);
                for (const Running& r : running)
                    ::close(r.fd);
                run_child(jobs[j], fds[1]);
            }
            ::close(fds[1]);
            running.push_back({j, pid, fds[0], {}, {}, {}, false, 0, 0});
        }
        draw();
        std::vector<pollfd> pfds;
        for (const Running& r : running)
            pfds.push_back({r.fd, POLLIN, 0});
        if (::poll(pfds.data(), pfds.size(), 500) < 0 && errno != EINTR)
            throw std::runtime_error(std::string("poll failed while waiting for the jobs: ") +
                                     std::strerror(errno));
        for (size_t k = 0; k < running.size();) {
            Running& r = running[k];
            char buf[65536];
            const ssize_t n =
                (pfds[k].revents & (POLLIN | POLLHUP)) ? ::read(r.fd, buf, sizeof buf) : -2;
            if (n > 0) {
                r.buffer.append(buf, size_t(n));
                size_t nl;
                while ((nl = r.buffer.find('\n')) != std::string::npos) {
                    take_line(r, r.buffer.substr(0, nl));
                    r.buffer.erase(0, nl + 1);
                }
            }
            if (n == 0 || (n == -1 && errno != EINTR)) {  // the child closed its end
                ::close(r.fd);
                int status = 0;
                ::waitpid(r.pid, &status, 0);
                const std::string& name = jobs[r.job].name;
                if (r.ended && r.error.empty() && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
                    records[r.job] = std::move(r.record);
                    if (!keep.dir.empty()) {
                        try {
                            atomic_file::write(kept_path(keep, name),
                                               format_record(records[r.job]));
                        } catch (const atomic_file::Error& e) {  // said; the run goes on
                            progress_line.clear();
                            std::fprintf(stderr, "8-ablations: warning: %s was not kept: %s\n",
                                         name.c_str(), e.what());
                        }
                    }
                } else if (!r.error.empty()) {
                    failures.push_back(name + ": " + r.error);
                } else if (WIFSIGNALED(status)) {
                    failures.push_back(name + ": killed by signal " +
                                       std::to_string(WTERMSIG(status)) +
                                       (WTERMSIG(status) == SIGKILL ? " (out of memory?)" : ""));
                } else {
                    failures.push_back(name + ": exited without its results");
                }
                finished++;
                running.erase(running.begin() + long(k));
                pfds.erase(pfds.begin() + long(k));
                continue;
            }
            k++;
        }
    }
    progress_line.clear();
    if (!failures.empty()) {
        std::string all = "experiment failed: " + failures[0];
        for (size_t i = 1; i < failures.size(); i++)
            all += "; " + failures[i];
        throw std::runtime_error(all);
    }
    return records;
}

}  // namespace ablations
