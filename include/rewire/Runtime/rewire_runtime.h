/*===- rewire_runtime.h - C API of the Rewire runtime ------------*- C -*-===//
 *
 * A stable C interface over Runtime.h for bindings (Python ctypes, Rust,
 * ...). Functions that can fail return NULL or a negative value and leave
 * a message for rewire_last_error() (per thread). Tensors are described by
 * rewire_tensor: dtype name ("f32", "i64", ...), rank, shape, data.
 *
 *===----------------------------------------------------------------------===*/
#ifndef REWIRE_RUNTIME_C_H
#define REWIRE_RUNTIME_C_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rewire_model rewire_model;

typedef struct rewire_tensor {
  const char *dtype;    /* "f32", "f64", "i64", "i32", "i1", ... */
  int32_t rank;
  const int64_t *shape; /* rank entries */
  void *data;           /* dense row-major */
} rewire_tensor;

/* The message of the last failed call on this thread ("" if none). */
const char *rewire_last_error(void);

/* Loads an artifact; `parameters` may be NULL (the file the artifact names). */
rewire_model *rewire_model_load(const char *artifact, const char *parameters);
void rewire_model_free(rewire_model *model);

/* What runs the model, as `rewire-run --describe` ends: "kernels: ...\n"
 * (the GEMM library and ISA) and, where it applies, "threads: ...\n" (the
 * thread pools). Valid while the model lives. */
const char *rewire_model_describe(const rewire_model *model);

/* Entry points: count, name, and index by name (-1 if absent). */
int32_t rewire_function_count(const rewire_model *model);
const char *rewire_function_name(const rewire_model *model, int32_t function);
int32_t rewire_function_find(const rewire_model *model, const char *name);

/* Declared inputs/outputs of a function (-1 on a bad index). */
int32_t rewire_function_num_inputs(const rewire_model *model, int32_t function);
int32_t rewire_function_num_outputs(const rewire_model *model, int32_t function);
/* Fills `out` (data = NULL) with the declared spec of input/output `i`;
 * the strings and shape stay valid while the model lives. 0 on success. */
int32_t rewire_function_input(const rewire_model *model, int32_t function, int32_t i,
                              rewire_tensor *out);
int32_t rewire_function_output(const rewire_model *model, int32_t function, int32_t i,
                               rewire_tensor *out);

/* The name of input/output `i` ("param:<name>", "state:<name>:m", "loss",
 * ... in training steps); NULL on a bad index. Valid while the model lives. */
const char *rewire_function_input_name(const rewire_model *model, int32_t function, int32_t i);
const char *rewire_function_output_name(const rewire_model *model, int32_t function, int32_t i);
/* Runs `function`: inputs and caller-allocated outputs must match the
 * declared counts, dtypes and shapes exactly (checked). 0 on success. */
int32_t rewire_model_run(const rewire_model *model, int32_t function, int32_t num_inputs,
                         const rewire_tensor *inputs, int32_t num_outputs,
                         const rewire_tensor *outputs);
/* The checks of rewire_model_run without the run: 0 where the call would be
 * accepted, else -1 with the same message in rewire_last_error (for
 * bindings that build a call once and run it many times). */
int32_t rewire_model_check(const rewire_model *model, int32_t function, int32_t num_inputs,
                           const rewire_tensor *inputs, int32_t num_outputs,
                           const rewire_tensor *outputs);

#ifdef __cplusplus
}
#endif

#endif /* REWIRE_RUNTIME_C_H */
