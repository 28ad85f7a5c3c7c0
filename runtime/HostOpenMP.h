//===- HostOpenMP.h - An artifact beside the host's OpenMP runtime -*- C++ -*-===//
//
// Internal to the runtime: see HostOpenMP.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_RUNTIME_HOSTOPENMP_H
#define REWIRE_RUNTIME_HOSTOPENMP_H

#include <string>

namespace rewire::runtime {

/// The file of the OpenMP runtime whose GOMP_parallel is in the process's
/// global scope, where it is not LLVM's libomp (GNU libgomp, after `import
/// torch` in Python); empty otherwise. Asked at each load: a host may import
/// torch after its first model.
std::string foreignOpenMP();

/// The file that defines the `symbol` which the loaded object at dlopen
/// handle `handle` calls: its relocated GOT slot for that symbol (the
/// binding the dynamic linker made, whatever scope it searched); empty where
/// the object has no such relocation or the target is unknown.
std::string boundFile(void *handle, const char *symbol);

/// Where oneDNN stays bound to the host's GNU libgomp while the artifact's
/// loops run on LLVM's libomp (two pools; Model.cpp, openArtifact), each
/// call sets on its thread:
///  - libomp's block time to 0: the loops' threads sleep at once after a
///    region instead of spinning 200 ms against oneDNN's (with torch
///    imported: 1200 -> ~610 ms a GPT-2 forward);
///  - libgomp's team size to libomp's, for the call only: oneDNN sizes its
///    teams by the calling thread's libgomp setting, which the host sets as
///    it likes (Debian's torch sets its own thread count on import, 1 on
///    some 2-core machines, and every GEMM then ran on one thread).
/// At bind it also hands the artifact libgomp's team setting
/// (rewire_set_library_threads), by which the artifact's own regions make
/// their oneDNN calls single-threaded (runtime/LibraryThreads.h).
/// HostTeam keeps both runtimes' entry points; a Scope does the above for
/// one call and puts the host's team size back after it.
class HostTeam {
public:
  HostTeam() = default;
  HostTeam(const HostTeam &) = delete;
  HostTeam &operator=(const HostTeam &) = delete;
  ~HostTeam();

  /// Binds to the runtime in `foreignFile` (foreignOpenMP) and to the
  /// libomp that the artifact at dlopen handle `artifact` resolves; what
  /// cannot be reached is left alone.
  void bind(const std::string &foreignFile, void *artifact);

  class Scope {
  public:
    explicit Scope(const HostTeam &team);
    ~Scope();
    Scope(const Scope &) = delete;
    Scope &operator=(const Scope &) = delete;

  private:
    const HostTeam &team;
    int saved = 0;
  };

private:
  bool sizesTeams() const { return hostSet != nullptr; }

  void (*setBlocktime)(int) = nullptr;
  void *host = nullptr;
  int (*hostGet)() = nullptr;
  void (*hostSet)(int) = nullptr;
  int (*ownGet)() = nullptr;
};

} // namespace rewire::runtime

#endif // REWIRE_RUNTIME_HOSTOPENMP_H
