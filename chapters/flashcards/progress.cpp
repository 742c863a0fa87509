// Reading, checking and saving the progress file (progress.h).
#include "chapters/flashcards/progress.h"

#include "common/program/atomic_file.h"
#include "common/program/cli.h"
#include "common/program/terminal.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace cards {

namespace {
constexpr std::string_view MAGIC = "# transformer-cards progress v1";
constexpr std::string_view HEADER = "card\tbox\trating\tsession\treviews";

// Bytes of the file shown in a message: quoted and escaped (no escape code reaches the
// terminal, no NUL cuts the line), at most 40 bytes of them.
std::string shown(std::string_view field) { return cli::quote(field, 40); }
}  // namespace

Progress parse_progress(std::string_view text, const std::string& path) {
    const std::string fix = "; fix the line or start over with --reset";
    Progress p;
    std::vector<std::string_view> lines = split_lines(text);
    if (lines.empty() || lines[0] != MAGIC)
        throw Error(
            at(path, 1) + "not a transformer-cards progress file (the first line should be '" +
            std::string(MAGIC) + "'); choose another --progress file, or --reset to overwrite it");
    bool have_session = false, have_header = false;
    for (size_t k = 1; k < lines.size(); k++) {
        int ln = int(k) + 1;
        std::string_view line = lines[k];
        if (!term::valid_utf8(line)) throw Error(at(path, ln) + "invalid UTF-8" + fix);
        if (line.empty() || line[0] == '#') continue;
        std::vector<std::string_view> f;
        for (size_t i = 0;;) {
            size_t j = line.find('\t', i);
            f.push_back(line.substr(i, j == std::string_view::npos ? j : j - i));
            if (j == std::string_view::npos) break;
            i = j + 1;
        }
        if (!have_session) {
            if (f.size() != 2 || f[0] != "session" || !parse_nonneg(f[1], p.session))
                throw Error(at(path, ln) + "expected 'session<TAB>N', got " + shown(line) + fix);
            have_session = true;
            continue;
        }
        if (!have_header) {
            if (line != HEADER)
                throw Error(at(path, ln) + "expected the column line 'card box rating session "
                            "reviews' (tab-separated)" + fix);
            have_header = true;
            continue;
        }
        if (f.size() != 5)
            throw Error(at(path, ln) + "expected 5 tab-separated fields, got " +
                        std::to_string(f.size()) + fix);
        int card, box, rated_in, reviews;
        Rating r;
        if (!parse_nonneg(f[0], card) || card < 1)
            throw Error(at(path, ln) + "bad card number " + shown(f[0]) + fix);
        if (!parse_nonneg(f[1], box) || box < 1 || box > BOXES)
            throw Error(at(path, ln) + "bad box " + shown(f[1]) + " (boxes are 1 to " +
                        std::to_string(BOXES) + ")" + fix);
        if (!parse_rating_name(f[2], r))
            throw Error(at(path, ln) + "bad rating " + shown(f[2]) + " (쉬움, 보통 or 어려움)" +
                        fix);
        if ((r == Rating::Hard && box != 1) || (r == Rating::Medium && box != 2) ||
            (r == Rating::Easy && box < 3))
            throw Error(at(path, ln) + "box " + std::to_string(box) +
                        " does not follow from the rating " + rating_name(r) +
                        " (어려움 -> 1, 보통 -> 2, 쉬움 -> 3 or more)" + fix);
        if (!parse_nonneg(f[3], rated_in) || rated_in < 1 || rated_in > p.session)
            throw Error(at(path, ln) + "bad session " + shown(f[3]) + " (1 to " +
                        std::to_string(p.session) + ")" + fix);
        if (!parse_nonneg(f[4], reviews) || reviews < 1)
            throw Error(at(path, ln) + "bad review count " + shown(f[4]) + " (1 to " +
                        std::to_string(MAX_REVIEWS) + ")" + fix);
        if (p.cards.count(card))
            throw Error(at(path, ln) + "card " + std::to_string(card) + " appears twice" + fix);
        p.cards[card] = CardState{box, r, rated_in, reviews};
    }
    if (!have_session || !have_header)
        throw Error(at(path, int(lines.size())) + "the file ends before its " +
                    (have_session ? "column line" : "'session' line") + fix);
    return p;
}

std::string format_progress(const Progress& p) {
    std::string s(MAGIC);
    s += "\n# Leitner boxes: 어려움 -> box 1, 보통 -> box 2, 쉬움 -> one box up (3 to 5).\n";
    s += "# A card in box b is due 2^(b-1) sessions after the session it was rated in.\n";
    s += "session\t" + std::to_string(p.session) + "\n";
    s += std::string(HEADER) + "\n";
    for (const auto& [card, st] : p.cards)
        s += std::to_string(card) + "\t" + std::to_string(st.box) + "\t" + rating_name(st.last) +
             "\t" + std::to_string(st.rated_in) + "\t" + std::to_string(st.reviews) + "\n";
    return s;
}

namespace {

// A FIFO would hang the read and a device node would be renamed over: only a regular file (or
// a link to one, or nothing yet) is a progress file.
void refuse_not_regular(const std::string& shown, const std::string& target) {
    std::string what = atomic_file::not_regular(target);
    if (what == "a folder")
        throw Error(shown + ": is a folder, not a progress file; pass a file path to --progress");
    if (!what.empty())
        throw Error(shown + ": is " + what +
                    ", not a progress file; pass a regular file to "
                    "--progress");
}

// A progress file without its owner's write bit was made read-only on purpose; a rename would
// replace it all the same, so refuse (by the mode bits, which bind root too).
void refuse_read_only(const std::string& shown, const std::string& target) {
    struct stat st;
    if (::stat(target.c_str(), &st) == 0 && S_ISREG(st.st_mode) && !(st.st_mode & S_IWUSR))
        throw Error(shown + ": the progress file is read-only; make it writable (chmod u+w) or "
                    "choose another --progress FILE");
}

}  // namespace

Progress load_progress(const std::string& path) {
    refuse_not_regular(path, path);
    bool missing;
    std::string error;
    int error_number;
    std::string text = read_whole(path, missing, error, &error_number);
    if (missing) return Progress{};
    // The advice fits the cause: a name over NAME_MAX (or a path over PATH_MAX) is no matter of
    // permissions, and no file of that name can exist.
    if (error_number == ENAMETOOLONG)
        throw Error(path + ": cannot read the progress file: " + error +
                    " (a file name has at most 255 bytes, a path 4095); choose a shorter "
                    "--progress FILE");
    if (!error.empty())
        throw Error(path + ": cannot read the progress file: " + error +
                    (error_number == EACCES || error_number == EPERM
                         ? "; fix its permissions, choose another --progress file, or --reset"
                         : "; choose another --progress file, or --reset"));
    return parse_progress(text, path);
}

void check_writable(const std::string& path_in) {
    // A symlinked progress file stays a symlink (even one whose target does not exist yet), so
    // the new file goes where the link points.
    std::string path = atomic_file::resolve(path_in);
    refuse_not_regular(path_in, path);
    refuse_read_only(path_in, path);
    std::string dir = atomic_file::parent_dir(path);
    struct stat st;
    int rc;
    // The nearest folder that exists; save_progress creates the rest.
    while ((rc = ::stat(dir.c_str(), &st)) != 0 && errno == ENOENT &&
           dir != atomic_file::parent_dir(dir))
        dir = atomic_file::parent_dir(dir);
    if (rc != 0)
        throw Error(path_in + ": cannot save progress in " + dir + ": " + std::strerror(errno) +
                    "; choose a writable --progress FILE");
    if (!S_ISDIR(st.st_mode))
        throw Error(path_in + ": cannot save progress: " + dir +
                    " is not a folder; choose a writable --progress FILE");
    if (::access(dir.c_str(), W_OK | X_OK) != 0)
        throw Error(path_in + ": cannot save progress in " + dir + ": " + std::strerror(errno) +
                    "; choose a writable --progress FILE");
    // What a save does, tried now: the name's length, then (when its folder exists) a
    // temporary file beside it. A failure at the first rating would lose that rating.
    try {
        if (dir == atomic_file::parent_dir(path)) {
            atomic_file::check_writable(path, false);
        } else {
            if (path.size() - path.find_last_of('/') - 1 > 255)
                throw atomic_file::Error("cannot write " + path + ": " +
                                         std::strerror(ENAMETOOLONG));
            // The first folder the save would create, made and removed now: a folder that
            // grants write access can still refuse one (/proc to root, a read-only mount), and
            // found out only at the save, the first rating would be lost.
            std::string first = atomic_file::parent_dir(path);
            while (atomic_file::parent_dir(first) != dir)
                first = atomic_file::parent_dir(first);
            if (::mkdir(first.c_str(), 0700) != 0)
                throw atomic_file::Error("cannot create " + first + ": " + std::strerror(errno));
            ::rmdir(first.c_str());
        }
    } catch (const atomic_file::Error& e) {
        throw Error(path_in + ": cannot save progress: " + e.what() +
                    "; choose a writable --progress FILE");
    }
}

void save_progress(const std::string& path_in, const Progress& p) {
    std::string path = atomic_file::resolve(path_in);
    refuse_not_regular(path_in, path);
    refuse_read_only(path_in, path);
    try {
        atomic_file::write(path, format_progress(p));
    } catch (const atomic_file::Error& e) {
        throw Error(path_in + ": cannot save progress: " + e.what() +
                    "; choose a writable --progress FILE");
    }
}

Progress save_rating(const std::string& path, const Progress& mine, int card) {
    // Another run of the program may have saved since this one read the file: take the file as
    // it is now and change only this card, under a lock on the folder so that two saves do not
    // interleave. The last rating of a card wins; nobody's other ratings are lost.
    std::string dir = atomic_file::parent_dir(atomic_file::resolve(path));
    try {
        atomic_file::make_folders(dir);
    } catch (const atomic_file::Error& e) {
        throw Error(path + ": cannot save progress: " + e.what() +
                    "; choose a writable --progress FILE");
    }
    int lock = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (lock >= 0)
        while (::flock(lock, LOCK_EX) != 0 && errno == EINTR) {
        }
    try {
        Progress now = load_progress(path);
        now.cards[card] = mine.cards.at(card);
        now.session = std::max(now.session, mine.session);
        save_progress(path, now);
        if (lock >= 0) ::close(lock);  // closing releases the lock
        return now;
    } catch (...) {
        if (lock >= 0) ::close(lock);
        throw;
    }
}

std::string default_progress_path() {
    const char* xdg = std::getenv("XDG_STATE_HOME");
    std::string base;
    if (xdg && xdg[0] == '/') {  // the XDG spec says relative paths are to be ignored
        base = xdg;
    } else {
        const char* home = std::getenv("HOME");
        std::string h = home && home[0] ? home : "";
        if (h.empty())
            if (passwd* pw = ::getpwuid(::getuid()); pw && pw->pw_dir) h = pw->pw_dir;
        if (h.empty())
            throw Error(
                "no home folder for the progress file ($HOME is not set); pass --progress FILE");
        base = h + "/.local/state";
    }
    return base + "/transformer-cards/progress.tsv";
}

}  // namespace cards
