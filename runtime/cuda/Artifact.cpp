//===- Artifact.cpp - Read and validate a CUDA artifact -------------------===//
#include "rewire/Support/ReadFile.h"
#include "Artifact.h"

#include "../ArtifactMetadata.h"
#include "rewire/Support/CudaArtifact.h"
#include "rewire/Support/Json.h"

#include <cstring>
#include <fstream>
#include <sstream>

namespace rewire::runtime::cuda {

namespace {

constexpr uint16_t kElfMachineCuda = 190;

std::optional<std::string> checkImage(const Image &image) {
  if (image.cubin) {
    const auto *p = reinterpret_cast<const unsigned char *>(image.data);
    if (image.size < 64 || std::memcmp(p, "\x7f" "ELF", 4) != 0 || p[4] != 2 /*64-bit*/)
      return std::string("its cubin is not a 64-bit ELF file");
    uint16_t machine;
    std::memcpy(&machine, p + 18, 2);
    if (machine != kElfMachineCuda)
      return "its cubin is an ELF file for machine " + std::to_string(machine) +
             ", not CUDA (" + std::to_string(kElfMachineCuda) + ")";
    return std::nullopt;
  }
  if (image.size < 2 || image.data[image.size] != '\0')
    return std::string("its PTX is not NUL-terminated");
  for (size_t i = 0; i < image.size; ++i) {
    unsigned char c = image.data[i];
    if (c >= 0x80 || (c < 0x20 && c != '\n' && c != '\t' && c != '\r'))
      return "its PTX holds a non-text byte at offset " + std::to_string(i);
  }
  std::string_view text(image.data, image.size);
  if (text.find(".version") == std::string_view::npos ||
      text.find(".target") == std::string_view::npos)
    return std::string("its PTX lacks .version or .target");
  return std::nullopt;
}

std::optional<int64_t> integer(const JsonValue &o, const char *key, int64_t lo, int64_t hi) {
  const JsonValue *v = o.get(key);
  if (!v)
    return std::nullopt;
  auto i = v->asInt();
  if (!i || *i < lo || *i > hi)
    return std::nullopt;
  return i;
}

constexpr int64_t kMaxBytes = int64_t(1) << 46;

std::optional<std::string> readFunction(const JsonValue &f, const Artifact &a, Function &out) {
  const JsonValue *name = f.get("name");
  if (!name || !name->isString())
    return std::string("a function lacks its name");
  out.info.name = name->text;
  std::string where = "function '" + out.info.name + "'";
  for (auto [key, list] : {std::pair{"inputs", &out.info.inputs},
                           std::pair{"parameters", &out.info.parameters},
                           std::pair{"outputs", &out.info.outputs}}) {
    const JsonValue *arr = f.get(key);
    if (!arr || !arr->isArray())
      return where + " lacks " + key;
    for (const JsonValue &v : arr->array) {
      TensorInfo t;
      if (auto err = parseTensorSpec(v, where + " " + key, t))
        return err;
      list->push_back(std::move(t));
    }
  }
  if (const JsonValue *checks = f.get("input_checks"))
    if (auto err = parseInputChecks(*checks, where, out.info.inputs, out.inputChecks))
      return err;
  auto arena = integer(f, "arena", 0, kMaxBytes);
  const JsonValue *buffers = f.get("buffers"), *steps = f.get("steps"), *results = f.get("results");
  if (!arena || !buffers || !buffers->isArray() || !steps || !steps->isArray() || !results ||
      !results->isArray())
    return where + " lacks arena, buffers, steps or results";
  out.arena = *arena;
  for (const JsonValue &b : buffers->array) {
    const JsonValue *kind = b.get("kind");
    auto bytes = integer(b, "bytes", 0, kMaxBytes);
    if (!kind || !kind->isString() || !bytes)
      return where + ": a buffer lacks kind or bytes";
    BufferDesc d;
    d.bytes = *bytes;
    std::string k = kind->text;
    if (k == "input" || k == "parameter") {
      d.kind = k == "input" ? BufferDesc::Kind::input : BufferDesc::Kind::parameter;
      const auto &specs = k == "input" ? out.info.inputs : out.info.parameters;
      auto index = integer(b, "index", 0, static_cast<int64_t>(specs.size()) - 1);
      if (!index || specs[*index].byteSize() != d.bytes)
        return where + ": " + k + " buffer does not match its declared tensor";
      d.index = *index;
    } else if (k == "temp" || k == "constant") {
      d.kind = k == "temp" ? BufferDesc::Kind::temp : BufferDesc::Kind::constant;
      auto offset = integer(b, "offset", 0, kMaxBytes);
      int64_t limit = k == "temp" ? out.arena : static_cast<int64_t>(a.blobSize);
      if (!offset || *offset + d.bytes > limit)
        return where + ": a " + k + " buffer lies outside its " +
               (k == "temp" ? "arena" : "blob");
      d.offset = *offset;
    } else {
      return where + ": unknown buffer kind '" + k + "'";
    }
    out.buffers.push_back(d);
  }
  auto bufferId = [&](const JsonValue &o, const char *key) -> int {
    auto v = integer(o, key, 0, static_cast<int64_t>(out.buffers.size()) - 1);
    return v ? static_cast<int>(*v) : -1;
  };
  for (const JsonValue &s : steps->array) {
    const JsonValue *op = s.get("op");
    if (!op || !op->isString())
      return where + ": a step lacks op";
    Step st;
    if (op->text == "launch") {
      st.kind = Step::Kind::launch;
      auto kernel = integer(s, "kernel", 0, static_cast<int64_t>(a.kernels.size()) - 1);
      const JsonValue *grid = s.get("grid"), *block = s.get("block"), *args = s.get("args"),
                      *extents = s.get("extents");
      if (!kernel || !grid || !grid->isArray() || grid->array.size() != 3 || !block ||
          !block->isArray() || block->array.size() != 3 || !args || !args->isArray() ||
          !extents || !extents->isArray() || extents->array.size() != args->array.size())
        return where + ": a launch lacks kernel, grid, block, args or extents";
      st.kernel = static_cast<int>(*kernel);
      int64_t threads = 1;
      for (int i = 0; i < 3; ++i) {
        auto g = grid->array[i].asInt(), b = block->array[i].asInt();
        if (!g || *g < 1 || *g > 0x7fffffff || !b || *b < 1 || *b > 1024)
          return where + ": a launch has an invalid grid or block";
        st.grid[i] = static_cast<unsigned>(*g);
        st.block[i] = static_cast<unsigned>(*b);
        threads *= *b;
      }
      if (threads > 1024)
        return where + ": a launch asks for more than 1024 threads per block";
      for (size_t i = 0; i < args->array.size(); ++i) {
        auto id = args->array[i].asInt();
        auto need = extents->array[i].asInt();
        if (!id || *id < 0 || *id >= static_cast<int64_t>(out.buffers.size()) || !need ||
            *need < 0 || *need > out.buffers[*id].bytes)
          return where + ": launch of '" + a.kernels[st.kernel] +
                 "' reaches past the end of buffer argument " + std::to_string(i);
        st.args.push_back(static_cast<int>(*id));
        st.extents.push_back(*need);
      }
    } else if (op->text == "gemm") {
      st.kind = Step::Kind::gemm;
      st.a = bufferId(s, "a"), st.b = bufferId(s, "b"), st.c = bufferId(s, "c");
      int64_t *fields[] = {&st.m, &st.n, &st.k, &st.lda, &st.ldb, &st.ldc, &st.oa,
                           &st.ob, &st.oc, &st.batch, &st.sa, &st.sb, &st.sc};
      const char *names[] = {"m", "n", "k", "lda", "ldb", "ldc", "oa",
                             "ob", "oc", "batch", "sa", "sb", "sc"};
      for (int i = 0; i < 13; ++i) {
        auto v = integer(s, names[i], 0, int64_t(1) << 40);
        if (!v)
          return where + ": a gemm lacks or has an invalid '" + names[i] + "'";
        *fields[i] = *v;
      }
      auto ta = integer(s, "ta", 0, 1), tb = integer(s, "tb", 0, 1);
      if (st.a < 0 || st.b < 0 || st.c < 0 || !ta || !tb || st.m > 0x7fffffff ||
          st.n > 0x7fffffff || st.k > 0x7fffffff || st.batch < 1 || st.batch > 0x7fffffff)
        return where + ": a gemm has invalid operands";
      st.ta = *ta, st.tb = *tb;
      if (s.get("beta")) {
        auto beta = integer(s, "beta", 0, 1);
        if (!beta)
          return where + ": a gemm's beta is neither 0 nor 1";
        st.beta = static_cast<float>(*beta);
      }
      // The last element each operand reaches must lie in its buffer.
      auto fits = [&](int buf, int64_t offset, int64_t rows, int64_t cols, int64_t ld,
                      int64_t stride) {
        if (rows == 0 || cols == 0)
          return true;
        if (ld < cols)
          return false;
        int64_t last = offset + (st.batch - 1) * stride + (rows - 1) * ld + cols - 1;
        return (last + 1) * 4 <= out.buffers[buf].bytes;
      };
      if (!fits(st.a, st.oa, st.ta ? st.k : st.m, st.ta ? st.m : st.k, st.lda, st.sa) ||
          !fits(st.b, st.ob, st.tb ? st.n : st.k, st.tb ? st.k : st.n, st.ldb, st.sb) ||
          !fits(st.c, st.oc, st.m, st.n, st.ldc, st.sc))
        return where + ": a gemm reaches past the end of an operand";
    } else {
      return where + ": unknown step '" + op->text + "'";
    }
    out.steps.push_back(std::move(st));
  }
  if (results->array.size() != out.info.outputs.size())
    return where + ": results do not match its outputs";
  for (size_t i = 0; i < results->array.size(); ++i) {
    const JsonValue &r = results->array[i];
    int buf = bufferId(r, "buffer");
    auto offset = integer(r, "offset", 0, kMaxBytes);
    if (buf < 0 || !offset || *offset + out.info.outputs[i].byteSize() > out.buffers[buf].bytes)
      return where + ": result " + std::to_string(i) + " lies outside its buffer";
    out.results.emplace_back(buf, *offset);
  }
  return std::nullopt;
}

} // namespace

std::optional<std::string> readArtifact(const std::string &path, Artifact &a) {
  std::string bytes;
  if (auto err = readRegularFile(path, bytes))
    return err;
  return readArtifactBytes(std::move(bytes), path, a);
}

std::optional<std::string> readArtifactBytes(std::string bytes, const std::string &path,
                                             Artifact &a) {
  a.file = std::move(bytes);
  rewire::cuda::Header h;
  if (a.file.size() < sizeof(rewire::cuda::kMagic) ||
      std::memcmp(a.file.data(), rewire::cuda::kMagic, sizeof(rewire::cuda::kMagic)) != 0)
    return "'" + path + "' is not a CUDA artifact (compile with rewire-compile --target=cuda)";
  if (a.file.size() < sizeof(h))
    return "'" + path + "' is truncated (" + std::to_string(a.file.size()) +
           " bytes, shorter than the header)";
  std::memcpy(&h, a.file.data(), sizeof(h));
  if (h.version != rewire::cuda::kFormatVersion)
    return "'" + path + "' has CUDA artifact format " + std::to_string(h.version) +
           ", this runtime reads format " + std::to_string(rewire::cuda::kFormatVersion) +
           "; recompile it with this version's rewire-compile";
  uint64_t size = a.file.size();
  if (h.metadataSize > size - sizeof(h) || h.blobOffset < sizeof(h) + h.metadataSize ||
      h.blobOffset > size || h.blobSize > size - h.blobOffset)
    return "'" + path + "' is truncated or corrupt (its sizes exceed the file)";
  a.blob = a.file.data() + h.blobOffset;
  a.blobSize = h.blobSize;
  a.metadata = a.file.substr(sizeof(h), h.metadataSize);
  JsonValue root;
  if (auto err = parseJson(a.metadata, root))
    return "'" + path + "': invalid metadata: " + *err;
  const JsonValue *format = root.get("format"), *chip = root.get("chip"),
                  *params = root.get("parameters_file"), *images = root.get("images"),
                  *kernels = root.get("kernels"), *functions = root.get("functions");
  if (!format || !format->isString() || format->text != "rewire-cuda" || !chip ||
      !chip->isString() || !params || !params->isString() || !images || !images->isArray() ||
      !kernels || !kernels->isArray() || !functions || !functions->isArray())
    return "'" + path + "': metadata lacks format, chip, parameters_file, images, kernels or "
                        "functions";
  a.chip = chip->text;
  a.parametersFile = params->text;
  for (const JsonValue &k : kernels->array) {
    if (!k.isString() || k.text.empty())
      return "'" + path + "': a kernel name is not a string";
    a.kernels.push_back(k.text);
  }
  for (const JsonValue &i : images->array) {
    const JsonValue *format = i.get("format");
    auto offset = integer(i, "offset", 0, static_cast<int64_t>(a.blobSize));
    auto bytes = integer(i, "size", 0, static_cast<int64_t>(a.blobSize));
    if (!format || !format->isString() || (format->text != "cubin" && format->text != "ptx") ||
        !offset || !bytes)
      return "'" + path + "': an image lacks format (cubin or ptx), offset or size";
    Image image;
    image.cubin = format->text == "cubin";
    // PTX is followed by its NUL terminator in the blob.
    if (*offset + *bytes + (image.cubin ? 0 : 1) > static_cast<int64_t>(a.blobSize))
      return "'" + path + "': an image lies outside the blob";
    image.data = a.blob + *offset;
    image.size = static_cast<size_t>(*bytes);
    if (auto err = checkImage(image))
      return "'" + path + "': an image is invalid: " + *err;
    a.images.push_back(image);
  }
  if (!a.kernels.empty() && a.images.empty())
    return "'" + path + "' launches kernels but carries no image";
  for (const JsonValue &f : functions->array) {
    Function fn;
    if (auto err = readFunction(f, a, fn))
      return "'" + path + "': " + *err;
    a.functions.push_back(std::move(fn));
  }
  return std::nullopt;
}

} // namespace rewire::runtime::cuda
