// Workload of the overhead-correction bench (bench/correction.py): outer
// does a fixed amount of work and calls a tiny leaf 1,000 times, and the
// program prints how long each call of outer took.  The bench runs it
// twice a round, untraced and under `calltrace record`, and compares the
// corrected duration calltrace shows for outer with the time the very same
// function took without a tracer.
//
// The same function, not an identical copy: on the bench VM (AMD EPYC) a
// copy of outer whose loop fits one 64-byte line ran its 5,000,000
// iterations in 4.8 ms and outer, whose loop crosses a line, in 7.3-7.8 ms,
// untraced, in turns in one process -- the copy measured the code's
// placement, not the tracer (the bench's "correction error" was 45-69 %).
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

var sink int

//go:noinline
func leaf(x int) int { return x*3 + 1 }

//go:noinline
func outer(work int) int {
	s := 0
	for i := 0; i < work; i++ {
		s = s*31 + i
	}
	for i := 0; i < 1000; i++ {
		s += leaf(i)
	}
	return s
}

// runDelay: how long this thread has waited on a run queue (ns), from
// /proc/thread-self/schedstat; 0 when the kernel does not say.  Time the
// scheduler gave others is in a call's duration, traced or not, and is no
// probe's cost: the bench tells it apart.
func runDelay() int64 {
	b, err := os.ReadFile("/proc/thread-self/schedstat")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	v, _ := strconv.ParseInt(f[1], 10, 64)
	return v
}

type run struct{ wall, waited time.Duration }

// timed: each run's time and its wait on the run queue, in call order.
func timed(f func(int) int, work, runs int) []run {
	var rs []run
	for r := 0; r < runs; r++ {
		w := runDelay()
		t := time.Now()
		sink += f(work)
		d := time.Since(t)
		rs = append(rs, run{d, time.Duration(runDelay() - w)})
	}
	return rs
}

func main() {
	runtime.LockOSThread() // one thread: its schedstat is the calls'
	work, _ := strconv.Atoi(os.Args[1])
	runs, _ := strconv.Atoi(os.Args[2])
	what := "traced_run"
	if len(os.Args) > 3 && os.Args[3] == "plain" {
		what = "untraced_run"
	}
	// outer is called directly (through a function value, its first call
	// would end unobserved under --exit=auto: that call site is found
	// while recording); the first call warms up, and is in the trace too
	f := func(w int) int { return outer(w) }
	timed(f, work, 1)
	for i, r := range timed(f, work, runs) {
		fmt.Printf("%s %d ns %d waited_ns %d\n", what, i, r.wall.Nanoseconds(), r.waited.Nanoseconds())
	}
}
