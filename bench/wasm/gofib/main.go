// Go js/wasm fib workload of bench/wasm.py: times its own loop.
// Prints "calls=N ns=T".
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
	n := 25
	if len(os.Args) > 1 {
		n, _ = strconv.Atoi(os.Args[1])
	}
	t := time.Now()
	r := fib(n)
	fmt.Printf("fib=%d calls=%d ns=%d\n", r, calls, time.Since(t).Nanoseconds())
}
