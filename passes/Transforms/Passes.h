//===- Passes.h - Residual stream transforms --------------------*- C++ -*-===//
//
// Option enums, pass declarations and registration of the residual stream
// transformation passes (generated from Passes.td).
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_PASSES_TRANSFORMS_PASSES_H
#define REWIRE_PASSES_TRANSFORMS_PASSES_H

#include "dialects/nn/NNDialect.h"
#include "dialects/residual/ResidualDialect.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace rewire {

/// The residual forms residual-rewrite produces.
enum class RewriteKind {
  rezero,
  skipinit,
  layerscale,
  review,
  highway,
  nag,
  ancre,
  denseformer,
  lpa,
  laurel,
  hc,
  mhc,
  valueResidual
};
/// Which updates a stream-level form (ANCRe, DenseFormer, LPA) attaches to.
enum class Granularity { block, sublayer };
/// Gate width of the gated forms.
enum class GateWidth { channel, row };
/// How new parameters are initialized.
enum class InitMode { paper, identity };
enum class LossKind { mse, crossEntropy };
/// Which LAuReL components (papers.md 6.3) an update gets: learned scalars
/// (rw), a low-rank map of the state (lr), earlier states (pa), as bits.
/// gemma3n is Gemma 3n's merge of a low-rank LAuReL into attention sublayers.
enum class LaurelVariant {
  rw = 1, lr = 2, rwlr = 3, pa = 4, rwpa = 5, lrpa = 6, rwlrpa = 7, gemma3n = 8
};
inline bool laurelHas(LaurelVariant v, LaurelVariant part) {
  return (static_cast<int>(v) & static_cast<int>(part)) != 0;
}
enum class OptimizerKind { sgd, adamw };
/// Value Residual's mixing weights.
enum class ValueLambda { fixed, learned };

#define GEN_PASS_DECL
#include "passes/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Transforms/Passes.h.inc"

} // namespace rewire

#endif // REWIRE_PASSES_TRANSFORMS_PASSES_H
