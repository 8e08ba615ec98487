// The first call of a stubbed function: load its library (once), look it up, and fill its slot so that
// later calls jump straight to it. Called by stubs.S's tipipe_lazy_enter with the argument registers
// saved; any thread may get here first, so it holds a lock (a first call is rare: once per function).
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
/// set as soon as one of its libraries loads, before its first call from anywhere.
static int log_level = -8;
static void (*set_log_level)(int);

/// On the first load of a libav*/libsw* library (the lock held): tell libavutil the level.
static void loaded_ffmpeg(void) {
  if (set_log_level != NULL) return;
  for (int index = 0; index < tipipe_lazy_library_count; index++) {
    if (strncmp(tipipe_lazy_libraries[index], "libavutil.", 10) != 0) continue;
    // Loaded already, as a dependency of the library just loaded (or that library itself).
    void *util = dlopen(tipipe_lazy_libraries[index], RTLD_NOW | RTLD_LOCAL);
    if (util == NULL) return;
    set_log_level = (void (*)(int))dlsym(util, "av_log_set_level");
    if (set_log_level != NULL) set_log_level(log_level);
  }
}

void tipipe_lazy_set_ffmpeg_log_level(int level) {
  pthread_mutex_lock(&lock);
  log_level = level;
  if (set_log_level != NULL) set_log_level(level);
  pthread_mutex_unlock(&lock);
}

__attribute__((visibility("hidden"))) void *tipipe_lazy_resolve(long index) {
  const struct tipipe_lazy_function *function = &tipipe_lazy_functions[index];
  const char *library = tipipe_lazy_libraries[function->library];
  pthread_mutex_lock(&lock);
  void *handle = handles[function->library];
  if (handle == NULL) {
    handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
      // As the dynamic loader would have said at the start, had the library been linked.
      fprintf(stderr, "tipipe: cannot load %s: %s\n", library, dlerror());
      abort();
    }
    __atomic_store_n(&handles[function->library], handle, __ATOMIC_RELEASE);
    if (strncmp(library, "libav", 5) == 0 || strncmp(library, "libsw", 5) == 0) loaded_ffmpeg();
  }
  void *address = dlsym(handle, function->name);
  if (address == NULL) {
    fprintf(stderr, "tipipe: %s has no function %s: %s\n", library, function->name, dlerror());
    abort();
  }
  __atomic_store_n(&tipipe_lazy_table[index], address, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&lock);
  return address;
}

int tipipe_lazy_library_loaded(const char *library) {
  for (int index = 0; index < tipipe_lazy_library_count; index++) {
    if (strcmp(tipipe_lazy_libraries[index], library) == 0) {
      return __atomic_load_n(&handles[index], __ATOMIC_ACQUIRE) != NULL;
    }
  }
  return 0;
}
