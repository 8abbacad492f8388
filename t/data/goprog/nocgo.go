//go:build !cgo

// cSum without cgo (a static build): the same terms, summed in Go.
package main

func cSum(n int64) int64 {
	var s int64
	for i := int64(0); i < n; i++ {
		s += callbackBody(i)
	}
	return s
}
