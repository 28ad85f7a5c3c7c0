//===- JsonText.h - JSON text through llvm::json::OStream --------*- C++ -*-===//
//
// The artifacts' metadata is written with llvm::json::OStream (members in
// the order written, compact, strings escaped by the library), never by
// string concatenation. Internal to lib/Compiler.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_LIB_COMPILER_JSONTEXT_H
#define REWIRE_LIB_COMPILER_JSONTEXT_H

#include "rewire/Compiler/Compiler.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace rewire::compiler {

/// The JSON text `write` produces.
inline std::string jsonText(llvm::function_ref<void(llvm::json::OStream &)> write) {
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::json::OStream json(os);
  write(json);
  os.flush();
  return text;
}

/// `[{"name":..,"dtype":..,"shape":[..]},...]` as the value being written.
inline void writeTensorSpecs(llvm::json::OStream &json, const std::vector<TensorSpec> &specs) {
  json.array([&] {
    for (const TensorSpec &t : specs)
      json.object([&] {
        json.attribute("name", t.name);
        json.attribute("dtype", t.dtype);
        json.attributeArray("shape", [&] {
          for (int64_t d : t.shape)
            json.value(d);
        });
      });
  });
}

/// An entry point's `"inputs"`, `"parameters"` and `"outputs"` members, and
/// `"ready_order"` where the code hands its outputs out as they are final.
inline void writeSignature(llvm::json::OStream &json, const EntryPoint &entry) {
  for (auto [key, specs] : {std::pair<const char *, const std::vector<TensorSpec> *>{
                                "inputs", &entry.inputs},
                            {"parameters", &entry.parameters},
                            {"outputs", &entry.outputs}}) {
    json.attributeBegin(key);
    writeTensorSpecs(json, *specs);
    json.attributeEnd();
  }
  if (!entry.readyOrder.empty())
    json.attributeArray("ready_order", [&] {
      for (int64_t k : entry.readyOrder)
        json.value(k);
    });
}

} // namespace rewire::compiler

#endif // REWIRE_LIB_COMPILER_JSONTEXT_H
