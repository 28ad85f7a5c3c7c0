/*===- LibraryThreads.h - oneDNN on one thread inside our regions -*- C -*-===
 *
 * For the parallel regions whose threads each make their own oneDNN calls
 * (Kernels.c's teamSplit, Attention.c's kernels): the calls must run on
 * their thread alone. oneDNN sizes its teams by the OpenMP runtime it is
 * bound to: the artifact's libomp (one pool), or, where the host loaded
 * oneDNN first (Debian's torch: two pools), the host's GNU libgomp, which
 * the runtime hands the artifact at load (rewire_set_library_threads,
 * rewire/Support/CpuArtifact.h). Without it each of our threads ran a
 * libgomp team of its own (4 threads on 2 cores).
 *
 *===----------------------------------------------------------------------===*/
#ifndef REWIRE_RUNTIME_LIBRARYTHREADS_H
#define REWIRE_RUNTIME_LIBRARYTHREADS_H

/* Inside a parallel region: this thread's oneDNN calls single-threaded
 * (libomp's setting is its implicit task's and ends with the region; the
 * host runtime's is the thread's own). Returns what to pass to
 * rewire_library_threads_restore before the thread leaves the region. */
int rewire_library_threads_one(void);
void rewire_library_threads_restore(int saved);

#endif /* REWIRE_RUNTIME_LIBRARYTHREADS_H */
