// Workload of the overhead-correction bench (bench/correction.py): outer
// does a fixed amount of work and calls a tiny leaf 1,000 times.  The
// program measures outer itself, untraced (an identical copy that is not
// traced: outerU and leafU), and prints the fastest of several runs, so the bench can compare
// the corrected duration calltrace shows for outer with the time outer takes
// without a tracer.
package main

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"time"
)

var sink int

//go:noinline
func leaf(x int) int { return x*3 + 1 }

//go:noinline
func leafU(x int) int { return x*3 + 1 }

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

//go:noinline
func outerU(work int) int {
	s := 0
	for i := 0; i < work; i++ {
		s = s*31 + i
	}
	for i := 0; i < 1000; i++ {
		s += leafU(i)
	}
	return s
}

// fastest: the run least disturbed by other users of the machine.
func fastest(f func(int) int, work, runs int) time.Duration {
	var d []time.Duration
	for r := 0; r < runs; r++ {
		t := time.Now()
		sink += f(work)
		d = append(d, time.Since(t))
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[0]
}

func main() {
	work, _ := strconv.Atoi(os.Args[1])
	runs, _ := strconv.Atoi(os.Args[2])
	fastest(outerU, work, 3) // warm up
	fmt.Printf("untraced_ns %d\n", fastest(outerU, work, runs).Nanoseconds())
	fmt.Printf("traced_ns %d\n", fastest(outer, work, runs).Nanoseconds())
}
