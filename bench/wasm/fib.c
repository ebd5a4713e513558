/* WASI fib workload of bench/wasm.py: times its own loop, so node's start-up
 * and the rewrite are not counted per call.  fib(N) REPS times (default 1);
 * prints "calls=C ns=T best=B": the calls of one run, the first run's time
 * and the fastest run's (the code warmed up: V8 tiered it up). */
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
	long long first = 0, best = 0;
	for (int i = 0; i < reps || i == 0; i++) {
		struct timespec a, b;
		calls = 0;
		clock_gettime(CLOCK_MONOTONIC, &a);
		r = fib(n);
		clock_gettime(CLOCK_MONOTONIC, &b);
		long long t = (long long)(b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec);
		if (i == 0)
			first = best = t;
		if (t < best)
			best = t;
	}
	printf("fib=%d calls=%ld ns=%lld best=%lld\n", r, calls, first, best);
	return 0;
}
