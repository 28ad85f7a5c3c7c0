//===- StreamForms.h - Stream-level residual rewrites -----------*- C++ -*-===//
//
// Internal to the transforms library: the stream view shared by the passes
// (updates of a stream in order, grouped into blocks) and the stream-level
// rewrites of residual-rewrite (ANCRe, DenseFormer, LPA, Hyper-Connections).
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_PASSES_TRANSFORMS_STREAMFORMS_H
#define REWIRE_PASSES_TRANSFORMS_STREAMFORMS_H

#include "passes/Transforms/Passes.h"

#include "dialects/residual/ResidualOps.h"

#include "mlir/IR/SymbolTable.h"

#include <map>

namespace rewire {

/// The updates (residual.add, scale_add, gated_add, nag_add, laurel,
/// hyper_write) of each stream of `func`, in program order.
std::map<int64_t, llvm::SmallVector<mlir::Operation *>>
collectStreamUpdates(mlir::func::FuncOp func);

/// The updates that end a block: every update at sublayer granularity; at
/// block granularity every update whose residual.branch is not "attention",
/// and the last one.
llvm::SmallVector<mlir::Operation *>
blockEnds(llvm::ArrayRef<mlir::Operation *> updates, Granularity granularity);

/// The value that carries the stream after `update`: its result, followed
/// through the mix and tap ops that consume it.
mlir::Value stateAfter(mlir::Operation *update);

/// Adds `residual.mix` after every block of every stream of `func` (ANCRe
/// with softmax weights and temperature `tau`, or DenseFormer with free
/// weights initialized to the identity).
mlir::LogicalResult addDepthMixes(mlir::func::FuncOp func,
                                  mlir::SymbolTable &symbols, bool softmax,
                                  double tau, Granularity granularity);

/// LAuReL-PA (papers.md 6.3, previous activations): after every update of
/// every stream but the first, the new state also adds the stream's earlier
/// states, `x_(i+1) = y_i + sum_(j<i) gamma_(i,j) x_j` (`x_j` the state that
/// entered update j, `y_i` the update's result), as a `residual.mix
/// additive` whose weights are the learned `gamma` (0 at init: the function
/// is kept). Where the stream changes shape, the
/// earlier states start again from the new shape.
mlir::LogicalResult addPreviousActivations(mlir::func::FuncOp func, mlir::SymbolTable &symbols);

/// Adds a tap after every block of the stream and a readout of the shared
/// head at every depth, as extra function results (LPA). With
/// `stopGradient`, each block reads its input through nn.stop_gradient (the
/// readouts do not), so each block is trained by its own depth's loss only
/// (LPA's residual-fitting variant).
mlir::LogicalResult addDepthReadouts(mlir::func::FuncOp func,
                                     Granularity granularity,
                                     bool stopGradient = false);

/// What residual-rewrite kind=hc|mhc builds (HyperConnections.cpp).
struct HyperOptions {
  bool manifold = false; ///< mHC (sigmoid, 2 sigmoid, Sinkhorn) instead of HC.
  bool dynamic = true;   ///< HC: input-dependent coefficients (DHC); mHC always is.
  int64_t streams = 4;   ///< n.
  int64_t sinkhornIters = 20;
  double alphaInit = 0.01; ///< The dynamic parts' gating factors.
};

/// Turns every stream of plain residual adds of `func` into a hyper stream
/// of `options.streams` copies (Hyper-Connections or mHC, papers.md 6.1 and
/// 6.2), initialized so that the function is unchanged. Fails, with the
/// reason on the op, for a stream that cannot be rewritten: updates other
/// than residual.add, a feature axis that is not last, a state that reaches
/// the next update through another op (post-LN, projection shortcuts).
mlir::LogicalResult addHyperConnections(mlir::func::FuncOp func, mlir::SymbolTable &symbols,
                                        const HyperOptions &options);

/// Value Residual Learning (ResFormer, papers.md 6.4) on every stream of
/// `func`: each attention branch after the first mixes the first one's
/// values into its own (residual.value_mix), with constants 1/2, 1/2 or,
/// `learned`, parameters initialized so (0, 1 with `identity`). Streams with
/// fewer than two attention branches whose softmax(q k^T) . V product is
/// visible are left alone. Returns the number of layers mixed; fails, with
/// the reason, for values of different shapes.
mlir::FailureOr<int64_t> addValueResidual(mlir::func::FuncOp func, mlir::SymbolTable &symbols,
                                          bool learned, bool identity);

} // namespace rewire

#endif // REWIRE_PASSES_TRANSFORMS_STREAMFORMS_H
