#include "chapters/flashcards/flashcards.h"

#include "common/terminal.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace cards {

namespace {

std::string at(const std::string& path, int line) { return path + ":" + std::to_string(line) + ": "; }

bool starts_with(std::string_view s, std::string_view prefix) {
    return s.substr(0, prefix.size()) == prefix;
}

std::string_view trim(std::string_view s) {
    size_t a = s.find_first_not_of(" \t");
    if (a == std::string_view::npos) return {};
    size_t b = s.find_last_not_of(" \t");
    return s.substr(a, b - a + 1);
}

// Splits text into lines without their '\n' (and a '\r' before it, for files saved on Windows).
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

// The first control character in s (tabs allowed when tab_ok), or 0.
char32_t control_char(std::string_view s, bool tab_ok) {
    size_t i = 0;
    char32_t c;
    while (i < s.size()) {
        term::decode_utf8(s, i, c);
        if (c == '\t' && tab_ok) continue;
        if (term::codepoint_width(c) < 0) return c;
    }
    return 0;
}

std::string hex(char32_t c) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "U+%04X", unsigned(c));
    return buf;
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

std::string read_whole(const std::string& path, bool& missing, std::string& error) {
    missing = false;
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        missing = errno == ENOENT || errno == ENOTDIR;
        error = std::strerror(errno);
        return {};
    }
    std::string text;
    char buf[65536];
    while (true) {
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0) {
            if (errno == EINTR) continue;
            error = std::strerror(errno);
            ::close(fd);
            return {};
        }
        if (n == 0) break;
        text.append(buf, size_t(n));
        if (text.size() > (64u << 20)) {
            error = "larger than 64 MiB";
            ::close(fd);
            return {};
        }
    }
    ::close(fd);
    return text;
}

}  // namespace

// ---- the deck -----------------------------------------------------------------------------

std::string plain_text(std::string_view md) {
    std::string out;
    for (size_t i = 0; i < md.size(); i++) {
        if (md[i] == '`') continue;
        if (md[i] == '*' && i + 1 < md.size() && md[i + 1] == '*') {
            i++;
            continue;
        }
        out += md[i];
    }
    return out;
}

Deck parse_deck(std::string_view text, const std::string& path) {
    Deck deck;
    deck.path = path;
    if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // some editors write a BOM
    std::vector<std::string_view> lines = split_lines(text);

    struct Pending {
        Card card;
        std::vector<std::pair<int, std::string>> answer;  // (line number, text)
        bool in_question = true;
    };
    std::vector<Pending> pending;

    auto finish = [&](Pending& p) {
        Card& c = p.card;
        auto& a = p.answer;
        while (!a.empty() && trim(a.back().second).empty()) a.pop_back();
        while (!a.empty() && trim(a.front().second).empty()) a.erase(a.begin());
        std::string num = std::to_string(c.number);
        if (a.empty())
            throw Error(at(path, c.line) + "card " + num +
                        " has no answer; write it below the heading and end it with "
                        "'실습: `make chN`'");
        std::string_view last = trim(a.back().second);
        if (!starts_with(last, "실습:"))
            throw Error(at(path, a.back().first) + "card " + num +
                        " must end with a line '실습: `make chN` ...' saying where the project "
                        "shows it");
        c.demo = std::string(trim(last.substr(std::string_view("실습:").size())));
        if (c.demo.find("make ") == std::string::npos)
            throw Error(at(path, a.back().first) + "card " + num +
                        ": the 실습 line names no make target; write e.g. '실습: `make ch4`'");
        a.pop_back();
        while (!a.empty() && trim(a.back().second).empty()) a.pop_back();
        if (a.empty())
            throw Error(at(path, c.line) + "card " + num +
                        " has no answer above its 실습 line; write the answer there");
        bool blank_before = false;
        for (auto& [ln, s] : a) {
            bool blank = trim(s).empty();
            if (blank && blank_before) continue;  // runs of blank lines show as one
            if (!c.answer.empty() || blank_before) c.answer += '\n';
            if (!blank) {
                size_t end = s.find_last_not_of(' ');
                c.answer += s.substr(0, end + 1);
            }
            blank_before = blank;
        }
        deck.cards.push_back(c);
    };

    for (size_t k = 0; k < lines.size(); k++) {
        int ln = int(k) + 1;
        std::string_view raw = lines[k];
        if (!term::valid_utf8(raw))
            throw Error(at(path, ln) + "invalid UTF-8; save the deck as UTF-8");
        if (char32_t c = control_char(raw, true))
            throw Error(at(path, ln) + "control character " + hex(c) + "; remove it");
        // Tabs become spaces so that every column is counted the same way on screen.
        std::string line;
        for (char ch : raw) line += ch == '\t' ? std::string("    ") : std::string(1, ch);

        if (starts_with(line, "##") && !starts_with(line, "###") && !starts_with(line, "## "))
            throw Error(at(path, ln) + "a card heading needs a space: '## 7. question'");
        if (starts_with(line, "## ")) {
            if (!pending.empty()) finish(pending.back());
            std::string_view h = trim(std::string_view(line).substr(3));
            size_t dot = h.find('.');
            int number = 0;
            if (dot == std::string_view::npos || !parse_nonneg(h.substr(0, dot), number) ||
                (dot + 1 < h.size() && h[dot + 1] != ' '))
                throw Error(at(path, ln) + "a card heading must look like '## 7. question', got '" +
                            std::string(h) + "'");
            int expected = int(pending.size()) + 1;
            if (number != expected)
                throw Error(at(path, ln) + "card number " + std::to_string(number) + " where " +
                            std::to_string(expected) +
                            " was expected; number the cards 1, 2, 3, ... in order");
            std::string_view q = trim(h.substr(dot + 1));
            if (q.empty())
                throw Error(at(path, ln) + "card " + std::to_string(number) +
                            " has an empty question; write it after '## " +
                            std::to_string(number) + ".'");
            Pending p;
            p.card.number = number;
            p.card.question = std::string(q);
            p.card.line = ln;
            pending.push_back(std::move(p));
            continue;
        }
        if (pending.empty()) continue;  // the introduction
        if (starts_with(line, "#"))
            throw Error(at(path, ln) +
                        "only card headings ('## 7. question') may start with '#' after the "
                        "first card; remove the '#'");
        Pending& p = pending.back();
        if (p.in_question && (line == ">" || starts_with(line, "> "))) {
            std::string_view more = trim(std::string_view(line).substr(1));
            p.card.question += "\n" + std::string(more);
            continue;
        }
        p.in_question = false;
        p.answer.emplace_back(ln, line);
    }
    if (!pending.empty()) finish(pending.back());
    if (deck.cards.empty())
        throw Error(at(path, std::max<int>(1, int(lines.size()))) +
                    "no cards; a card starts with a line '## 1. question'");
    return deck;
}

Deck load_deck(const std::string& path) {
    bool missing;
    std::string error;
    std::string text = read_whole(path, missing, error);
    if (!error.empty())
        throw Error(path + ": cannot read the deck: " + error +
                    (missing ? "; run from the project root or pass --deck FILE" : ""));
    return parse_deck(text, path);
}

// ---- ratings and the Leitner schedule -----------------------------------------------------

const char* rating_name(Rating r) {
    switch (r) {
        case Rating::Easy: return "쉬움";
        case Rating::Medium: return "보통";
        case Rating::Hard: return "어려움";
    }
    return "?";
}

bool parse_rating_name(std::string_view s, Rating& out) {
    for (Rating r : {Rating::Easy, Rating::Medium, Rating::Hard})
        if (s == rating_name(r)) {
            out = r;
            return true;
        }
    return false;
}

int next_box(int box, Rating r) {
    switch (r) {
        case Rating::Hard: return 1;
        case Rating::Medium: return 2;
        case Rating::Easy: return std::clamp(box + 1, 3, kBoxes);
    }
    return 1;
}

int interval(int box) { return 1 << (std::clamp(box, 1, kBoxes) - 1); }

void rate(Progress& p, int card, Rating r, int session) {
    CardState& s = p.cards[card];
    s.box = next_box(s.box, r);
    s.last = r;
    s.rated_in = session;
    s.reviews++;
    p.session = std::max(p.session, session);
}

// ---- the progress file --------------------------------------------------------------------

namespace {
constexpr std::string_view kMagic = "# transformer-cards progress v1";
constexpr std::string_view kHeader = "card\tbox\trating\tsession\treviews";
}  // namespace

Progress parse_progress(std::string_view text, const std::string& path) {
    const std::string fix = "; fix the line or start over with --reset";
    Progress p;
    std::vector<std::string_view> lines = split_lines(text);
    if (lines.empty() || lines[0] != kMagic)
        throw Error(at(path, 1) + "not a transformer-cards progress file (the first line should be '" +
                    std::string(kMagic) +
                    "'); choose another --progress file, or --reset to overwrite it");
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
            if (line != kHeader)
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
        if (!parse_nonneg(f[1], box) || box < 1 || box > kBoxes)
            throw Error(at(path, ln) + "bad box '" + std::string(f[1]) + "' (boxes are 1 to " +
                        std::to_string(kBoxes) + ")" + fix);
        if (!parse_rating_name(f[2], r))
            throw Error(at(path, ln) + "bad rating '" + std::string(f[2]) +
                        "' (쉬움, 보통 or 어려움)" + fix);
        if ((r == Rating::Hard && box != 1) || (r == Rating::Medium && box != 2) ||
            (r == Rating::Easy && box < 3))
            throw Error(at(path, ln) + "box " + std::to_string(box) + " does not follow from the rating " +
                        rating_name(r) + " (어려움 -> 1, 보통 -> 2, 쉬움 -> 3 or more)" + fix);
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
    std::string s(kMagic);
    s += "\n# Leitner boxes: 어려움 -> box 1, 보통 -> box 2, 쉬움 -> one box up (3 to 5).\n";
    s += "# A card in box b is due 2^(b-1) sessions after the session it was rated in.\n";
    s += "session\t" + std::to_string(p.session) + "\n";
    s += std::string(kHeader) + "\n";
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
            throw Error("no home folder for the progress file ($HOME is not set); pass --progress FILE");
        base = h + "/.local/state";
    }
    return base + "/transformer-cards/progress.tsv";
}

// ---- a session ----------------------------------------------------------------------------

Plan plan_session(const Deck& deck, const Progress& p, int session) {
    std::vector<int> due, fresh, later;
    for (size_t i = 0; i < deck.cards.size(); i++) {
        auto it = p.cards.find(deck.cards[i].number);
        if (it == p.cards.end())
            fresh.push_back(int(i));
        else if (due_in(it->second) <= session)
            due.push_back(int(i));
        else
            later.push_back(int(i));
    }
    auto state = [&](int i) { return p.cards.at(deck.cards[size_t(i)].number); };
    std::stable_sort(due.begin(), due.end(), [&](int a, int b) {
        CardState x = state(a), y = state(b);
        if (x.box != y.box) return x.box < y.box;
        return due_in(x) < due_in(y);  // longer overdue first; ties keep deck order
    });
    std::stable_sort(later.begin(), later.end(),
                     [&](int a, int b) { return due_in(state(a)) < due_in(state(b)); });
    Plan plan;
    plan.order = due;
    plan.order.insert(plan.order.end(), fresh.begin(), fresh.end());
    plan.today = int(plan.order.size());
    plan.order.insert(plan.order.end(), later.begin(), later.end());
    return plan;
}

Counts count(const Deck& deck, const Progress& p, int session) {
    Counts c;
    for (const Card& card : deck.cards) {
        auto it = p.cards.find(card.number);
        if (it == p.cards.end()) {
            c.box[0]++;
            continue;
        }
        const CardState& s = it->second;
        c.seen++;
        c.box[size_t(s.box)]++;
        if (s.last == Rating::Easy) c.easy++;
        if (s.last == Rating::Medium) c.medium++;
        if (s.last == Rating::Hard) c.hard++;
        if (due_in(s) <= session) c.due++;
    }
    return c;
}

std::string stats_text(const Deck& deck, const Progress& p, const std::string& progress_path) {
    int next = p.session + 1;
    Counts c = count(deck, p, next);
    int n = int(deck.cards.size());
    std::string s;
    s += "덱: " + deck.path + " (" + std::to_string(n) + "장)\n";
    s += "진도 파일: " + progress_path + "\n";
    s += "지난 세션: " + std::to_string(p.session) + " (다음은 세션 " + std::to_string(next) + ")\n";
    s += "본 카드 " + std::to_string(c.seen) + "/" + std::to_string(n) + ", 쉬움 " +
         std::to_string(c.easy) + ", 보통 " + std::to_string(c.medium) + ", 어려움 " +
         std::to_string(c.hard) + "\n";
    s += "새 카드: " + std::to_string(c.box[0]) + "장\n";
    for (int b = 1; b <= kBoxes; b++) {
        std::string every = b == 1 ? "매 세션" : std::to_string(interval(b)) + "세션마다";
        s += "상자 " + std::to_string(b) + " (" + every + "): " + std::to_string(c.box[size_t(b)]) +
             "장\n";
    }
    s += "세션 " + std::to_string(next) + "에 볼 카드: 복습 " + std::to_string(c.due) + "장 + 새 카드 " +
         std::to_string(c.box[0]) + "장\n";
    return s;
}

bool parse_line_key(std::string_view line, Action& out) {
    if (line.empty()) {
        out = Action::Flip;  // Enter
        return true;
    }
    if (line.find_first_not_of(' ') == std::string_view::npos) {
        out = Action::Flip;  // Space
        return true;
    }
    std::string w(trim(line));
    for (char& ch : w)
        if (ch >= 'A' && ch <= 'Z') ch = char(ch - 'A' + 'a');
    static const std::pair<const char*, Action> names[] = {
        {"space", Action::Flip},      {"enter", Action::Flip},      {"flip", Action::Flip},
        {"click", Action::Flip},      {"1", Action::Rate1},         {"2", Action::Rate2},
        {"3", Action::Rate3},         {"쉬움", Action::Rate1},      {"보통", Action::Rate2},
        {"어려움", Action::Rate3},    {"right", Action::Next},      {"next", Action::Next},
        {"n", Action::Next},          {"l", Action::Next},          {"left", Action::Prev},
        {"prev", Action::Prev},       {"p", Action::Prev},          {"h", Action::Prev},
        {"up", Action::ScrollUp},     {"k", Action::ScrollUp},      {"down", Action::ScrollDown},
        {"j", Action::ScrollDown},    {"q", Action::Quit},          {"quit", Action::Quit},
    };
    for (const auto& [name, action] : names)
        if (w == name) {
            out = action;
            return true;
        }
    return false;
}

Session::Session(const Deck& d, Progress p) : deck(d), progress(std::move(p)) {
    session = progress.session + 1;
    plan = plan_session(deck, progress, session);
    int due = 0;
    for (int k = 0; k < plan.today; k++)
        if (progress.cards.count(deck.cards[size_t(plan.order[size_t(k)])].number)) due++;
    if (plan.today == 0)
        message = "오늘 복습할 카드가 없어요. 좌우 화살표로 둘러볼 수 있어요.";
    else
        message = "오늘 볼 카드 " + std::to_string(plan.today) + "장: 복습 " + std::to_string(due) +
                  "장, 새 카드 " + std::to_string(plan.today - due) + "장";
}

bool Session::done_today() const {
    for (int k = 0; k < plan.today; k++)
        if (!rated_now.count(deck.cards[size_t(plan.order[size_t(k)])].number)) return false;
    return true;
}

void Session::advance() {
    flipped = false;
    scroll = 0;
    auto open = [&](size_t k) {
        return int(k) < plan.today && !rated_now.count(deck.cards[size_t(plan.order[k])].number);
    };
    for (size_t k = pos + 1; k < plan.order.size(); k++)
        if (open(k)) {
            pos = k;
            return;
        }
    for (size_t k = 0; k < pos; k++)
        if (open(k)) {
            pos = k;
            return;
        }
    message += ". 오늘 볼 카드를 모두 마쳤어요! q로 끝내기";
    if (pos + 1 < plan.order.size()) pos++;
}

bool Session::apply(Action a) {
    switch (a) {
        case Action::Flip:
            flipped = !flipped;
            scroll = 0;
            message.clear();
            return false;
        case Action::Rate1:
        case Action::Rate2:
        case Action::Rate3: {
            if (!flipped) {
                message = "먼저 답을 확인하세요 (Space, Enter 또는 카드 클릭)";
                return false;
            }
            Rating r = a == Action::Rate1 ? Rating::Easy : a == Action::Rate2 ? Rating::Medium
                                                                              : Rating::Hard;
            int num = card().number;
            if (rated_now.count(num)) {
                auto [had, st] = before_[num];
                if (had)
                    progress.cards[num] = st;
                else
                    progress.cards.erase(num);
            } else {
                auto it = progress.cards.find(num);
                before_[num] = {it != progress.cards.end(),
                                it != progress.cards.end() ? it->second : CardState{}};
            }
            rate(progress, num, r, session);
            rated_now.insert(num);
            rated = int(rated_now.size());
            last_rated = num;
            const CardState& st = progress.cards[num];
            message = std::to_string(num) + "번 카드: " + rating_name(r) + ", 상자 " +
                      std::to_string(st.box) + " (" +
                      (st.box == 1 ? std::string("다음 세션에 다시")
                                   : std::to_string(interval(st.box)) + "세션 뒤에 다시") +
                      ")";
            advance();
            return true;
        }
        case Action::Next:
            if (pos + 1 < plan.order.size()) {
                pos++;
                flipped = false;
                scroll = 0;
                message.clear();
            } else {
                message = "마지막 카드예요";
            }
            return false;
        case Action::Prev:
            if (pos > 0) {
                pos--;
                flipped = false;
                scroll = 0;
                message.clear();
            } else {
                message = "첫 카드예요";
            }
            return false;
        case Action::ScrollUp:
            scroll = std::max(0, scroll - 1);
            return false;
        case Action::ScrollDown:
            scroll++;  // render() clamps it to what the card has
            return false;
        case Action::None:
        case Action::Quit:
            return false;
    }
    return false;
}

// ---- the screen ---------------------------------------------------------------------------

namespace {

struct Glyphs {
    const char *tl, *tr, *bl, *br, *h, *v, *full, *empty;
    const char* keys[3];  // the key help, widest first: the first that fits the screen is shown
};
constexpr Glyphs kUnicode{"╭", "╮", "╰", "╯", "─", "│", "█", "░",
                          {" Space/Enter/클릭 뒤집기  1 2 3 평가  ←/→ 이동  ↑/↓ 스크롤  q 끝내기",
                           " Space 뒤집기  1 2 3 평가  ←/→ 이동  q 끝내기",
                           " Space 뒤집기  1 2 3 평가  q 끝내기"}};
constexpr Glyphs kAscii{"+", "+", "+", "+", "-", "|", "#", "-",
                        {" Space/Enter/클릭 뒤집기  1 2 3 평가  Left/Right 이동  Up/Down 스크롤  q 끝내기",
                         " Space 뒤집기  1 2 3 평가  Left/Right 이동  q 끝내기",
                         " Space 뒤집기  1 2 3 평가  q 끝내기"}};

// The first of `texts` that fits `width` columns (the last one cut to fit, if none does).
template <size_t N>
std::string first_fitting(const char* const (&texts)[N], int width) {
    for (const char* t : texts)
        if (term::display_width(t) <= width) return term::fit(t, width);
    return term::fit(texts[N - 1], width);
}

std::string repeat(const char* g, int n) {
    std::string s;
    for (int i = 0; i < n; i++) s += g;
    return s;
}

// "left ... right" in exactly `width` columns (right side wins when it does not fit).
std::string spread(const std::string& left, const std::string& right, int width) {
    int rw = term::display_width(right);
    if (rw + 1 >= width) return term::fit(right, width);
    return term::fit(left, width - rw - 1) + " " + right;
}

}  // namespace

Frame render(Session& s, int W, int H, bool unicode) {
    const Glyphs& g = unicode ? kUnicode : kAscii;
    Frame f;
    if (H > 0 && (W < 40 || H < 12)) {
        W = std::max(W, 1);
        const char* const too_small[] = {" 창이 작아요 (40x12 이상, q 끝내기)", " 창이 작아요, q 끝내기",
                                         " q 끝내기", "q"};
        f.lines.assign(size_t(H), std::string(size_t(W), ' '));
        f.lines[0] = first_fitting(too_small, W);
        return f;
    }
    W = std::max(W, 40);  // plain frames: the narrowest layout below
    const int N = int(s.deck.cards.size());
    const Card& card = s.card();
    Counts c = count(s.deck, s.progress, s.session);

    // Title and progress bar.
    int today_done = 0;
    for (int k = 0; k < s.plan.today; k++)
        if (s.rated_now.count(s.deck.cards[size_t(s.plan.order[size_t(k)])].number)) today_done++;
    f.lines.push_back(spread(" 트랜스포머 마스터 카드 (" + std::to_string(N) + "장)",
                             "세션 " + std::to_string(s.session) + "  오늘 " +
                                 std::to_string(today_done) + "/" + std::to_string(s.plan.today) + " ",
                             W));
    std::string counts = "  본 카드 " + std::to_string(c.seen) + "/" + std::to_string(N) +
                         "  쉬움 " + std::to_string(c.easy) + "  보통 " + std::to_string(c.medium) +
                         "  어려움 " + std::to_string(c.hard) + " ";
    int bar = W - 3 - term::display_width(counts);
    if (bar < 5) {
        counts = "  " + std::to_string(c.seen) + "/" + std::to_string(N) + " ";
        bar = std::max(1, W - 3 - term::display_width(counts));
    }
    int filled = N > 0 ? c.seen * bar / N : 0;
    f.lines.push_back(term::fit(" [" + repeat(g.full, filled) + repeat(g.empty, bar - filled) + "]" + counts, W));
    f.lines.emplace_back(size_t(W), ' ');

    // The card: question, and once flipped the answer and where the project shows it.
    const int IW = W - 4;
    std::vector<std::string> content = term::wrap(plain_text(card.question), IW);
    if (s.flipped) {
        content.emplace_back();
        content.push_back(repeat(g.h, 2) + " 답 " + repeat(g.h, IW - 6));
        for (std::string& l : term::wrap(plain_text(card.answer), IW)) content.push_back(l);
        content.emplace_back();
        // "make ch4" stays on one line: wrap at a no-break space, then print a plain space.
        std::string demo = "실습: " + plain_text(card.demo);
        for (size_t k = 0; (k = demo.find("make ", k)) != std::string::npos;)
            demo.replace(k + 4, 1, "\u00A0");
        for (std::string& l : term::wrap(demo, IW)) {
            for (size_t k = 0; (k = l.find("\u00A0", k)) != std::string::npos;) l.replace(k, 2, " ");
            content.push_back(l);
        }
    }
    const int box_rows = H > 0 ? H - 6 : int(content.size()) + 2;
    const int visible = box_rows - 2;
    f.max_scroll = std::max(0, int(content.size()) - visible);
    s.scroll = std::clamp(s.scroll, 0, f.max_scroll);

    std::string tag;
    auto it = s.progress.cards.find(card.number);
    if (s.rated_now.count(card.number))
        tag = "평가함: " + std::string(rating_name(it->second.last));
    else if (it == s.progress.cards.end())
        tag = "새 카드";
    else if (due_in(it->second) <= s.session)
        tag = "복습, 상자 " + std::to_string(it->second.box);
    else
        tag = "미리 보기, 세션 " + std::to_string(due_in(it->second)) + " 예정";
    std::string label = std::to_string(s.pos + 1) + "/" + std::to_string(s.plan.order.size()) +
                        "  " + std::to_string(card.number) + "번 카드  " + tag +
                        (s.flipped ? "  (답)" : "");
    int room = W - 6;
    if (term::display_width(label) > room) label = term::fit(label, room);
    int top_fill = W - 5 - term::display_width(label);
    const int box_top = int(f.lines.size());
    f.lines.push_back(std::string(g.tl) + g.h + " " + label + " " + repeat(g.h, top_fill) + g.tr);
    for (int i = 0; i < visible; i++) {
        int k = s.scroll + i;
        std::string text = k < int(content.size()) ? content[size_t(k)] : "";
        f.lines.push_back(std::string(g.v) + " " + term::fit(text, IW) + " " + g.v);
    }
    std::string more;
    if (f.max_scroll > 0)
        more = " " + std::to_string(s.scroll + 1) + "-" + std::to_string(s.scroll + visible) + "/" +
               std::to_string(content.size()) + "줄, 스크롤 ";
    int bottom_fill = W - 3 - term::display_width(more);
    f.lines.push_back(std::string(g.bl) + repeat(g.h, bottom_fill) + more + g.h + g.br);
    for (int r = box_top; r < box_top + box_rows; r++) f.hits.push_back({r, 0, W, Action::Flip});

    // Status line: what just happened, or what to do next.
    std::string status = s.message;
    if (status.empty())
        status = s.flipped ? "얼마나 잘 기억났나요? 1 쉬움  2 보통  3 어려움"
                           : "Space, Enter 또는 카드를 클릭하면 답이 보여요";
    f.lines.push_back(term::fit(" " + status, W));
    if (H <= 0) return f;

    // Buttons for the mouse, then the key help.
    std::string row = " ";
    int row_index = int(f.lines.size());
    auto button = [&](const std::string& text, Action a) {
        int col0 = term::display_width(row);
        row += text;
        f.hits.push_back({row_index, col0, term::display_width(row), a});
    };
    button("[1 쉬움]", Action::Rate1);
    row += "  ";
    button("[2 보통]", Action::Rate2);
    row += "  ";
    button("[3 어려움]", Action::Rate3);
    const std::string nav_left = "[< 이전]", nav_right = "[다음 >]";
    int right_col = W - 1 - term::display_width(nav_left) - 2 - term::display_width(nav_right);
    if (right_col > term::display_width(row) + 1) {
        row += std::string(size_t(right_col - term::display_width(row)), ' ');
        button(nav_left, Action::Prev);
        row += "  ";
        button(nav_right, Action::Next);
    }
    f.lines.push_back(term::fit(row, W));
    f.lines.push_back(first_fitting(g.keys, W));
    return f;
}

Action hit_test(const Frame& f, int x, int y) {
    int row = y - 1, col = x - 1;
    for (const Hit& h : f.hits)
        if (h.row == row && col >= h.col0 && col < h.col1) return h.action;
    return Action::None;
}

Action action_for(const term::Key& k, const Frame& frame) {
    using term::KeyKind;
    using A = Action;
    switch (k.kind) {
        case KeyKind::Space:
        case KeyKind::Enter: return A::Flip;
        case KeyKind::Right:
        case KeyKind::PageDown: return A::Next;
        case KeyKind::Left:
        case KeyKind::PageUp: return A::Prev;
        case KeyKind::Up: return A::ScrollUp;
        case KeyKind::Down: return A::ScrollDown;
        case KeyKind::Escape:
        case KeyKind::CtrlC:
        case KeyKind::CtrlD: return A::Quit;
        case KeyKind::Mouse:
            if (k.button == 64) return A::ScrollUp;
            if (k.button == 65) return A::ScrollDown;
            if (k.button == 0 && k.press) return hit_test(frame, k.x, k.y);
            return A::None;
        case KeyKind::Char:
            switch (k.ch) {
                case '1': return A::Rate1;
                case '2': return A::Rate2;
                case '3': return A::Rate3;
                case 'l': case 'n': return A::Next;
                case 'h': case 'p': return A::Prev;
                case 'k': return A::ScrollUp;
                case 'j': return A::ScrollDown;
                case 'q': case 'Q':
                case U'ㅂ':  // q typed with the Korean keyboard layout on
                    return A::Quit;
            }
            return A::None;
        default: return A::None;
    }
}

}  // namespace cards
