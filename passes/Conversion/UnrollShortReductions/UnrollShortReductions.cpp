//===- UnrollShortReductions.cpp - Sums of a few terms as elementwise ops -===//
//
// Implements rewire-unroll-short-reductions (see Passes.td).
//
//===----------------------------------------------------------------------===//
#include "passes/Conversion/GPU/KernelGroups.h"
#include "passes/Conversion/Passes.h"

#include "mlir/IR/IRMapping.h"

namespace rewire {
#define GEN_PASS_DEF_UNROLLSHORTREDUCTIONS
#include "passes/Conversion/Passes.h.inc"
} // namespace rewire

using namespace mlir;

namespace {

struct UnrollShortReductionsPass
    : rewire::impl::UnrollShortReductionsBase<UnrollShortReductionsPass> {
  void runOnOperation() override;
};

/// The one reduction dimension of `op` when it has a static extent of at
/// most kShortContraction (the sums GPU kernels stream too; the body is
/// cloned once per term), all other dimensions being parallel and covered by its
/// one output through a projected permutation; else nullopt.
std::optional<unsigned> shortReduction(linalg::GenericOp op) {
  if (!op.hasPureTensorSemantics() || op.getNumDpsInits() != 1 || op.getNumReductionLoops() != 1)
    return std::nullopt;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  std::optional<unsigned> r;
  for (auto [d, type] : llvm::enumerate(op.getIteratorTypesArray()))
    if (type == utils::IteratorType::reduction)
      r = d;
  if (ShapedType::isDynamic(ranges[*r]) || ranges[*r] < 1 || ranges[*r] > rewire::gpu::kShortContraction)
    return std::nullopt;
  AffineMap out = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  if (!out.isProjectedPermutation() || out.getNumResults() + 1 != op.getNumLoops())
    return std::nullopt;
  return r;
}

/// `map` over the loops of the original op, with the reduction dimension
/// `r` fixed at `k` and the dimensions after it renumbered.
AffineMap fixDimension(AffineMap map, unsigned r, int64_t k) {
  MLIRContext *ctx = map.getContext();
  SmallVector<AffineExpr> replacements;
  for (unsigned d = 0; d < map.getNumDims(); ++d)
    replacements.push_back(d == r   ? getAffineConstantExpr(k, ctx)
                           : d < r ? getAffineDimExpr(d, ctx)
                                   : getAffineDimExpr(d - 1, ctx));
  return map.replaceDimsAndSymbols(replacements, {}, map.getNumDims() - 1, map.getNumSymbols());
}

/// Rewrites a reduction of at most kShortContraction terms into an all-parallel
/// generic whose body applies the original body once per term, in order,
/// starting from the init's value (a fill's scalar, not a filled tensor).
void unroll(linalg::GenericOp op, unsigned r) {
  int64_t n = op.getStaticLoopRanges()[r];
  OpBuilder b(op);
  Location loc = op.getLoc();
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  // Inputs: one operand per term for those that read the reduced dimension.
  SmallVector<Value> inputs;
  SmallVector<AffineMap> inputMaps;
  SmallVector<SmallVector<unsigned>> operandOfTerm; // [input][term] -> new input
  for (OpOperand *in : op.getDpsInputOperands()) {
    AffineMap map = maps[in->getOperandNumber()];
    SmallVector<unsigned> perTerm;
    if (map.isFunctionOfDim(r)) {
      for (int64_t k = 0; k < n; ++k) {
        perTerm.push_back(inputs.size());
        inputs.push_back(in->get());
        inputMaps.push_back(fixDimension(map, r, k));
      }
    } else {
      perTerm.assign(n, inputs.size());
      inputs.push_back(in->get());
      inputMaps.push_back(fixDimension(map, r, 0));
    }
    operandOfTerm.push_back(perTerm);
  }
  // The starting value: a fill's scalar, else the init read as an input.
  OpOperand *init = op.getDpsInitOperand(0);
  AffineMap outMap = fixDimension(maps[init->getOperandNumber()], r, 0);
  Value start = nullptr;
  std::optional<unsigned> startInput;
  Value dest = init->get();
  auto fill = init->get().getDefiningOp<linalg::FillOp>();
  if (fill) {
    start = fill.getInputs()[0];
    dest = fill.getOutputs()[0];
  } else {
    startInput = inputs.size();
    inputs.push_back(init->get());
    inputMaps.push_back(outMap);
  }
  inputMaps.push_back(outMap);
  SmallVector<utils::IteratorType> iterators(op.getNumLoops() - 1, utils::IteratorType::parallel);
  auto unrolled = linalg::GenericOp::create(
      b, loc, op.getResultTypes(), inputs, ValueRange{dest}, inputMaps, iterators,
      [&](OpBuilder &nb, Location, ValueRange args) {
        Value acc = startInput ? args[*startInput] : start;
        Block &body = op.getRegion().front();
        for (int64_t k = 0; k < n; ++k) {
          IRMapping map;
          for (auto [i, perTerm] : llvm::enumerate(operandOfTerm))
            map.map(body.getArgument(i), args[perTerm[k]]);
          map.map(body.getArgument(op.getNumDpsInputs()), acc);
          for (Operation &inner : body.without_terminator()) {
            if (auto index = dyn_cast<linalg::IndexOp>(inner)) {
              uint64_t d = index.getDim();
              Value v = d == r ? arith::ConstantIndexOp::create(nb, loc, k).getResult()
                               : linalg::IndexOp::create(nb, loc, d < r ? d : d - 1).getResult();
              map.map(index.getResult(), v);
              continue;
            }
            nb.clone(inner, map);
          }
          acc = map.lookupOrDefault(body.getTerminator()->getOperand(0));
        }
        linalg::YieldOp::create(nb, loc, acc);
      });
  op->replaceAllUsesWith(unrolled->getResults());
  op->erase();
  if (fill && fill->use_empty())
    fill->erase();
}

void UnrollShortReductionsPass::runOnOperation() {
  SmallVector<std::pair<linalg::GenericOp, unsigned>> work;
  getOperation().walk([&](linalg::GenericOp op) {
    if (std::optional<unsigned> r = shortReduction(op))
      work.push_back({op, *r});
  });
  for (auto [op, r] : work)
    unroll(op, r);
}

} // namespace
