// Workload for bench/bench.py: a recursive fib with a known call count.
//
// The traced section is timed in-process so the harness can discard
// process start-up and the tracer's attach/detach time, which are not
// per-call costs.  It is timed twice: wall clock (ns=), and the CPU time of
// the one thread that runs it (cpu_ns=), which probe traps are charged to
// but which, unlike wall time, does not grow while the thread waits for a
// CPU that other users of a shared machine hold.
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"time"
)

const rusageThread = 1 // RUSAGE_THREAD; not exported by package syscall

func threadCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// noinline keeps one real call (and thus one entry and one exit probe hit)
// per recursion step.
//
//go:noinline
func fib(n int) int {
	if n < 2 {
		return n
	}
	return fib(n-1) + fib(n-2)
}

// leaf is a frameless Go leaf: no stack check, so nothing at its entry is
// emulated by the kernel (lea; lea; ret).
//
//go:noinline
func leaf(i int) int { return i*2 + 1 }

// timed runs body on one OS thread (so the thread's CPU time is the
// section's) and prints what the bench parses.
func timed(calls int, body func() int) {
	runtime.LockOSThread()
	cpu0 := threadCPU()
	start := time.Now()
	sum := body()
	elapsed := time.Since(start)
	cpu := threadCPU() - cpu0
	fmt.Printf("calls=%d ns=%d cpu_ns=%d sum=%d\n", calls, elapsed.Nanoseconds(), cpu.Nanoseconds(), sum)
}

func main() {
	n, reps := 22, 1
	if len(os.Args) > 2 && os.Args[1] == "leaf" {
		// "fib leaf N" calls leaf N times in a loop.
		n, _ = strconv.Atoi(os.Args[2])
		timed(n, func() int {
			s := 0
			for i := 0; i < n; i++ {
				s += leaf(i)
			}
			return s
		})
		return
	}
	if len(os.Args) > 1 {
		n, _ = strconv.Atoi(os.Args[1])
	}
	if len(os.Args) > 2 {
		reps, _ = strconv.Atoi(os.Args[2])
	}
	// calls(n) = 2*fib(n+1) - 1 per top-level call; computed iteratively
	// so that the count itself adds no traced calls.
	a, b := 0, 1
	for i := 0; i < n+1; i++ {
		a, b = b, a+b
	}
	timed(reps*(2*a-1), func() int {
		sum := 0
		for i := 0; i < reps; i++ {
			sum += fib(n)
		}
		return sum
	})
}
