// Chapter 8's job runner: every training run is a job in its own forked process, a few at once,
// so the experiments use both cores without sharing any state (the global torch generator, the
// memory counters, OpenMP's thread pool). A job hands back named lists of numbers; a job's
// numbers depend only on its own seeds, never on how many run at once or in which order.
#pragma once
#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace ablations {

// What a job returns: named lists of numbers (a loss curve, an accuracy, ...).
struct Record {
    std::vector<std::pair<std::string, std::vector<double>>> items;
    void put(const std::string& name, std::vector<double> values);
    void put(const std::string& name, double value) { put(name, std::vector<double>{value}); }
    const std::vector<double>& get(const std::string& name) const;  // throws naming a miss
    double value(const std::string& name) const { return get(name).at(0); }
};

// Passed to a job: how far it has got (a step of a total), for the progress line.
class Progress {
public:
    explicit Progress(int fd = -1) : fd_(fd) {}
    void operator()(int done, int total);

private:
    int fd_;
    int last_ = -1;
};

struct Job {
    std::string name;  // shown on the progress line and in errors
    double cost;       // a rough CPU-seconds estimate: the longest jobs start first
    std::function<Record(Progress&)> run;
    // "" when a record is one this job could have returned (its keys, each list's length and
    // range), else what is wrong with it. A kept record is read back from a file anyone could
    // have written: it is taken only when this says "". Empty: any record is taken.
    std::function<std::string(const Record&)> check = {};
};

// Where finished jobs' records are kept, so an interrupted or failed run loses only the jobs that
// were running: with a folder, each job's record is written there when the job ends, and a job
// whose record is already there is not run again. A record is found again only by the same job
// name, the same `context` (the caller's settings that change every job, such as --scale) and
// the same program file (its bytes are hashed: after a rebuild every job runs again). A kept
// file that is not a whole record its job's check accepts is named in a warning and its job runs
// again; one that is not a regular file (a FIFO, a device) stops the run before any job starts.
struct Keep {
    std::string dir;      // empty: nothing is kept
    std::string context;  // e.g. "scale=0.05"
};

// A record as a child sends it and as Keep stores it: "R name count v1 v2 ..." lines (every value
// to 17 digits, so it reads back to the same double), then "END".
std::string format_record(const Record& r);

// The largest kept record read back: the longest run's at --scale 10 is about 0.5 MB.
constexpr size_t MAX_KEPT_BYTES = size_t(16) << 20;

// The kept record at `path`, parsed and checked by `job.check`: true and `out` set when it is
// one; false with `problem` empty when there is none, or with `problem` saying what is wrong
// with the file ("it is a FIFO, not a regular file", "no END line: not written whole", ...).
// `special` is set when the file is not a regular one.
bool read_kept(const std::string& path, const Job& job, Record& out, std::string& problem,
               bool& special);

// Runs each job in a child process with one OpenMP thread, at most `parallel` at once, and
// returns the records in the jobs' order. With show_progress, progress is one updating line on
// stderr when it is a terminal (term::ProgressLine), and nothing otherwise. A job that fails
// (an exception, a crash) is reported by name: std::runtime_error after the others have
// finished. `reused`, when given, counts the
// jobs whose records came from keep.dir.
std::vector<Record> run_jobs(const std::vector<Job>& jobs, int parallel, bool show_progress,
                             const Keep& keep = {}, int* reused = nullptr);

}  // namespace ablations
