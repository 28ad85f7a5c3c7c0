//===- OnnxExternalData.cpp - Safe reading of ONNX external data ----------===//
//
// ONNX models may keep tensor data in separate files named by a path inside
// the model. The path is attacker-controlled: it is accepted only when it is
// relative, has no `..` component, crosses no symbolic link, names a regular
// file with a single hard link, and the requested range lies inside it. The
// file is opened with O_NOFOLLOW and checked to be the one inspected.
//
//===----------------------------------------------------------------------===//
#include "OnnxInternal.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Path.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace mlir;
using namespace rewire::onnx_import;

static std::optional<uint64_t> parseU64(const std::string &s) {
  if (s.empty() || s.size() > 19)
    return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9')
      return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

LogicalResult rewire::onnx_import::readExternalData(
    const onnx::TensorProto &t, StringRef modelDir, size_t bytes,
    Location loc, std::string &out) {
  std::string name = t.has_name() ? t.name() : "<unnamed>";
  std::string location;
  std::optional<uint64_t> offset, length;
  for (const auto &kv : t.external_data()) {
    if (kv.key() == "location") {
      location = kv.value();
    } else if (kv.key() == "offset" || kv.key() == "length") {
      auto v = parseU64(kv.value());
      if (!v)
        return emitError(loc) << "tensor '" << name << "': external data "
                              << kv.key() << " '" << kv.value()
                              << "' is not a non-negative integer";
      (kv.key() == "offset" ? offset : length) = v;
    }
  }
  auto reject = [&](const Twine &why) {
    return emitError(loc) << "tensor '" << name << "': external data path '"
                          << location << "' " << why;
  };
  if (location.empty())
    return emitError(loc) << "tensor '" << name
                          << "': external data has no location";
  if (modelDir.empty())
    return emitError(loc) << "tensor '" << name
                          << "': external data cannot be read for a model "
                             "that is not in a folder";
  if (location.find('\0') != std::string::npos ||
      location.find('\\') != std::string::npos)
    return reject("contains a NUL or backslash");
  if (llvm::sys::path::is_absolute(location) || location[0] == '/')
    return reject("is absolute; only paths relative to the model's folder "
                  "are allowed");

  // Walk the components: no '..', no symlink anywhere, ending at a regular
  // file with one link.
  llvm::SmallString<256> path(modelDir);
  struct stat st;
  bool named = false;
  for (auto it = llvm::sys::path::begin(location),
            end = llvm::sys::path::end(location);
       it != end; ++it) {
    if (*it == "..")
      return reject("contains '..'; data must stay inside the model's folder");
    if (*it == ".")
      continue;
    llvm::sys::path::append(path, *it);
    named = true;
    if (::lstat(path.c_str(), &st) != 0)
      return reject(Twine("cannot be read: ") + std::strerror(errno));
    if (S_ISLNK(st.st_mode))
      return reject("crosses a symbolic link ('" + path.str() +
                    "'); links are not followed");
  }
  if (!named || !S_ISREG(st.st_mode))
    return reject("is not a regular file");
  if (st.st_nlink != 1)
    return reject("is a file with " + Twine(st.st_nlink) +
                  " hard links; hard-linked data files are refused");

  uint64_t size = static_cast<uint64_t>(st.st_size);
  uint64_t off = offset.value_or(0);
  uint64_t len = length.value_or(off <= size ? size - off : 0);
  if (off > size || len > size - off)
    return emitError(loc) << "tensor '" << name << "': external data range "
                          << "[" << off << ", +" << len
                          << ") lies outside '" << location << "' ("
                          << size << " bytes)";
  if (len != bytes)
    return emitError(loc) << "tensor '" << name << "': external data length "
                          << len << " does not match its shape and type ("
                          << bytes << " bytes)";

  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return reject(Twine("cannot be opened: ") + std::strerror(errno));
  struct stat opened;
  if (::fstat(fd, &opened) != 0 || opened.st_ino != st.st_ino ||
      opened.st_dev != st.st_dev) {
    ::close(fd);
    return reject("changed while it was being opened");
  }
  out.resize(len);
  size_t done = 0;
  while (done < len) {
    ssize_t n = ::pread(fd, out.data() + done, len - done,
                        static_cast<off_t>(off + done));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      ::close(fd);
      return reject("could not be read completely");
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return success();
}
