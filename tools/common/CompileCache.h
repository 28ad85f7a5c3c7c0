//===- CompileCache.h - Compile models for the runtime tools -----*- C++ -*-===//
//
// rewire-run and rewire-train accept .onnx/.mlir models: they run
// rewire-compile (from their own folder) into a cache keyed by the model's
// bytes, the flags and the compiler's version and build time
// ($REWIRE_CACHE_DIR, else $XDG_CACHE_HOME/rewire, else ~/.cache/rewire).
// No MLIR is linked: the compiler is a separate process.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_TOOLS_COMMON_COMPILECACHE_H
#define REWIRE_TOOLS_COMMON_COMPILECACHE_H

#include <functional>
#include <string>
#include <vector>

namespace rewire::tools {

/// The rewritten model's IR beside a cached artifact (compileCached with
/// `rewrittenIR`; rewire-compile --save-rewritten).
constexpr const char *kRewrittenIR = "model.rewritten.mlir";

/// The artifact path for `model` compiled with `flags`; compiles when not
/// cached (.mlir models always: their parameter file may have changed).
/// With `rewrittenIR`, the model after the residual rewrite is kept too,
/// kRewrittenIR beside the artifact. Calls `die(message, 4)` on failure.
std::string compileCached(const std::string &model, const std::vector<std::string> &flags,
                          const std::function<void(const std::string &, int)> &die,
                          bool rewrittenIR = false);

/// Runs `args` (args[0]: the program's path) and returns its exit code, or
/// -1 when it could not run or was killed.
int runTool(const std::vector<std::string> &args);

/// The folder of the running executable.
std::string toolDir();

} // namespace rewire::tools

#endif // REWIRE_TOOLS_COMMON_COMPILECACHE_H
