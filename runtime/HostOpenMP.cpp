//===- HostOpenMP.cpp - An artifact beside the host's OpenMP runtime ------===//
//
// A Python host that imported torch has GNU libgomp in the process; an
// artifact's loops run on LLVM's libomp, which Model.cpp's openArtifact makes
// oneDNN use too where it can. Where it cannot (the host loaded oneDNN
// itself, as Debian's torch does), oneDNN's teams are libgomp's, sized by
// settings the host owns: HostTeam gives them the artifact's size for the
// length of a call (and makes the loops' threads sleep after each region).
//
//===----------------------------------------------------------------------===//
#include "HostOpenMP.h"

#include <dlfcn.h>

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
