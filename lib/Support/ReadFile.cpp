//===- ReadFile.cpp - Open and read untrusted input files -----------------===//
#include "rewire/Support/ReadFile.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace rewire {
namespace {

/// What a non-regular file is, for the message.
const char *kindOf(mode_t mode) {
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISFIFO(mode))
    return "a FIFO (named pipe)";
  if (S_ISSOCK(mode))
    return "a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode))
    return "a device";
  return "not a regular file";
}

std::optional<std::string> checkStat(const std::string &path, const struct stat &st,
                                     uint64_t maxBytes) {
  if (!S_ISREG(st.st_mode))
    return "'" + path + "' is " + kindOf(st.st_mode) + ", not a regular file; give the path of a file";
  if (static_cast<uint64_t>(st.st_size) > maxBytes)
    return "'" + path + "' is " + std::to_string(st.st_size) + " bytes, over the limit of " +
           std::to_string(maxBytes);
  return std::nullopt;
}

} // namespace

std::optional<std::string> openRegularFile(const std::string &path, int &fd, uint64_t &size,
                                           uint64_t maxBytes) {
  fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return "cannot read '" + path + "': " + std::strerror(errno);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    std::string why = std::strerror(errno);
    ::close(fd);
    return "cannot read '" + path + "': " + why;
  }
  if (auto err = checkStat(path, st, maxBytes)) {
    ::close(fd);
    fd = -1;
    return err;
  }
  int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0)
    ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  size = static_cast<uint64_t>(st.st_size);
  return std::nullopt;
}

std::optional<std::string> checkRegularFile(const std::string &path, bool allowPipes) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return "cannot read '" + path + "': " + std::strerror(errno);
  if (allowPipes && S_ISFIFO(st.st_mode))
    return std::nullopt;
  return checkStat(path, st, ~uint64_t(0));
}

std::optional<std::string> readRegularFile(const std::string &path, std::string &out,
                                           uint64_t maxBytes) {
  int fd;
  uint64_t size;
  if (auto err = openRegularFile(path, fd, size, maxBytes))
    return err;
  out.clear();
  out.resize(size);
  uint64_t got = 0;
  while (got < size) {
    ssize_t n = ::read(fd, out.data() + got, size - got);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      std::string why = std::strerror(errno);
      ::close(fd);
      return "cannot read '" + path + "': " + why;
    }
    if (n == 0)
      break; // the file shrank while being read
    got += static_cast<uint64_t>(n);
  }
  ::close(fd);
  if (got != size)
    return "'" + path + "' changed while being read (" + std::to_string(got) + " of " +
           std::to_string(size) + " bytes)";
  return std::nullopt;
}

} // namespace rewire
