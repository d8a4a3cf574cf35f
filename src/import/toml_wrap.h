/* src/import/toml_wrap.h — the C interface of toml_wrap.cpp, the one C++ file of meshplan: a
 * TOML document parsed by toml++ (C++17; Debian packages no TOML library for C) handed to C as
 * its leaves. Internal to the library. */
#ifndef MESHPLAN_TOML_WRAP_H
#define MESHPLAN_TOML_WRAP_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Called once per leaf: key is the dotted path ("parallelism.tensor_parallel_degree"; array
 *  items by index, "model.converters.0"; a whole array of scalars also under its own path,
 *  comma-joined), val its text (strings unquoted, booleans true/false, numbers as written by
 *  %.17g or in decimal), line its 1-based line, is_string 1 for TOML strings. Returns 0 to go
 *  on, non-zero to stop the walk (the walk then returns that value). */
typedef int (*mp_toml_leaf_fn)(void *ctx, const char *key, const char *val, int line,
                               int is_string);

/** Parse text[0..len) and call fn for every leaf in document order. Returns 0, fn's non-zero
 *  result, or -1 on a syntax error with "line L, column C: what toml++ says" in err (cap
 *  bytes) and *err_line = L; -2 when out of memory. Never throws. */
int mp_toml_walk(const char *text, size_t len, mp_toml_leaf_fn fn, void *ctx, char *err,
                 size_t cap, int *err_line);

#ifdef __cplusplus
}
#endif

#endif
