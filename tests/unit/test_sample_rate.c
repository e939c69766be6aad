/* test_sample_rate.c: the adaptive sampling period policy
 * (nodeagent/sample_rate.h): the overhead model, the ideal period with its
 * bounds, the dwell time, the hysteresis, and a simulated application
 * whose measurements follow the model, with noise: one change, no
 * oscillation. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sample_rate.h"
#include "tap.h"

#define US 1000ull
#define MS 1000000ull
#define S 1000000000ull

static void test_overhead(const struct cm_rate_config *c)
{
	is_double(cm_rate_overhead(c, 0, 5 * MS, 100), -1, 0,
		  "no application CPU: unknown");
	is_double(cm_rate_overhead(c, 1 * S, 0, 1000), 0.015, 1e-12,
		  "1000 samples x 15 us per s of app CPU = 1.5%");
	is_double(cm_rate_overhead(c, 2 * S, 10 * MS, 0), 0.005, 1e-12,
		  "agent CPU alone counts");
	is_double(cm_rate_overhead(c, 1 * S, 2 * MS, 1000), 0.017, 1e-12,
		  "both add up");
}

static void test_ideal(const struct cm_rate_config *c)
{
	static const struct {
		uint64_t period, app, agent, samples, want;
		const char *what;
	} tab[] = {
		{ 1 * MS, 1 * S, 2 * MS, 1000, 1700 * US,
		  "1 ms at 1.7%: 1.7 ms" },
		{ 250 * US, 2 * S, 0, 8000, 1500 * US,
		  "250 us at 6% (platform notes): 1.5 ms" },
		{ 1 * MS, 1 * S, 500 * MS, 1000, 10 * MS,
		  "enormous overhead: the upper bound" },
		{ 1 * MS, 1 * S, 0, 0, 250 * US,
		  "no cost at all: the lower bound" },
		{ 1 * MS, 0, 1 * MS, 10, 10 * MS,
		  "no application CPU: the upper bound" },
		{ 2 * MS, 4 * S, 0, 2000, 1500 * US,
		  "0.75% at 2 ms: 1.5 ms (more samples)" },
		{ 10 * MS, 1 * S, 0, 100, 1500 * US,
		  "0.15% at 10 ms: 1.5 ms" },
	};

	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++) {
		uint64_t got = cm_rate_ideal(c, tab[i].period, tab[i].app,
					     tab[i].agent, tab[i].samples);
		uint64_t want = tab[i].want;

		ok(llabs((long long)got - (long long)want) <= 1,
		   "ideal: %s", tab[i].what);
		if ((long long)got != (long long)want)
			diag("  got %llu ns, want %llu", (unsigned long long)got,
			     (unsigned long long)want);
	}
}

/* One decision after the dwell time with the given window. */
static uint64_t decide(const struct cm_rate_config *c, uint64_t period,
		       uint64_t app, uint64_t agent, uint64_t samples)
{
	struct cm_rate_state st;

	cm_rate_init(&st, c, period, 0);
	return cm_rate_update(&st, c, app, agent, samples, 5 * S);
}

static void test_decisions(const struct cm_rate_config *c)
{
	static const struct {
		uint64_t period, app, agent, samples, want;
		const char *what;
	} tab[] = {
		{ 250 * US, 10 * S, 0, 40000, 1500 * US,
		  "6% at 250 us: change to 1.5 ms" },
		{ 1 * MS, 10 * S, 20 * MS, 10000, 0,
		  "1.7% at 1 ms: ideal 1.7 ms is within 2x, no change" },
		{ 1 * MS, 10 * S, 40 * MS, 0, 400 * US,
		  "0.4% at 1 ms: ideal 400 us, 2.5x lower: change" },
		{ 1 * MS, 10 * S, 60 * MS, 0, 0,
		  "0.6% at 1 ms: ideal 600 us, within 2x, no change" },
		{ 10 * MS, 10 * S, 500 * MS, 0, 0,
		  "5% at the upper bound: nowhere to go" },
		{ 6 * MS, 10 * S, 500 * MS, 0, 10 * MS,
		  "5% at 6 ms: ideal 30 ms, clamped to 10 ms" },
		{ 1 * MS, 10 * S, 0, 0, 250 * US,
		  "no cost measured: down to the lower bound" },
		{ 300 * US, 10 * S, 0, 0, 250 * US,
		  "no cost at 300 us: the lower bound (the unclamped ideal "
		  "decides)" },
	};

	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++) {
		uint64_t want = tab[i].want, got;

		got = decide(c, tab[i].period, tab[i].app, tab[i].agent,
			     tab[i].samples);
		ok(llabs((long long)got - (long long)want) <= 1, "decide: %s",
		   tab[i].what);
		if (got != want)
			diag("  got %llu ns, want %llu", (unsigned long long)got,
			     (unsigned long long)want);
	}
}

static void test_window(const struct cm_rate_config *c)
{
	struct cm_rate_state st;
	uint64_t t = 0, r = 0;
	int calls = 0;

	/* 6% at 250 us, fed every 200 ms: nothing before 5 s. */
	cm_rate_init(&st, c, 250 * US, 0);
	while (!r && calls < 100) {
		t += 200 * MS;
		calls++;
		r = cm_rate_update(&st, c, 400 * MS, 0, 1600, t);
	}
	is_int(calls, 25, "the first decision comes after the 5 s dwell");
	ok(r == 1500 * US, "accumulated over the window: 1.5 ms");
	cm_rate_applied(&st, r, t);
	is_int(st.changes, 1, "one change counted");
	ok(st.period_ns == r && st.samples == 0 && st.app_cpu_ns == 0,
	   "applied: new period, new window");

	/* An idle application (0.1 s of CPU in 5 s) with the agent's fixed
	 * costs: no decision, however large the ratio looks. */
	cm_rate_init(&st, c, 1 * MS, 0);
	r = cm_rate_update(&st, c, 100 * MS, 50 * MS, 100, 6 * S);
	is_int(r, 0, "too little application CPU: no decision");
	is_int(st.decisions, 0, "... and the window goes on");
	r = cm_rate_update(&st, c, 150 * MS, 0, 150, 7 * S);
	ok(r == 10 * MS, "once there is enough, the accumulated window "
	   "decides (upper bound)");

	/* Early: huge overhead, but 4.9 s only. */
	cm_rate_init(&st, c, 250 * US, 0);
	is_int(cm_rate_update(&st, c, 10 * S, 1 * S, 40000, 4900 * MS), 0,
	       "before the dwell time: no decision");

	/* A failed change keeps the old period. */
	cm_rate_init(&st, c, 250 * US, 0);
	r = cm_rate_update(&st, c, 10 * S, 0, 40000, 5 * S);
	cm_rate_applied(&st, 250 * US, 5 * S);
	ok(r && st.period_ns == 250 * US && st.changes == 0,
	   "applied with the old period: no change counted");
	/* A period out of bounds given by the user is kept as in use. */
	cm_rate_init(&st, c, 100 * US, 0);
	ok(st.period_ns == 100 * US, "initial period out of bounds kept");
}

/* A simulated application: 2 threads busy (1 s of CPU per 0.5 s),
 * samples = app / period (with noise), the agent 2 us per sample plus
 * 1 ms per half second (fixed costs that do not scale with the period).
 * The model's overhead at a period, without noise: */
static double plant_overhead(const struct cm_rate_config *c, uint64_t period)
{
	double samples = 1e9 / (double)period;

	return (samples * (double)c->sample_cost_ns + samples * 2000 + 1e6) /
	       1e9;
}

static void test_plant(const struct cm_rate_config *c, uint64_t start,
		       double noise, int *changes, uint64_t *final)
{
	struct cm_rate_state st;
	uint32_t rnd = 12345;

	cm_rate_init(&st, c, start, 0);
	for (int k = 1; k <= 200; k++) {	/* 200 x 0.5 s = 100 s */
		uint64_t app = 1 * S, samples, agent, r;
		double f;

		rnd = rnd * 1103515245u + 12345u;
		f = 1.0 + noise * (((double)(rnd >> 8) / (1 << 24)) * 2 - 1);
		samples = (uint64_t)((double)app / (double)st.period_ns * f);
		agent = samples * 2 * US + 1 * MS;
		r = cm_rate_update(&st, c, app, agent, samples,
				   (uint64_t)k * 500 * MS);
		if (r)
			cm_rate_applied(&st, r, (uint64_t)k * 500 * MS);
	}
	*changes = (int)st.changes;
	*final = st.period_ns;
}

/* Whatever the start and the noise: at most one change (no oscillation)
 * and the final overhead within the hysteresis band around the target
 * (1%: 0.5% - 2%); a start outside the band changes exactly once. */
static void test_stability(const struct cm_rate_config *c)
{
	static const double noise[] = { 0, 0.3, 0.6 };
	static const uint64_t start[] = { 250 * US, 1 * MS, 10 * MS };

	for (size_t i = 0; i < sizeof(noise) / sizeof(noise[0]); i++) {
		for (size_t k = 0; k < sizeof(start) / sizeof(start[0]); k++) {
			double ov0 = plant_overhead(c, start[k]), ov;
			int changes, in_band0 = ov0 <= 0.02 && ov0 >= 0.005;
			uint64_t final;

			test_plant(c, start[k], noise[i], &changes, &final);
			ov = plant_overhead(c, final);
			ok(changes <= 1 && (in_band0 || changes == 1) &&
			   ov >= 0.005 && ov <= 0.02,
			   "from %llu us (%.2f%%), noise %.0f%%: %d change(s), "
			   "final %llu us at %.2f%%",
			   (unsigned long long)(start[k] / US), ov0 * 100,
			   noise[i] * 100, changes,
			   (unsigned long long)(final / US), ov * 100);
		}
	}
}

static void test_config(void)
{
	struct cm_rate_config c;

	cm_rate_config_default(&c);
	c.target = 0.05;
	/* 6% at 250 us against a 5% target: within 2x. */
	is_int(decide(&c, 250 * US, 10 * S, 0, 40000), 0,
	       "target 5%: 6% at 250 us is close enough");
	c.target = 0.001;
	ok(decide(&c, 1 * MS, 10 * S, 0, 10000) == 10 * MS,
	   "target 0.1%%: 1.5%% pushes to the upper bound");
	cm_rate_config_default(&c);
	c.factor = 1.5;
	ok(decide(&c, 1 * MS, 10 * S, 20 * MS, 10000) == 1700 * US,
	   "factor 1.5: 1.7x is enough to change");
}

int main(void)
{
	struct cm_rate_config c;

	cm_rate_config_default(&c);
	test_overhead(&c);
	test_ideal(&c);
	test_decisions(&c);
	test_window(&c);
	test_stability(&c);
	test_config();
	return done_testing();
}
