#include "core/atomic_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace meshplan {

Status WriteFileAtomically(const std::string& path, std::string_view contents) {
  const std::string temp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) return Status::Io(path + ": cannot write (" + std::strerror(errno) + ")");
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    out.flush();
    if (!out) {
      std::remove(temp.c_str());
      return Status::Io(path + ": write failed");
    }
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(temp.c_str());
    return Status::Io(path + ": cannot rename into place (" + why + ")");
  }
  return Status::Ok();
}

}  // namespace meshplan
