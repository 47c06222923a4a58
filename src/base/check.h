// XB_CHECK: a broken invariant crashes loudly (STYLE.md, Errors).
#pragma once

#include <cstdio>
#include <cstdlib>

#define XB_CHECK(cond)                                                                    \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      std::fprintf(stderr, "invariant broken at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                       \
    }                                                                                     \
  } while (0)
