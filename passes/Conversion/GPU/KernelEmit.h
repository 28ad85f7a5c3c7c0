//===- KernelEmit.h - GPU kernels from linalg ops on buffers ------*- C++ -*-===//
//
// The two kernel emitters of rewire-kernels-to-gpu. Both write a
// `gpu.func ... kernel` into a gpu.module, taking one memref parameter per
// buffer the computation reads or writes (statically shaped and strided:
// the host passes the allocation's base pointer, the layout is compiled
// in), and return the launch geometry.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_PASSES_CONVERSION_GPU_KERNELEMIT_H
#define REWIRE_PASSES_CONVERSION_GPU_KERNELEMIT_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/IRMapping.h"

#include <array>
#include <optional>

namespace rewire::gpu {

struct Launch {
  mlir::gpu::GPUFuncOp func;
  std::array<int64_t, 3> grid{1, 1, 1}, block{1, 1, 1};
};

/// A row kernel for an outlined row group (`rewire.row_kernel` function on
/// buffers): a warp per row (narrow rows, several rows per block) or a
/// block per row, each thread holding its slice of the row in registers
/// (16-byte vector loads and stores along the features where the layout
/// allows), per-row reductions through gpu.subgroup_reduce (warp) or
/// gpu.all_reduce (block), every op of the group in the one kernel.
/// `argTypes` are the static types of the call's operands.
mlir::FailureOr<Launch> emitRowKernel(mlir::func::FuncOp kernel,
                                      llvm::ArrayRef<mlir::MemRefType> argTypes,
                                      mlir::gpu::GPUModuleOp module, llvm::StringRef name);

/// A kernel for one linalg op on buffers (any loops and affine maps): a
/// thread per point of the parallel loops, the reduction loops sequential.
/// `operands` are the memrefs it reads and writes, statically typed (the
/// op's own operands, or their sources through memref.cast), in the order
/// of the kernel's parameters: the op's memref operands, then buffers its
/// body reads. `initValues`, when not empty, gives per output the constant
/// it holds when the kernel starts (a fill folded into the kernel: read
/// instead of the buffer), or null.
mlir::FailureOr<Launch> emitGenericKernel(mlir::linalg::GenericOp op,
                                          llvm::ArrayRef<mlir::Value> operands,
                                          mlir::gpu::GPUModuleOp module, llvm::StringRef name,
                                          llvm::ArrayRef<mlir::TypedAttr> initValues = {});

/// A kernel function for one linalg op under construction: its parameters
/// (the op's memref operands, then the buffers its body reads: `operands`
/// gives their static types), constants the body uses cloned in, and the
/// builder before the final gpu.return.
struct KernelFrame {
  mlir::gpu::GPUFuncOp func;
  /// Outside values (captured buffers, constants) to their kernel values.
  mlir::IRMapping mapping;
  /// Per op operand: its kernel parameter, or null (a cloned constant).
  llvm::SmallVector<mlir::Value> operandParams;
};
mlir::FailureOr<KernelFrame> beginKernel(mlir::linalg::GenericOp op,
                                         llvm::ArrayRef<mlir::Value> operands,
                                         mlir::gpu::GPUModuleOp module, llvm::StringRef name,
                                         llvm::ArrayRef<mlir::Type> shared,
                                         std::array<int64_t, 3> block, mlir::OpBuilder &b);

/// A reduction of one output over one reduction loop whose payload is
/// `select(cond, x, acc)` with `cond` the same at every point of the
/// innermost parallel loop (`feature`): most terms are skipped.
struct Guard {
  unsigned reduction = 0, feature = 0;
  /// The other parallel loops, outermost first.
  llvm::SmallVector<unsigned> rows;
  mlir::Value cond;
};
std::optional<Guard> matchGuardedReduction(mlir::linalg::GenericOp op);

/// A block per row checks 256 positions at a time for hits (one block
/// reduction per tile) and walks only tiles with a hit, in order
/// (GuardedReduction.cpp). emitGenericKernel uses it when the op matches.
mlir::FailureOr<Launch> emitGuardedReduction(mlir::linalg::GenericOp op, const Guard &g,
                                             llvm::ArrayRef<mlir::Value> operands,
                                             mlir::gpu::GPUModuleOp module,
                                             llvm::StringRef name);

/// Clones `body`'s payload (all but the yield) at `b` with `m` mapping its
/// block arguments and outside values; each linalg.index takes
/// `index(dim)`. Returns the yielded values.
llvm::SmallVector<mlir::Value> clonePayload(mlir::OpBuilder &b, mlir::Block &body,
                                            mlir::IRMapping &m,
                                            llvm::function_ref<mlir::Value(unsigned)> index);

/// The combiner of a reduction output: the op in `body` that folds the
/// payload into the accumulator block argument `acc`, and its gpu kind.
struct Combiner {
  mlir::Operation *op = nullptr;
  mlir::gpu::AllReduceOperation kind;
};
mlir::FailureOr<Combiner> findCombiner(mlir::Block &body, unsigned output);

/// The neutral element of a combiner for `type`.
mlir::TypedAttr neutralElement(mlir::gpu::AllReduceOperation kind, mlir::Type type);

} // namespace rewire::gpu

#endif // REWIRE_PASSES_CONVERSION_GPU_KERNELEMIT_H
