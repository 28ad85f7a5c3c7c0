//===- OnnxTensors.cpp - ONNX tensors to MLIR types and bytes -------------===//
//
// Maps ONNX data types to MLIR element types and safetensors dtypes, and
// decodes TensorProto contents (raw_data or typed fields) into checked,
// little-endian bytes: rank, element count and byte size are validated
// against the import limits before any allocation.
//
//===----------------------------------------------------------------------===//
#include "OnnxInternal.h"

#include "rewire/Support/Shape.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"

#include <cstring>

using namespace mlir;
using namespace rewire;
using namespace rewire::onnx_import;

static_assert(llvm::endianness::native == llvm::endianness::little,
              "the importer writes host-order bytes as little-endian");

Type rewire::onnx_import::elementTypeOf(MLIRContext *ctx, int32_t dtype) {
  Builder b(ctx);
  switch (dtype) {
  case onnx::TensorProto::FLOAT:
    return b.getF32Type();
  case onnx::TensorProto::DOUBLE:
    return b.getF64Type();
  case onnx::TensorProto::FLOAT16:
    return b.getF16Type();
  case onnx::TensorProto::BFLOAT16:
    return b.getBF16Type();
  case onnx::TensorProto::INT64:
    return b.getI64Type();
  case onnx::TensorProto::INT32:
    return b.getI32Type();
  case onnx::TensorProto::INT16:
    return b.getI16Type();
  case onnx::TensorProto::INT8:
    return b.getI8Type();
  case onnx::TensorProto::UINT8:
    return IntegerType::get(ctx, 8, IntegerType::Unsigned);
  case onnx::TensorProto::UINT16:
    return IntegerType::get(ctx, 16, IntegerType::Unsigned);
  case onnx::TensorProto::UINT32:
    return IntegerType::get(ctx, 32, IntegerType::Unsigned);
  case onnx::TensorProto::UINT64:
    return IntegerType::get(ctx, 64, IntegerType::Unsigned);
  case onnx::TensorProto::BOOL:
    return b.getI1Type();
  default:
    return {};
  }
}

std::string rewire::onnx_import::safetensorsDtypeOf(int32_t dtype) {
  switch (dtype) {
  case onnx::TensorProto::FLOAT:
    return "F32";
  case onnx::TensorProto::DOUBLE:
    return "F64";
  case onnx::TensorProto::FLOAT16:
    return "F16";
  case onnx::TensorProto::BFLOAT16:
    return "BF16";
  case onnx::TensorProto::INT64:
    return "I64";
  case onnx::TensorProto::INT32:
    return "I32";
  case onnx::TensorProto::INT16:
    return "I16";
  case onnx::TensorProto::INT8:
    return "I8";
  case onnx::TensorProto::UINT8:
    return "U8";
  case onnx::TensorProto::UINT16:
    return "U16";
  case onnx::TensorProto::UINT32:
    return "U32";
  case onnx::TensorProto::UINT64:
    return "U64";
  case onnx::TensorProto::BOOL:
    return "BOOL";
  default:
    return "";
  }
}

static size_t byteWidth(Type elt) {
  if (elt.isInteger(1))
    return 1;
  return (elt.getIntOrFloatBitWidth() + 7) / 8;
}

/// Appends `count` values from a repeated field, narrowed to `width` bytes.
template <typename Field>
static void appendNarrowed(const Field &field, size_t width, std::string &out) {
  for (auto v : field) {
    uint64_t bits;
    if constexpr (std::is_floating_point_v<std::decay_t<decltype(v)>>) {
      if (width == 4) {
        float f = static_cast<float>(v);
        uint32_t u;
        std::memcpy(&u, &f, 4);
        bits = u;
      } else {
        double d = static_cast<double>(v);
        std::memcpy(&bits, &d, 8);
      }
    } else {
      bits = static_cast<uint64_t>(v);
    }
    char buf[8];
    std::memcpy(buf, &bits, 8);
    out.append(buf, width);
  }
}

FailureOr<DecodedTensor>
rewire::onnx_import::decodeTensor(const onnx::TensorProto &t,
                                  const ImportLimits &limits,
                                  StringRef modelDir, Location loc) {
  std::string name = t.has_name() ? t.name() : "<unnamed>";
  Type elt = elementTypeOf(loc.getContext(), t.data_type());
  if (!elt)
    return emitError(loc) << "tensor '" << name << "' has data type "
                          << t.data_type()
                          << ", which Rewire does not support (strings, "
                             "complex and float8 types are not)";
  if (t.dims_size() > limits.maxRank)
    return emitError(loc) << "tensor '" << name << "' has rank "
                          << t.dims_size() << ", over the limit of "
                          << limits.maxRank << " (--max-rank)";
  std::vector<int64_t> shape(t.dims().begin(), t.dims().end());
  for (int64_t d : shape)
    if (d < 0)
      return emitError(loc) << "tensor '" << name
                            << "' has a negative dimension " << d;
  auto numel = checkedNumElements(shape, limits.maxTensorElements);
  if (!numel)
    return emitError(loc) << "tensor '" << name
                          << "' has more elements than the limit of "
                          << limits.maxTensorElements
                          << " (--max-tensor-elements)";
  size_t width = byteWidth(elt);
  DecodedTensor out;
  out.type = RankedTensorType::get(shape, elt);
  size_t want = static_cast<size_t>(*numel) * width;
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    if (failed(readExternalData(t, modelDir, want, loc, out.bytes)))
      return failure();
    return out;
  }
  if (t.has_raw_data()) {
    if (t.raw_data().size() != want)
      return emitError(loc) << "tensor '" << name << "' has "
                            << t.raw_data().size()
                            << " bytes of raw data, its shape and type need "
                            << want;
    out.bytes = t.raw_data();
    return out;
  }
  out.bytes.reserve(want);
  int64_t count;
  switch (t.data_type()) {
  case onnx::TensorProto::FLOAT:
    count = t.float_data_size();
    appendNarrowed(t.float_data(), 4, out.bytes);
    break;
  case onnx::TensorProto::DOUBLE:
    count = t.double_data_size();
    appendNarrowed(t.double_data(), 8, out.bytes);
    break;
  case onnx::TensorProto::INT64:
    count = t.int64_data_size();
    appendNarrowed(t.int64_data(), 8, out.bytes);
    break;
  case onnx::TensorProto::UINT32:
  case onnx::TensorProto::UINT64:
    count = t.uint64_data_size();
    appendNarrowed(t.uint64_data(), width, out.bytes);
    break;
  default: // int32_data carries every type of 32 bits or fewer
    count = t.int32_data_size();
    appendNarrowed(t.int32_data(), width, out.bytes);
    break;
  }
  if (count != *numel)
    return emitError(loc) << "tensor '" << name << "' has " << count
                          << " values, its shape needs " << *numel;
  return out;
}

DenseElementsAttr rewire::onnx_import::toElementsAttr(const DecodedTensor &t) {
  if (t.type.getElementType().isInteger(1)) {
    SmallVector<bool> bits;
    for (char c : t.bytes)
      bits.push_back(c != 0);
    return DenseElementsAttr::get(t.type, bits);
  }
  return DenseElementsAttr::getFromRawBuffer(
      t.type, ArrayRef<char>(t.bytes.data(), t.bytes.size()));
}
