//===- ParameterFile.cpp - The artifact's parameter file ------------------===//
//
// Writes the parameters the entry points take, in one safetensors file next
// to the artifact: values of external parameters copied from the model's
// file, rule-initialized ones (parameters a residual rewrite added)
// materialized with the seed, so the runtime needs nothing else.
//
//===----------------------------------------------------------------------===//
#include "rewire/Compiler/Compiler.h"
#include "rewire/Support/DType.h"
#include "rewire/Support/InitRules.h"
#include "rewire/Support/Safetensors.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cstring>
#include <set>

using namespace rewire::compiler;

llvm::Error rewire::compiler::writeParameters(const ModuleInfo &info, const std::string &inputDir,
                                              uint64_t seed, const std::string &outputPath) {
  std::optional<SafetensorsFile> source;
  std::string sourcePath;
  std::vector<SafetensorsEntry> entries;
  std::set<std::string> seen;
  for (const EntryPoint &e : info.entries) {
    for (const TensorSpec &p : e.parameters) {
      if (!seen.insert(p.name).second)
        continue;
      auto dtype = parseDTypeName(p.dtype);
      auto it = info.parameters.find(p.name);
      if (!dtype || it == info.parameters.end())
        return compileError(Failure::io,
                            "internal error: no source for parameter '" + p.name + "'");
      SafetensorsEntry out;
      out.name = p.name;
      out.dtype = dtypeSafetensorsName(*dtype);
      out.shape = p.shape;
      int64_t numel = 1;
      for (int64_t d : p.shape)
        numel *= d;
      if (!it->second.dense.empty()) {
        if (*dtype != DType::F32 || static_cast<int64_t>(it->second.dense.size()) != numel)
          return compileError(Failure::io,
                              "parameter '" + p.name +
                                  "' has dense initial values that do not fit its type");
        out.data.assign(reinterpret_cast<const char *>(it->second.dense.data()),
                        it->second.dense.size() * sizeof(float));
      } else if (!it->second.external) {
        if (*dtype != DType::F32)
          return compileError(Failure::io,
                              "parameter '" + p.name + "' is initialized by rule but is not f32");
        std::vector<float> v = materializeInit(static_cast<InitRule>(it->second.initRule),
                                               it->second.a, it->second.b, numel, seed, p.name);
        out.data.assign(reinterpret_cast<const char *>(v.data()), v.size() * sizeof(float));
      } else {
        if (!source) {
          if (info.parameterFile.empty())
            return compileError(Failure::io,
                                "parameter '" + p.name +
                                    "' is external but the module names no nn.parameter_file");
          llvm::SmallString<256> path(info.parameterFile);
          if (!llvm::sys::path::is_absolute(path)) {
            path = inputDir;
            llvm::sys::path::append(path, info.parameterFile);
          }
          sourcePath = path.str().str();
          source.emplace();
          if (auto err = readSafetensors(sourcePath, *source))
            return compileError(Failure::io, *err);
        }
        auto t = source->tensors.find(p.name);
        if (t == source->tensors.end())
          return compileError(Failure::io,
                              "parameter '" + p.name + "' is not in '" + sourcePath + "'");
        if (t->second.dtype != out.dtype || t->second.shape != p.shape)
          return compileError(Failure::io, "parameter '" + p.name + "' in '" + sourcePath +
                                               "' is " + t->second.dtype + " of shape [" +
                                               shapeString(t->second.shape) +
                                               "], the model expects " + out.dtype + " of shape [" +
                                               shapeString(p.shape) + "]");
        out.data = t->second.data;
      }
      entries.push_back(std::move(out));
    }
  }
  // Largest element size first: with a 64-byte aligned data section every
  // tensor then starts aligned to its element size. In order within a size
  // (a stable sort by bucket: libstdc++ 12's std::stable_sort uses the
  // deprecated get_temporary_buffer, which the build warns about).
  std::set<size_t, std::greater<size_t>> sizes;
  for (const SafetensorsEntry &e : entries)
    sizes.insert(safetensorsDtypeSize(e.dtype));
  std::vector<SafetensorsEntry> bySize;
  bySize.reserve(entries.size());
  for (size_t size : sizes)
    for (SafetensorsEntry &e : entries)
      if (safetensorsDtypeSize(e.dtype) == size)
        bySize.push_back(std::move(e));
  entries = std::move(bySize);
  return compileErrorIf(Failure::io,
                        writeSafetensors(outputPath, entries, {{"producer", "rewire-compile"}}));
}
