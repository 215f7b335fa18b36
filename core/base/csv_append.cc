#include "core/base/csv_append.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/base/atomic_file.h"

namespace meshplan {
namespace {

// The first line of a header compared to another: at most this many bytes are read, far above
// any header the reports write.
constexpr size_t kMaxHeaderBytes = size_t{1} << 16;

// Closes a descriptor on every return path (the lock goes with it).
class Descriptor {
 public:
  explicit Descriptor(int fd) : fd_(fd) {}
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  ~Descriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

Status IoError(const std::string& path, const std::string& what) {
  return Status::Io(path + ": " + what + ": " + std::strerror(errno));
}

// A header line without its ending ("\n" or "\r\n") and a leading byte-order mark.
std::string Plain(std::string line) {
  if (line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  return line;
}

// A header as an error message shows it: at most 200 characters.
std::string Shown(const std::string& line) {
  const std::string plain = Plain(line);
  return plain.size() > 200 ? plain.substr(0, 200) + "..." : plain;
}

// The file's first line (up to kMaxHeaderBytes) and whether its last byte is a '\n'.
Status ReadEnds(int fd, off_t size, const std::string& path, std::string* first_line,
                bool* ends_in_newline) {
  std::string head(static_cast<size_t>(std::min<off_t>(size, kMaxHeaderBytes)), '\0');
  const ssize_t got = ::pread(fd, head.data(), head.size(), 0);
  if (got < 0) return IoError(path, "cannot read");
  head.resize(static_cast<size_t>(got));
  *first_line = head.substr(0, head.find('\n'));
  char last = '\n';
  if (::pread(fd, &last, 1, size - 1) != 1) return IoError(path, "cannot read");
  *ends_in_newline = last == '\n';
  return Status::Ok();
}

// Writes all of `text` at the end of fd (opened O_APPEND); on failure cuts the file back to `size`.
Status WriteAtEnd(int fd, off_t size, const std::string& text, const std::string& path) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int saved = errno;
      (void)::ftruncate(fd, size);
      errno = n == 0 ? ENOSPC : saved;
      return IoError(path, "cannot append");
    }
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

}  // namespace

Status AppendCsvRows(const std::string& path, const std::string& header, const std::string& rows) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) return WriteFileAtomically(path, rows);
    return Status::Invalid(path + ": --append: not a regular file, a FIFO or a device");
  }
  MESHPLAN_RETURN_IF_ERROR(CheckOutputPath(path));
  const Descriptor fd(::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
  if (fd.get() < 0) return IoError(path, "cannot open for appending");
  while (::flock(fd.get(), LOCK_EX) != 0) {
    if (errno != EINTR) return IoError(path, "cannot lock");
  }
  struct stat locked {};
  if (::fstat(fd.get(), &locked) != 0) return IoError(path, "cannot read");
  if (!S_ISREG(locked.st_mode))
    return Status::Invalid(path + ": --append: not a regular file, a FIFO or a device");
  const off_t size = locked.st_size;
  if (size == 0) return WriteAtEnd(fd.get(), size, header + rows, path);
  std::string first_line;
  bool ends_in_newline = true;
  MESHPLAN_RETURN_IF_ERROR(ReadEnds(fd.get(), size, path, &first_line, &ends_in_newline));
  if (Plain(first_line) != Plain(header)) {
    return Status::Invalid(path +
                           ": --append: the file's header is not this report's, so rows would not "
                           "line up (file: \"" +
                           Shown(first_line) + "\"; this report: \"" + Shown(header) +
                           "\"); write to a new file or leave out --append");
  }
  return WriteAtEnd(fd.get(), size, (ends_in_newline ? "" : "\n") + rows, path);
}

}  // namespace meshplan
