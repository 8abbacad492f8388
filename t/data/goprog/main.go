// t/go.t's Go program: goroutines, recursion deep enough to grow (copy)
// goroutine stacks many times, panics recovered, a channel pipeline and
// cgo both ways (Go calls C, C calls back into Go: cgo.go; nocgo.go does
// the same sum in Go when cgo is off, for a static build). Its output is
// deterministic, and it prints how many times it called the functions
// whose entry probes t/go.t counts. With the argument "serve" it then
// reads lines from stdin until EOF, calling tick 100 times for each and
// printing a line (t/go.t reads and steers its probes meanwhile).
package main

import (
	"bufio"
	"fmt"
	"os"
	"sync"
)

const (
	nLeaf      = 1000
	nWorkers   = 4
	depth      = 3000
	nPanics    = 30
	nPipeline  = 200
	nCallbacks = 50
)

//go:noinline
func callbackBody(x int64) int64 { return x * 3 }

//go:noinline
func leaf(i int) int { return i*7 + 1 }

// grow recurses with a big frame: the goroutine's stack is copied to a
// bigger one again and again while the probes on it are hit.
//
//go:noinline
func grow(n int) int {
	var pad [256]byte
	pad[n%256] = byte(n)
	if n == 0 {
		return int(pad[0])
	}
	return grow(n-1) + int(pad[n%256]&1)
}

//go:noinline
func mayPanic(i int) int {
	if i%3 == 0 {
		panic(fmt.Sprintf("boom %d", i))
	}
	return i
}

//go:noinline
func safeCall(i int) (r int) {
	defer func() {
		if e := recover(); e != nil {
			r = -1
		}
	}()
	return mayPanic(i)
}

//go:noinline
func square(in <-chan int, out chan<- int) {
	for v := range in {
		out <- v * v
	}
	close(out)
}

type counter struct{ n int }

//go:noinline
func (c *counter) add(i int) { c.n += i }

//go:noinline
func tick(c *counter, i int) { c.add(i) }

func pipeline() int {
	a, b := make(chan int), make(chan int)
	go square(a, b)
	go func() {
		for i := 0; i < nPipeline; i++ {
			a <- i
		}
		close(a)
	}()
	s := 0
	for v := range b {
		s += v
	}
	return s
}

func main() {
	s := 0
	for i := 0; i < nLeaf; i++ {
		s += leaf(i)
	}
	fmt.Println("leaf sum", s)
	var wg sync.WaitGroup
	res := make([]int, nWorkers)
	for w := 0; w < nWorkers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			res[w] = grow(depth)
		}(w)
	}
	wg.Wait()
	fmt.Println("grow", res)
	recovered := 0
	for i := 0; i < nPanics; i++ {
		if safeCall(i) < 0 {
			recovered++
		}
	}
	fmt.Println("recovered", recovered)
	fmt.Println("pipeline", pipeline())
	fmt.Println("cgo", cSum(nCallbacks))
	fmt.Println("calls main.leaf", nLeaf)
	fmt.Println("calls main.grow", nWorkers*(depth+1))
	fmt.Println("calls main.safeCall", nPanics)
	fmt.Println("calls main.mayPanic", nPanics)
	fmt.Println("calls main.callbackBody", nCallbacks)
	if len(os.Args) > 1 && os.Args[1] == "serve" {
		var c counter
		in := bufio.NewScanner(os.Stdin)
		for in.Scan() {
			for i := 0; i < 100; i++ {
				tick(&c, i)
			}
			fmt.Println("ticked", c.n)
		}
	}
}
