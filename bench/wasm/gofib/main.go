// Go js/wasm fib workload of bench/wasm.py: times its own loop.  fib(N) REPS
// times (default 1); prints "calls=C ns=T best=B cpu=U": the calls of one run,
// the first run's time and the fastest run's (the code warmed up: V8 tiered it
// up), and the CPU time the program's thread had in the first run (the rest
// of T it waited for a core: V8's compiler threads, calltrace, other work).
package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall/js"
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

// threadCPU is the CPU time of node's main thread, the program's (its tid is
// the pid), from /proc read synchronously through node's fs (the runner's
// globalThis.fs); 0 where it cannot be read.
func threadCPU() (ns int64) {
	defer func() {
		if recover() != nil {
			ns = 0
		}
	}()
	pid := js.Global().Get("process").Get("pid").Int()
	path := fmt.Sprintf("/proc/%d/task/%d/schedstat", pid, pid)
	f := strings.Fields(js.Global().Get("fs").Call("readFileSync", path, "utf8").String())
	ns, _ = strconv.ParseInt(f[0], 10, 64)
	return ns
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
	var first, best, cpu int64
	for i := 0; i < reps || i == 0; i++ {
		calls = 0
		c := threadCPU()
		t := time.Now()
		r = fib(n)
		d := time.Since(t).Nanoseconds()
		if i == 0 {
			cpu = threadCPU() - c
		}
		if i == 0 || d < best {
			best = d
		}
		if i == 0 {
			first = d
		}
	}
	fmt.Printf("fib=%d calls=%d ns=%d best=%d cpu=%d\n", r, calls, first, best, cpu)
}
