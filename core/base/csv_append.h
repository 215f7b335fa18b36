// Appending rows to a CSV file that several processes may append to at once (`--append -o F` of
// simulate and execute, run in parallel by scripts): every row lands whole, none is lost.
#pragma once

#include <string>

#include "core/base/status.h"

namespace meshplan {

// Appends `rows` (whole lines, each ending in '\n') to the CSV file at `path`, whose first line
// must be `header` (one line ending in '\n'):
//   - no file, or an empty one: it is created (written) with the header, then the rows;
//   - a regular file: its first line (a UTF-8 byte-order mark and a CRLF ending ignored) must be
//     the header, else kInvalidInput naming the path and both headers; a last line without its
//     '\n' gets one before the rows;
//   - a character device or a FIFO (/dev/stdout, a pipe): the rows alone, written directly and
//     never read (reading a FIFO would wait for a writer);
//   - anything else (a directory, a socket): kInvalidInput.
// Appenders take an exclusive lock on the file (flock) for the check and the write, and write the
// rows at its end in one call (O_APPEND), so concurrent appenders serialise: every row of every
// appender is in the file once. A failed write (kIo, naming the path and the reason, e.g. "no
// space left on device") cuts the file back to its length before, so no half row remains.
Status AppendCsvRows(const std::string& path, const std::string& header, const std::string& rows);

}  // namespace meshplan
