/* WASI fib workload of bench/wasm.py: times its own loop, so node's start-up
 * and the rewrite are not counted per call.  Prints "calls=N ns=T". */
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
	int n = argc > 1 ? atoi(argv[1]) : 27;
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	int r = fib(n);
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("fib=%d calls=%ld ns=%lld\n", r, calls,
	       (long long)(b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec));
	return 0;
}
