//===- Link.cpp - Link the artifact shared object -------------------------===//
//
// The artifact is a shared object: the generated code, the CPU kernels of
// the runtime (librewire_kernels.a: SGEMM on oneDNN, strided copies)
// and its libraries. clang drives the link (it knows the system's library
// paths); lld does it. Unresolved symbols fail the link here, not at load.
//
//===----------------------------------------------------------------------===//
#include "rewire/Compiler/Compiler.h"
#include "rewire/Support/CpuArtifact.h"
#include "rewire/Version.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <unistd.h>

using namespace rewire::compiler;

namespace {
/// Removes a temporary file when it goes out of scope.
struct TempFile {
  llvm::SmallString<128> path;
  ~TempFile() {
    if (!path.empty())
      llvm::sys::fs::remove(path);
  }
};
} // namespace

llvm::Error rewire::compiler::linkSharedObject(const std::string &object,
                                               const std::string &outputPath,
                                               llvm::ArrayRef<std::string> libraries) {
  const char *env = std::getenv("REWIRE_CLANG");
  std::string clang = env && *env ? env : std::string(REWIRE_LLVM_TOOLS_DIR) + "/clang";
  if (!llvm::sys::fs::can_execute(clang))
    return compileError(Failure::codegen,
                        "no linker driver at '" + clang +
                            "': install clang-22 (scripts/bootstrap.sh) or set REWIRE_CLANG");

  llvm::SmallString<128> dir(outputPath);
  llvm::sys::path::remove_filename(dir);
  if (dir.empty())
    dir = ".";
  TempFile obj, out, log;
  int fd;
  auto model = [&](const char *suffix) {
    return (dir + "/.rewire-link-%%%%%%" + suffix).str();
  };
  if (auto ec = llvm::sys::fs::createUniqueFile(model(".o"), fd, obj.path))
    return compileError(Failure::codegen, "cannot create a temporary file in '" + dir.str().str() +
                                              "': " + ec.message());
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << object;
    os.close();
    if (os.has_error())
      return compileError(Failure::codegen, "cannot write '" + obj.path.str().str() + "'");
  }
  if (auto ec = llvm::sys::fs::createUniqueFile(model(".so"), fd, out.path))
    return compileError(Failure::codegen, "cannot create a temporary file: " + ec.message());
  ::close(fd);
  if (auto ec = llvm::sys::fs::createUniqueFile(model(".log"), fd, log.path))
    return compileError(Failure::codegen, "cannot create a temporary file: " + ec.message());
  ::close(fd);

  // The runtime calls every entry point through kCallSymbol: keep it.
  std::string keepCall = std::string("-Wl,--undefined=") + rewire::cpu::kCallSymbol;
  llvm::SmallVector<llvm::StringRef> args = {
      clang, "-shared", "-fuse-ld=lld", "-Wl,--no-undefined", "-Wl,-z,now", keepCall,
      "-o",  out.path,  obj.path};
  for (const std::string &l : libraries)
    args.push_back(l);
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, log.path.str(), log.path.str()};
  std::string error;
  int rc = llvm::sys::ExecuteAndWait(clang, args, std::nullopt, redirects, 0, 0, &error);
  if (rc != 0) {
    std::string text;
    if (auto buf = llvm::MemoryBuffer::getFile(log.path))
      text = (*buf)->getBuffer().take_back(2000).str();
    return compileError(Failure::codegen,
                        "linking '" + outputPath + "' failed (" +
                            (error.empty() ? "exit " + std::to_string(rc) : error) + "): " + text);
  }
  if (auto ec = llvm::sys::fs::rename(out.path, outputPath))
    return compileError(Failure::codegen, "cannot write '" + outputPath + "': " + ec.message());
  out.path.clear();
  return llvm::Error::success();
}

llvm::Error rewire::compiler::linkArtifact(const std::string &object, const std::string &outputPath,
                                           const std::string &runtimeLibDir) {
  std::string kernels = runtimeLibDir + "/librewire_kernels.a";
  if (!llvm::sys::fs::exists(kernels))
    return compileError(
        Failure::codegen,
        "the CPU kernels library '" + kernels +
            "' is missing; build the `rewire_kernels` target or pass --runtime-lib-dir");
  return linkSharedObject(
      object, outputPath,
      {kernels, "-ldnnl", "-lm",
       // OpenMP (parallel loops) from LLVM's own libomp, found at run time
       // too. Only artifacts with parallel loops need it (--as-needed).
       "-L" REWIRE_LLVM_LIB_DIR, "-Wl,-rpath," REWIRE_LLVM_LIB_DIR, "-Wl,--as-needed", "-lomp"});
}
