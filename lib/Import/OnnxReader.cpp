//===- OnnxReader.cpp - Bounded reading of untrusted ONNX files -----------===//
//
// Reads a model file with its size checked before anything is parsed, and
// parses it with protobuf's total-bytes and recursion limits set explicitly
// (not left at library defaults), so a hostile file fails with one message
// instead of exhausting memory or the stack.
//
//===----------------------------------------------------------------------===//
#include "OnnxInternal.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/stubs/logging.h>

using namespace mlir;
using namespace rewire::onnx_import;

LogicalResult rewire::onnx_import::readModel(StringRef path,
                                             const ImportLimits &limits,
                                             Location loc,
                                             onnx::ModelProto &model,
                                             ImportStatus &status) {
  // Protobuf would print its own parse errors to stderr; ours say more.
  google::protobuf::SetLogHandler(nullptr);

  llvm::sys::fs::file_status st;
  if (std::error_code ec = llvm::sys::fs::status(path, st)) {
    status = ImportStatus::io;
    return emitError(loc) << "cannot read model file '" << path
                          << "': " << ec.message();
  }
  if (st.type() != llvm::sys::fs::file_type::regular_file) {
    status = ImportStatus::io;
    return emitError(loc) << "model path '" << path
                          << "' is not a regular file";
  }
  int64_t cap = std::min<int64_t>(limits.maxFileBytes, INT32_MAX);
  if (static_cast<int64_t>(st.getSize()) > cap) {
    status = ImportStatus::invalid;
    return emitError(loc) << "model file is " << st.getSize()
                          << " bytes, over the limit of " << cap
                          << " (--max-file-bytes; protobuf cannot parse more "
                             "than 2 GiB: keep weights in external data)";
  }
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer) {
    status = ImportStatus::io;
    return emitError(loc) << "cannot read model file '" << path
                          << "': " << buffer.getError().message();
  }
  return parseModel((*buffer)->getBuffer(), path, limits, loc, model, status);
}

LogicalResult rewire::onnx_import::parseModel(StringRef bytes, StringRef name,
                                              const ImportLimits &limits,
                                              Location loc,
                                              onnx::ModelProto &model,
                                              ImportStatus &status) {
  google::protobuf::SetLogHandler(nullptr);
  int64_t cap = std::min<int64_t>(limits.maxFileBytes, INT32_MAX);
  if (static_cast<int64_t>(bytes.size()) > cap) {
    status = ImportStatus::invalid;
    return emitError(loc) << "model is " << bytes.size()
                          << " bytes, over the limit of " << cap
                          << " (--max-file-bytes)";
  }
  google::protobuf::io::CodedInputStream stream(
      reinterpret_cast<const uint8_t *>(bytes.data()),
      static_cast<int>(bytes.size()));
  stream.SetTotalBytesLimit(static_cast<int>(cap));
  stream.SetRecursionLimit(static_cast<int>(limits.maxRecursionDepth));
  if (!model.ParseFromCodedStream(&stream) ||
      !stream.ConsumedEntireMessage()) {
    status = ImportStatus::invalid;
    return emitError(loc) << "'" << name
                          << "' is not a valid ONNX model: the protobuf is "
                             "truncated, corrupt, or nested deeper than "
                          << limits.maxRecursionDepth
                          << " (--max-recursion-depth)";
  }
  if (!model.has_graph()) {
    status = ImportStatus::invalid;
    return emitError(loc) << "'" << name
                          << "' is not a valid ONNX model: it has no graph";
  }
  return success();
}
