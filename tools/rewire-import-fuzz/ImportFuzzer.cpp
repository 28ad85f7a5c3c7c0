//===- ImportFuzzer.cpp - libFuzzer target: bytes -> importer -> verifier -===//
//
// Feeds arbitrary bytes to the ONNX importer as a model and verifies whatever
// it produces. Built only with -DREWIRE_ENABLE_FUZZER=ON under clang with
// ASan and UBSan (scripts/fuzz.sh); any crash, sanitizer report, or a module
// that imports but does not verify is a bug.
//
//===----------------------------------------------------------------------===//
#include "rewire/Import/OnnxImport.h"
#include "rewire/InitAll.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static mlir::DialectRegistry *registry = [] {
    auto *r = new mlir::DialectRegistry();
    rewire::registerRewireDialects(*r);
    return r;
  }();
  // A fresh context per input: nothing one input interns leaks into the next.
  mlir::MLIRContext context(*registry, mlir::MLIRContext::Threading::DISABLED);
  mlir::ScopedDiagnosticHandler quiet(&context, [](mlir::Diagnostic &) {
    return mlir::success();
  });
  rewire::onnx_import::ImportOptions options;
  // Smaller limits keep each execution fast; the checks are the same code.
  options.limits.maxTensorElements = int64_t(1) << 24;
  options.limits.maxNodes = 20000;
  llvm::StringRef bytes(reinterpret_cast<const char *>(data), size);
  auto result = rewire::onnx_import::importOnnxBuffer(
      bytes, "fuzz-input.onnx", /*modelDir=*/"", &context, options);
  if (result.module && mlir::failed(mlir::verify(*result.module)))
    std::abort(); // the importer returned IR that does not verify
  return 0;
}
