#ifndef TIPIPE_CSDL2_SHIM_H
#define TIPIPE_CSDL2_SHIM_H
#include <SDL2/SDL.h>

// Macros Swift cannot import.
static inline int csdl_windowpos_centered(void) { return SDL_WINDOWPOS_CENTERED; }
#endif
