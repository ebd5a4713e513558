/* Workload of bench/correction.py's first-call lines: a tiny leaf called
 * CALLS times on the main thread, then CALLS times on a new thread.  The
 * first call of each shows what a thread's (and the process's) first probe
 * hits cost beyond the others, which the correction cannot know. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define CALLS 50

__attribute__((noinline)) int leaf(int x)
{
	__asm__ volatile("");
	return x * 3 + 1;
}

static void *calls(void *arg)
{
	long s = 0;
	for (int i = 0; i < CALLS; i++)
		s += leaf(i);
	return (void *)s;
}

int main(void)
{
	void *a = calls(NULL), *b;
	pthread_t t;
	if (pthread_create(&t, NULL, calls, NULL) || pthread_join(t, &b))
		return 1;
	printf("%ld\n", (long)a + (long)b);
	return 0;
}
