#include "core/base/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>

#include "core/base/temp_files.h"

namespace meshplan {
namespace {

namespace fs = std::filesystem;

constexpr int kMaxSymlinks = 40;  // as the kernel's own limit for one path lookup

enum class OutputKind {
  kStdout,   // "-"
  kReplace,  // a new or regular file: temporary file + rename
  kDirect,   // a device, FIFO or /proc fd: opened and written in place
};

struct OutputTarget {
  OutputKind kind = OutputKind::kReplace;
  std::string path;  // after following symbolic links
  bool exists = false;
  mode_t mode = 0;  // permission bits of an existing regular file
};

std::string ErrnoText(int error) { return std::strerror(error); }

bool UnderDevOrProc(const std::string& path) {
  return path.rfind("/dev/", 0) == 0 || path.rfind("/proc/", 0) == 0;
}

// What `original` resolved to, as a refusal naming both when they differ.
Status Refuse(const std::string& original, const std::string& resolved, const std::string& what) {
  const std::string via = resolved == original ? "" : " (via a link to " + resolved + ")";
  return Status::Invalid(original + ": " + what + via);
}

// Under /dev and /proc links are the kernel's (/proc/self/fd/1 names a pipe as "pipe:[123]"), so
// the path is classified by what it finally opens, and nothing is created or replaced there.
Result<OutputTarget> ClassifyDevicePath(const std::string& original, const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return Refuse(
        original, path,
        "cannot be written (" + ErrnoText(errno) + "; nothing is created under /dev or /proc)");
  }
  if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode) || S_ISREG(st.st_mode)) {
    return OutputTarget{OutputKind::kDirect, path, true, 0};
  }
  if (S_ISDIR(st.st_mode))
    return Refuse(original, path, "is a directory, expected a file to write");
  return Refuse(original, path,
                "is neither a file, a character device nor a FIFO; refusing to write to it");
}

Result<OutputTarget> ResolveOutput(const std::string& original) {
  if (original == "-") return OutputTarget{OutputKind::kStdout, original, true, 0};
  if (original.empty()) return Status::Invalid("empty output path");
  std::string path = original;
  for (int links = 0; links <= kMaxSymlinks; ++links) {
    if (UnderDevOrProc(path)) return ClassifyDevicePath(original, path);
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0) {
      if (errno == ENOENT) return OutputTarget{OutputKind::kReplace, path, false, 0};
      return Refuse(original, path, "cannot be inspected (" + ErrnoText(errno) + ")");
    }
    if (S_ISLNK(st.st_mode)) {
      std::error_code error;
      const fs::path target = fs::read_symlink(path, error);
      if (error) return Refuse(original, path, "cannot read the link (" + error.message() + ")");
      path =
          target.is_absolute() ? target.string() : (fs::path(path).parent_path() / target).string();
      continue;
    }
    if (S_ISREG(st.st_mode)) {
      // A file nobody may write (mode 0444) was made read-only on purpose: replacing it by
      // rename would ignore that (and root ignores the bits), so refuse (issue 33).
      if ((st.st_mode & 0222) == 0)
        return Refuse(original, path, "is read-only; make it writable or remove it first");
      return OutputTarget{OutputKind::kReplace, path, true, st.st_mode & 07777};
    }
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))
      return OutputTarget{OutputKind::kDirect, path, true, 0};
    if (S_ISDIR(st.st_mode))
      return Refuse(original, path, "is a directory, expected a file to write");
    if (S_ISBLK(st.st_mode))
      return Refuse(original, path, "is a block device; refusing to write to it");
    return Refuse(original, path,
                  "is neither a file, a character device nor a FIFO; refusing to write to it");
  }
  return Refuse(original, path, "has more than 40 levels of symbolic links");
}

// Writes all of `contents` to `fd`; false with errno set on failure.
bool WriteAll(int fd, std::string_view contents) {
  size_t done = 0;
  while (done < contents.size()) {
    const ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

Status WriteDirect(const std::string& original, const OutputTarget& target,
                   std::string_view contents) {
  const int fd = ::open(target.path.c_str(), O_WRONLY | O_APPEND | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return Status::Io(original + ": cannot open for writing (" + ErrnoText(errno) + ")");
  const bool written = WriteAll(fd, contents);
  const int write_error = errno;
  const bool closed = ::close(fd) == 0;
  if (!written) return Status::Io(original + ": write failed (" + ErrnoText(write_error) + ")");
  if (!closed) return Status::Io(original + ": write failed (" + ErrnoText(errno) + ")");
  return Status::Ok();
}

// A temporary file beside the output, created exclusively so that no other file is touched,
// registered for removal on interruption before it exists, and removed when dropped before it
// was renamed into place (an error return or an exception).
class TempFile {
 public:
  TempFile() = default;
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (created_) ::unlink(path_.c_str());
  }

  Status Create(const std::string& original, const std::string& beside) {
    static std::atomic<unsigned> counter{0};  // distinct names for concurrent writers of one path
    for (int attempt = 0; attempt < 100; ++attempt) {
      path_ = beside + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
      registration_.emplace(path_);
      fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (fd_ >= 0) {
        created_ = true;
        return Status::Ok();
      }
      const int error = errno;
      registration_.reset();  // the name is someone else's file, or nothing
      if (error != EEXIST)
        return Status::Io(original + ": cannot write (" + ErrnoText(error) + ")");
    }
    return Status::Io(original + ": cannot write (no free temporary file name beside it)");
  }

  int fd() const { return fd_; }
  // Closes the file; false with errno set when the last of its data failed to reach it.
  bool Close() {
    const int fd = fd_;
    fd_ = -1;
    return ::close(fd) == 0;
  }
  // Renames the closed file to `path`; after success the file is no longer this object's.
  bool RenameTo(const std::string& path) {
    if (std::rename(path_.c_str(), path.c_str()) != 0) return false;
    created_ = false;
    return true;
  }

 private:
  std::string path_;
  int fd_ = -1;
  bool created_ = false;
  std::optional<TempFileRegistration> registration_;
};

Status ReplaceAtomically(const std::string& original, const OutputTarget& target,
                         std::string_view contents) {
  TempFile temp;
  MESHPLAN_RETURN_IF_ERROR(temp.Create(original, target.path));
  auto fail = [&](const char* what) {
    const int error = errno;  // before anything else can change it
    return Status::Io(original + ": " + what + " (" + ErrnoText(error) + ")");
  };
  if (target.exists && ::fchmod(temp.fd(), target.mode) != 0)
    return fail("cannot keep the file's permissions");
  if (!WriteAll(temp.fd(), contents)) return fail("write failed");
  if (!temp.Close()) return fail("write failed");
  if (!temp.RenameTo(target.path)) return fail("cannot rename into place");
  return Status::Ok();
}

}  // namespace

Status WriteFileAtomically(const std::string& path, std::string_view contents) {
  auto target = ResolveOutput(path);
  if (!target.ok()) return Status::Io(target.status().message());
  switch (target->kind) {
    case OutputKind::kStdout:
      if (std::fwrite(contents.data(), 1, contents.size(), stdout) != contents.size() ||
          std::fflush(stdout) != 0) {
        return Status::Io("-: writing to standard output failed");
      }
      return Status::Ok();
    case OutputKind::kDirect:
      return WriteDirect(path, *target, contents);
    case OutputKind::kReplace:
      return ReplaceAtomically(path, *target, contents);
  }
  return Status::Internal("unknown output kind");
}

Status CheckOutputPath(const std::string& path) {
  MESHPLAN_ASSIGN_OR_RETURN(auto target, ResolveOutput(path));
  switch (target.kind) {
    case OutputKind::kStdout:
      return Status::Ok();
    case OutputKind::kDirect:
      if (::access(target.path.c_str(), W_OK) != 0)
        return Status::Invalid(path + ": is not writable");
      return Status::Ok();
    case OutputKind::kReplace:
      break;
  }
  fs::path dir = fs::path(target.path).parent_path();
  if (dir.empty()) dir = ".";
  std::error_code error;
  if (!fs::is_directory(dir, error))
    return Status::Invalid(path + ": directory " + dir.string() + " does not exist");
  if (::access(dir.c_str(), W_OK) != 0)
    return Status::Invalid(path + ": directory " + dir.string() + " is not writable");
  return Status::Ok();
}

Status CheckOutputDirectory(const std::string& dir) {
  namespace fs = std::filesystem;
  if (dir.empty()) return Status::Invalid("an empty path, expected a directory");
  std::error_code error;
  fs::path existing(dir);
  while (!existing.empty() && !fs::exists(existing, error)) existing = existing.parent_path();
  if (existing.empty()) existing = ".";
  const bool itself = existing == fs::path(dir);
  if (!fs::is_directory(existing, error)) {
    return Status::Invalid(
        dir + (itself ? ": is not a directory, expected one for the output files"
                      : ": cannot be created: " + existing.string() + " is not a directory"));
  }
  // The kernel's file systems take no new files, whatever access() says (root may "write" /proc).
  const std::string absolute = fs::absolute(existing, error).lexically_normal().string();
  for (const std::string kernel : {"/proc", "/sys"}) {
    if (absolute == kernel || absolute.rfind(kernel + "/", 0) == 0) {
      return Status::Invalid(dir + (itself ? ": " : ": cannot be created: ") + absolute +
                             " is on the kernel's " + kernel +
                             " file system, where no file is "
                             "created");
    }
  }
  if (!itself && absolute == "/dev") {
    return Status::Invalid(dir + ": cannot be created: nothing is created under /dev");
  }
  if (::access(existing.c_str(), W_OK) != 0) {
    return Status::Invalid(dir + ": directory " + existing.string() + " is not writable");
  }
  return Status::Ok();
}

}  // namespace meshplan
