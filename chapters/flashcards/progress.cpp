// Reading, checking and saving the progress file (progress.h).
#include "chapters/flashcards/progress.h"

#include "common/terminal.h"

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
                throw Error(at(path, ln) + "expected 'session<TAB>N', got '" + std::string(line) +
                            "'" + fix);
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
            throw Error(at(path, ln) + "bad card number '" + std::string(f[0]) + "'" + fix);
        if (!parse_nonneg(f[1], box) || box < 1 || box > BOXES)
            throw Error(at(path, ln) + "bad box '" + std::string(f[1]) + "' (boxes are 1 to " +
                        std::to_string(BOXES) + ")" + fix);
        if (!parse_rating_name(f[2], r))
            throw Error(at(path, ln) + "bad rating '" + std::string(f[2]) +
                        "' (쉬움, 보통 or 어려움)" + fix);
        if ((r == Rating::Hard && box != 1) || (r == Rating::Medium && box != 2) ||
            (r == Rating::Easy && box < 3))
            throw Error(at(path, ln) + "box " + std::to_string(box) +
                        " does not follow from the rating " + rating_name(r) +
                        " (어려움 -> 1, 보통 -> 2, 쉬움 -> 3 or more)" + fix);
        if (!parse_nonneg(f[3], rated_in) || rated_in < 1 || rated_in > p.session)
            throw Error(at(path, ln) + "bad session '" + std::string(f[3]) + "' (1 to " +
                        std::to_string(p.session) + ")" + fix);
        if (!parse_nonneg(f[4], reviews) || reviews < 1)
            throw Error(at(path, ln) + "bad review count '" + std::string(f[4]) + "'" + fix);
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

Progress load_progress(const std::string& path) {
    struct stat st;
    if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
        throw Error(path + ": is a folder, not a progress file; pass a file path to --progress");
    bool missing;
    std::string error;
    std::string text = read_whole(path, missing, error);
    if (missing) return Progress{};
    if (!error.empty())
        throw Error(path + ": cannot read the progress file: " + error +
                    "; fix its permissions, choose another --progress file, or --reset");
    return parse_progress(text, path);
}

namespace {

std::string parent_dir(const std::string& path) {
    size_t slash = path.find_last_of('/');
    if (slash == std::string::npos) return ".";
    if (slash == 0) return "/";
    return path.substr(0, slash);
}

// mkdir -p
bool make_dirs(const std::string& dir, std::string& error) {
    struct stat st;
    if (::stat(dir.c_str(), &st) == 0) {
        if (S_ISDIR(st.st_mode)) return true;
        error = dir + " is not a folder";
        return false;
    }
    std::string up = parent_dir(dir);
    if (up != dir && !make_dirs(up, error)) return false;
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
        error = "cannot create " + dir + ": " + std::strerror(errno);
        return false;
    }
    return true;
}

// The file a save replaces: a symlinked progress file stays a symlink (even one whose target
// does not exist yet), so the new file goes where the link points.
std::string save_target(const std::string& path) {
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

// A progress file without its owner's write bit was made read-only on purpose; a rename would
// replace it all the same, so refuse (by the mode bits, which bind root too).
void refuse_read_only(const std::string& shown, const std::string& target) {
    struct stat st;
    if (::stat(target.c_str(), &st) == 0 && S_ISREG(st.st_mode) && !(st.st_mode & S_IWUSR))
        throw Error(shown + ": the progress file is read-only; make it writable (chmod u+w) or "
                    "choose another --progress FILE");
}

}  // namespace

void check_writable(const std::string& path_in) {
    std::string path = save_target(path_in);
    refuse_read_only(path_in, path);
    std::string dir = parent_dir(path);
    struct stat st;
    int rc;
    while ((rc = ::stat(dir.c_str(), &st)) != 0 && errno == ENOENT && dir != parent_dir(dir))
        dir = parent_dir(dir);  // the nearest folder that exists; save_progress creates the rest
    if (rc != 0)
        throw Error(path_in + ": cannot save progress in " + dir + ": " + std::strerror(errno) +
                    "; choose a writable --progress FILE");
    if (!S_ISDIR(st.st_mode))
        throw Error(path_in + ": cannot save progress: " + dir +
                    " is not a folder; choose a writable --progress FILE");
    if (::access(dir.c_str(), W_OK | X_OK) != 0)
        throw Error(path_in + ": cannot save progress in " + dir + ": " + std::strerror(errno) +
                    "; choose a writable --progress FILE");
}

void save_progress(const std::string& path_in, const Progress& p) {
    std::string path = save_target(path_in);
    refuse_read_only(path_in, path);
    const std::string fail = path_in + ": cannot save progress: ";
    const std::string fix = "; choose a writable --progress FILE";
    std::string error;
    std::string dir = parent_dir(path);
    if (!make_dirs(dir, error)) throw Error(fail + error + fix);

    std::string tmp = path + ".tmp." + std::to_string(::getpid());
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw Error(fail + "cannot create " + tmp + ": " + std::strerror(errno) + fix);
    struct stat old;
    if (::stat(path.c_str(), &old) == 0) ::fchmod(fd, old.st_mode & 07777);  // keep e.g. 0600
    std::string text = format_progress(p);
    const char* data = text.data();
    size_t left = text.size();
    auto abandon = [&](const std::string& what) {
        std::string msg = fail + what + ": " + std::strerror(errno) + fix;
        ::close(fd);
        ::unlink(tmp.c_str());
        throw Error(msg);
    };
    while (left > 0) {
        ssize_t n = ::write(fd, data, left);
        if (n < 0) {
            if (errno == EINTR) continue;
            abandon("write " + tmp);
        }
        data += n;
        left -= size_t(n);
    }
    if (::fsync(fd) != 0) abandon("fsync " + tmp);
    if (::close(fd) != 0) {
        std::string msg = fail + "close " + tmp + ": " + std::strerror(errno) + fix;
        ::unlink(tmp.c_str());
        throw Error(msg);
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        std::string msg = fail + "rename " + tmp + ": " + std::strerror(errno) + fix;
        ::unlink(tmp.c_str());
        throw Error(msg);
    }
    // The rename itself is durable only once the folder is synced.
    int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        ::fsync(dfd);
        ::close(dfd);
    }
}

Progress save_rating(const std::string& path, const Progress& mine, int card) {
    // Another run of the program may have saved since this one read the file: take the file as
    // it is now and change only this card, under a lock on the folder so that two saves do not
    // interleave. The last rating of a card wins; nobody's other ratings are lost.
    std::string dir = parent_dir(save_target(path)), error;
    if (!make_dirs(dir, error))
        throw Error(path + ": cannot save progress: " + error +
                    "; choose a writable --progress FILE");
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
