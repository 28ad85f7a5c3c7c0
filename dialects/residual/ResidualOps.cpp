//===- ResidualOps.cpp - Residual op verifiers and assembly ---------------===//
//
// Verifiers of every residual op (each message names the offending operand
// and gives the expected against the actual shape), the custom assembly of
// residual.mix, and residual.nag_gate's result type inference.
//
//===----------------------------------------------------------------------===//
#include "dialects/residual/ResidualOps.h"

#include "rewire/Support/Shape.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mlir;
using rewire::dimsAgree;
using namespace rewire::residual;

//===----------------------------------------------------------------------===//
// Shared checks
//===----------------------------------------------------------------------===//

namespace {
/// What the verifiers need to know about a stream state.
struct StateInfo {
  RankedTensorType type;
  int64_t axis = 0; ///< Normalized feature axis.
  int64_t d = 0;    ///< Feature size; ShapedType::kDynamic when unknown.
};
} // namespace

static std::string dimStr(int64_t d) {
  return ShapedType::isDynamic(d) ? "?" : std::to_string(d);
}

static std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  llvm::interleave(shape, os, [&](int64_t d) { os << dimStr(d); }, "x");
  return s;
}

/// Checks the stream state operand `name` and the feature axis.
static FailureOr<StateInfo> verifyState(Operation *op, StringRef name,
                                        Value state, int64_t axis) {
  auto type = cast<RankedTensorType>(state.getType());
  if (type.getRank() < 1)
    return op->emitOpError() << "stream state '" << name
                             << "' must have rank >= 1, got rank 0";
  int64_t rank = type.getRank();
  if (axis < -rank || axis >= rank)
    return op->emitOpError() << "feature axis " << axis
                             << " is out of range for '" << name
                             << "' of rank " << rank;
  StateInfo info;
  info.type = type;
  info.axis = axis < 0 ? axis + rank : axis;
  info.d = type.getDimSize(info.axis);
  return info;
}

/// Checks that learned operand `name` has the stream's element type.
static LogicalResult verifyElementType(Operation *op, StringRef name,
                                       Value operand, const StateInfo &state) {
  Type elt = cast<RankedTensorType>(operand.getType()).getElementType();
  if (elt != state.type.getElementType())
    return op->emitOpError() << "'" << name << "' element type " << elt
                             << " must match the stream element type "
                             << state.type.getElementType();
  return success();
}

/// Checks that `name` is a scalar: tensor<T> or tensor<1xT>.
static LogicalResult verifyScalar(Operation *op, StringRef name, Value operand,
                                  const StateInfo &state) {
  auto type = cast<RankedTensorType>(operand.getType());
  bool scalar = type.getRank() == 0 ||
                (type.getRank() == 1 && type.getDimSize(0) == 1);
  if (!scalar)
    return op->emitOpError() << "'" << name
                             << "' must be a scalar (tensor<T> or "
                                "tensor<1xT>), got "
                             << type;
  return verifyElementType(op, name, operand, state);
}

/// Checks that `name` is a vector of `size` elements.
static LogicalResult verifyVector(Operation *op, StringRef name,
                                  StringRef what, Value operand, int64_t size,
                                  const StateInfo &state) {
  auto type = cast<RankedTensorType>(operand.getType());
  if (type.getRank() != 1 || !dimsAgree(type.getDimSize(0), size))
    return op->emitOpError() << "'" << name << "' must be a vector of " << what
                             << " = " << dimStr(size) << " elements, got "
                             << type;
  return verifyElementType(op, name, operand, state);
}

static LogicalResult verifyPositive(Operation *op, StringRef name,
                                    double value) {
  if (!(value > 0.0) || !std::isfinite(value))
    return op->emitOpError() << "'" << name
                             << "' must be positive and finite, got " << value;
  return success();
}

/// The shape of `state` with the feature axis reduced to 1.
static SmallVector<int64_t> rowShape(const StateInfo &state) {
  SmallVector<int64_t> shape(state.type.getShape());
  shape[state.axis] = 1;
  return shape;
}

//===----------------------------------------------------------------------===//
// AddOp
//===----------------------------------------------------------------------===//

LogicalResult AddOp::verify() {
  return verifyState(*this, "h", getH(), getAxis());
}

//===----------------------------------------------------------------------===//
// ScaleAddOp
//===----------------------------------------------------------------------===//

LogicalResult ScaleAddOp::verify() {
  auto state = verifyState(*this, "h", getH(), getAxis());
  if (failed(state))
    return failure();
  auto type = getAlpha().getType();
  bool scalar = type.getRank() == 0 ||
                (type.getRank() == 1 && type.getDimSize(0) == 1);
  bool perChannel =
      type.getRank() == 1 && dimsAgree(type.getDimSize(0), state->d);
  if (!scalar && !perChannel)
    return emitOpError() << "'alpha' must be a scalar (tensor<T> or "
                            "tensor<1xT>) or one factor per channel (tensor<"
                         << dimStr(state->d) << "xT> along feature axis "
                         << state->axis << "), got " << type;
  return verifyElementType(*this, "alpha", getAlpha(), *state);
}

//===----------------------------------------------------------------------===//
// LaurelOp
//===----------------------------------------------------------------------===//

LogicalResult LaurelOp::verify() {
  auto state = verifyState(*this, "h", getH(), getAxis());
  if (failed(state))
    return failure();
  if (failed(verifyScalar(*this, "alpha", getAlpha(), *state)) ||
      failed(verifyScalar(*this, "beta", getBeta(), *state)))
    return failure();
  if (!getA() != !getB())
    return emitOpError() << "the low-rank map needs both 'a' and 'b'";
  if (!getA())
    return success();
  auto stateType = cast<RankedTensorType>(getH().getType());
  if (state->axis != stateType.getRank() - 1)
    return emitOpError() << "the low-rank map needs the feature axis last, got axis " << state->axis
                         << " of rank " << stateType.getRank();
  auto a = cast<RankedTensorType>(getA().getType());
  auto b = cast<RankedTensorType>(getB().getType());
  if (a.getRank() != 2 || b.getRank() != 2 || !dimsAgree(a.getDimSize(0), state->d) ||
      !dimsAgree(b.getDimSize(1), state->d) || !dimsAgree(a.getDimSize(1), b.getDimSize(0)))
    return emitOpError() << "the low-rank map must be 'a' : [" << dimStr(state->d)
                         << ", r] and 'b' : [r, " << dimStr(state->d) << "], got " << a << " and "
                         << b;
  if (failed(verifyElementType(*this, "a", getA(), *state)))
    return failure();
  return verifyElementType(*this, "b", getB(), *state);
}

//===----------------------------------------------------------------------===//
// ValueMixOp
//===----------------------------------------------------------------------===//

LogicalResult ValueMixOp::verify() {
  auto state = verifyState(*this, "v", getV(), getAxis());
  if (failed(state))
    return failure();
  if (failed(verifyScalar(*this, "lambda1", getLambda1(), *state)))
    return failure();
  return verifyScalar(*this, "lambda2", getLambda2(), *state);
}

//===----------------------------------------------------------------------===//
// GatedAddOp
//===----------------------------------------------------------------------===//

LogicalResult GatedAddOp::verify() {
  auto state = verifyState(*this, "h", getH(), getAxis());
  if (failed(state))
    return failure();
  bool review = getGate() == GateKind::review;
  auto weight = getWeight().getType();
  if (weight.getRank() != 2)
    return emitOpError() << "gate weight 'weight' must be a matrix [in, G], "
                            "got "
                         << weight;
  int64_t d = state->d;
  int64_t in = ShapedType::isDynamic(d) ? d : (review ? 2 * d : d);
  if (!dimsAgree(weight.getDimSize(0), in))
    return emitOpError() << "gate weight 'weight' must have "
                         << (review ? "2d = " : "d = ") << dimStr(in)
                         << " rows for a " << stringifyGateKind(getGate())
                         << " gate, got " << shapeStr(weight.getShape());
  int64_t g = weight.getDimSize(1);
  if (!ShapedType::isDynamic(g) && g != 1 && !dimsAgree(g, d))
    return emitOpError() << "gate width G (columns of 'weight') must be d = "
                         << dimStr(d) << " (per channel) or 1 (per row), got "
                         << g;
  if (failed(verifyElementType(*this, "weight", getWeight(), *state)) ||
      failed(verifyVector(*this, "bias", "G", getBias(), g, *state)))
    return failure();
  if (auto eps = getEps()) {
    if (!review)
      return emitOpError() << "'eps' applies only to the review gate, which "
                              "normalizes h and u; remove it for a highway "
                              "gate";
    return verifyPositive(*this, "eps", eps->convertToDouble());
  }
  return success();
}

//===----------------------------------------------------------------------===//
// MixOp
//===----------------------------------------------------------------------===//

LogicalResult MixOp::verify() {
  auto state = verifyState(*this, "y", getY(), getAxis());
  if (failed(state))
    return failure();
  if (getStates().empty())
    return emitOpError() << "needs at least one earlier stream state";
  for (auto [i, s] : llvm::enumerate(getStates()))
    if (s.getType() != getY().getType())
      return emitOpError() << "state #" << i << " has type " << s.getType()
                           << ", expected the type of 'y', "
                           << getY().getType();
  bool softmax = getWeightsKind() == MixWeights::softmax;
  bool free = getWeightsKind() == MixWeights::free;
  int64_t k = getStates().size();
  int64_t want = free ? k + 1 : k;
  auto weights = getWeights().getType();
  if (weights.getRank() != 1 || !dimsAgree(weights.getDimSize(0), want))
    return emitOpError() << "'weights' must be "
                         << RankedTensorType::get(
                                {want}, state->type.getElementType())
                         << " ("
                         << (softmax ? "one logit per state"
                             : free  ? "one weight per state plus one for y"
                                     : "one weight per state")
                         << "), got " << weights;
  if (failed(verifyElementType(*this, "weights", getWeights(), *state)))
    return failure();
  if (softmax) {
    if (!getTau())
      return emitOpError() << "softmax weights need a temperature 'tau' "
                              "(ANCRe's default is 0.01)";
    return verifyPositive(*this, "tau", getTau()->convertToDouble());
  }
  if (getTau())
    return emitOpError() << "'tau' applies only to softmax weights; remove it "
                            "for " << stringifyMixWeights(getWeightsKind()) << " weights";
  return success();
}

// residual.mix KIND %y, [%h0, ...], %c (tau F)? (axis N)? stream S layer L
//     attr-dict : type(y), type(c)
ParseResult MixOp::parse(OpAsmParser &parser, OperationState &result) {
  StringRef kindName;
  SMLoc kindLoc = parser.getCurrentLocation();
  if (parser.parseKeyword(&kindName))
    return failure();
  auto kind = symbolizeMixWeights(kindName);
  if (!kind)
    return parser.emitError(kindLoc)
           << "expected mix weights kind 'softmax', 'free' or 'additive', got '"
           << kindName << "'";
  Builder &b = parser.getBuilder();
  result.addAttribute(getWeightsKindAttrName(result.name),
                      MixWeightsAttr::get(b.getContext(), *kind));

  OpAsmParser::UnresolvedOperand y, weights;
  SmallVector<OpAsmParser::UnresolvedOperand> states;
  if (parser.parseOperand(y) || parser.parseComma() ||
      parser.parseOperandList(states, OpAsmParser::Delimiter::Square) ||
      parser.parseComma() || parser.parseOperand(weights))
    return failure();

  if (succeeded(parser.parseOptionalKeyword("tau"))) {
    double tau;
    if (parser.parseFloat(tau))
      return failure();
    result.addAttribute(getTauAttrName(result.name), b.getF64FloatAttr(tau));
  }
  if (succeeded(parser.parseOptionalKeyword("axis"))) {
    int64_t axis;
    if (parser.parseInteger(axis))
      return failure();
    result.addAttribute(getAxisAttrName(result.name), b.getI64IntegerAttr(axis));
  }
  int64_t stream, layer;
  if (parser.parseKeyword("stream") || parser.parseInteger(stream) ||
      parser.parseKeyword("layer") || parser.parseInteger(layer))
    return failure();
  result.addAttribute(getStreamAttrName(result.name),
                      b.getI64IntegerAttr(stream));
  result.addAttribute(getLayerAttrName(result.name), b.getI64IntegerAttr(layer));

  Type yType, weightsType;
  if (parser.parseOptionalAttrDict(result.attributes) || parser.parseColon() ||
      parser.parseType(yType) || parser.parseComma() ||
      parser.parseType(weightsType))
    return failure();
  SmallVector<Type> stateTypes(states.size(), yType);
  if (parser.resolveOperand(y, yType, result.operands) ||
      parser.resolveOperands(states, stateTypes, parser.getNameLoc(),
                             result.operands) ||
      parser.resolveOperand(weights, weightsType, result.operands))
    return failure();
  result.addTypes(yType);
  return success();
}

void MixOp::print(OpAsmPrinter &p) {
  p << ' ' << stringifyMixWeights(getWeightsKind()) << ' ' << getY() << ", [";
  p << getStates() << "], " << getWeights();
  if (auto tau = getTau()) {
    p << " tau ";
    p.printFloat(*tau);
  }
  if (static_cast<int64_t>(getAxis()) != -1)
    p << " axis " << static_cast<int64_t>(getAxis());
  p << " stream " << getStream() << " layer " << getLayer();
  p.printOptionalAttrDict((*this)->getAttrs(),
                          {getWeightsKindAttrName(), getTauAttrName(),
                           getAxisAttrName(), getStreamAttrName(),
                           getLayerAttrName()});
  p << " : " << getY().getType() << ", " << getWeights().getType();
}

//===----------------------------------------------------------------------===//
// NagGateOp
//===----------------------------------------------------------------------===//

LogicalResult NagGateOp::verify() {
  auto state = verifyState(*this, "R", getR(), getAxis());
  if (failed(state))
    return failure();
  auto w = getW().getType();
  if (w.getRank() != 2 || !dimsAgree(w.getDimSize(0), state->d))
    return emitOpError() << "'w' must be a matrix [d, C] with d = "
                         << dimStr(state->d) << ", got " << w;
  int64_t c = w.getDimSize(1);
  if (c == 0)
    return emitOpError() << "'w' must have at least one gate component "
                            "(C >= 1), got C = 0";
  if (failed(verifyElementType(*this, "w", getW(), *state)) ||
      failed(verifyVector(*this, "b", "C", getB(), c, *state)) ||
      failed(verifyVector(*this, "pi", "C", getPi(), c, *state)))
    return failure();
  return verifyPositive(*this, "beta", getBeta().convertToDouble());
}

LogicalResult NagGateOp::inferReturnTypes(
    MLIRContext *context, std::optional<Location> location,
    ValueRange operands, DictionaryAttr attributes,
    OpaqueProperties properties, RegionRange regions,
    SmallVectorImpl<Type> &inferredReturnTypes) {
  NagGateOp::Adaptor adaptor(operands, attributes, properties, regions);
  auto type = dyn_cast<RankedTensorType>(adaptor.getR().getType());
  if (!type || type.getRank() < 1)
    return emitOptionalError(location,
                             "'residual.nag_gate' needs a stream state 'R' "
                             "of rank >= 1");
  // Default-valued attributes are not populated yet while parsing.
  IntegerAttr axisAttr = adaptor.getAxisAttr();
  int64_t rank = type.getRank(), axis = axisAttr ? axisAttr.getInt() : -1;
  if (axis < -rank || axis >= rank)
    return emitOptionalError(location, "'residual.nag_gate' op feature axis ",
                             axis, " is out of range for 'R' of rank ", rank);
  SmallVector<int64_t> shape(type.getShape());
  shape[axis < 0 ? axis + rank : axis] = 1;
  inferredReturnTypes.push_back(
      RankedTensorType::get(shape, type.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// NagAddOp
//===----------------------------------------------------------------------===//

LogicalResult NagAddOp::verify() {
  auto state = verifyState(*this, "R", getR(), getAxis());
  if (failed(state))
    return failure();
  if (failed(verifyScalar(*this, "alpha", getAlpha(), *state)))
    return failure();
  auto m = getM().getType();
  SmallVector<int64_t> want = rowShape(*state);
  bool ok = m.getRank() == state->type.getRank() &&
            llvm::all_of(llvm::zip(m.getShape(), want), [](auto pair) {
              return dimsAgree(std::get<0>(pair), std::get<1>(pair));
            });
  if (!ok)
    return emitOpError() << "modulator 'm' must have the shape of 'R' with "
                            "the feature axis reduced to 1 ("
                         << shapeStr(want) << "), got " << m;
  if (failed(verifyElementType(*this, "m", getM(), *state)))
    return failure();
  return verifyPositive(*this, "eps", getEps().convertToDouble());
}

//===----------------------------------------------------------------------===//
// RouteOp
//===----------------------------------------------------------------------===//

LogicalResult RouteOp::verify() {
  double v = getValue().convertToDouble();
  if (!std::isfinite(v))
    return emitOpError() << "'value' must be finite, got " << v;
  if (getMode() == RouteMode::rate && !(v >= 0.0 && v < 1.0))
    return emitOpError() << "skip rate must be in [0, 1), got " << v;
  return success();
}

//===----------------------------------------------------------------------===//
// RouteSelectOp
//===----------------------------------------------------------------------===//

int64_t RouteSelectOp::keptRows(int64_t t, double rate) {
  return t - static_cast<int64_t>(std::floor(rate * static_cast<double>(t)));
}

LogicalResult RouteSelectOp::verify() {
  double r = getRate().convertToDouble();
  if (!(r >= 0.0 && r < 1.0))
    return emitOpError() << "skip rate must be in [0, 1), got " << r;
  auto mt = cast<RankedTensorType>(getM().getType());
  auto it = cast<RankedTensorType>(getIndices().getType());
  if (mt.getRank() != 3 || mt.getDimSize(2) != 1 || !mt.hasStaticShape())
    return emitOpError() << "'m' must be a static [B, T, 1] tensor, got " << mt;
  int64_t k = keptRows(mt.getDimSize(1), r);
  if (it.getRank() != 2 || it.getDimSize(0) != mt.getDimSize(0) || it.getDimSize(1) != k)
    return emitOpError() << "result must be [" << mt.getDimSize(0) << ", " << k
                         << "] (the rows kept of " << mt.getDimSize(1) << " at rate " << r
                         << "), got " << it;
  return success();
}

//===----------------------------------------------------------------------===//
// TapOp
//===----------------------------------------------------------------------===//

LogicalResult TapOp::verify() {
  if (failed(verifyState(*this, "h", getH(), getAxis())))
    return failure();
  if (auto name = getName(); name && name->empty())
    return emitOpError() << "'name' must not be empty; omit it instead";
  return success();
}

#define GET_OP_CLASSES
#include "dialects/residual/ResidualOps.cpp.inc"
