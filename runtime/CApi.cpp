//===- CApi.cpp - C API of the Rewire runtime -----------------------------===//
#include "rewire/Runtime/rewire_runtime.h"
#include "rewire/Runtime/Runtime.h"

#include <cstring>

using namespace rewire;
using namespace rewire::runtime;

struct rewire_model {
  std::unique_ptr<Model> model;
  /// rewire_model_describe's text.
  std::string whatRuns;
};

namespace {
thread_local std::string lastError;

int32_t fail(const std::string &message) {
  lastError = message;
  return -1;
}

const FunctionInfo *functionAt(const rewire_model *m, int32_t f) {
  if (!m || f < 0 || static_cast<size_t>(f) >= m->model->functions().size()) {
    fail("invalid model or function index " + std::to_string(f));
    return nullptr;
  }
  return &m->model->functions()[static_cast<size_t>(f)];
}

void describe(const TensorInfo &t, rewire_tensor *out) {
  out->dtype = dtypeName(t.dtype);
  out->rank = static_cast<int32_t>(t.shape.size());
  out->shape = t.shape.data();
  out->data = nullptr;
}

std::optional<std::string> check(const TensorInfo &want, const rewire_tensor &have,
                                 const std::string &what) {
  if (!have.dtype || !parseDTypeName(have.dtype) || *parseDTypeName(have.dtype) != want.dtype ||
      have.rank < 0 || static_cast<size_t>(have.rank) != want.shape.size() ||
      (have.rank > 0 && !have.shape) ||
      !std::equal(want.shape.begin(), want.shape.end(), have.shape)) {
    std::string dtype = have.dtype ? have.dtype : "(no dtype)", got;
    if (have.rank < 0 || (have.rank > 0 && !have.shape)) {
      got = dtype + " of rank " + std::to_string(have.rank);
    } else {
      for (int32_t i = 0; i < have.rank; ++i)
        got += std::to_string(have.shape[i]) + "x";
      got += dtype;
    }
    return what + " ('" + want.name + "') must be " + want.typeString() + ", got " + got;
  }
  if (!have.data && want.byteSize() > 0)
    return what + " ('" + want.name + "') has no data";
  return std::nullopt;
}
} // namespace

extern "C" {

const char *rewire_last_error(void) { return lastError.c_str(); }

rewire_model *rewire_model_load(const char *artifact, const char *parameters) {
  if (!artifact) {
    fail("rewire_model_load: artifact path is NULL");
    return nullptr;
  }
  std::string error;
  auto model = Model::load(artifact, error, parameters ? parameters : "");
  if (!model) {
    fail(error);
    return nullptr;
  }
  std::string whatRuns = model->whatRuns();
  return new rewire_model{std::move(model), std::move(whatRuns)};
}

void rewire_model_free(rewire_model *model) { delete model; }

const char *rewire_model_describe(const rewire_model *model) {
  if (!model) {
    fail("rewire_model_describe: model is NULL");
    return nullptr;
  }
  return model->whatRuns.c_str();
}

int32_t rewire_function_count(const rewire_model *m) {
  return m ? static_cast<int32_t>(m->model->functions().size()) : fail("model is NULL");
}

const char *rewire_function_name(const rewire_model *m, int32_t f) {
  const FunctionInfo *fn = functionAt(m, f);
  return fn ? fn->name.c_str() : nullptr;
}

int32_t rewire_function_find(const rewire_model *m, const char *name) {
  if (!m || !name)
    return fail("model or name is NULL");
  const auto &fns = m->model->functions();
  for (size_t i = 0; i < fns.size(); ++i)
    if (fns[i].name == name)
      return static_cast<int32_t>(i);
  return fail(std::string("no function '") + name + "'");
}

int32_t rewire_function_num_inputs(const rewire_model *m, int32_t f) {
  const FunctionInfo *fn = functionAt(m, f);
  return fn ? static_cast<int32_t>(fn->inputs.size()) : -1;
}

int32_t rewire_function_num_outputs(const rewire_model *m, int32_t f) {
  const FunctionInfo *fn = functionAt(m, f);
  return fn ? static_cast<int32_t>(fn->outputs.size()) : -1;
}

int32_t rewire_function_input(const rewire_model *m, int32_t f, int32_t i, rewire_tensor *out) {
  const FunctionInfo *fn = functionAt(m, f);
  if (!fn || !out || i < 0 || static_cast<size_t>(i) >= fn->inputs.size())
    return fail("invalid input index " + std::to_string(i));
  describe(fn->inputs[static_cast<size_t>(i)], out);
  return 0;
}

int32_t rewire_function_output(const rewire_model *m, int32_t f, int32_t i, rewire_tensor *out) {
  const FunctionInfo *fn = functionAt(m, f);
  if (!fn || !out || i < 0 || static_cast<size_t>(i) >= fn->outputs.size())
    return fail("invalid output index " + std::to_string(i));
  describe(fn->outputs[static_cast<size_t>(i)], out);
  return 0;
}

/// rewire_model_run's checks, then the run unless `checkOnly`.
static int32_t checkAndRun(const rewire_model *m, int32_t f, int32_t numInputs,
                           const rewire_tensor *inputs, int32_t numOutputs,
                           const rewire_tensor *outputs, bool checkOnly) {
  const FunctionInfo *fn = functionAt(m, f);
  if (!fn)
    return -1;
  if (numInputs < 0 || static_cast<size_t>(numInputs) != fn->inputs.size() ||
      numOutputs < 0 || static_cast<size_t>(numOutputs) != fn->outputs.size())
    return fail("'" + fn->name + "' takes " + std::to_string(fn->inputs.size()) +
                " input(s) and " + std::to_string(fn->outputs.size()) + " output(s), got " +
                std::to_string(numInputs) + " and " + std::to_string(numOutputs));
  if ((numInputs && !inputs) || (numOutputs && !outputs))
    return fail("inputs or outputs array is NULL");
  std::vector<const void *> in;
  std::vector<void *> out;
  for (size_t i = 0; i < fn->inputs.size(); ++i) {
    if (auto err = check(fn->inputs[i], inputs[i], "input " + std::to_string(i)))
      return fail(*err);
    in.push_back(inputs[i].data);
  }
  for (size_t i = 0; i < fn->outputs.size(); ++i) {
    if (auto err = check(fn->outputs[i], outputs[i], "output " + std::to_string(i)))
      return fail(*err);
    out.push_back(outputs[i].data);
  }
  if (!checkOnly)
    if (auto err = m->model->runRaw(fn->name, in.data(), out.data()))
      return fail(*err);
  lastError.clear();
  return 0;
}

int32_t rewire_model_check(const rewire_model *m, int32_t f, int32_t numInputs,
                           const rewire_tensor *inputs, int32_t numOutputs,
                           const rewire_tensor *outputs) {
  return checkAndRun(m, f, numInputs, inputs, numOutputs, outputs, /*checkOnly=*/true);
}

int32_t rewire_model_run(const rewire_model *m, int32_t f, int32_t numInputs,
                         const rewire_tensor *inputs, int32_t numOutputs,
                         const rewire_tensor *outputs) {
  return checkAndRun(m, f, numInputs, inputs, numOutputs, outputs, /*checkOnly=*/false);
}

const char *rewire_function_input_name(const rewire_model *m, int32_t f, int32_t i) {
  const FunctionInfo *fn = functionAt(m, f);
  if (!fn || i < 0 || static_cast<size_t>(i) >= fn->inputs.size()) {
    fail("invalid input index " + std::to_string(i));
    return nullptr;
  }
  return fn->inputs[static_cast<size_t>(i)].name.c_str();
}

const char *rewire_function_output_name(const rewire_model *m, int32_t f, int32_t i) {
  const FunctionInfo *fn = functionAt(m, f);
  if (!fn || i < 0 || static_cast<size_t>(i) >= fn->outputs.size()) {
    fail("invalid output index " + std::to_string(i));
    return nullptr;
  }
  return fn->outputs[static_cast<size_t>(i)].name.c_str();
}

} // extern "C"
