/*
 * fault.c - the counting allocation wrappers of hs_fault.h. The real
 * allocator is called through the #undef'd names below. The counter is
 * process-global by necessity (hs_fault.h says why) and atomic.
 */
#include "hs_fault.h"

#include "hs_json.h"
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#undef malloc
#undef calloc
#undef realloc
#undef strdup

static atomic_long fail_at;   /* 0 = disarmed */
static atomic_long count;     /* counted allocations since arming */
static atomic_bool fired;

void hs_fault_arm(long n)
{
  atomic_store(&count, 0);
  atomic_store(&fired, false);
  atomic_store(&fail_at, n > 0 ? n : 0);
}

long hs_fault_count(void) { return atomic_load(&count); }
bool hs_fault_fired(void) { return atomic_load(&fired); }

bool hs_fault_enabled(void)
{
#ifdef HS_FAULT_INJECT
  return true;
#else
  return false;
#endif
}

/* Under ASan/UBSan, prints a symbolised stack; absent otherwise. */
extern void __sanitizer_print_stack_trace(void) __attribute__((weak));

/* True when this allocation is the one to fail. HS_FAULT_BACKTRACE=1 prints
 * where it was made (sanitizer builds), to find a bad failure path. */
static bool should_fail(void)
{
  long k = atomic_fetch_add(&count, 1) + 1;
  long at = atomic_load(&fail_at);
  if (at > 0 && k == at) {
    atomic_store(&fired, true);
    if (getenv("HS_FAULT_BACKTRACE") && __sanitizer_print_stack_trace)
      __sanitizer_print_stack_trace();
    return true;
  }
  return false;
}

void *hs_fault_malloc(size_t n) { return should_fail() ? NULL : malloc(n); }
void *hs_fault_calloc(size_t n, size_t size) { return should_fail() ? NULL : calloc(n, size); }
void *hs_fault_realloc(void *p, size_t n) { return should_fail() ? NULL : realloc(p, n); }

char *hs_fault_strdup(const char *s)
{
  if (should_fail())
    return NULL;
  return strdup(s);
}

#ifdef HS_FAULT_INJECT
/* Runs before main. cJSON's allocations go through util_json.c's hooks,
 * whose malloc is this file's wrapper in a fault build: installing them now
 * makes every cJSON allocation of the program counted. HS_FAIL_AT must be
 * armed before the first allocation; HS_FAULT_COUNT=1 prints the count at
 * exit (tests/cli/robust_fault.sh). */
static void print_count(void)
{
  fprintf(stderr, "hs_fault: %ld counted allocations\n", hs_fault_count());
}

__attribute__((constructor)) static void fault_init(void)
{
  hs_json_hooks_install();
  if (getenv("HS_FAULT_COUNT"))
    atexit(print_count);
  const char *e = getenv("HS_FAIL_AT");
  if (e && *e)
    hs_fault_arm(strtol(e, NULL, 10));
}
#endif
