//===- AtomicFile.cpp - Write a file atomically ---------------------------===//
//
// Implements writeFileAtomically: temp file, full writes, fsync, rename,
// fsync of the directory (so the rename itself survives a power loss).
//
//===----------------------------------------------------------------------===//
#include "rewire/Support/AtomicFile.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace rewire {

static bool writeAll(int fd, const char *data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

std::optional<std::string>
writeFileAtomically(const std::string &path,
                    const std::vector<const std::string *> &parts) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return "cannot create '" + tmp + "': " + std::strerror(errno);
  bool ok = true;
  for (const std::string *p : parts)
    ok = ok && writeAll(fd, p->data(), p->size());
  ok = ok && ::fsync(fd) == 0;
  int err = errno;
  ok = (::close(fd) == 0) && ok;
  if (!ok) {
    ::unlink(tmp.c_str());
    return "cannot write '" + tmp + "': " + std::strerror(err);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    err = errno;
    ::unlink(tmp.c_str());
    return "cannot rename '" + tmp + "' to '" + path + "': " +
           std::strerror(err);
  }
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd); // best effort: some file systems refuse directory fsync
    ::close(dfd);
  }
  return std::nullopt;
}

std::optional<std::string> checkOutputPath(const std::string &path) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    return "'" + path + "' is a directory; give a file name";
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return "cannot write '" + path + "': the folder '" + dir + "' does not exist";
  if (::access(dir.c_str(), W_OK) != 0)
    return "cannot write '" + path + "': the folder '" + dir + "' is not writable";
  return std::nullopt;
}

} // namespace rewire
