//go:build linux

package clp

/*
#include <malloc.h>

static long long huitian_malloc_in_use(void) {
	struct mallinfo2 m = mallinfo2();
	return (long long)(m.uordblks + m.hblkhd);
}
*/
import "C"

// cHeapInUse returns the bytes the C allocator has handed out and not had
// back, over all of its arenas (glibc's mallinfo2: uordblks + hblkhd).
// Unlike the resident set it does not move with the Go heap or with the
// allocator's per-thread arenas, so the leak test reads it.
func cHeapInUse() int64 {
	return int64(C.huitian_malloc_in_use())
}
