#include "common/cli.h"

#include "common/memory.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>
#include <sstream>

namespace cli {

bool parse_int(const std::string& s, long& out) {
    if (s.empty()) return false;
    char* end = nullptr;
    errno = 0;
    long v = std::strtol(s.c_str(), &end, 10);
    if (errno != 0 || *end != '\0') return false;
    out = v;
    return true;
}

bool parse_double(const std::string& s, double& out) {
    if (s.empty()) return false;
    char* end = nullptr;
    errno = 0;
    double v = std::strtod(s.c_str(), &end);
    if (errno != 0 || *end != '\0') return false;
    out = v;
    return true;
}

bool parse_int_list(const std::string& s, std::vector<int>& out) {
    std::vector<int> v;
    std::stringstream ss(s);
    std::string item;
    while (std::getline(ss, item, ',')) {
        long x;
        if (!parse_int(item, x) || x < -2147483647L || x > 2147483647L) return false;
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
        const int len = b >= 0xF0 && b < 0xF5 ? 4 : b >= 0xE0 ? 3 : b >= 0xC2 && b < 0xE0 ? 2 : 0;
        const char32_t least = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;  // no overlong form
        bool ok = len > 0 && i + len <= s.size();
        char32_t c = len == 2 ? b & 0x1F : len == 3 ? b & 0x0F : b & 0x07;
        for (int k = 1; ok && k < len; k++) {
            const unsigned char t = (unsigned char)s[i + k];
            ok = (t & 0xC0) == 0x80;
            c = (c << 6) | (t & 0x3F);
        }
        ok = ok && c >= least && c <= 0x10FFFF && !(c >= 0xD800 && c <= 0xDFFF) && c >= 0xA0;
        if (!ok) {
            hex(b);
            i++;
            continue;
        }
        out.append(s, i, size_t(len));
        i += size_t(len);
    }
    return out + "'";
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

// An exception nobody caught ends the program with one line, not "terminate called after
// throwing an instance of 'std::bad_alloc'" and a core dump. Most often it is std::bad_alloc:
// sizes larger than the machine can hold.
[[noreturn]] void report_uncaught() {
    const char* message = "unknown error";
    try {
        if (std::exception_ptr e = std::current_exception()) std::rethrow_exception(e);
    } catch (const std::bad_alloc&) {
        message = "out of memory: the sizes asked for need more than this machine has; use "
                  "smaller values";
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: error: %s\n", g_program, e.what());
        std::_Exit(1);
    } catch (...) {
    }
    std::fprintf(stderr, "%s: error: %s\n", g_program, message);
    std::_Exit(1);
}

}  // namespace

Parser::Parser(std::string program, std::string about)
    : program_(std::move(program)), about_(std::move(about)) {
    std::snprintf(g_program, sizeof g_program, "%s", program_.c_str());
    std::set_terminate(report_uncaught);
}

void Parser::add(Entry e) { entries_.push_back(std::move(e)); }

void Parser::option(const std::string& name, int& value, const std::string& help,
                    const std::string& placeholder) {
    add({name, help, std::to_string(value), "integer", placeholder, true,
         [&value](const std::string& s) {
             long x;
             if (!parse_int(s, x) || x < -2147483647L || x > 2147483647L) return false;
             value = int(x);
             return true;
         }});
}

void Parser::option(const std::string& name, long& value, const std::string& help,
                    const std::string& placeholder) {
    add({name, help, std::to_string(value), "integer", placeholder, true,
         [&value](const std::string& s) { return parse_int(s, value); }});
}

void Parser::option(const std::string& name, double& value, const std::string& help,
                    const std::string& placeholder) {
    add({name, help, shortest(value), "number", placeholder, true,
         [&value](const std::string& s) { return parse_double(s, value); }});
}

void Parser::option(const std::string& name, std::string& value, const std::string& help,
                    const std::string& placeholder) {
    add({name, help, value.empty() ? "\"\"" : value, "text", placeholder, true,
         [&value](const std::string& s) {
             value = s;
             return true;
         }});
}

void Parser::option(const std::string& name, std::vector<int>& value, const std::string& help,
                    const std::string& placeholder) {
    add({name, help, join(value), "comma-separated list of integers", placeholder, true,
         [&value](const std::string& s) { return parse_int_list(s, value); }});
}

void Parser::path(const std::string& name, std::string& value, const std::string& help,
                  const std::string& placeholder) {
    add({name, help, value.empty() ? "\"\"" : value,
         placeholder == "DIR" ? "a folder name, not empty (. for this folder)"
                              : "a file name, not empty",
         placeholder, true, [&value](const std::string& s) {
             if (s.empty()) return false;
             value = s;
             return true;
         }});
}

void Parser::choice(const std::string& name, std::string& value, std::vector<std::string> choices,
                    const std::string& help) {
    std::string bar, words;
    for (size_t i = 0; i < choices.size(); i++) {
        bar += (i ? "|" : "") + choices[i];
        words += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + choices[i];
    }
    add({name, help, value, words, bar, true, [&value, choices](const std::string& s) {
             for (const std::string& c : choices)
                 if (s == c) {
                     value = s;
                     return true;
                 }
             return false;
         }});
}

void Parser::figures(std::string& dir, bool& skip, const std::string& file) {
    path("--figure-dir", dir, "folder for " + file + ", created if missing", "DIR");
    flag("--no-figures", skip, "do not write " + file);
}

void Parser::flag(const std::string& name, bool& value, const std::string& help) {
    add({name, help, "", "", "", false, [&value](const std::string&) {
             value = true;
             return true;
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
    for (int i = 1; i < argc; i++) {
        std::string arg = argv[i], value;
        bool inline_value = false;
        if (arg == "--help" || arg == "-h") {
            print_help();
            std::exit(0);
        }
        if (size_t eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
            value = arg.substr(eq + 1);
            arg = arg.substr(0, eq);
            inline_value = true;
        }
        const Entry* found = nullptr;
        for (const Entry& e : entries_)
            if (e.name == arg) found = &e;
        if (!found && arg.rfind("-", 0) != 0)
            fail("unexpected argument " + quote(arg) + ": every option is a --flag (see --help)");
        if (!found) fail("unknown flag " + quote(arg) + " (see --help)");
        if (!found->takes_value) {
            if (inline_value) fail(arg + " takes no value");
            found->set("");
            continue;
        }
        if (!inline_value) {
            if (i + 1 >= argc) fail(arg + " needs a value (" + found->kind + ")");
            value = argv[++i];
        }
        if (!found->set(value))
            fail("bad value " + quote(value) + " for " + arg + ": expected " + found->kind);
    }
}

}  // namespace cli
