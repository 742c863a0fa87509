// What the other files of the program share: cards::Error, and the few text and file helpers
// that the deck and the progress file are parsed with.
#pragma once
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace cards {

// Every error a person can cause (a malformed deck, a corrupt or unreadable progress file, a
// progress file that cannot be written) is a cards::Error whose message is one line that starts
// with "file:line:" (or "file:") and ends with the fix.
struct Error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// "path:line: ", the start of such a message.
std::string at(const std::string& path, int line);

// s without the spaces and tabs at either end.
std::string_view trim(std::string_view s);

// Splits text into lines without their '\n' (and a '\r' before it, for files saved on Windows).
std::vector<std::string_view> split_lines(std::string_view text);

// A number of 1 to 9 decimal digits, nothing else (no sign, no spaces).
bool parse_nonneg(std::string_view s, int& out);

// The largest deck or progress file read back. deck.md is about 19 KB and a progress line at
// most 42 bytes, so 4 MiB holds a deck 200 times as long or the progress of nearly 100000 cards:
// a larger file is none the program wrote or a person typed (a wrong path, a log, an image), and
// reading it whole would only take the memory and time of a file it then refuses.
constexpr size_t MAX_FILE_BYTES = size_t(4) << 20;

// The whole file (at most MAX_FILE_BYTES; only a regular file, never a FIFO or a device). On
// failure returns "" and sets `error` (strerror's text, or "it is a FIFO, not a regular file"), and
// `missing` when the file or a folder on its path does not exist; `error_number`, where given,
// gets the errno behind a strerror text (0 for the others), so the advice can fit the cause.
std::string read_whole(const std::string& path, bool& missing, std::string& error,
                       int* error_number = nullptr);

}  // namespace cards
