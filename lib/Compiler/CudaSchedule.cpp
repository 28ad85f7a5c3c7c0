//===- CudaSchedule.cpp - The host schedule of a CUDA artifact as data ----===//
//
// After rewire-kernels-to-gpu an entry point's body is straight-line host
// code: allocations, views, kernel launches and f32 contractions (cuBLAS).
// This file turns it into data (docs/cuda.md): buffers (inputs, parameters,
// constants, temporaries placed in one arena by liveness), steps (launch /
// gemm) and results, then writes the artifact with the kernel images.
//
//===----------------------------------------------------------------------===//
#include "rewire/Compiler/Compiler.h"
#include "rewire/Support/AtomicFile.h"
#include "rewire/Support/CudaArtifact.h"
#include "lib/Compiler/JsonText.h"
#include "passes/Conversion/Passes.h"
#include "rewire/Version.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>
#include <cstring>
#include <map>

using namespace mlir;
using namespace rewire::compiler;

namespace {

struct Buffer {
  std::string kind; ///< input, parameter, constant, temp
  int64_t index = -1;
  int64_t bytes = 0;
  int64_t offset = -1; ///< arena offset (temp) or blob offset (constant)
  int first = 0, last = -1;
};

int64_t align(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

/// Bytes per element on the device (i1 and index as the kernels store them).
int64_t elementBytes(MemRefType type) {
  Type e = type.getElementType();
  if (e.isIndex())
    return 8;
  if (!e.isIntOrFloat())
    return 0;
  return std::max<int64_t>(1, e.getIntOrFloatBitWidth() / 8);
}

struct Layout {
  SmallVector<int64_t> shape, strides;
  int64_t offset = 0;
  int64_t elemBytes = 4;
};

FailureOr<Layout> layoutOf(Operation *where, Value v) {
  auto type = dyn_cast<MemRefType>(v.getType());
  Layout l;
  if (!type || !type.hasStaticShape() ||
      failed(type.getStridesAndOffset(l.strides, l.offset)) || ShapedType::isDynamic(l.offset) ||
      llvm::any_of(l.strides, ShapedType::isDynamic))
    return where->emitError() << "rewire-compile: --target=cuda: a buffer of type " << v.getType()
                              << " has no static layout";
  l.shape.assign(type.getShape().begin(), type.getShape().end());
  l.elemBytes = elementBytes(type);
  return l;
}

class Scheduler {
public:
  Scheduler(func::FuncOp fn, const EntryPoint &entry, std::string &blob,
            std::map<std::string, int> &kernels)
      : fn(fn), entry(entry), blob(blob), kernels(kernels) {}
  LogicalResult run();
  /// The schedule as the metadata's function object.
  void json(llvm::json::OStream &json) const;

private:
  LogicalResult step(Operation *op);
  LogicalResult gemm(linalg::GenericOp op);
  LogicalResult constant(memref::GetGlobalOp op);
  int use(Value v) {
    int b = root.lookup(v);
    buffers[b].last = static_cast<int>(steps.size());
    return b;
  }
  void plan();

  func::FuncOp fn;
  const EntryPoint &entry;
  std::string &blob;
  std::map<std::string, int> &kernels;
  std::vector<Buffer> buffers;
  DenseMap<Value, int> root;
  std::vector<std::string> steps;
  std::vector<std::pair<int, int64_t>> results;
  int64_t arena = 0;
};

LogicalResult Scheduler::constant(memref::GetGlobalOp op) {
  auto global = SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(op, op.getNameAttr());
  auto dense = global ? dyn_cast_or_null<DenseElementsAttr>(global.getInitialValueAttr())
                      : DenseElementsAttr();
  if (!dense)
    return op.emitError("rewire-compile: --target=cuda: a global without a dense initial value");
  auto type = global.getType();
  int64_t n = type.getNumElements();
  int64_t elemBytes = elementBytes(type);
  std::string data;
  if (type.getElementType().isInteger(1)) {
    for (bool v : dense.getValues<bool>())
      data.push_back(v ? 1 : 0);
  } else {
    ArrayRef<char> raw = dense.getRawData();
    if (dense.isSplat())
      for (int64_t i = 0; i < n; ++i)
        data.append(raw.data(), raw.size());
    else
      data.assign(raw.data(), raw.size());
  }
  if (static_cast<int64_t>(data.size()) != n * elemBytes)
    return op.emitError("rewire-compile: --target=cuda: cannot lay out this constant");
  blob.resize(align(blob.size(), rewire::cuda::kBlobAlignment), '\0');
  Buffer b;
  b.kind = "constant";
  b.bytes = n * elemBytes;
  b.offset = blob.size();
  blob += data;
  root[op.getResult()] = buffers.size();
  buffers.push_back(b);
  return success();
}

LogicalResult Scheduler::gemm(linalg::GenericOp op) {
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  auto iters = op.getIteratorTypesArray();
  SmallVector<int64_t> loops = op.getStaticLoopRanges();
  if (llvm::count(iters, utils::IteratorType::reduction) != 1)
    return op.emitError("rewire-compile: --target=cuda: a contraction over several loops");
  unsigned k = llvm::find(iters, utils::IteratorType::reduction) - iters.begin();
  AffineMap om = maps[2];
  unsigned rank = om.getNumResults();
  unsigned m = om.getDimPosition(rank - 2), n = om.getDimPosition(rank - 1);
  SmallVector<unsigned> batch;
  for (unsigned i = 0; i + 2 < rank; ++i)
    batch.push_back(om.getDimPosition(i));
  Value ops[3] = {op.getDpsInputs()[0], op.getDpsInputs()[1], op.getDpsInits()[0]};
  Layout l[3];
  for (int i = 0; i < 3; ++i) {
    auto x = layoutOf(op, ops[i]);
    if (failed(x))
      return failure();
    l[i] = *x;
  }
  // The stride of loop dimension d in operand i (0 when not read).
  auto stride = [&](int i, unsigned d) -> int64_t {
    for (auto [pos, e] : llvm::enumerate(maps[i].getResults()))
      if (auto de = dyn_cast<AffineDimExpr>(e); de && de.getPosition() == d)
        return l[i].strides[pos];
    return 0;
  };
  int64_t M = loops[m], N = loops[n], K = loops[k];
  // Row-major operands: X (rows x cols) plain when its cols stride is 1,
  // transposed when its rows stride is; size-1 dimensions take any stride.
  auto matrix = [&](int i, unsigned r, unsigned c, int64_t rows, int64_t cols, bool &trans,
                    int64_t &ld) -> bool {
    int64_t sr = stride(i, r), sc = stride(i, c);
    if (sc == 1 || cols == 1) {
      trans = false;
      ld = rows == 1 ? std::max<int64_t>(cols, 1) : sr;
      return ld >= cols;
    }
    if (sr == 1 || rows == 1) {
      trans = true;
      ld = cols == 1 ? std::max<int64_t>(rows, 1) : sc;
      return ld >= rows;
    }
    return false;
  };
  bool ta, tb, tc;
  int64_t lda, ldb, ldc;
  if (!matrix(0, m, k, M, K, ta, lda) || !matrix(1, k, n, K, N, tb, ldb) ||
      !matrix(2, m, n, M, N, tc, ldc) || tc)
    return op.emitError("rewire-compile: --target=cuda: a contraction whose operands are not "
                        "row-major matrices with a unit inner stride");
  // Batch loops collapse into strided batches: runs of loops whose strides
  // nest (innermost first); the innermost run is one strided-batched GEMM,
  // and each index of the outer runs (a [B, H] batch of transposed heads
  // whose strides do not nest) gets a GEMM of its own at its offsets.
  struct Run {
    int64_t count = 1, sa = 0, sb = 0, sc = 0;
  };
  SmallVector<Run> runs;
  for (int i = static_cast<int>(batch.size()) - 1; i >= 0; --i) {
    unsigned d = batch[i];
    if (loops[d] == 1)
      continue;
    int64_t st[3] = {stride(0, d), stride(1, d), stride(2, d)};
    if (!runs.empty()) {
      Run &r = runs.back();
      if (st[0] == r.sa * r.count && st[1] == r.sb * r.count && st[2] == r.sc * r.count) {
        r.count *= loops[d];
        continue;
      }
    }
    runs.push_back({loops[d], st[0], st[1], st[2]});
  }
  Run inner = runs.empty() ? Run() : runs.front();
  int64_t outerCount = 1;
  for (size_t i = 1; i < runs.size(); ++i)
    outerCount *= runs[i].count;
  if (outerCount > 4096)
    return op.emitError("rewire-compile: --target=cuda: a contraction whose batch dimensions "
                        "need more than 4096 separate GEMMs (their strides do not nest)");
  // A broadcast B over a batch of row-major A and C is one taller GEMM.
  if (runs.size() <= 1 && inner.count > 1 && inner.sb == 0 && !ta && inner.sa == M * lda &&
      inner.sc == M * ldc) {
    M *= inner.count;
    inner = Run();
  }
  int a = use(ops[0]), b = use(ops[1]), c = use(ops[2]);
  for (int64_t flat = 0; flat < outerCount; ++flat) {
    int64_t oa = l[0].offset, ob = l[1].offset, oc = l[2].offset;
    for (size_t i = 1, rem = flat; i < runs.size(); ++i) {
      int64_t j = rem % runs[i].count;
      rem /= runs[i].count;
      oa += j * runs[i].sa;
      ob += j * runs[i].sb;
      oc += j * runs[i].sc;
    }
    steps.push_back(jsonText([&](llvm::json::OStream &json) {
      json.object([&] {
        json.attribute("op", "gemm");
        for (auto [key, value] :
             {std::pair<const char *, int64_t>{"a", a}, {"b", b}, {"c", c}, {"ta", ta},
              {"tb", tb}, {"m", M}, {"n", N}, {"k", K}, {"lda", lda}, {"ldb", ldb},
              {"ldc", ldc}, {"oa", oa}, {"ob", ob}, {"oc", oc}, {"batch", inner.count},
              {"sa", inner.sa}, {"sb", inner.sb}, {"sc", inner.sc}})
          json.attribute(key, value);
        json.attribute("beta", op->hasAttr(rewire::kBetaZeroAttrName) ? 0 : 1);
      });
    }));
  }
  return success();
}

LogicalResult Scheduler::step(Operation *op) {
  if (op->hasTrait<OpTrait::ConstantLike>() || isa<memref::DeallocOp>(op))
    return success();
  if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
    auto type = alloc.getType();
    if (!type.hasStaticShape() || elementBytes(type) == 0)
      return alloc.emitError("rewire-compile: --target=cuda: an allocation that is not "
                             "statically sized with integer or float elements");
    Buffer b;
    b.kind = "temp";
    b.bytes = std::max<int64_t>(1, type.getNumElements() * elementBytes(type));
    b.first = steps.size();
    b.last = steps.size();
    root[alloc.getResult()] = buffers.size();
    buffers.push_back(b);
    return success();
  }
  if (auto global = dyn_cast<memref::GetGlobalOp>(op)) {
    // Index vectors only give memref.reshape its (static) result shape.
    if (global.getType().getElementType().isIndex())
      return success();
    return constant(global);
  }
  if (auto reshape = dyn_cast<memref::ReshapeOp>(op)) {
    Value src = reshape.getSource();
    if (!root.count(src) || !reshape.getType().hasStaticShape())
      return op->emitError("rewire-compile: --target=cuda: a reshape of an unknown buffer");
    root[reshape.getResult()] = root.lookup(src);
    return success();
  }
  if (isa<memref::SubViewOp, memref::ExpandShapeOp, memref::CollapseShapeOp, memref::CastOp,
          memref::ReinterpretCastOp>(op)) {
    Value src = op->getOperand(0);
    if (!root.count(src))
      return op->emitError("rewire-compile: --target=cuda: a view of an unknown buffer");
    root[op->getResult(0)] = root.lookup(src);
    return success();
  }
  if (auto launch = dyn_cast<gpu::LaunchFuncOp>(op)) {
    auto dims = [&](gpu::KernelDim3 d, SmallVector<int64_t, 3> &out) -> bool {
      for (Value v : {d.x, d.y, d.z}) {
        std::optional<int64_t> c = getConstantIntValue(v);
        if (!c || *c < 1)
          return false;
        out.push_back(*c);
      }
      return true;
    };
    SmallVector<int64_t, 3> grid, block;
    if (!dims(launch.getGridSizeOperandValues(), grid) ||
        !dims(launch.getBlockSizeOperandValues(), block))
      return launch.emitError("rewire-compile: --target=cuda: a launch of dynamic geometry");
    std::string name = launch.getKernelName().str();
    int kernel = kernels.try_emplace(name, static_cast<int>(kernels.size())).first->second;
    // Each operand's extent (bytes from the buffer's base the kernel may
    // touch), for the runtime to check against the buffer.
    SmallVector<int64_t> args, need;
    for (Value v : launch.getKernelOperands()) {
      if (!root.count(v))
        return launch.emitError("rewire-compile: --target=cuda: a kernel operand that is not a buffer");
      auto l = layoutOf(op, v);
      if (failed(l))
        return failure();
      int64_t last = l->offset;
      for (auto [size, stride] : llvm::zip(l->shape, l->strides))
        last += (size - 1) * stride;
      args.push_back(use(v));
      need.push_back((last + 1) * l->elemBytes);
    }
    steps.push_back(jsonText([&](llvm::json::OStream &json) {
      json.object([&] {
        json.attribute("op", "launch");
        json.attribute("kernel", kernel);
        for (const auto &entry : {std::pair<const char *, ArrayRef<int64_t>>{"grid", grid},
                                  {"block", block}, {"args", args}, {"extents", need}})
          json.attributeArray(entry.first, [&] {
            for (int64_t x : entry.second)
              json.value(x);
          });
      });
    }));
    return success();
  }
  if (auto generic = dyn_cast<linalg::GenericOp>(op))
    return gemm(generic);
  if (auto ret = dyn_cast<func::ReturnOp>(op)) {
    for (Value v : ret.getOperands()) {
      if (!root.count(v))
        return ret.emitError("rewire-compile: --target=cuda: a result that is not a buffer");
      auto l = layoutOf(op, v);
      if (failed(l))
        return failure();
      int64_t expect = 1;
      for (int i = static_cast<int>(l->shape.size()) - 1; i >= 0; --i) {
        if (l->shape[i] != 1 && l->strides[i] != expect)
          return ret.emitError("rewire-compile: --target=cuda: a result that is a "
                               "non-contiguous view");
        expect *= l->shape[i];
      }
      int b = root.lookup(v);
      buffers[b].last = std::numeric_limits<int>::max();
      results.emplace_back(b, l->offset * l->elemBytes);
    }
    return success();
  }
  std::string what = "'" + op->getName().getStringRef().str() + "'";
  if (isa<scf::ForOp>(op))
    what += " (a loop over positions: nn.scatter_add, the gradient of a gather/embedding)";
  return op->emitError() << "rewire-compile: --target=cuda cannot run " << what
                         << " on the host schedule of '" << fn.getSymName()
                         << "' yet; compile with --target=cpu";
}

void Scheduler::plan() {
  // Temporaries by decreasing size, each at the lowest offset free over
  // its lifetime (steps first..last).
  std::vector<int> order;
  for (size_t i = 0; i < buffers.size(); ++i)
    if (buffers[i].kind == "temp")
      order.push_back(i);
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    return buffers[a].bytes != buffers[b].bytes ? buffers[a].bytes > buffers[b].bytes : a < b;
  });
  std::vector<int> placed;
  for (int i : order) {
    Buffer &b = buffers[i];
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (int j : placed) {
      const Buffer &o = buffers[j];
      if (o.first <= b.last && b.first <= o.last)
        busy.emplace_back(o.offset, o.offset + align(o.bytes, rewire::cuda::kBufferAlignment));
    }
    std::sort(busy.begin(), busy.end());
    int64_t at = 0;
    for (auto [s, e] : busy) {
      if (at + b.bytes <= s)
        break;
      at = std::max(at, e);
    }
    b.offset = at;
    arena = std::max(arena, align(at + b.bytes, rewire::cuda::kBufferAlignment));
    placed.push_back(i);
  }
}

LogicalResult Scheduler::run() {
  Block &body = fn.getBody().front();
  size_t expected = entry.inputs.size() + entry.parameters.size();
  if (body.getNumArguments() != expected)
    return fn.emitError("rewire-compile: --target=cuda: internal: arguments do not match the entry point");
  for (BlockArgument arg : body.getArguments()) {
    Buffer b;
    unsigned i = arg.getArgNumber();
    bool input = i < entry.inputs.size();
    const TensorSpec &spec = input ? entry.inputs[i] : entry.parameters[i - entry.inputs.size()];
    b.kind = input ? "input" : "parameter";
    b.index = input ? i : i - entry.inputs.size();
    auto type = dyn_cast<MemRefType>(arg.getType());
    if (!type || elementBytes(type) == 0)
      return fn.emitError("rewire-compile: --target=cuda: an argument that is not a buffer of "
                          "integers or floats");
    b.bytes = type.getNumElements() * elementBytes(type);
    (void)spec;
    root[arg] = buffers.size();
    buffers.push_back(b);
  }
  for (Operation &op : body)
    if (failed(step(&op)))
      return failure();
  if (results.size() != entry.outputs.size())
    return fn.emitError("rewire-compile: --target=cuda: internal: results do not match the entry point");
  plan();
  return success();
}

void Scheduler::json(llvm::json::OStream &json) const {
  json.object([&] {
    json.attribute("name", entry.name);
    writeSignature(json, entry);
    // Checks of input values the kernels cannot make (rewire-check-indices
    // record-inputs): the runtime applies them to the host inputs.
    json.attributeArray("input_checks", [&] {
      for (const InputCheck &c : entry.inputChecks) {
        auto it = std::find_if(entry.inputs.begin(), entry.inputs.end(),
                               [&](const TensorSpec &t) { return t.name == c.input; });
        if (it == entry.inputs.end())
          continue;
        json.object([&] {
          json.attribute("input", static_cast<int64_t>(it - entry.inputs.begin()));
          json.attribute("what", c.what);
          json.attribute("lo", c.lo);
          json.attribute("hi", c.hi);
          if (c.also)
            json.attribute("also", *c.also);
          json.attribute("nonzero", c.nonzero);
        });
      }
    });
    json.attribute("arena", arena);
    json.attributeArray("buffers", [&] {
      for (const Buffer &b : buffers)
        json.object([&] {
          json.attribute("kind", b.kind);
          json.attribute("bytes", b.bytes);
          if (b.index >= 0)
            json.attribute("index", b.index);
          if (b.offset >= 0)
            json.attribute("offset", b.offset);
        });
    });
    json.attributeArray("steps", [&] {
      for (const std::string &step : steps)
        json.rawValue(step);
    });
    json.attributeArray("results", [&] {
      for (const auto &result : results)
        json.object([&] {
          json.attribute("buffer", result.first);
          json.attribute("offset", result.second);
        });
    });
  });
}

} // namespace

LogicalResult rewire::compiler::writeCudaArtifact(ModuleOp module, const ModuleInfo &info,
                                                  const std::string &ptx,
                                                  const std::string &cubin,
                                                  const std::string &parametersFile,
                                                  const CompileOptions &options,
                                                  const std::string &outputPath) {
  std::string blob;
  std::map<std::string, int> kernels;
  std::vector<std::unique_ptr<Scheduler>> schedules;
  for (const EntryPoint &entry : info.entries) {
    auto fn = module.lookupSymbol<func::FuncOp>(entry.name);
    if (!fn)
      return module.emitError() << "rewire-compile: internal: no function '" << entry.name << "'";
    schedules.push_back(std::make_unique<Scheduler>(fn, entry, blob, kernels));
    if (failed(schedules.back()->run()))
      return failure();
  }
  struct Image {
    const char *format;
    size_t offset, size;
  };
  std::vector<Image> images;
  auto addImage = [&](const char *format, const std::string &data) {
    blob.resize(align(blob.size(), rewire::cuda::kBlobAlignment), '\0');
    images.push_back({format, blob.size(), data.size()});
    blob += data;
    if (std::string(format) == "ptx")
      blob.push_back('\0'); // the driver reads PTX as a C string
  };
  if (!cubin.empty())
    addImage("cubin", cubin);
  if (!ptx.empty())
    addImage("ptx", ptx);
  std::vector<std::string> names(kernels.size());
  for (auto &[name, index] : kernels)
    names[index] = name;
  std::string meta = jsonText([&](llvm::json::OStream &json) {
    json.object([&] {
      json.attribute("format", "rewire-cuda");
      json.attribute("version", rewire::cuda::kFormatVersion);
      json.attribute("compiler", std::string("rewire ") + REWIRE_VERSION_STRING);
      json.attribute("target", "cuda");
      json.attribute("chip", options.gpuChip);
      json.attribute("parameters_file", parametersFile);
      json.attributeArray("images", [&] {
        for (const Image &image : images)
          json.object([&] {
            json.attribute("format", image.format);
            json.attribute("offset", static_cast<int64_t>(image.offset));
            json.attribute("size", static_cast<int64_t>(image.size));
          });
      });
      json.attributeArray("kernels", [&] {
        for (const std::string &n : names)
          json.value(n);
      });
      json.attributeArray("functions", [&] {
        for (const auto &schedule : schedules)
          schedule->json(json);
      });
    });
  });
  rewire::cuda::Header header;
  std::memcpy(header.magic, rewire::cuda::kMagic, sizeof(header.magic));
  header.version = rewire::cuda::kFormatVersion;
  header.reserved = 0;
  header.metadataSize = meta.size();
  header.blobOffset = align(sizeof(header) + meta.size(), rewire::cuda::kBlobAlignment);
  header.blobSize = blob.size();
  std::string head(reinterpret_cast<const char *>(&header), sizeof(header));
  std::string pad(header.blobOffset - sizeof(header) - meta.size(), '\0');
  if (auto err = rewire::writeFileAtomically(outputPath, {&head, &meta, &pad, &blob}))
    return module.emitError() << "rewire-compile: " << *err;
  return success();
}
