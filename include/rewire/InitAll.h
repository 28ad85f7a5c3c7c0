//===- InitAll.h - Register Rewire's dialects and passes --------*- C++ -*-===//
//
// One place that says which dialects and passes Rewire's tools know: our own
// (nn, residual, residual transforms) and the upstream ones a user of our
// pipelines needs (tensor graph, linalg, bufferization, CPU and GPU lowering).
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_INITALL_H
#define REWIRE_INITALL_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace rewire {

/// Adds Rewire's dialects, the upstream dialects of its pipelines, and their
/// interface extensions (bufferization, inlining, LLVM conversion) to
/// `registry`.
void registerRewireDialects(mlir::DialectRegistry &registry);

/// Registers Rewire's passes and the upstream pass groups its pipelines use
/// (generic transforms, linalg, bufferization, conversions, GPU).
void registerRewirePasses();

} // namespace rewire

#endif // REWIRE_INITALL_H
