// Run-time defaults of the sanitizers, built into every executable of a GRADSYNC_SANITIZE
// build (see cmake/sanitize.cmake). ASAN_OPTIONS / LSAN_OPTIONS / UBSAN_OPTIONS set in the
// environment still override them.
extern "C" {

// Shared objects are never unloaded in a sanitized build. OpenMPI opens every plugin
// (mca_*.so) at MPI_Init and closes those it does not select, leaving behind what they
// allocated; once unloaded, their allocations show as "<unknown module>", which no
// suppression can name. Kept loaded, they are named and suppressed below. (Defined in the
// executable, this dlclose takes precedence over libc's for every library.)
int dlclose(void*) { return 0; }

const char* __asan_default_options() { return "detect_leaks=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=0"; }

// Quiet when only suppressed leaks were found (the program's own output stays as it is).
const char* __lsan_default_options() { return "print_suppressions=0"; }

const char* __ubsan_default_options() { return "print_stacktrace=1:halt_on_error=1"; }

// Memory that OpenMPI (with its plugins, hwloc, PMIx, libevent) and SimGrid allocate and
// never give back: not ours to fix, and every rank would report it.
const char* __lsan_default_suppressions() {
  return "leak:libmpi.so\n"
         "leak:libopen-pal.so\n"
         "leak:libopen-rte.so\n"
         "leak:libhwloc.so\n"
         "leak:libpmix.so\n"
         "leak:libevent\n"
         "leak:mca_\n"
         "leak:libsimgrid.so\n"
         // PMIx formats strings with vasprintf and keeps them; libc's frames lack frame
         // pointers, so the fast unwinder stops there and never reaches PMIx's name.
         // gradsync itself never calls vasprintf.
         "leak:__vasprintf_internal\n";
}

}  // extern "C"
