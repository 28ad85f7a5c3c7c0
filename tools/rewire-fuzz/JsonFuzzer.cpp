//===- JsonFuzzer.cpp - libFuzzer target: JSON (checkpoint state, metadata) ===//
//
// rewire-train --resume reads state.json; the runtime reads each artifact's
// metadata and safetensors headers with the same parser. Any crash,
// sanitizer report or stack overflow on deep nesting is a bug.
//
//===----------------------------------------------------------------------===//
#include "rewire/Support/Json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  rewire::JsonValue v;
  if (rewire::parseJson(text, v))
    return 0;
  // What rewire-train --resume reads from a parsed state.
  if (const rewire::JsonValue *step = v.get("step"))
    (void)step->asInt();
  if (const rewire::JsonValue *p = v.get("parameters"))
    (void)p->isString();
  return 0;
}
