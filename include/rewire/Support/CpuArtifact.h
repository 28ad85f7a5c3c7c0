//===- CpuArtifact.h - The contract of a CPU artifact ------------*- C++ -*-===//
//
// What rewire-compile writes into a CPU artifact (a shared object) and the
// runtime reads (docs/compiling.md): the format version, the symbols the
// runtime looks up, and the x86 features generated code may use, which the
// artifact's metadata lists (`cpu_features`) so that the runtime refuses to
// run it on a CPU that lacks one (instead of dying of SIGILL). Plain C++.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_SUPPORT_CPUARTIFACT_H
#define REWIRE_SUPPORT_CPUARTIFACT_H

#include <cstdint>
#include <string>
#include <vector>

namespace rewire::cpu {

/// The artifact format version the compiler writes and the runtime accepts.
/// 2: `cpu_features` in the metadata; entry points called through
/// kCallSymbol (run-time checks and allocation failures become errors).
constexpr int kFormatVersion = 2;

constexpr const char *kVersionSymbol = "rewire_artifact_format_version";
constexpr const char *kMetadataSymbol = "rewire_artifact_metadata";
/// `int rewire_artifact_call(void (*entry)(void **), void **buffers,
///                           char *message, int64_t capacity)`: runs the
/// entry point; returns 0, or 1 with the error's message (runtime/Kernels.c).
constexpr const char *kCallSymbol = "rewire_artifact_call";
/// `const char *rewire_kernels_describe(void)`: what runs the artifact's
/// GEMMs on this CPU ("oneDNN 2.6.3 sgemm, ISA avx512_core"; runtime/Kernels.c).
constexpr const char *kKernelsSymbol = "rewire_kernels_describe";
/// `const char *rewire_attention_describe(void)`: how the fused attention
/// kernel runs on this CPU (runtime/Attention.c); present only in artifacts
/// whose model has fused attention.
constexpr const char *kAttentionSymbol = "rewire_attention_describe";
/// `void rewire_set_output_hook(void (*hook)(void *context, int64_t output),
///                              void *context)`: for the calls that follow on
/// this thread, generated code calls `hook(context, k)` as soon as output k
/// of an entry point is final (rewire-output-ready-calls; the data-parallel
/// trainer starts summing a gradient while the backward goes on). Null
/// removes it. Absent from artifacts of older compilers.
constexpr const char *kSetOutputHookSymbol = "rewire_set_output_hook";
/// `void rewire_set_library_threads(int (*get)(void), void (*set)(int))`:
/// where oneDNN is bound to the host's OpenMP runtime (two pools), that
/// runtime's omp_get_max_threads and omp_set_num_threads, so that the
/// artifact's own parallel regions can make their oneDNN calls
/// single-threaded (runtime/LibraryThreads.h). Absent from artifacts of
/// older compilers.
constexpr const char *kSetLibraryThreadsSymbol = "rewire_set_library_threads";
/// What the generated code calls: `void rewire_output_ready(int64_t output)`.
constexpr const char *kOutputReadySymbol = "rewire_output_ready";
/// The libraries artifacts link for GEMMs and parallel loops (`-ldnnl`,
/// `-lomp`; lib/Compiler/Link.cpp), by soname: the runtime opens them with
/// care where a host has another OpenMP runtime (runtime/Model.cpp).
constexpr const char *kDnnlSoname = "libdnnl.so.2";
constexpr const char *kOpenMPSoname = "libomp.so.5";
/// Every entry point `<name>` is `void rewire_call_<name>(void **buffers)`
/// (inputs, parameters, outputs); the metadata names it (`entry`).
constexpr const char *kEntrySymbolPrefix = "rewire_call_";

/// The x86 features (LLVM's names, which are also the names
/// __builtin_cpu_supports takes) that code generation may use and that the
/// runtime can test. The compiler records those its target enables.
const std::vector<std::string> &checkedFeatures();

/// Of `required`, the features this CPU lacks (names it cannot test count
/// as lacking: an artifact from a newer compiler is refused, not guessed).
std::vector<std::string> missingFeatures(const std::vector<std::string> &required);

} // namespace rewire::cpu

#endif // REWIRE_SUPPORT_CPUARTIFACT_H
