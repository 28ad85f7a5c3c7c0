//===- SplitLongReductions.cpp - Partial sums for reductions to few values -===//
//
// Implements rewire-split-long-reductions (see Passes.td): a reduction with
// few outputs and a long reduction becomes P partial sums (upstream
// linalg::splitReduction: on the GPU the partial index innermost, so
// neighbouring threads read neighbouring addresses; on the CPU each partial
// a run of consecutive points) and a combine, so the CUDA kernels get
// outputs x P independent sums instead of at most 16 threads per output,
// and the CPU's threads share the sum.
//
//===----------------------------------------------------------------------===//
#include "passes/Conversion/GPU/KernelGroups.h"
#include "passes/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/Support/MathExtras.h"

namespace rewire {
#define GEN_PASS_DEF_SPLITLONGREDUCTIONS
#include "passes/Conversion/Passes.h.inc"
} // namespace rewire

using namespace mlir;

namespace {

/// Outputs and reduction points of `op`'s loops (static shapes only).
struct LoopCounts {
  int64_t outputs = 1, reduction = 1;
};

std::optional<LoopCounts> countLoops(linalg::LinalgOp op) {
  LoopCounts counts;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  for (auto [range, type] : llvm::zip(ranges, op.getIteratorTypesArray())) {
    if (ShapedType::isDynamic(range))
      return std::nullopt;
    (type == utils::IteratorType::reduction ? counts.reduction : counts.outputs) *= range;
  }
  return counts;
}

/// Consecutive runs of reduction loops, each with the parallel loops alone:
/// the collapse that leaves one reduction loop per run.
SmallVector<ReassociationIndices> reductionRuns(linalg::LinalgOp op) {
  SmallVector<ReassociationIndices> runs;
  SmallVector<utils::IteratorType> types = op.getIteratorTypesArray();
  for (unsigned i = 0; i < types.size(); ++i) {
    bool extend = !runs.empty() && types[i] == utils::IteratorType::reduction &&
                  types[runs.back().back()] == utils::IteratorType::reduction;
    if (extend)
      runs.back().push_back(i);
    else
      runs.push_back({static_cast<int64_t>(i)});
  }
  return runs;
}

struct SplitLongReductionsPass
    : rewire::impl::SplitLongReductionsBase<SplitLongReductionsPass> {
  using Base::Base;

  /// The partial sums per output to split `op` into (the largest power of
  /// two up to `partials` / outputs that divides the reduction and leaves
  /// each at least 16 points; at least 16);
  /// 0 where this pass leaves `op` alone.
  int64_t partialsFor(linalg::LinalgOp op) const {
    if (!op.hasPureTensorSemantics() || op.getNumDpsInits() != 1 ||
        op.getNumReductionLoops() == 0 || op.hasIndexSemantics() ||
        isa<linalg::FillOp>(op.getOperation()) ||
        isa<linalg::ContractionOpInterface>(op.getOperation()))
      return 0;
    if (auto generic = dyn_cast<linalg::GenericOp>(op.getOperation()); generic && rewire::gpu::isGemm(generic))
      return 0; // a GEMM: the BLAS's (cuBLAS, or the CPU's rewire_sgemm)
    std::optional<LoopCounts> counts = countLoops(op);
    if (!counts || counts->outputs > maxOutputs || counts->reduction < minLength)
      return 0;
    int64_t ratio = llvm::PowerOf2Ceil(std::max<int64_t>(1, partials / counts->outputs) + 1) / 2;
    // Fewer partials where the reduction does not divide, or where each
    // would sum fewer than 16 points (a scalar's 32768 points: 2048 of 16).
    while (ratio >= 16 && (counts->reduction % ratio != 0 || counts->reduction / ratio < 16))
      ratio /= 2;
    return ratio >= 16 ? ratio : 0;
  }

  /// Splits `op` into `ratio` partial sums per output. Where a step does
  /// not apply, the op stays unsplit — possibly with its unit dims dropped
  /// and its reduction loops collapsed, the same computation.
  void split(IRRewriter &rewriter, linalg::LinalgOp op, int64_t ratio) const {
    rewriter.setInsertionPoint(op);
    // Named ops (linalg.reduce) as generics: the transforms below take those.
    if (!isa<linalg::GenericOp>(op.getOperation())) {
      FailureOr<linalg::GenericOp> generic = linalg::generalizeNamedOp(rewriter, op);
      if (failed(generic))
        return;
      op = *generic;
    }
    // Outputs kept with unit dims (`keepdims`: maps with constant 0s) as
    // plain dims: the collapse below needs loop dims in every map.
    rewriter.setInsertionPoint(op);
    linalg::ControlDropUnitDims dropOptions;
    if (FailureOr<linalg::DropUnitDimsResult> dropped =
            linalg::dropUnitDims(rewriter, cast<linalg::GenericOp>(op.getOperation()), dropOptions);
        succeeded(dropped)) {
      rewriter.replaceOp(op, dropped->replacements);
      op = cast<linalg::LinalgOp>(dropped->resultOp.getOperation());
    }
    // One reduction loop: collapse consecutive reduction loops where every
    // operand reads them contiguously.
    SmallVector<ReassociationIndices> runs = reductionRuns(op);
    if (runs.size() < op.getNumLoops()) {
      if (!linalg::areDimSequencesPreserved(op.getIndexingMapsArray(), runs))
        return;
      rewriter.setInsertionPoint(op);
      FailureOr<linalg::CollapseResult> collapsed = linalg::collapseOpIterationDims(op, runs, rewriter);
      if (failed(collapsed))
        return;
      rewriter.replaceOp(op, collapsed->results);
      op = collapsed->collapsedOp;
    }
    if (op.getNumReductionLoops() != 1)
      return;
    // The partial index leads ([P, outputs...]): the combine's GPU threads,
    // one per output along the innermost dimension, read neighbouring
    // addresses. Interleaved, partial k takes the points k mod P (so do the
    // first op's GPU threads); else the k-th run of consecutive points (a
    // CPU thread streams its runs).
    auto control = [&](linalg::LinalgOp) {
      return linalg::SplitReductionOptions{ratio, /*index=*/0, /*innerParallel=*/interleave};
    };
    rewriter.setInsertionPoint(op);
    (void)linalg::splitReduction(rewriter, op, control);
  }

  void runOnOperation() override {
    SmallVector<std::pair<linalg::LinalgOp, int64_t>> candidates;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (int64_t ratio = partialsFor(op))
        candidates.emplace_back(op, ratio);
    });
    if (candidates.empty())
      return;
    IRRewriter rewriter(&getContext());
    for (auto [op, ratio] : candidates)
      split(rewriter, op, ratio);
    // The reshapes around the split ops fold away (a collapse of an expand,
    // a fill seen through a reshape): entry results keep static layouts.
    RewritePatternSet patterns(&getContext());
    tensor::CollapseShapeOp::getCanonicalizationPatterns(patterns, &getContext());
    tensor::ExpandShapeOp::getCanonicalizationPatterns(patterns, &getContext());
    linalg::FillOp::getCanonicalizationPatterns(patterns, &getContext());
    // A reshaped tensor.empty is an empty of the new shape (so the init
    // of an outlined kernel's reduction stays its own temporary).
    patterns.add(+[](tensor::CollapseShapeOp op, PatternRewriter &rewriter) -> LogicalResult {
      if (!op.getSrc().getDefiningOp<tensor::EmptyOp>() || !op.getResultType().hasStaticShape())
        return failure();
      rewriter.replaceOpWithNewOp<tensor::EmptyOp>(op, op.getResultType().getShape(),
                                                   op.getResultType().getElementType());
      return success();
    });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
