//===- CompileCache.cpp - Compile models for the runtime tools ------------===//
#include "tools/common/CompileCache.h"
#include "rewire/Support/CpuArtifact.h"
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
#include <pwd.h>
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

namespace {

/// The files an ONNX model's tensors keep their data in (external data):
/// every `location` entry of the protobuf (key field 1 = "location", value
/// field 2), found by scanning the bytes. A false match only adds a file
/// to the key.
std::vector<std::string> externalDataFiles(const std::string &bytes) {
  static const std::string marker = std::string("\x0a\x08location\x12", 11);
  std::vector<std::string> out;
  for (size_t at = bytes.find(marker); at != std::string::npos;
       at = bytes.find(marker, at + 1)) {
    size_t i = at + marker.size();
    uint64_t len = 0;
    for (int shift = 0; i < bytes.size() && shift < 35; shift += 7) {
      auto c = static_cast<unsigned char>(bytes[i++]);
      len |= static_cast<uint64_t>(c & 0x7f) << shift;
      if (!(c & 0x80))
        break;
    }
    if (len > 0 && len < 4096 && i + len <= bytes.size())
      out.push_back(bytes.substr(i, len));
  }
  return out;
}

/// The cache's root folder, never a folder other users can write: the
/// environment's choice, else the user's home from the password database
/// when HOME is unset.
std::string cacheRoot(const std::function<void(const std::string &, int)> &die) {
  if (const char *env = std::getenv("REWIRE_CACHE_DIR"); env && *env)
    return env;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::string(xdg) + "/rewire";
  const char *home = std::getenv("HOME");
  if (!home || !*home) {
    const passwd *pw = ::getpwuid(::getuid());
    home = pw && pw->pw_dir && *pw->pw_dir ? pw->pw_dir : nullptr;
  }
  if (!home)
    die("no home folder for the compile cache (HOME is unset): set REWIRE_CACHE_DIR", 4);
  return std::string(home) + "/.cache/rewire";
}

} // namespace

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
                          const std::function<void(const std::string &, int)> &die,
                          bool rewrittenIR) {
  std::ifstream in(model, std::ios::binary);
  if (!in)
    die("cannot read '" + model + "'", 4);
  std::ostringstream ss;
  ss << in.rdbuf();
  std::string key = ss.str() + "\n" REWIRE_VERSION_STRING;
  for (const std::string &f : flags)
    key += "\n" + f;
  if (rewrittenIR)
    key += "\nrewritten IR";
  // The parameters of an .mlir model live in a file beside it.
  std::string compiler = toolDir() + "/rewire-compile";
  struct stat st;
  if (::stat(compiler.c_str(), &st) == 0)
    key += "\n" + std::to_string(st.st_mtime);
  // The kernels every artifact links (rewire-compile's default
  // --runtime-lib-dir): rebuilt alone, they make a new entry too.
  std::string kernels = toolDir() + "/../lib/librewire_kernels.a";
  if (::stat(kernels.c_str(), &st) == 0)
    key += "\nkernels " + std::to_string(st.st_mtim.tv_sec) + "." +
           std::to_string(st.st_mtim.tv_nsec);
  // Code is generated for this CPU (--cpu=native): a cache shared by
  // machines (a network home) keeps one entry per feature set.
  std::vector<std::string> lacking = rewire::cpu::missingFeatures(rewire::cpu::checkedFeatures());
  key += "\ncpu lacks:";
  for (const std::string &f : lacking)
    key += " " + f;
  // Weights kept outside the .onnx (external data): an edited file is a
  // new entry, not stale weights.
  std::string modelDir = model.find('/') == std::string::npos ? "." : model.substr(0, model.rfind('/'));
  for (const std::string &f : externalDataFiles(key.substr(0, ss.str().size()))) {
    struct stat ext;
    if (::stat((modelDir + "/" + f).c_str(), &ext) == 0)
      key += "\nexternal " + f + " " + std::to_string(ext.st_size) + " " +
             std::to_string(ext.st_mtim.tv_sec) + "." + std::to_string(ext.st_mtim.tv_nsec) +
             " " + std::to_string(ext.st_ino);
  }
  char hash[32];
  std::snprintf(hash, sizeof(hash), "%016llx",
                static_cast<unsigned long long>(rewire::fnv1a(key.data(), key.size())));
  std::string root = cacheRoot(die);
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
  // Native code is loaded from here: refuse a folder or artifact someone
  // else could have written (it would run as this user).
  auto checkPrivate = [&](const std::string &path) {
    struct stat p;
    if (::stat(path.c_str(), &p) == 0 && (p.st_uid != ::getuid() || (p.st_mode & S_IWOTH)))
      die("'" + path + "' in the compile cache is not private to this user (owned by another "
          "user or writable by others): set REWIRE_CACHE_DIR to a folder of your own", 4);
  };
  checkPrivate(root);
  checkPrivate(dir);
  checkPrivate(artifact);
  if (::stat(artifact.c_str(), &st) == 0 && !mlir &&
      (emulatorKernels.empty() || ::stat(emulatorKernels.c_str(), &st) == 0) &&
      (!rewrittenIR || ::stat((dir + "/" + kRewrittenIR).c_str(), &st) == 0))
    return artifact;
  std::string mk = "mkdir -p '" + dir + "'";
  for (char c : dir)
    if (c == '\'')
      die("cache folder '" + dir + "' contains a quote", 4);
  if (std::system(mk.c_str()) != 0)
    die("cannot create the cache folder '" + dir + "' (set REWIRE_CACHE_DIR)", 4);
  checkPrivate(root);
  checkPrivate(dir);
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
  if (rewrittenIR)
    args.push_back("--save-rewritten=" + tmp + "/" + kRewrittenIR);
  int rc = runTool(args);
  if (rc != 0) {
    std::system(("rm -rf '" + tmp + "'").c_str());
    if (rc == 6) // an --input-shape that does not fit: the caller's inputs
      die("the inputs given do not fit '" + model + "' (see above)", 2);
    die("compiling '" + model + "' failed (rewire-compile exit " + std::to_string(rc) + ")", 4);
  }
  std::string params = tmp + "/model.params.safetensors";
  if ((::stat(params.c_str(), &st) == 0 &&
       ::rename(params.c_str(), (dir + "/model.params.safetensors").c_str()) != 0) ||
      (rewrittenIR && ::rename((tmp + "/" + kRewrittenIR).c_str(),
                               (dir + "/" + kRewrittenIR).c_str()) != 0) ||
      ::rename((tmp + "/model.rwx").c_str(), artifact.c_str()) != 0)
    die("cannot move the compiled model into '" + dir + "': " + std::strerror(errno), 4);
  ::rmdir(tmp.c_str());
  return artifact;
}


} // namespace rewire::tools
