//===- HostOpenMP.cpp - An artifact beside the host's OpenMP runtime ------===//
//
// A Python host that imported torch has GNU libgomp in the process; an
// artifact's loops run on LLVM's libomp, which Model.cpp's openArtifact makes
// oneDNN use too where it can. Where it cannot (the host loaded oneDNN
// itself, as Debian's torch does), oneDNN's teams are libgomp's, sized by
// settings the host owns: HostTeam gives them the artifact's size for the
// length of a call (and makes the loops' threads sleep after each region),
// and hands the artifact the host runtime's team setting, so that oneDNN
// calls made inside the artifact's own regions run on their thread alone.
//
//===----------------------------------------------------------------------===//
#include "HostOpenMP.h"

#include "rewire/Support/CpuArtifact.h"

#include <cstring>
#include <dlfcn.h>
#include <elf.h>
#include <link.h>

namespace rewire::runtime {

std::string foreignOpenMP() {
  void *gomp = ::dlsym(RTLD_DEFAULT, "GOMP_parallel");
  Dl_info info;
  if (!gomp || !::dladdr(gomp, &info) || !info.dli_fname)
    return "";
  std::string file = info.dli_fname;
  return file.find("libomp") == std::string::npos ? file : "";
}

/// The file that defines the function at `fn`; empty where unknown.
static std::string fileOf(void *fn) {
  Dl_info info;
  return fn && ::dladdr(fn, &info) && info.dli_fname ? info.dli_fname : "";
}

std::string boundFile(void *handle, const char *symbol) {
  struct link_map *map = nullptr;
  if (!handle || ::dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || !map || !map->l_ld)
    return "";
  // glibc relocates the dynamic section's addresses in place where it is
  // writable (x86-64); where not, they are still the file's offsets.
  ElfW(Addr) base = map->l_addr;
  auto at = [base](ElfW(Addr) p) { return p < base ? p + base : p; };
  const ElfW(Sym) *symbols = nullptr;
  const char *names = nullptr;
  ElfW(Addr) tables[2] = {0, 0};
  size_t sizes[2] = {0, 0};
  for (const ElfW(Dyn) *d = map->l_ld; d->d_tag != DT_NULL; ++d) {
    switch (d->d_tag) {
    case DT_SYMTAB: symbols = reinterpret_cast<const ElfW(Sym) *>(at(d->d_un.d_ptr)); break;
    case DT_STRTAB: names = reinterpret_cast<const char *>(at(d->d_un.d_ptr)); break;
    case DT_JMPREL: tables[0] = at(d->d_un.d_ptr); break;
    case DT_PLTRELSZ: sizes[0] = d->d_un.d_val; break;
    case DT_RELA: tables[1] = at(d->d_un.d_ptr); break;
    case DT_RELASZ: sizes[1] = d->d_un.d_val; break;
    default: break;
    }
  }
  if (!symbols || !names)
    return "";
  for (int t = 0; t < 2; ++t) {
    auto *rel = reinterpret_cast<const ElfW(Rela) *>(tables[t]);
    for (size_t i = 0; rel && i < sizes[t] / sizeof(ElfW(Rela)); ++i) {
#if defined(__x86_64__)
      unsigned type = ELF64_R_TYPE(rel[i].r_info);
      if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
        continue;
#else
      return ""; // the slot types are the target's: x86-64 only here
#endif
      const ElfW(Sym) &sym = symbols[ELF64_R_SYM(rel[i].r_info)];
      if (std::strcmp(names + sym.st_name, symbol) != 0)
        continue;
      return fileOf(*reinterpret_cast<void *const *>(base + rel[i].r_offset));
    }
  }
  return "";
}

void HostTeam::bind(const std::string &foreignFile, void *artifact) {
  if (!artifact)
    return;
  setBlocktime = reinterpret_cast<void (*)(int)>(::dlsym(artifact, "kmp_set_blocktime"));
  if (foreignFile.empty())
    return;
  // The artifact's omp_get_max_threads is its libomp's: its team size,
  // which OMP_NUM_THREADS and the host's omp_set_num_threads on libomp set.
  void *own = ::dlsym(artifact, "omp_get_max_threads");
  if (fileOf(own).find("libomp") == std::string::npos)
    return;
  host = ::dlopen(foreignFile.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (!host)
    return;
  auto get = reinterpret_cast<int (*)()>(::dlsym(host, "omp_get_max_threads"));
  auto set = reinterpret_cast<void (*)(int)>(::dlsym(host, "omp_set_num_threads"));
  if (!get || !set || fileOf(reinterpret_cast<void *>(get)) == fileOf(own))
    return;
  ownGet = reinterpret_cast<int (*)()>(own);
  hostGet = get;
  hostSet = set;
  // The artifact's regions that make their own oneDNN calls set oneDNN's
  // team to 1 through these (runtime/LibraryThreads.h).
  using SetLibraryThreads = void (*)(int (*)(), void (*)(int));
  if (auto setThreads = reinterpret_cast<SetLibraryThreads>(
          ::dlsym(artifact, cpu::kSetLibraryThreadsSymbol)))
    setThreads(get, set);
}

HostTeam::~HostTeam() {
  if (host)
    ::dlclose(host);
}

// omp_set_num_threads sets the calling thread's value only (the nthreads
// ICV of its implicit task), so the host's other threads are untouched.
HostTeam::Scope::Scope(const HostTeam &team) : team(team) {
  if (team.setBlocktime)
    team.setBlocktime(0); // per calling thread and the teams it forks
  if (!team.sizesTeams())
    return;
  saved = team.hostGet();
  int want = team.ownGet();
  if (want != saved)
    team.hostSet(want);
}

HostTeam::Scope::~Scope() {
  if (team.sizesTeams() && team.hostGet() != saved)
    team.hostSet(saved);
}

} // namespace rewire::runtime
