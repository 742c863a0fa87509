// The helpers declared in text.h.
#include "chapters/flashcards/text.h"

#include "common/program/read_file.h"

#include <utility>

namespace cards {

std::string at(const std::string& path, int line) {
    return path + ":" + std::to_string(line) + ": ";
}

std::string_view trim(std::string_view s) {
    size_t a = s.find_first_not_of(" \t");
    if (a == std::string_view::npos) return {};
    size_t b = s.find_last_not_of(" \t");
    return s.substr(a, b - a + 1);
}

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

std::string read_whole(const std::string& path, bool& missing, std::string& error,
                       int* error_number) {
    read_file::Result r = read_file::whole(path, MAX_FILE_BYTES);
    missing = r.missing;
    if (error_number) *error_number = r.error_number;
    error = r.too_large ? r.problem + ", more than a deck or progress file holds" : r.problem;
    return std::move(r.bytes);
}

}  // namespace cards
