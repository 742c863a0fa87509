// Files written whole or not at all, by any number of processes at once.
//
//   atomic_file::write("figures/2-scaling.png", bytes);  // throws atomic_file::Error
//
// The bytes go to "<target>.tmp.<pid>" beside the target (a shortened name where that would be
// too long: see temp_name; one name per process, so two runs never write into the same
// temporary file), are fsynced and renamed over the target, and the
// folder is fsynced. A symlink is written through: the file it points to is replaced and the
// link stays a link. A target that exists and is not a regular file (a FIFO, a device node, a
// socket, a folder) is refused, never renamed over. Ctrl-C (SIGINT), SIGTERM, SIGHUP or SIGQUIT
// ending the process during the write remove the temporary file first (RemoveOnSignal below).
// Temporary files left by a process that was killed outright (kill -9, a power cut) are removed
// by the next write to the same target.
#pragma once
#include <stdexcept>
#include <string>
#include <string_view>

namespace atomic_file {

// What went wrong, in words that name the file: "cannot create x.tmp.123: Permission denied".
struct Error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// The folder a path names a file in: "a/b/c" -> "a/b", "c" -> ".", "/c" -> "/".
std::string parent_dir(const std::string& path);
// The file a write to `path` replaces: symlinks followed (to a target that may not exist yet).
std::string resolve(const std::string& path);
// The temporary file this process writes for the resolved target: "<target>.tmp.<pid>", in the
// target's folder. When the file name is too long for that (a legal name of up to 255 bytes
// plus ".tmp.<pid>" would exceed NAME_MAX), its first bytes, '~' and a hash of the whole name
// stand for it: at most 232 bytes before ".tmp.<pid>", so the temporary name always fits.
std::string temp_name(const std::string& target);
// Throws Error unless write(path) could create its temporary file and rename it to path: the
// name is legal (not too long), its folder exists (or, with create_folders, can be made) and
// takes a new file. Creates and removes the temporary file; call it before long work.
void check_writable(const std::string& path, bool create_folders);
// mkdir -p dir, then check_writable for a file in it: for a folder that figures go to.
void check_folder_writable(const std::string& dir);
// "" when `path` (symlinks followed) is missing or a regular file, else what it is:
// "a folder", "a FIFO", "a device node", "a socket".
std::string not_regular(const std::string& path);
// Removes temp_name(target) files of processes that no longer run; returns how many.
int remove_stale(const std::string& target);
// mkdir -p; throws Error ("x is not a folder", "cannot create x: ...").
void make_folders(const std::string& dir);

// While one lives, those of SIGINT, SIGTERM, SIGHUP and SIGQUIT that would end the process (their
// default action) first remove `path` (unlink, which a signal handler may call), then end it as
// before. Signals the program ignores (SIGHUP under nohup) or handles itself are left as they
// are: a program that goes on after them still wants its file. write() guards its temporary file
// with one; a caller guards a temporary file of its own the same way (bench-translate's batch
// file, while its peer runs). One guard at a time in a process: a second one made while the
// first lives guards nothing.
class RemoveOnSignal {
public:
    explicit RemoveOnSignal(const std::string& path);
    ~RemoveOnSignal();
    RemoveOnSignal(const RemoveOnSignal&) = delete;
    RemoveOnSignal& operator=(const RemoveOnSignal&) = delete;

private:
    bool active_ = false;
};

struct Options {
    bool create_folders = true;  // mkdir -p the target's folder first
    bool keep_mode = true;       // an existing target's permission bits carry over (e.g. 0600)
};
// Writes `bytes` to `path` as described above; throws Error naming the step and the reason.
void write(const std::string& path, std::string_view bytes, const Options& options = {});

}  // namespace atomic_file
