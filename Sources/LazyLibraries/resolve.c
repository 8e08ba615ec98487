// The first call of a stubbed function: load its family of libraries (FFmpeg's five, or SDL2) and bind
// every function of the family at once, so that later calls — the first of each other function included —
// jump straight to it. A play's first picture must not wait for libswscale to load (it did, by 50 ms under
// the thread sanitizer): whatever calls first (a decoder, while the graph is built) pays for the family.
// Called by stubs.S's tipipe_lazy_enter with the argument registers saved; any thread may get here first,
// so it holds a lock.
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "LazyLibraries.h"
#include "table.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static void *handles[16];
/// libav* prints at AV_LOG_INFO until told otherwise: the level chosen (AV_LOG_QUIET, -8, by default) is
/// set as its libraries load, before their first call from anywhere.
static int log_level = -8;
static void (*set_log_level)(int);

/// FFmpeg's libraries load together; SDL2 alone.
static int family(const char *library) {
  return strncmp(library, "libav", 5) == 0 || strncmp(library, "libsw", 5) == 0 ? 1 : 2;
}

/// Loads every library of `library`'s family and binds all their functions (the lock held).
static void load_family(int library) {
  int wanted = family(tipipe_lazy_libraries[library]);
  for (int index = 0; index < tipipe_lazy_library_count; index++) {
    if (family(tipipe_lazy_libraries[index]) != wanted || handles[index] != NULL) continue;
    void *handle = dlopen(tipipe_lazy_libraries[index], RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
      // As the dynamic loader would have said at the start, had the library been linked.
      fprintf(stderr, "tipipe: cannot load %s: %s\n", tipipe_lazy_libraries[index], dlerror());
      abort();
    }
    __atomic_store_n(&handles[index], handle, __ATOMIC_RELEASE);
    if (strncmp(tipipe_lazy_libraries[index], "libavutil.", 10) == 0) {
      set_log_level = (void (*)(int))dlsym(handle, "av_log_set_level");
      if (set_log_level != NULL) set_log_level(log_level);
    }
  }
  for (int index = 0; index < tipipe_lazy_count; index++) {
    const struct tipipe_lazy_function *function = &tipipe_lazy_functions[index];
    if (family(tipipe_lazy_libraries[function->library]) != wanted) continue;
    void *address = dlsym(handles[function->library], function->name);
    if (address == NULL) {
      fprintf(stderr, "tipipe: %s has no function %s: %s\n", tipipe_lazy_libraries[function->library],
              function->name, dlerror());
      abort();
    }
    __atomic_store_n(&tipipe_lazy_table[index], address, __ATOMIC_RELEASE);
  }
}

void tipipe_lazy_set_ffmpeg_log_level(int level) {
  pthread_mutex_lock(&lock);
  log_level = level;
  if (set_log_level != NULL) set_log_level(level);
  pthread_mutex_unlock(&lock);
}

__attribute__((visibility("hidden"))) void *tipipe_lazy_resolve(long index) {
  pthread_mutex_lock(&lock);
  // Another thread may have bound the family while this one waited for the lock.
  if (handles[tipipe_lazy_functions[index].library] == NULL) load_family(tipipe_lazy_functions[index].library);
  void *address = tipipe_lazy_table[index];
  pthread_mutex_unlock(&lock);
  return address;
}
