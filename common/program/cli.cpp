#include "common/program/cli.h"

#include "common/memory.h"
#include "common/program/atomic_file.h"
#include "common/program/terminal.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <sstream>
#include <unistd.h>

namespace cli {

namespace {

// What strtol and strtod would also take but a person does not mean: leading spaces (trailing
// ones are refused), a '+' sign, hexadecimal ("0x1p3" is 8.0 to strtod), "nan", "inf".
bool plain_number_text(const std::string& s, bool allow_dot_exp) {
    if (s.empty()) return false;
    size_t i = s[0] == '-' ? 1 : 0;
    if (i == s.size()) return false;
    for (; i < s.size(); i++) {
        const char c = s[i];
        const bool ok = (c >= '0' && c <= '9') ||
                        (allow_dot_exp && (c == '.' || c == 'e' || c == 'E' ||
                                           ((c == '-' || c == '+') && (s[i - 1] == 'e' ||
                                                                       s[i - 1] == 'E'))));
        if (!ok) return false;
    }
    return true;
}

}  // namespace

NumberParse parse_int_checked(const std::string& s, long lo, long hi, long& out) {
    if (!plain_number_text(s, false)) return NumberParse::not_a_number;
    char* end = nullptr;
    errno = 0;
    long v = std::strtol(s.c_str(), &end, 10);
    if (*end != '\0') return NumberParse::not_a_number;
    if (errno == ERANGE || v < lo || v > hi) return NumberParse::out_of_range;
    out = v;
    return NumberParse::ok;
}

bool parse_int(const std::string& s, long& out) {
    return parse_int_checked(s, LONG_MIN, LONG_MAX, out) == NumberParse::ok;
}

NumberParse parse_double_checked(const std::string& s, double& out) {
    if (!plain_number_text(s, true)) return NumberParse::not_a_number;
    char* end = nullptr;
    errno = 0;
    double v = std::strtod(s.c_str(), &end);
    if (*end != '\0') return NumberParse::not_a_number;
    // Overflow (1e999) is out of range; underflow to a tiny or zero value is a number.
    if (!std::isfinite(v)) return NumberParse::out_of_range;
    out = v;
    return NumberParse::ok;
}

bool parse_double(const std::string& s, double& out) {
    return parse_double_checked(s, out) == NumberParse::ok;
}

bool parse_int_list(const std::string& s, std::vector<int>& out, std::string* out_of_range) {
    std::vector<int> v;
    std::stringstream ss(s);
    std::string item;
    while (std::getline(ss, item, ',')) {
        long x;
        const NumberParse p = parse_int_checked(item, INT_MIN, INT_MAX, x);
        if (p == NumberParse::out_of_range && out_of_range) *out_of_range = item;
        if (p != NumberParse::ok) return false;
        v.push_back(int(x));
    }
    if (v.empty() || (!s.empty() && s.back() == ',')) return false;
    out = v;
    return true;
}

std::string quote(const std::string& s) {
    std::string out = "'";
    auto hex = [&](unsigned char b) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\x%02x", b);
        out += buf;
    };
    for (size_t i = 0; i < s.size();) {
        const unsigned char b = (unsigned char)s[i];
        if (b < 0x80) {
            switch (b) {
                case '\n':
                    out += "\\n";
                    break;
                case '\t':
                    out += "\\t";
                    break;
                case '\r':
                    out += "\\r";
                    break;
                case '\\':
                    out += "\\\\";
                    break;
                case '\'':
                    out += "\\'";
                    break;
                default:
                    if (b < 0x20 || b == 0x7f)
                        hex(b);
                    else
                        out += char(b);
            }
            i++;
            continue;
        }
        // A UTF-8 sequence: kept when well formed and not a C1 control (U+0080..U+009F).
        size_t next = i;
        char32_t c;
        if (!term::decode_utf8(s, next, c) || c < 0xA0) {
            hex(b);
            i++;
            continue;
        }
        out.append(s, i, next - i);
        i = next;
    }
    return out + "'";
}

std::string quote(std::string_view s, size_t max_bytes) {
    if (s.size() <= max_bytes) return quote(std::string(s));
    size_t cut = max_bytes;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80)
        cut--;  // not inside a character
    return quote(std::string(s.substr(0, cut))) + "...(" + std::to_string(s.size()) + " bytes)";
}

bool read_input_line(std::string& line) {
    line.clear();
    for (int c; (c = std::getc(stdin)) != EOF;) {
        if (c == '\n') {
            if (!line.empty() && line.back() == '\r') line.pop_back();
            return true;
        }
        line += char(c);
        if (line.size() > INPUT_LINE_MAX) return true;  // cut: the rest is never read
    }
    return !line.empty();
}

std::string quote_input_line(const std::string& line) {
    const std::string q = quote(line, 40);
    if (line.size() <= INPUT_LINE_MAX) return q;
    return q.substr(0, q.rfind("...(")) + "...(over " + std::to_string(INPUT_LINE_MAX) + " bytes)";
}

namespace {

std::string join(const std::vector<int>& v) {
    std::string s;
    for (size_t i = 0; i < v.size(); i++) s += (i ? "," : "") + std::to_string(v[i]);
    return s;
}

std::string shortest(double v) {
    char buf[64];
    for (int prec = 1; prec <= 17; prec++) {
        std::snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (std::strtod(buf, nullptr) == v) break;
    }
    return buf;
}

char g_program[64] = "program";  // for the handler below, which may run when memory is gone

}  // namespace

const char* error_text(const std::exception& e) {
    if (dynamic_cast<const std::bad_alloc*>(&e))
        return "out of memory: the sizes asked for need more than this machine has; use "
               "smaller values";
    return e.what();
}

namespace {

// An exception nobody caught ends the program with one line, not "terminate called after
// throwing an instance of 'std::bad_alloc'" and a core dump. Most often it is std::bad_alloc:
// sizes larger than the machine can hold. What the program printed before is flushed first:
// _Exit skips stdio's buffers, and a redirected stdout would lose its last lines.
[[noreturn]] void report_uncaught() {
    std::fflush(stdout);
    const char* message = "unknown error";
    try {
        if (std::exception_ptr e = std::current_exception()) std::rethrow_exception(e);
    } catch (const std::exception& e) {
        message = error_text(e);
    } catch (...) {
    }
    std::fprintf(stderr, "%s: error: %s\n", g_program, message);
    std::_Exit(1);
}

// A write to stdout failed (err: its errno, or 0 where none was left): one line, exit code 1.
// (Nothing to flush here: stdout is what failed, and check_stdout has closed it.)
[[noreturn]] void cannot_write(int err) {
    std::fprintf(stderr, "%s: error: cannot write output: %s\n", g_program,
                 err ? std::strerror(err) : "a write to standard output failed");
    std::_Exit(1);
}

// At exit: stdout's buffer is flushed here, where a failure can still be said, and its file
// descriptor closed (a close can report a failed write too, e.g. on NFS). A program whose output
// went to a full disk must not exit 0 as if it had written it. (The FILE itself stays open:
// libstdc++ flushes std::cout through it later.)
void check_stdout() {
    errno = 0;
    const bool flushed = std::fflush(stdout) == 0;
    int err = flushed ? 0 : errno;
    const bool had_error = std::ferror(stdout) != 0;
    errno = 0;
    const bool closed = ::close(STDOUT_FILENO) == 0 || errno == EBADF;
    if (!closed && err == 0) err = errno;
    if (flushed && !had_error && closed) return;
    cannot_write(err);
}

}  // namespace

void flush_stdout_or_exit() {
    errno = 0;
    const bool flushed = std::fflush(stdout) == 0;
    const int err = flushed ? 0 : errno;
    if (flushed && !std::ferror(stdout)) return;
    cannot_write(err);
}

void check_stdout_at_exit(const std::string& program) {
    std::snprintf(g_program, sizeof g_program, "%s", program.c_str());
    static bool registered = false;
    if (!registered) std::atexit(check_stdout);
    registered = true;
}

namespace {

std::string range_text(long lo, long hi) {
    return "out of range (an integer in " + std::to_string(lo) + ".." + std::to_string(hi) + ")";
}

}  // namespace

Parser::Parser(std::string program, std::string about)
    : program_(std::move(program)), about_(std::move(about)) {
    std::snprintf(g_program, sizeof g_program, "%s", program_.c_str());
    std::set_terminate(report_uncaught);
    check_stdout_at_exit(program_);
}

void Parser::add(Entry e) { entries_.push_back(std::move(e)); }

Parser& Parser::option(const std::string& name, int& value, const std::string& help,
                       const std::string& placeholder) {
    add({name, help, std::to_string(value), "integer", placeholder, true,
         [&value](const std::string& s, const Entry& e) -> std::string {
             long x;
             switch (parse_int_checked(s, e.lo, e.hi, x)) {
                 case NumberParse::ok: value = int(x); return "";
                 case NumberParse::out_of_range: return range_text(e.lo, e.hi);
                 default: return "expected integer";
             }
         },
         -2147483647L, 2147483647L});
    return *this;
}

Parser& Parser::option(const std::string& name, long& value, const std::string& help,
                       const std::string& placeholder) {
    add({name, help, std::to_string(value), "integer", placeholder, true,
         [&value](const std::string& s, const Entry& e) -> std::string {
             switch (parse_int_checked(s, e.lo, e.hi, value)) {
                 case NumberParse::ok: return "";
                 case NumberParse::out_of_range: return range_text(e.lo, e.hi);
                 default: return "expected integer";
             }
         },
         LONG_MIN + 1, LONG_MAX});
    return *this;
}

Parser& Parser::range(long lo, long hi) {
    Entry& e = entries_.back();
    e.lo = std::max(e.lo, lo);
    e.hi = std::min(e.hi, hi);
    return *this;
}

void Parser::option(const std::string& name, double& value, const std::string& help,
                    const std::string& placeholder) {
    add({name, help, shortest(value), "number", placeholder, true,
         [&value](const std::string& s, const Entry&) -> std::string {
             switch (parse_double_checked(s, value)) {
                 case NumberParse::ok: return "";
                 case NumberParse::out_of_range: return "out of range (a finite number)";
                 default: return "expected number (decimal, finite)";
             }
         }});
}

void Parser::option(const std::string& name, std::string& value, const std::string& help,
                    const std::string& placeholder) {
    add({name, help, value.empty() ? "\"\"" : value, "text", placeholder, true,
         [&value](const std::string& s, const Entry&) -> std::string {
             value = s;
             return "";
         }});
}

void Parser::option(const std::string& name, std::vector<int>& value, const std::string& help,
                    const std::string& placeholder) {
    add({name, help, join(value), "comma-separated list of integers", placeholder, true,
         [&value](const std::string& s, const Entry& e) -> std::string {
             std::string big;
             if (parse_int_list(s, value, &big)) return "";
             if (!big.empty())  // an integer but no int: said as a scalar option says it
                 return "entry " + big + " is out of range (integers from " +
                        std::to_string(INT_MIN) + " to " + std::to_string(INT_MAX) + ")";
             return "expected " + e.kind;
         }});
}

void Parser::path(const std::string& name, std::string& value, const std::string& help,
                  const std::string& placeholder) {
    add({name, help, value.empty() ? "\"\"" : value,
         placeholder == "DIR" ? "a folder name, not empty (. for this folder)"
                              : "a file name, not empty",
         placeholder, true, [&value](const std::string& s, const Entry& e) -> std::string {
             if (s.empty()) return "expected " + e.kind;
             if (s == "-")
                 return "'-' is not standard input or output here; for a file named -, write ./-";
             value = s;
             return "";
         }});
}

void Parser::choice(const std::string& name, std::string& value, std::vector<std::string> choices,
                    const std::string& help) {
    std::string bar, words;
    for (size_t i = 0; i < choices.size(); i++) {
        bar += (i ? "|" : "") + choices[i];
        words += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + choices[i];
    }
    add({name, help, value, words, bar, true,
         [&value, choices](const std::string& s, const Entry& e) -> std::string {
             for (const std::string& c : choices)
                 if (s == c) {
                     value = s;
                     return "";
                 }
             return "expected " + e.kind;
         }});
}

void Parser::figures(std::string& dir, bool& skip, const std::string& file) {
    path("--figure-dir", dir, "folder for " + file + ", created if missing", "DIR");
    flag("--no-figures", skip, "do not write " + file);
    figure_dir_ = &dir;
    no_figures_ = &skip;
}

void Parser::check_figure_dir(const std::vector<std::string>& files) const {
    if (!figure_dir_ || *no_figures_) return;
    try {
        atomic_file::check_folder_writable(*figure_dir_);
    } catch (const atomic_file::Error& e) {
        fail("--figure-dir " + quote(*figure_dir_) + ": " + e.what() +
             "; choose another folder or pass --no-figures");
    }
    for (const std::string& file : files) {
        const std::string path = *figure_dir_ + "/" + file;
        if (const std::string what = atomic_file::not_regular(path); !what.empty())
            fail("--figure-dir " + quote(*figure_dir_) + ": " + path + " is " + what +
                 ", where the figure goes; remove it, choose another folder or pass --no-figures");
    }
}

bool Parser::given(const std::string& name) const {
    for (const Entry& e : entries_)
        if (e.name == name) return e.given;
    return false;
}

void Parser::flag(const std::string& name, bool& value, const std::string& help) {
    add({name, help, "", "", "", false, [&value](const std::string&, const Entry&) {
             value = true;
             return std::string();
         }});
}

void Parser::fail(const std::string& message) const {
    std::fprintf(stderr, "%s: error: %s\n", program_.c_str(), message.c_str());
    std::exit(2);
}

void Parser::require_memory(double bytes, const std::string& options) const {
    const double physical = mem::physical_bytes(), GB = 1e9;
    if (bytes <= physical) return;
    char need[64], have[64];
    std::snprintf(need, sizeof need, bytes < 10 * GB ? "%.1f" : "%.0f", bytes / GB);
    std::snprintf(have, sizeof have, physical < 10 * GB ? "%.1f" : "%.0f", physical / GB);
    fail(options + " need about " + need + " GB of memory, more than this machine's " + have +
         " GB; use smaller values");
}

void Parser::print_help() const {
    std::printf("usage: %s [options]\n%s\n\noptions:\n", program_.c_str(), about_.c_str());
    for (const Entry& e : entries_) {
        std::string left = "  " + e.name + (e.takes_value ? " " + e.placeholder : "");
        std::printf("%-24s %s", left.c_str(), e.help.c_str());
        if (e.takes_value) std::printf(" (default: %s)", e.default_text.c_str());
        std::printf("\n");
    }
    std::printf("  %-22s %s\n", "--help", "show this help and exit");
}

void Parser::parse(int argc, char** argv) {
    // --help wins wherever it stands: `--save --help` asks for help, not for a file "--help".
    for (int i = 1; i < argc; i++)
        if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
            print_help();
            std::exit(0);
        }
    for (int i = 1; i < argc; i++) {
        std::string arg = argv[i], value;
        bool inline_value = false;
        if (size_t eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
            value = arg.substr(eq + 1);
            arg = arg.substr(0, eq);
            inline_value = true;
        }
        Entry* found = nullptr;
        for (Entry& e : entries_)
            if (e.name == arg) found = &e;
        if (!found && arg.rfind("-", 0) != 0)
            fail("unexpected argument " + quote(arg) + ": every option is a --flag (see --help)");
        if (!found) fail("unknown flag " + quote(arg) + " (see --help)");
        found->given = true;
        if (!found->takes_value) {
            if (inline_value) fail(arg + " takes no value");
            found->set("", *found);
            continue;
        }
        if (!inline_value) {
            if (i + 1 >= argc) fail(arg + " needs a value (" + found->kind + ")");
            value = argv[++i];
            if (value.rfind("--", 0) == 0)
                fail(arg + " needs a value (" + found->kind + "), not the flag " + quote(value) +
                     " (for a value that starts with --, write " + arg + "=VALUE)");
        }
        if (std::string why = found->set(value, *found); !why.empty())
            fail("bad value " + quote(value) + " for " + arg + ": " + why);
    }
}

}  // namespace cli
