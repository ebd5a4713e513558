// Workload for bench/bench.py: the recursive fib of bench/fib run by
// several goroutines at once, to drive the highest event rate the machine
// can produce (one goroutine per CPU) and to record big multi-goroutine
// traces for the replay/report throughput and memory measurements.
//
// Usage: fibpar N REPS GOROUTINES: each goroutine computes fib(N) REPS
// times.  Prints "calls=C ns=T cpu_ns=P": traced calls, the wall time of
// the parallel section and the whole process's CPU time over it (probe
// traps are charged to the threads that hit them, so P/events is what one
// event costs the traced program).  Set GOMAXPROCS to choose the CPUs.
package main

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"
)

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// noinline keeps one real call (one entry and one exit probe hit) per
// recursion step.
//
//go:noinline
func fib(n int) int {
	if n < 2 {
		return n
	}
	return fib(n-1) + fib(n-2)
}

func main() {
	n, reps, gs := 22, 1, 2
	if len(os.Args) > 1 {
		n, _ = strconv.Atoi(os.Args[1])
	}
	if len(os.Args) > 2 {
		reps, _ = strconv.Atoi(os.Args[2])
	}
	if len(os.Args) > 3 {
		gs, _ = strconv.Atoi(os.Args[3])
	}
	var wg sync.WaitGroup
	sums := make([]int, gs)
	cpu0 := processCPU()
	start := time.Now()
	for g := 0; g < gs; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < reps; i++ {
				sums[g] += fib(n)
			}
		}(g)
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu := processCPU() - cpu0
	// calls(n) = 2*fib(n+1) - 1, computed iteratively so the count adds
	// no traced calls.
	a, b := 0, 1
	for i := 0; i < n+1; i++ {
		a, b = b, a+b
	}
	fmt.Printf("calls=%d ns=%d cpu_ns=%d sum=%d\n", gs*reps*(2*a-1), elapsed.Nanoseconds(),
		cpu.Nanoseconds(), sums[0])
}
