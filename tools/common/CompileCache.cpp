//===- CompileCache.cpp - Compile models for the runtime tools ------------===//
#include "tools/common/CompileCache.h"
#include "rewire/Support/Hash.h"
#include "rewire/Version.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <cstring>
#include <cerrno>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace rewire::tools {


std::string toolDir() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0)
    return ".";
  std::string p(buf, static_cast<size_t>(n));
  return p.substr(0, p.rfind('/'));
}

/// Compiles an .onnx/.mlir model into the cache, once per content + flags.

int runTool(const std::vector<std::string> &args) {
  std::vector<std::string> copy = args;
  std::vector<char *> argv;
  for (std::string &a : copy)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::execv(argv[0], argv.data());
    std::perror(("cannot start " + args[0]).c_str());
    ::_exit(127);
  }
  int status = 0;
  if (pid < 0 || ::waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
    return -1;
  return WEXITSTATUS(status);
}

std::string compileCached(const std::string &model, const std::vector<std::string> &flags,
                          const std::function<void(const std::string &, int)> &die) {
  std::ifstream in(model, std::ios::binary);
  if (!in)
    die("cannot read '" + model + "'", 4);
  std::ostringstream ss;
  ss << in.rdbuf();
  std::string key = ss.str() + "\n" REWIRE_VERSION_STRING;
  for (const std::string &f : flags)
    key += "\n" + f;
  // The parameters of an .mlir model live in a file beside it.
  std::string compiler = toolDir() + "/rewire-compile";
  struct stat st;
  if (::stat(compiler.c_str(), &st) == 0)
    key += "\n" + std::to_string(st.st_mtime);
  char hash[32];
  std::snprintf(hash, sizeof(hash), "%016llx",
                static_cast<unsigned long long>(rewire::fnv1a(key.data(), key.size())));
  const char *env = std::getenv("REWIRE_CACHE_DIR");
  const char *home = std::getenv("HOME");
  std::string root = env && *env ? env
                     : std::getenv("XDG_CACHE_HOME") ? std::string(std::getenv("XDG_CACHE_HOME")) + "/rewire"
                                                     : std::string(home ? home : "/tmp") + "/.cache/rewire";
  std::string dir = root + "/" + hash;
  std::string artifact = dir + "/model.rwx";
  bool mlir = model.size() > 5 && model.compare(model.size() - 5, 5, ".mlir") == 0;
  // On the CUDA emulator (REWIRE_CUDA_EMULATOR_KERNELS naming a folder),
  // CUDA compiles also write their emulator kernels there (docs/cuda.md).
  std::string emulatorKernels;
  const char *emu = std::getenv("REWIRE_CUDA_EMULATOR_KERNELS");
  bool cuda = false;
  for (const std::string &f : flags)
    cuda |= f == "--target=cuda";
  if (cuda && emu && *emu && ::stat(emu, &st) == 0 && S_ISDIR(st.st_mode))
    emulatorKernels = std::string(emu) + "/" + hash + ".emu.so";
  if (::stat(artifact.c_str(), &st) == 0 && !mlir &&
      (emulatorKernels.empty() || ::stat(emulatorKernels.c_str(), &st) == 0))
    return artifact;
  std::string mk = "mkdir -p '" + dir + "'";
  for (char c : dir)
    if (c == '\'')
      die("cache folder '" + dir + "' contains a quote", 4);
  if (std::system(mk.c_str()) != 0)
    die("cannot create the cache folder '" + dir + "' (set REWIRE_CACHE_DIR)", 4);
  // Compile into a private folder, then rename into place (parameters
  // first; the artifact's existence says the entry is complete), so
  // processes compiling or loading the same entry at once never see a
  // partial file.
  std::string tmp = dir + "/tmp." + std::to_string(::getpid());
  if (::mkdir(tmp.c_str(), 0755) != 0 && errno != EEXIST)
    die("cannot create '" + tmp + "' (set REWIRE_CACHE_DIR)", 4);
  std::vector<std::string> args = {compiler, model, "-o", tmp + "/model.rwx"};
  args.insert(args.end(), flags.begin(), flags.end());
  if (!emulatorKernels.empty())
    args.push_back("--emulator-kernels=" + emulatorKernels);
  int rc = runTool(args);
  if (rc != 0) {
    std::system(("rm -rf '" + tmp + "'").c_str());
    die("compiling '" + model + "' failed (rewire-compile exit " + std::to_string(rc) + ")", 4);
  }
  std::string params = tmp + "/model.params.safetensors";
  if ((::stat(params.c_str(), &st) == 0 &&
       ::rename(params.c_str(), (dir + "/model.params.safetensors").c_str()) != 0) ||
      ::rename((tmp + "/model.rwx").c_str(), artifact.c_str()) != 0)
    die("cannot move the compiled model into '" + dir + "': " + std::strerror(errno), 4);
  ::rmdir(tmp.c_str());
  return artifact;
}


} // namespace rewire::tools
