/*===- ompt_regions.c - Wall time of every OpenMP parallel region ---------===
 *
 * An OMPT tool (OpenMP 5's tool interface, which LLVM's libomp loads from
 * OMP_TOOL_LIBRARIES): for each parallel region, told apart by its call
 * site, the number of times it ran, its total wall time on the thread that
 * started it and the time the threads spent waiting in its barriers. At
 * exit it writes one line per call site to $OMPT_REGIONS_OUT:
 *
 *   CALLSITE MICROTASK_OFFSET LIBRARY COUNT WALL_S WAIT0_S WAIT1_S
 *
 * MICROTASK_OFFSET is the outlined function the call site passes to
 * __kmpc_fork_call (a `lea ...(%rip), %rdx` before the call), relative to
 * the call's return address, or 0 where none was found: dladdr names only
 * exported functions, and the outlined ones are local, but the offset
 * matches the artifact's disassembly (regions.py does that). LIBRARY is
 * the shared object of the call site (oneDNN's for its GEMMs), as dladdr
 * says when the region first runs ("-" where it does not know).
 *
 * Where $OMPT_TRACE_OUT names a file it also writes every region run, in
 * order (the first kTrace), one line each: SITE_INDEX BEGIN_S END_S, the
 * index counting the lines of $OMPT_REGIONS_OUT from 0. Only for measuring: bench/regions/regions.py builds and runs it.
 *
 *===----------------------------------------------------------------------===*/
#define _GNU_SOURCE
#include <dlfcn.h>
#include <omp-tools.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { kSites = 4096, kThreads = 2, kLeaWindow = 800, kTrace = 1 << 18 };

struct Site {
  const void *callsite;
  long microtask;
  char library[96];
  long count;
  double wall, begin, wait[kThreads];
};
static struct Site sites[kSites];
static int used;
static int nextThread;
static __thread int thread = -1;
static __thread double waitBegin;
static struct Run {
  int site;
  double begin, end;
} trace[kTrace];
static int traced, tracing;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

/* The outlined function a call to __kmpc_fork_call passes in %rdx: the
 * nearest `lea disp32(%rip), %rdx` (48 8d 15) before the return address. */
static long microtaskOffset(const unsigned char *ra) {
  for (int back = 7; ra && back < kLeaWindow; ++back) {
    const unsigned char *p = ra - back;
    if (p[0] == 0x48 && p[1] == 0x8d && p[2] == 0x15) {
      int32_t disp;
      memcpy(&disp, p + 3, sizeof(disp));
      return (long)((p + 7 + disp) - ra);
    }
  }
  return 0;
}

static struct Site *site(const void *callsite) {
  for (int i = 0; i < used; ++i)
    if (sites[i].callsite == callsite)
      return &sites[i];
  if (used == kSites)
    return NULL;
  struct Site *s = &sites[used++];
  s->callsite = callsite;
  Dl_info info;
  if (dladdr(callsite, &info) && info.dli_fname) {
    const char *slash = strrchr(info.dli_fname, '/');
    snprintf(s->library, sizeof(s->library), "%s", slash ? slash + 1 : info.dli_fname);
  } else {
    snprintf(s->library, sizeof(s->library), "-");
  }
  if (!strstr(s->library, "dnnl") && !strstr(s->library, "libomp"))
    s->microtask = microtaskOffset(callsite);
  return s;
}

static void parallelBegin(ompt_data_t *task, const ompt_frame_t *frame, ompt_data_t *parallel,
                          unsigned int requested, int flags, const void *callsite) {
  (void)task, (void)frame, (void)requested, (void)flags;
  struct Site *s = site(callsite);
  parallel->ptr = s;
  if (s) {
    s->count++;
    s->begin = now();
  }
}

static void parallelEnd(ompt_data_t *parallel, ompt_data_t *task, int flags,
                        const void *callsite) {
  (void)task, (void)flags, (void)callsite;
  struct Site *s = parallel->ptr;
  if (!s)
    return;
  double end = now();
  s->wall += end - s->begin;
  if (tracing && traced < kTrace)
    trace[traced++] = (struct Run){(int)(s - sites), s->begin, end};
}

static void syncWait(ompt_sync_region_t kind, ompt_scope_endpoint_t endpoint,
                     ompt_data_t *parallel, ompt_data_t *task, const void *callsite) {
  (void)kind, (void)task, (void)callsite;
  if (thread < 0)
    thread = __atomic_fetch_add(&nextThread, 1, __ATOMIC_RELAXED);
  if (endpoint == ompt_scope_begin) {
    waitBegin = now();
    return;
  }
  struct Site *s = parallel ? parallel->ptr : NULL;
  if (s && thread < kThreads)
    s->wait[thread] += now() - waitBegin;
}

static int initialize(ompt_function_lookup_t lookup, int device, ompt_data_t *data) {
  (void)device, (void)data;
  ompt_set_callback_t set = (ompt_set_callback_t)lookup("ompt_set_callback");
  set(ompt_callback_parallel_begin, (ompt_callback_t)parallelBegin);
  set(ompt_callback_parallel_end, (ompt_callback_t)parallelEnd);
  set(ompt_callback_sync_region_wait, (ompt_callback_t)syncWait);
  tracing = getenv("OMPT_TRACE_OUT") != NULL;
  return 1;
}

static void finalize(ompt_data_t *data) {
  (void)data;
  const char *path = getenv("OMPT_REGIONS_OUT");
  FILE *out = fopen(path ? path : "ompt-regions.txt", "w");
  if (!out)
    return;
  for (int i = 0; i < used; ++i)
    fprintf(out, "%p %ld %s %ld %.6f %.6f %.6f\n", sites[i].callsite, sites[i].microtask,
            sites[i].library, sites[i].count, sites[i].wall, sites[i].wait[0], sites[i].wait[1]);
  fclose(out);
  FILE *runs = tracing ? fopen(getenv("OMPT_TRACE_OUT"), "w") : NULL;
  if (!runs)
    return;
  for (int i = 0; i < traced; ++i)
    fprintf(runs, "%d %.7f %.7f\n", trace[i].site, trace[i].begin, trace[i].end);
  fclose(runs);
}

ompt_start_tool_result_t *ompt_start_tool(unsigned int version, const char *runtime) {
  (void)version, (void)runtime;
  static ompt_start_tool_result_t result = {initialize, finalize, {0}};
  return &result;
}
