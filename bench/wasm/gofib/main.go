// Go js/wasm fib workload of bench/wasm.py: times its own loop.  fib(N) REPS
// times (default 1); prints "calls=C ns=T best=B": the calls of one run, the
// first run's time and the fastest run's (the code warmed up: V8 tiered it up).
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

var calls int

//go:noinline
func fib(n int) int {
	calls++
	if n < 2 {
		return n
	}
	return fib(n-1) + fib(n-2)
}

func main() {
	n, reps := 25, 1
	if len(os.Args) > 1 {
		n, _ = strconv.Atoi(os.Args[1])
	}
	if len(os.Args) > 2 {
		reps, _ = strconv.Atoi(os.Args[2])
	}
	var r int
	var first, best int64
	for i := 0; i < reps || i == 0; i++ {
		calls = 0
		t := time.Now()
		r = fib(n)
		d := time.Since(t).Nanoseconds()
		if i == 0 || d < best {
			best = d
		}
		if i == 0 {
			first = d
		}
	}
	fmt.Printf("fib=%d calls=%d ns=%d best=%d\n", r, calls, first, best)
}
