// The answers the web pages' C++ (web/*.cpp here and in chapters/flashcards) hands their script,
// which reads each with JSON.parse.
#pragma once
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace web {

// s as a JSON string: quotes, backslashes and control characters escaped, UTF-8 as it is.
inline std::string str(std::string_view s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            char u[8];
            std::snprintf(u, sizeof u, "\\u%04x", unsigned(c));
            out += u;
        } else {
            out += c;
        }
    }
    return out + "\"";
}

inline std::string boolean(bool b) { return b ? "true" : "false"; }

// [a, b, ...] and {"key": value, ...} of values that are JSON already.
inline std::string array(const std::vector<std::string>& values) {
    std::string out = "[";
    for (size_t i = 0; i < values.size(); i++) out += (i ? "," : "") + values[i];
    return out + "]";
}
using Fields = std::vector<std::pair<std::string, std::string>>;
inline std::string object(const Fields& fields) {
    std::string out = "{";
    for (size_t i = 0; i < fields.size(); i++)
        out += (i ? "," : "") + str(fields[i].first) + ":" + fields[i].second;
    return out + "}";
}

// The answer as the exported functions return it: valid until the next call (the script copies
// it into a JavaScript string at once).
inline const char* answer(std::string json) {
    static std::string kept;
    kept = std::move(json);
    return kept.c_str();
}

}  // namespace web
