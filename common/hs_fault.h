/*
 * hs_fault.h - allocation-failure injection for tests (SQLite's malloc
 * fault injection, in small).
 *
 * In a build configured with -DHS_FAULT_INJECT=ON, CMake force-includes this
 * header (-include) into every hetsim library source, so that malloc, calloc,
 * realloc and strdup written in hetsim's own code become the counting
 * wrappers below. cJSON's allocations go through the hooks util_json.c
 * installs (hs_json_hooks_install, called at start-up by fault.c), whose
 * malloc is compiled with this header too, so they are counted as well.
 * Allocations made inside igraph, GSL and GLPK are not counted and never
 * fail.
 *
 * The n-th counted allocation after hs_fault_arm(n) returns NULL, once; the
 * ones before and after it succeed. The environment variable HS_FAIL_AT=n
 * arms the counter at start-up, so any executable of a fault build (hetsim
 * included) can be run with one failure injected; HS_FAULT_COUNT=1 prints
 * the number of counted allocations at exit. A test loops n = 1, 2, ...
 * until a run no longer reaches the n-th allocation (hs_fault_fired() false):
 * then every allocation of that run has been failed once.
 *
 * State. This is the one place in hetsim with process-global mutable state:
 * the counter must see every allocation of the process, whatever object
 * makes it. It is atomic, so threads are safe, but with several threads the
 * allocation that fails is whichever comes n-th. In builds without
 * HS_FAULT_INJECT the functions exist and count nothing that hetsim's code
 * allocates (only the explicit hs_fault_* calls).
 */
#ifndef HS_FAULT_H
#define HS_FAULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* Fail the n-th counted allocation from now (n >= 1); n <= 0 disarms.
 * Resets the count and the fired flag. */
void hs_fault_arm(long n);
/* Counted allocations since the last hs_fault_arm (or start-up). */
long hs_fault_count(void);
/* True when the armed failure has been injected since hs_fault_arm. */
bool hs_fault_fired(void);
/* True in a build whose libraries were compiled with the wrappers. */
bool hs_fault_enabled(void);

void *hs_fault_malloc(size_t n);
void *hs_fault_calloc(size_t n, size_t size);
void *hs_fault_realloc(void *p, size_t n);
char *hs_fault_strdup(const char *s);

#if defined(HS_FAULT_INJECT) && !defined(HS_FAULT_NO_MACROS)
#define malloc(n) hs_fault_malloc(n)
#define calloc(n, s) hs_fault_calloc((n), (s))
#define realloc(p, n) hs_fault_realloc((p), (n))
#define strdup(s) hs_fault_strdup(s)
#endif

#endif /* HS_FAULT_H */
