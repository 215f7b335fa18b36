// Writing output files so that readers never see half of one, and without ever replacing
// something that is not a file.
//
// What an output path names decides how it is written:
//   "-"                          standard output.
//   nothing yet, a regular file  a temporary file beside it is written and renamed over it, so a
//                                reader sees the old contents or the new, never half; a replaced
//                                file keeps its permission bits.
//   a symbolic link              followed (up to 40 links): what it points to is written as this
//                                table says, and the link stays a link.
//   a character device, a FIFO   written directly (opened for appending), never replaced:
//                                /dev/null, a terminal, a pipe.
//   anything under /dev or /proc written directly if it is a character device, a FIFO or a file
//                                (/dev/stdout, /dev/fd/N: the shell's own redirection, which a
//                                rename would cut off); nothing is ever created there.
//   a directory, a block device, refused; nothing is written.
//   a socket
// While a temporary file exists it is registered with core/base/temp_files.h, so a process
// interrupted by a signal leaves none behind.
#pragma once

#include <string>
#include <string_view>

#include "core/base/status.h"

namespace meshplan {

// Writes `contents` to `path` as the table above says. On failure (kIo, naming the path) a file
// that was to be replaced is unchanged and the temporary file is removed; a direct write may have
// written part of `contents`.
Status WriteFileAtomically(const std::string& path, std::string_view contents);

// Checks before any work that WriteFileAtomically(path, ...) would be able to write: the path is
// not refused by the table above, a file to create or replace has an existing writable directory,
// and a device or FIFO is writable. Errors are kInvalidInput and name the path: "is a directory,
// expected a file to write", "directory D does not exist", "directory D is not writable".
Status CheckOutputPath(const std::string& path);

// Checks before any work that files can be written into directory `dir`, created (with its
// missing parents) when it does not exist: an existing `dir` is a writable directory, else its
// nearest existing ancestor is. Errors are kInvalidInput and name `dir`: "is not a directory",
// "cannot be created: P is not a directory", "directory P is not writable".
Status CheckOutputDirectory(const std::string& dir);

}  // namespace meshplan
