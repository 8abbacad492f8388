//go:build cgo

// cSum with cgo: Go calls C, which calls back into Go for each term.
package main

/*
#include <stdint.h>
extern int64_t goCallback(int64_t);
static int64_t c_sum(int64_t n) {
	int64_t s = 0;
	for (int64_t i = 0; i < n; i++)
		s += goCallback(i);
	return s;
}
*/
import "C"

//export goCallback
func goCallback(x C.int64_t) C.int64_t { return C.int64_t(callbackBody(int64(x))) }

func cSum(n int64) int64 { return int64(C.c_sum(C.int64_t(n))) }
