/*===- CallErrors.h - How a failed artifact call says why ---------*- C -*-===//
 *
 * The one definition shared by the kernels linked into every artifact
 * (runtime/Kernels.c, C) and the runtime that reports their errors
 * (runtime/Model.cpp): a failed value check ends its message with
 * REWIRE_INPUT_DATA_SUFFIX, a failed temporary allocation starts with
 * REWIRE_OUT_OF_MEMORY_PREFIX, so tools can choose their exit code.
 *
 *===----------------------------------------------------------------------===*/
#ifndef REWIRE_RUNTIME_CALLERRORS_H
#define REWIRE_RUNTIME_CALLERRORS_H

#define REWIRE_INPUT_DATA_SUFFIX "(fix the input data)"
#define REWIRE_OUT_OF_MEMORY_PREFIX "out of memory"

#endif /* REWIRE_RUNTIME_CALLERRORS_H */
