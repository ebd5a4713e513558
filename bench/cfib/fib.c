/* Workload for bench/bench.py: a recursive C fib with a known call count,
 * timed in-process like bench/fib (wall clock and the thread's CPU time).
 * The attribute keeps gcc -O2 from turning the second call into a loop. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

__attribute__((noinline, optimize("no-optimize-sibling-calls"))) long c_fib(long n)
{
	if (n < 2)
		return n;
	return c_fib(n - 1) + c_fib(n - 2);
}

static long long thread_cpu_ns(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_THREAD, &ru))
		return 0;
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000LL +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000LL;
}

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 22, reps = argc > 2 ? atol(argv[2]) : 1, sum = 0;
	long long cpu0 = thread_cpu_ns(), t0 = now_ns();
	for (long i = 0; i < reps; i++)
		sum += c_fib(n);
	long long ns = now_ns() - t0, cpu = thread_cpu_ns() - cpu0;
	long a = 0, b = 1; /* calls(n) = 2 fib(n+1) - 1 */
	for (long i = 0; i < n + 1; i++) {
		long t = a + b;
		a = b;
		b = t;
	}
	printf("calls=%ld ns=%lld cpu_ns=%lld sum=%ld\n", reps * (2 * a - 1), ns, cpu, sum);
	return 0;
}
