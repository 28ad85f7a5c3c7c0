//===- OnnxInternal.h - Importer internals ----------------------*- C++ -*-===//
//
// Declarations shared by the importer's files: the bounded protobuf reader,
// tensor conversion, and the legalization handler registry. Not installed:
// protobuf types never appear in the public API.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_LIB_IMPORT_ONNXINTERNAL_H
#define REWIRE_LIB_IMPORT_ONNXINTERNAL_H

#include "rewire/Import/OnnxImport.h"

#include "dialects/nn/NNOps.h"
#include "rewire/Support/Shape.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringRef.h"

#include "onnx/onnx.pb.h"

#include <optional>
#include <string>

namespace rewire::onnx_import {

/// Reads and parses `path` with the protobuf size and recursion limits set
/// explicitly. Emits an error at `loc` and returns failure otherwise.
mlir::LogicalResult readModel(llvm::StringRef path, const ImportLimits &limits,
                              mlir::Location loc, onnx::ModelProto &model,
                              ImportStatus &status);

/// Parses `bytes` (already read; size checked against the limits here too).
mlir::LogicalResult parseModel(llvm::StringRef bytes, llvm::StringRef name,
                               const ImportLimits &limits, mlir::Location loc,
                               onnx::ModelProto &model, ImportStatus &status);

/// The MLIR element type of ONNX data type `dtype`, or null if unsupported.
mlir::Type elementTypeOf(mlir::MLIRContext *ctx, int32_t dtype);

/// The safetensors dtype string of ONNX data type `dtype` ("" if none).
std::string safetensorsDtypeOf(int32_t dtype);

/// A decoded initializer or constant tensor: its type and little-endian
/// row-major bytes.
struct DecodedTensor {
  mlir::RankedTensorType type;
  std::string bytes;
};

/// Decodes `tensor` (raw_data, the typed fields, or external data in a file
/// under `modelDir`), checking rank, element count and byte size against
/// `limits`. Emits an error at `loc` on failure.
mlir::FailureOr<DecodedTensor> decodeTensor(const onnx::TensorProto &tensor,
                                            const ImportLimits &limits,
                                            llvm::StringRef modelDir,
                                            mlir::Location loc);

/// Reads the external data of `tensor` (exactly `bytes` bytes) from the file
/// its `location` names relative to `modelDir`. Rejects absolute paths, `..`,
/// symbolic links in any component, hard-linked files, and ranges outside
/// the file. Emits an error at `loc` on failure.
mlir::LogicalResult readExternalData(const onnx::TensorProto &tensor,
                                     llvm::StringRef modelDir, size_t bytes,
                                     mlir::Location loc, std::string &out);

/// The bytes of `decoded` as a DenseElementsAttr.
mlir::DenseElementsAttr toElementsAttr(const DecodedTensor &decoded);

//===----------------------------------------------------------------------===//
// Legalization handlers
//===----------------------------------------------------------------------===//

/// What a handler sees: the generic node and helpers to read it.
class NodeContext {
public:
  /// Float values of small initializers that became parameters, by the
  /// value that loads them: a Resize's scales or a Clip's bounds stored as
  /// initializers are read from here (constantFloats).
  using InitializerValues = llvm::DenseMap<mlir::Value, llvm::SmallVector<double>>;

  NodeContext(nn::OnnxNodeOp node, mlir::OpBuilder &builder,
              const InitializerValues *initializers = nullptr)
      : node(node), b(builder), initializers(initializers) {}

  mutable nn::OnnxNodeOp node;
  mlir::OpBuilder &b;
  const InitializerValues *initializers;

  mlir::Location loc() const { return node.getLoc(); }
  int64_t opset() const { return static_cast<int64_t>(node.getOpset()); }
  /// Number of input positions (present or absent).
  unsigned numInputs() const;
  /// Input at ONNX position `i`, or null when absent or out of range.
  mlir::Value input(unsigned i) const;
  /// Input `i`, which must be present and a ranked tensor; emits an error.
  mlir::FailureOr<mlir::Value> tensorInput(unsigned i) const;
  /// Every input of a variadic op (Max, Min, Sum, Mean): at least one, all
  /// ranked tensors; emits an error.
  mlir::FailureOr<llvm::SmallVector<mlir::Value>> tensorInputs() const;

  std::optional<int64_t> intAttr(llvm::StringRef name) const;
  std::optional<double> floatAttr(llvm::StringRef name) const;
  std::optional<std::string> stringAttr(llvm::StringRef name) const;
  std::optional<llvm::SmallVector<int64_t>> intsAttr(llvm::StringRef name) const;
  std::optional<llvm::SmallVector<double>> floatsAttr(llvm::StringRef name) const;
  int64_t intAttrOr(llvm::StringRef name, int64_t dflt) const {
    return intAttr(name).value_or(dflt);
  }
  double floatAttrOr(llvm::StringRef name, double dflt) const {
    return floatAttr(name).value_or(dflt);
  }

  /// The integer values of `v` when it is a constant (nn.constant).
  std::optional<llvm::SmallVector<int64_t>> constantInts(mlir::Value v) const;
  /// The values of `v` when it is a float constant (nn.constant) or a small
  /// float initializer.
  std::optional<llvm::SmallVector<double>> constantFloats(mlir::Value v) const;
  /// Integer values of input `i`, which must be a constant; emits an error
  /// naming `what` otherwise.
  mlir::FailureOr<llvm::SmallVector<int64_t>>
  constantIntsInput(unsigned i, llvm::StringRef what) const;

  /// Emits "<op> node '<name>': <message>" and returns failure.
  mlir::InFlightDiagnostic error() const;
};

using HandlerResult = mlir::FailureOr<llvm::SmallVector<mlir::Value>>;
using HandlerFn = HandlerResult (*)(NodeContext &);

struct Handler {
  const char *opType;
  int64_t minOpset;
  int64_t maxOpset;
  HandlerFn fn;
  /// The operator set's domain; "" is the default (ai.onnx).
  const char *domain = "";
};

/// The handlers of each family (one table per file).
llvm::ArrayRef<Handler> mathHandlers();
llvm::ArrayRef<Handler> shapeHandlers();
llvm::ArrayRef<Handler> convHandlers();
llvm::ArrayRef<Handler> logicHandlers();
llvm::ArrayRef<Handler> indexingHandlers();
llvm::ArrayRef<Handler> activationHandlers();
llvm::ArrayRef<Handler> lossHandlers();
llvm::ArrayRef<Handler> quantizeHandlers();
llvm::ArrayRef<Handler> einsumHandlers();
llvm::ArrayRef<Handler> recurrentHandlers();
llvm::ArrayRef<Handler> attentionHandlers();
llvm::ArrayRef<Handler> signalHandlers();
llvm::ArrayRef<Handler> trainingHandlers();

/// The handler for `opType` at `opset` of `domain` ("" or "ai.onnx": the
/// default), if any.
const Handler *findHandler(llvm::StringRef opType, int64_t opset, llvm::StringRef domain = "");
/// True when some handler exists for `opType` at any opset.
bool hasAnyHandler(llvm::StringRef opType);

/// A handler's result from a single value or op that may have failed.
/// The type of a value a handler has checked to be a ranked tensor.
inline mlir::RankedTensorType typeOf(mlir::Value v) {
  return mlir::cast<mlir::RankedTensorType>(v.getType());
}

inline HandlerResult single(mlir::FailureOr<mlir::Value> v) {
  if (mlir::failed(v))
    return mlir::failure();
  return llvm::SmallVector<mlir::Value>{*v};
}
template <typename OpTy>
HandlerResult single(mlir::FailureOr<OpTy> op) {
  if (mlir::failed(op))
    return mlir::failure();
  return llvm::SmallVector<mlir::Value>{op->getResult()};
}

/// Creates an nn op whose result types are inferred, after checking that
/// inference succeeds (the generated inferring builders abort the process on
/// failure, which untrusted input must never reach). The shape function's
/// message is emitted at the node's location.
template <typename OpTy>
mlir::FailureOr<OpTy> createInferred(NodeContext &c, mlir::ValueRange operands,
                                     llvm::ArrayRef<mlir::NamedAttribute> attrs = {}) {
  mlir::MLIRContext *ctx = c.b.getContext();
  auto dict = mlir::DictionaryAttr::get(ctx, attrs);
  typename OpTy::Properties props;
  if (mlir::failed(OpTy::setPropertiesFromAttr(
          props, dict, [&] { return c.error(); })))
    return mlir::failure();
  typename OpTy::Adaptor adaptor(operands, dict, props, {});
  llvm::SmallVector<mlir::Type> types;
  if (mlir::failed(OpTy::inferReturnTypes(ctx, c.loc(), adaptor, types)))
    return mlir::failure();
  return OpTy::create(c.b, c.loc(), types, operands, attrs);
}

/// ONNX GatherElements(data, idx, axis) as nn ops (HandlersIndexing.cpp):
/// a gather of the flattened data at idx * stride(axis) + the other
/// coordinates; run-time indices out of range become one the run-time
/// index check reports.
mlir::FailureOr<mlir::Value> gatherElementsOf(NodeContext &c, mlir::Value data,
                                              mlir::Value idx, int64_t axis);

/// ONNX Conv of `x` and `w` (+ `bias`, may be null) with the node's
/// attributes: strides, pads or auto_pad, dilations, group (HandlersConv.cpp).
mlir::FailureOr<mlir::Value> convolution(NodeContext &c, mlir::Value x, mlir::Value w,
                                         mlir::Value bias);

/// (x - m) - log(sum(exp(x - m))) over `axes`, m the max (HandlersActivations.cpp).
mlir::FailureOr<mlir::Value> logSoftmaxOf(NodeContext &c, mlir::Value x,
                                          llvm::ArrayRef<int64_t> axes);

/// The most elements a handler builds into a constant of its own (masks,
/// index maps, weights): 2^24. A model whose shapes would need more is
/// refused with an error naming the node, rather than allocating it.
constexpr int64_t kMaxBuiltConstantElements = int64_t(1) << 24;

/// Emits an error and returns false when `n` elements (a constant the
/// handler would build, described by `what`) exceed the limit above.
inline bool fitsBuiltConstant(const NodeContext &c, int64_t n, llvm::StringRef what) {
  if (n >= 0 && n <= kMaxBuiltConstantElements)
    return true;
  if (n < 0) {
    c.error() << what << " would need a constant with more elements than int64 counts";
    return false;
  }
  c.error() << what << " would need a constant of " << n << " elements, over the limit of "
            << kMaxBuiltConstantElements;
  return false;
}

/// Row-major strides (in elements) of a static `shape`.
inline llvm::SmallVector<int64_t> stridesOf(llvm::ArrayRef<int64_t> shape) {
  llvm::SmallVector<int64_t> s(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    s[d] = s[d + 1] * shape[d + 1];
  return s;
}

/// Normalizes `axis` into [0, rank) in place; false (axis unchanged) when it
/// is out of range.
inline bool normalizeAxisInPlace(int64_t &axis, int64_t rank) {
  std::optional<int64_t> n = rewire::normalizeAxis(axis, rank);
  if (n)
    axis = *n;
  return n.has_value();
}

/// A splat nn.constant of `type` (float, integer or i1) holding `v`.
mlir::Value splatConstant(NodeContext &c, mlir::RankedTensorType type, double v);

/// An nn.constant of float `type` holding `values` (row-major), each
/// rounded to the element type.
mlir::Value floatsConstant(NodeContext &c, mlir::RankedTensorType type,
                           llvm::ArrayRef<double> values);

/// An i64 nn.constant of `shape` holding `values` (row-major).
mlir::Value i64Constant(NodeContext &c, llvm::ArrayRef<int64_t> shape,
                        llvm::ArrayRef<int64_t> values);

/// The KV head each of `qHeads` query heads reads in grouped-query
/// attention (h / (qHeads / kvHeads)), as an i64 index vector.
inline mlir::Value groupedHeads(NodeContext &c, int64_t qHeads, int64_t kvHeads) {
  llvm::SmallVector<int64_t> idx;
  for (int64_t h = 0; h < qHeads; ++h)
    idx.push_back(h / (qHeads / kvHeads));
  return i64Constant(c, {qHeads}, idx);
}

/// A rank-0 nn.constant of element type `elt` holding `v`.
inline mlir::Value scalarConstant(NodeContext &c, mlir::Type elt, double v) {
  return splatConstant(c, mlir::RankedTensorType::get({}, elt), v);
}

/// Creates an nn.constant holding `values` as a 1-D (or 0-D when `scalar`)
/// i64 tensor.
mlir::Value makeI64Constant(mlir::OpBuilder &b, mlir::Location loc,
                            llvm::ArrayRef<int64_t> values, bool scalar = false);

} // namespace rewire::onnx_import

#endif // REWIRE_LIB_IMPORT_ONNXINTERNAL_H
