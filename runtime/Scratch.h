/*===- Scratch.h - Per-thread scratch buffers of the CPU kernels ----------===
 *
 * A buffer a kernel keeps across calls (declared `static __thread`), grown
 * as needed: products copy operands into it instead of allocating per call.
 *
 *===----------------------------------------------------------------------===*/
#ifndef REWIRE_RUNTIME_SCRATCH_H
#define REWIRE_RUNTIME_SCRATCH_H

#include <stdint.h>
#include <stdlib.h>

struct Scratch {
  float *data;
  size_t capacity;
};

/* `s` grown to at least rows x cols floats (NULL: the size overflows or
 * memory is short; the caller then takes another path). */
static inline float *reserve(struct Scratch *s, int64_t rows, int64_t cols) {
  if (rows <= 0 || cols <= 0 || rows > (int64_t)(SIZE_MAX / sizeof(float)) / cols)
    return NULL;
  size_t need = (size_t)cols * (size_t)rows;
  if (need > s->capacity) {
    float *grown = (float *)realloc(s->data, need * sizeof(float));
    if (!grown)
      return NULL;
    s->data = grown;
    s->capacity = need;
  }
  return s->data;
}

#endif
