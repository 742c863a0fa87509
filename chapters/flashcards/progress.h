// The progress file: cards::Progress as text, read back strictly, and saved safely: a temporary
// file renamed over the old one, under a lock on its folder that lets two runs merge ratings.
#pragma once
#include "chapters/flashcards/schedule.h"
#include "chapters/flashcards/text.h"  // cards::Error

#include <string>
#include <string_view>

namespace cards {

// Text format (tab-separated, UTF-8):
//   # transformer-cards progress v1
//   session<TAB>3
//   card<TAB>box<TAB>rating<TAB>session<TAB>reviews
//   7<TAB>1<TAB>어려움<TAB>3<TAB>2
// Further lines starting with '#' and blank lines are ignored.
Progress parse_progress(std::string_view text, const std::string& path);
std::string format_progress(const Progress& p);
// A missing file is an empty Progress; an unreadable or corrupt one throws (and is not touched).
Progress load_progress(const std::string& path);
// Writes a temporary file beside it (atomic_file::temp_name), fsyncs it, renames it over path
// and fsyncs the folder: a crash leaves either the old file or the new one. Creates missing
// parent folders, keeps the file's mode and a symlink's link, and refuses a file without its
// owner's write bit. Throws Error on failure.
void save_progress(const std::string& path, const Progress& p);
// Saves one rating: re-reads the file under a lock on its folder and replaces only `card` with
// mine's, so two programs reviewing at once keep each other's ratings. Returns what it wrote.
Progress save_rating(const std::string& path, const Progress& mine, int card);
// Throws the Error a save would, before a session starts: a read-only progress file, a name
// too long, or a folder that is not one or cannot be written (a temporary file is created and
// removed there).
void check_writable(const std::string& path);
// $XDG_STATE_HOME/transformer-cards/progress.tsv, else ~/.local/state/transformer-cards/...
std::string default_progress_path();

}  // namespace cards
