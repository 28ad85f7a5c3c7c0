//===- CheckIndices.cpp - Run-time checks of index and divisor values -----===//
//
// Implements rewire-check-indices (see Passes.td): before every nn op that
// reads memory at a position taken from tensor values (gather, scatter_add,
// cross-entropy labels) or divides integers, one reduction finds the first
// offending element; if there is one, the code calls
// `rewire_check_failed(what, requirement, shape, rank, position, value)`,
// which the CPU runtime (runtime/Kernels.c) turns into an error of the call.
// The messages are constant strings built here, naming the op, its node and
// the input the values come from.
//
//===----------------------------------------------------------------------===//
#include "passes/Conversion/Passes.h"
#include "dialects/nn/NNParameters.h"

#include "dialects/nn/NNOps.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseSet.h"

namespace rewire {
#define GEN_PASS_DEF_CHECKINDICES
#include "passes/Conversion/Passes.h.inc"
} // namespace rewire

using namespace mlir;
using namespace rewire;

namespace {

constexpr const char *kCheckFailed = "rewire_check_failed";

/// What the values of one check must satisfy.
struct Requirement {
  int64_t lo = 0, hi = 0;        ///< valid values are [lo, hi) ...
  std::optional<int64_t> also;   ///< ... or this one (an ignore index)
  bool nonzero = false;          ///< instead: any value but 0
};

/// The node name of `loc` ("" if it has none).
std::string nodeName(Location loc) {
  if (auto n = dyn_cast<NameLoc>(loc))
    return n.getName().str();
  if (auto f = dyn_cast<FusedLoc>(loc))
    for (Location l : f.getLocations())
      if (auto s = nodeName(l); !s.empty())
        return s;
  return "";
}

/// The function argument the values of `v` are read from through
/// shape-only and cast ops, or null when they are computed.
BlockArgument argumentOf(Value v) {
  for (int depth = 0; depth < 16; ++depth) {
    if (auto arg = dyn_cast<BlockArgument>(v))
      return isa<func::FuncOp>(arg.getOwner()->getParentOp()) ? arg : BlockArgument();
    Operation *def = v.getDefiningOp();
    if (!def || !isa<nn::ReshapeOp, nn::CastOp, nn::UnsqueezeOp, nn::SqueezeOp,
                     nn::TransposeOp>(def) || def->getNumOperands() < 1)
      return {};
    v = def->getOperand(0);
  }
  return {};
}

/// The name of argument `arg` (its nn.name), or "" when it has none.
std::string argumentName(BlockArgument arg) {
  auto func = cast<func::FuncOp>(arg.getOwner()->getParentOp());
  auto n = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), nn::kNameAttrName);
  return n ? n.str() : "";
}

/// Where the values of `v` come from, for messages: "input 'ids'", or ""
/// when they are computed.
std::string sourceOf(Value v) {
  BlockArgument arg = argumentOf(v);
  if (!arg)
    return "";
  std::string name = argumentName(arg);
  return name.empty() ? "input #" + std::to_string(arg.getArgNumber()) : "input '" + name + "'";
}

struct CheckIndicesPass : public rewire::impl::CheckIndicesBase<CheckIndicesPass> {
  using CheckIndicesBase::CheckIndicesBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    unsigned counter = 0;

    // One memref.global per distinct string or shape.
    llvm::StringMap<memref::GlobalOp> globals;
    auto constantGlobal = [&](OpBuilder &b, StringRef key, DenseElementsAttr value) {
      auto &g = globals[key];
      if (!g) {
        OpBuilder mb = OpBuilder::atBlockBegin(module.getBody());
        auto type = MemRefType::get(value.getType().getShape(), value.getElementType());
        g = memref::GlobalOp::create(mb, module.getLoc(),
                                     "__rewire_check_" + std::to_string(counter++),
                                     mb.getStringAttr("private"), type, value,
                                     /*constant=*/true, /*alignment=*/nullptr);
        symbols.insert(g);
      }
      return memref::GetGlobalOp::create(b, b.getUnknownLoc(), g.getType(), g.getSymName())
          .getResult();
    };
    auto stringGlobal = [&](OpBuilder &b, const std::string &text) {
      std::vector<int8_t> bytes(text.begin(), text.end());
      bytes.push_back(0);
      auto type = RankedTensorType::get({static_cast<int64_t>(bytes.size())}, b.getI8Type());
      return constantGlobal(b, "s:" + text,
                            DenseElementsAttr::get(type, ArrayRef<int8_t>(bytes)));
    };

    func::FuncOp callee;
    auto declareCallee = [&]() {
      if (callee)
        return;
      callee = module.lookupSymbol<func::FuncOp>(kCheckFailed);
      if (callee)
        return;
      OpBuilder mb = OpBuilder::atBlockEnd(module.getBody());
      MLIRContext *ctx = module.getContext();
      auto i64 = IntegerType::get(ctx, 64);
      // (what, requirement, shape, rank, position, value): the three
      // pointers are passed as integers (the globals' aligned addresses).
      callee = func::FuncOp::create(mb, module.getLoc(), kCheckFailed,
                                    mb.getFunctionType({i64, i64, i64, i64, i64, i64}, {}));
      callee.setPrivate();
    };

    auto emitCheck = [&](Operation *op, Value values, const Requirement &req,
                         const std::string &what) {
      auto type = dyn_cast<RankedTensorType>(values.getType());
      if (!type || !type.hasStaticShape() || !type.getElementType().isInteger() ||
          type.getElementType().isInteger(1) || type.getNumElements() == 0)
        return;
      OpBuilder b(op);
      // arith compares signless integers: an unsigned divisor is checked
      // through a cast to the signless type of its width (the same bits;
      // a nonzero test does not depend on signedness).
      if (type.getElementType().isUnsignedInteger()) {
        if (!req.nonzero)
          return;
        type = type.clone(b.getIntegerType(type.getElementTypeBitWidth()));
        values = nn::CastOp::create(b, op->getLoc(), type, values);
      }
      declareCallee();
      Location loc = op->getLoc();
      MLIRContext *ctx = op->getContext();
      Type elt = type.getElementType();
      auto i64 = b.getI64Type();
      int64_t rank = type.getRank();
      constexpr int64_t kNone = std::numeric_limits<int64_t>::max();

      // first = min over positions p of (values[p] violates req ? p : kNone)
      Value init = tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{}, i64);
      Value none = arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(kNone));
      init = linalg::FillOp::create(b, loc, none, init).getResult(0);
      SmallVector<AffineMap> maps = {AffineMap::getMultiDimIdentityMap(rank, ctx),
                                     AffineMap::get(rank, 0, {}, ctx)};
      SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::reduction);
      auto first = linalg::GenericOp::create(
          b, loc, TypeRange{init.getType()}, ValueRange{values}, ValueRange{init}, maps, iters,
          [&](OpBuilder &nb, Location l, ValueRange v) {
            auto cst = [&](int64_t x) {
              return arith::ConstantOp::create(nb, l, nb.getIntegerAttr(elt, x)).getResult();
            };
            Value x = v[0], bad;
            if (req.nonzero) {
              bad = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq, x, cst(0));
            } else {
              bad = arith::OrIOp::create(
                  nb, l, arith::CmpIOp::create(nb, l, arith::CmpIPredicate::slt, x, cst(req.lo)),
                  arith::CmpIOp::create(nb, l, arith::CmpIPredicate::sge, x, cst(req.hi)));
              if (req.also)
                bad = arith::AndIOp::create(
                    nb, l, bad,
                    arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ne, x, cst(*req.also)));
            }
            Value pos = arith::ConstantIndexOp::create(nb, l, 0);
            for (int64_t d = 0; d < rank; ++d) {
              pos = arith::MulIOp::create(
                  nb, l, pos, arith::ConstantIndexOp::create(nb, l, type.getDimSize(d)));
              pos = arith::AddIOp::create(nb, l, pos, linalg::IndexOp::create(nb, l, d));
            }
            Value p64 = arith::IndexCastOp::create(nb, l, nb.getI64Type(), pos);
            Value cand = arith::SelectOp::create(
                nb, l, bad, p64,
                arith::ConstantOp::create(nb, l, nb.getI64IntegerAttr(kNone)).getResult());
            linalg::YieldOp::create(nb, l, arith::MinSIOp::create(nb, l, v[1], cand).getResult());
          });
      Value pos = tensor::ExtractOp::create(b, loc, first.getResult(0), ValueRange{});
      Value failed = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, pos, none);
      auto ifOp = scf::IfOp::create(b, loc, failed, /*withElseRegion=*/false);
      OpBuilder tb = ifOp.getThenBodyBuilder();
      SmallVector<Value> coords;
      if (rank > 0) {
        Value flat = arith::IndexCastOp::create(tb, loc, tb.getIndexType(), pos);
        auto delin = affine::AffineDelinearizeIndexOp::create(tb, loc, flat, type.getShape());
        coords.append(delin.getResults().begin(), delin.getResults().end());
      }
      Value value = tensor::ExtractOp::create(tb, loc, values, coords);
      if (elt.getIntOrFloatBitWidth() < 64)
        value = arith::ExtSIOp::create(tb, loc, i64, value);
      std::string requirement;
      if (req.nonzero)
        requirement = "must not be 0";
      else
        requirement = "must be in [" + std::to_string(req.lo) + ", " + std::to_string(req.hi) +
                      ")" + (req.also ? " or equal " + std::to_string(*req.also) : "");
      SmallVector<int64_t> dims(type.getShape());
      if (dims.empty())
        dims.push_back(1);
      auto shapeType = RankedTensorType::get({static_cast<int64_t>(dims.size())}, i64);
      std::string shapeKey = "d:";
      for (int64_t d : dims)
        shapeKey += std::to_string(d) + ",";
      Value shape = constantGlobal(tb, shapeKey, DenseElementsAttr::get(shapeType, ArrayRef<int64_t>(dims)));
      auto address = [&](Value m) {
        Value p = memref::ExtractAlignedPointerAsIndexOp::create(tb, loc, m);
        return arith::IndexCastOp::create(tb, loc, i64, p).getResult();
      };
      Value args[] = {address(stringGlobal(tb, what)), address(stringGlobal(tb, requirement)),
                      address(shape),
                      arith::ConstantOp::create(tb, loc, tb.getI64IntegerAttr(rank)),
                      pos, value};
      func::CallOp::create(tb, loc, callee, args);
    };

    auto describe = [](Operation *op, StringRef role, Value values) {
      std::string name = nodeName(op->getLoc());
      std::string s = op->getName().getStringRef().str();
      if (!name.empty())
        s += " '" + name + "'";
      s += ": " + role.str();
      std::string from = sourceOf(values);
      if (!from.empty())
        s += " (from " + from + ")";
      return s;
    };

    module.walk([&](func::FuncOp func) {
      if (func.isExternal())
        return;
      // The same values checked once per function and requirement (a train
      // step reads the token ids in the gather and in its gradient).
      llvm::DenseSet<std::tuple<Value, int64_t, int64_t>> done;
      SmallVector<Attribute> recorded;
      auto check = [&](Operation *op, Value values, Requirement req, StringRef role) {
        if (!done.insert({values, req.nonzero ? 0 : req.lo, req.nonzero ? 0 : req.hi}).second)
          return;
        if (!recordInputs) {
          emitCheck(op, values, req, describe(op, role, values));
          return;
        }
        auto type = dyn_cast<RankedTensorType>(values.getType());
        if (!type || !type.getElementType().isInteger() || type.getElementType().isInteger(1))
          return;
        BlockArgument arg = argumentOf(values);
        std::string name = arg ? argumentName(arg) : "";
        if (name.empty())
          return; // computed values: clamped by the lowering
        Builder b(op->getContext());
        SmallVector<NamedAttribute> fields = {
            b.getNamedAttr("input", b.getStringAttr(name)),
            b.getNamedAttr("what", b.getStringAttr(describe(op, role, values))),
            b.getNamedAttr("lo", b.getI64IntegerAttr(req.lo)),
            b.getNamedAttr("hi", b.getI64IntegerAttr(req.hi)),
            b.getNamedAttr("nonzero", b.getBoolAttr(req.nonzero))};
        if (req.also)
          fields.push_back(b.getNamedAttr("also", b.getI64IntegerAttr(*req.also)));
        recorded.push_back(b.getDictionaryAttr(fields));
      };
      func.walk([&](Operation *op) {
        if (auto g = dyn_cast<nn::GatherOp>(op)) {
          auto data = cast<RankedTensorType>(g.getData().getType());
          int64_t axis = static_cast<int64_t>(g.getAxis());
          if (axis < 0)
            axis += data.getRank();
          if (axis < 0 || axis >= data.getRank() || data.isDynamicDim(axis))
            return;
          int64_t n = data.getDimSize(axis);
          check(op, g.getIndices(), {-n, n, std::nullopt, false}, "index");
        } else if (auto s = dyn_cast<nn::ScatterAddOp>(op)) {
          auto table = cast<RankedTensorType>(s.getType());
          if (table.getRank() < 1 || table.isDynamicDim(0))
            return;
          int64_t n = table.getDimSize(0);
          check(op, s.getIndices(), {-n, n, std::nullopt, false}, "index");
        } else if (isa<nn::CrossEntropyOp, nn::CrossEntropyGradOp>(op)) {
          Value logits = op->getOperand(0), labels = op->getOperand(1);
          auto lt = cast<RankedTensorType>(logits.getType());
          if (lt.getRank() < 1 || lt.isDynamicDim(lt.getRank() - 1))
            return;
          int64_t ignore = cast<IntegerAttr>(op->getAttr("ignore_index")).getInt();
          check(op, labels, {0, lt.getDimSize(lt.getRank() - 1), ignore, false}, "class label");
        } else if (auto d = dyn_cast<nn::DivOp>(op)) {
          check(op, d.getRhs(), {0, 0, std::nullopt, true}, "integer divisor");
        }
      });
      if (!recorded.empty())
        func->setAttr(kInputChecksAttrName, ArrayAttr::get(func.getContext(), recorded));
    });
  }
};

} // namespace
