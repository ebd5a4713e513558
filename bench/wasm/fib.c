/* WASI fib workload of bench/wasm.py: times its own loop, so node's start-up
 * and the rewrite are not counted per call.  fib(N) REPS times (default 1);
 * prints "calls=C ns=T best=B cpu=U": the calls of one run, the first run's
 * time and the fastest run's (the code warmed up: V8 tiered it up), and the
 * CPU time the program's thread had in the first run (node:wasi serves
 * CLOCK_THREAD_CPUTIME_ID for the thread that runs the module). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long calls;

__attribute__((noinline)) int fib(int n)
{
	calls++; /* built with -fno-optimize-sibling-calls: every call is a call */
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 27, reps = argc > 2 ? atoi(argv[2]) : 1, r = 0;
	long long first = 0, best = 0, cpu = 0;
	for (int i = 0; i < reps || i == 0; i++) {
		struct timespec a, b, ca, cb;
		calls = 0;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ca);
		clock_gettime(CLOCK_MONOTONIC, &a);
		r = fib(n);
		clock_gettime(CLOCK_MONOTONIC, &b);
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cb);
		long long t = (long long)(b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec);
		if (i == 0) {
			first = best = t;
			cpu = (long long)(cb.tv_sec - ca.tv_sec) * 1000000000LL + (cb.tv_nsec - ca.tv_nsec);
		}
		if (t < best)
			best = t;
	}
	printf("fib=%d calls=%ld ns=%lld best=%lld cpu=%lld\n", r, calls, first, best, cpu);
	return 0;
}
