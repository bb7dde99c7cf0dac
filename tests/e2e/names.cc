// SPDX-License-Identifier: LGPL-2.1-or-later
// C++ workload for tests/e2e/test-demangle.sh: its hot functions have the
// names C++ mangles hardest (a namespace, a class template's member, a
// function template taking a lambda, an anonymous namespace, an inlined
// member template).  Each hot function calls bail() on a path never taken,
// so that it has a frame and its caller shows in frame-pointer stacks (gcc
// leaves leaf functions without one); built -fno-shrink-wrap, the frame is
// set up on entry, not only on that path.  Argument: seconds to run.
#include <cstdio>
#include <cstdlib>
#include <ctime>

__attribute__((noinline)) void bail(unsigned long x)
{
	fprintf(stderr, "unexpected %lu\n", x);
	abort();
}

namespace shapes {
template <typename T> struct Grid {
	T k;
	/* Always inlined into sweep(): an inline frame of its own in the views. */
	__attribute__((always_inline)) inline T step(T x) const
	{
		for (int i = 0; i < 40; i++)
			x = (x ^ (x >> 29)) * k;
		return x;
	}
	__attribute__((noinline)) T sweep(T x, unsigned long n) const
	{
		for (unsigned long i = 0; i < n; i++) {
			x = step(x + i);
			if (x == 42)
				bail(x);
		}
		return x;
	}
};
} // namespace shapes

namespace {
__attribute__((noinline)) unsigned long hidden_mix(unsigned long x, unsigned long n)
{
	for (unsigned long i = 0; i < n; i++) {
		x = (x ^ (x >> 31)) * 0xbf58476d1ce4e5b9UL + i;
		if (x == 42)
			bail(x);
	}
	return x;
}
} // namespace

template <typename F> __attribute__((noinline)) unsigned long apply_n(F f, unsigned long x, unsigned long n)
{
	for (unsigned long i = 0; i < n; i++) {
		x = f(x);
		if (x == 42)
			bail(x);
	}
	return x;
}

static double now()
{
	timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 1, t0 = now();
	shapes::Grid<unsigned long> g{ 0x9E3779B97F4A7C15UL };
	unsigned long s = 1;

	while (now() - t0 < secs) {
		s = g.sweep(s, 20000);
		s = hidden_mix(s, 300000);
		s = apply_n([](unsigned long x) { return (x ^ (x >> 17)) * 0x94d049bb133111ebUL + 1; }, s, 300000);
	}
	printf("%lu\n", s);
	return 0;
}
