/* test_sample_rate.c: the sampling period from a budget
 * (nodeagent/sample_rate.h): the overhead model, the initial period from a
 * sample cost, the ideal period with its bounds, the dwell times, the
 * budget band, a simulated application whose measurements follow the
 * model, with noise (on budget, no oscillation), the cost estimate from
 * calibration tables and the phases' budget over a simulated run.  The
 * real measurement with perf: test_sample_rate_collect.c. */
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


static void test_initial(void)
{
	static const struct {
		uint64_t cost, agent;
		double target;
		uint64_t want;
		const char *what;
	} tab[] = {
		{ 15 * US, 2 * US, 0.01, 1700 * US,
		  "slow-timer VM: 15 + 2 us at 1%: 1.7 ms" },
		{ 1 * US, 2 * US, 0.01, 300 * US,
		  "bare metal: 1 + 2 us at 1%: 300 us" },
		{ 500, 500, 0.01, 250 * US, "1 us in all: the lower bound" },
		{ 200 * US, 2 * US, 0.01, 10 * MS,
		  "200 us per sample: the upper bound" },
		{ 15 * US, 2 * US, 0.005, 3400 * US,
		  "target 0.5%: twice the period" },
		{ 15 * US, 2 * US, 0.05, 340 * US, "target 5%: 340 us" },
		{ 15 * US, 2 * US, 0, 10 * MS, "no budget: the upper bound" },
	};

	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++) {
		struct cm_rate_config c;
		uint64_t got;

		cm_rate_config_default(&c);
		c.sample_cost_ns = tab[i].cost;
		c.agent_cost_ns = tab[i].agent;
		c.target = tab[i].target;
		got = cm_rate_initial_period(&c);
		ok(llabs((long long)got - (long long)tab[i].want) <= 1,
		   "initial: %s", tab[i].what);
		if (got != tab[i].want)
			diag("  got %llu ns", (unsigned long long)got);
	}
}

/* The decision on the given window, measured twice in a row (the first
 * decision after 1 s, the second 4 s later): what the first said if it
 * changed the period, else what the second says (a period with budget
 * unspent changes only at the second). */
static uint64_t decide(const struct cm_rate_config *c, uint64_t period,
		       uint64_t app, uint64_t agent, uint64_t samples)
{
	struct cm_rate_state st;
	uint64_t r;

	cm_rate_init(&st, c, period, 0);
	r = cm_rate_update(&st, c, app, agent, samples, 1 * S);
	if (r)
		return r;
	return cm_rate_update(&st, c, app, agent, samples, 5 * S);
}

/* Budget unspent: a change only at the second decision in a row; over
 * budget: at once; a window on budget between two under resets. */
static void test_under_confirm(const struct cm_rate_config *c)
{
	struct cm_rate_state st;

	cm_rate_init(&st, c, 1 * MS, 0);
	is_int(cm_rate_update(&st, c, 10 * S, 40 * MS, 0, 1 * S), 0,
	       "0.4%: the first window under budget does not change");
	ok(cm_rate_update(&st, c, 10 * S, 40 * MS, 0, 5 * S) == 400 * US,
	   "the second in a row does: 400 us");
	cm_rate_init(&st, c, 1 * MS, 0);
	cm_rate_update(&st, c, 10 * S, 40 * MS, 0, 1 * S);
	is_int(cm_rate_update(&st, c, 10 * S, 100 * MS, 0, 5 * S), 0,
	       "then one on budget (1%): no change");
	is_int(cm_rate_update(&st, c, 10 * S, 40 * MS, 0, 9 * S), 0,
	       "... and the count starts again");
	cm_rate_init(&st, c, 1 * MS, 0);
	ok(cm_rate_update(&st, c, 10 * S, 120 * MS, 0, 1 * S) == 1200 * US,
	   "over budget (1.2%%): the first window changes");
}

static void test_decisions(const struct cm_rate_config *c)
{
	static const struct {
		uint64_t period, app, agent, samples, want;
		const char *what;
	} tab[] = {
		{ 250 * US, 10 * S, 0, 40000, 1500 * US,
		  "6% at 250 us: change to 1.5 ms" },
		{ 1 * MS, 10 * S, 20 * MS, 10000, 1700 * US,
		  "1.7% at 1 ms: over budget, change to 1.7 ms" },
		{ 1 * MS, 10 * S, 120 * MS, 0, 1200 * US,
		  "1.2% at 1 ms: over 1.1 x the budget, change" },
		{ 1 * MS, 10 * S, 105 * MS, 0, 0,
		  "1.05% at 1 ms: on budget, no change" },
		{ 1 * MS, 10 * S, 75 * MS, 0, 0,
		  "0.75% at 1 ms: on budget (above 0.7 x), no change" },
		{ 1 * MS, 10 * S, 60 * MS, 0, 600 * US,
		  "0.6% at 1 ms: budget unspent, down to 600 us" },
		{ 1 * MS, 10 * S, 40 * MS, 0, 400 * US,
		  "0.4% at 1 ms: down to 400 us" },
		{ 1 * MS, 10 * S, 69 * MS, 0, 690 * US,
		  "0.69% at 1 ms: under 0.7 x, down to 690 us" },
		{ 10 * MS, 10 * S, 500 * MS, 0, 0,
		  "5% at the upper bound: nowhere to go" },
		{ 6 * MS, 10 * S, 500 * MS, 0, 10 * MS,
		  "5% at 6 ms: ideal 30 ms, clamped to 10 ms" },
		{ 1 * MS, 10 * S, 0, 0, 250 * US,
		  "no cost measured: down to the lower bound" },
		{ 250 * US, 10 * S, 0, 0, 0,
		  "no cost at the lower bound: nothing to do" },
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

	/* 6% at 250 us, fed every 200 ms: the first decision after 1 s. */
	cm_rate_init(&st, c, 250 * US, 0);
	while (!r && calls < 100) {
		t += 200 * MS;
		calls++;
		r = cm_rate_update(&st, c, 400 * MS, 0, 1600, t);
	}
	is_int(calls, 5, "the first decision comes after 1 s");
	ok(r == 1500 * US, "accumulated over the window: 1.5 ms");
	cm_rate_applied(&st, r, t);
	is_int(st.changes, 1, "one change counted");
	ok(st.period_ns == r && st.samples == 0 && st.app_cpu_ns == 0,
	   "applied: new period, new window");

	/* Then 1.2% (over budget): the next decision 4 s later. */
	calls = 0;
	r = 0;
	while (!r && calls < 100) {
		t += 200 * MS;
		calls++;
		r = cm_rate_update(&st, c, 400 * MS, 0, 320, t);
	}
	is_int(calls, 20, "later decisions every 4 s");
	ok(r == 1800 * US, "1.2%% at 1.5 ms: 1.8 ms");

	/* An idle application (0.1 s of CPU in 1.5 s) with the agent's
	 * costs: no decision, however large the ratio looks. */
	cm_rate_init(&st, c, 1 * MS, 0);
	r = cm_rate_update(&st, c, 100 * MS, 50 * MS, 100, 1500 * MS);
	is_int(r, 0, "too little application CPU: no decision");
	is_int(st.decisions, 0, "... and the window goes on");
	r = cm_rate_update(&st, c, 150 * MS, 0, 150, 2 * S);
	ok(r == 10 * MS, "once there is enough, the accumulated window "
	   "decides (upper bound)");

	/* Early: huge overhead, but 0.9 s only. */
	cm_rate_init(&st, c, 250 * US, 0);
	is_int(cm_rate_update(&st, c, 10 * S, 1 * S, 40000, 900 * MS), 0,
	       "before the first dwell time: no decision");

	/* A failed change keeps the old period. */
	cm_rate_init(&st, c, 250 * US, 0);
	r = cm_rate_update(&st, c, 10 * S, 0, 40000, 1 * S);
	cm_rate_applied(&st, 250 * US, 1 * S);
	ok(r && st.period_ns == 250 * US && st.changes == 0,
	   "applied with the old period: no change counted");
	/* A period out of bounds given by the user is kept as in use. */
	cm_rate_init(&st, c, 100 * US, 0);
	ok(st.period_ns == 100 * US, "initial period out of bounds kept");
}

/* A simulated application: 2 threads busy (1 s of CPU per 0.5 s),
 * samples = app / period (with noise), the agent 2 us per sample plus
 * 0.5 ms per half second (fixed costs that do not scale with the
 * period).  The model's overhead at a period, without noise: */
static double plant_overhead(const struct cm_rate_config *c, uint64_t period)
{
	double samples = 1e9 / (double)period;

	return (samples * (double)c->sample_cost_ns + samples * 2000 +
		0.5e6) / 1e9;
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
		agent = samples * 2 * US + 500 * US;
		r = cm_rate_update(&st, c, app, agent, samples,
				   (uint64_t)k * 500 * MS);
		if (r)
			cm_rate_applied(&st, r, (uint64_t)k * 500 * MS);
	}
	*changes = (int)st.changes;
	*final = st.period_ns;
}

/* From the initial period of the plant's cost, or from a wrong one, with
 * noise: the overhead ends on budget (0.7% - 1.1%) after few changes, and
 * a start on budget does not move without noise. */
static void test_stability(const struct cm_rate_config *c)
{
	static const double noise[] = { 0, 0.3, 0.6 };
	uint64_t start[] = { 0, 250 * US, 1 * MS, 10 * MS };

	start[0] = cm_rate_initial_period(c);
	for (size_t i = 0; i < sizeof(noise) / sizeof(noise[0]); i++) {
		for (size_t k = 0; k < sizeof(start) / sizeof(start[0]); k++) {
			double ov0 = plant_overhead(c, start[k]), ov;
			int changes, max_changes;
			uint64_t final;

			test_plant(c, start[k], noise[i], &changes, &final);
			ov = plant_overhead(c, final);
			/* 60% noise on a window of 0.5 s (12% on the 4 s
			 * window) can look over budget: each such window
			 * moves the period up a little, to the safe side. */
			max_changes = noise[i] == 0 ? (k == 0 ? 0 : 1) :
				      noise[i] < 0.5 ? 2 : 5;
			ok(changes <= max_changes && ov >= 0.007 &&
			   ov <= 0.011,
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
	/* 6% at 250 us against a 5% target: 1.2 x, over. */
	ok(decide(&c, 250 * US, 10 * S, 0, 40000) == 300 * US,
	   "target 5%%: 6%% at 250 us is over, 300 us");
	is_int(decide(&c, 300 * US, 10 * S, 0, 33333), 0,
	       "target 5%: 5% at 300 us is on budget");
	c.target = 0.001;
	ok(decide(&c, 1 * MS, 10 * S, 0, 10000) == 10 * MS,
	   "target 0.1%%: 1.5%% pushes to the upper bound");
	cm_rate_config_default(&c);
	c.over = 2.0;
	c.under = 0.5;
	is_int(decide(&c, 1 * MS, 10 * S, 20 * MS, 10000), 0,
	       "a 0.5 - 2 band: 1.7% at 1 ms stays");
}

/* ---- the cost estimate ---------------------------------------------- */

/* A calibration: every chunk `without` / `with` ns, `samples` per
 * round. */
static void calib_fill(struct cm_rate_calib *cal, int rounds, int chunks,
		       uint64_t without, uint64_t with, uint64_t samples)
{
	memset(cal, 0, sizeof(*cal));
	cal->rounds = rounds;
	cal->chunks = chunks;
	for (int r = 0; r < CM_RATE_CALIB_ROUNDS; r++) {
		for (int k = 0; k < CM_RATE_CALIB_CHUNKS; k++) {
			cal->without_ns[r][k] = without;
			cal->with_ns[r][k] = with;
		}
		cal->samples[r] = samples;
	}
}

static void test_cost_estimate(void)
{
	struct cm_rate_calib cal;

	/* 4 chunks of 1 ms, 150 us more with 40 samples: 15 us each. */
	calib_fill(&cal, 4, 4, 1 * MS, 1150 * US, 40);
	is_int(cm_rate_cost_estimate(&cal), 15 * US, "plain: 15 us");
	/* A chunk of each round disturbed (3 ms): the medians hold. */
	for (int r = 0; r < 4; r++) {
		cal.without_ns[r][r] = 3 * MS;
		cal.with_ns[r][3 - r] = 3 * MS;
	}
	is_int(cm_rate_cost_estimate(&cal), 15 * US,
	       "one chunk per round disturbed: still 15 us");
	/* A whole round disturbed (its unsampled chunks slower): the
	 * median over rounds holds. */
	calib_fill(&cal, 4, 4, 1 * MS, 1150 * US, 40);
	for (int k = 0; k < 4; k++)
		cal.without_ns[2][k] = 2 * MS;
	is_int(cm_rate_cost_estimate(&cal), 15 * US,
	       "one round disturbed: the median of the rounds");
	/* Rounds without samples carry nothing. */
	calib_fill(&cal, 3, 4, 1 * MS, 1150 * US, 40);
	cal.samples[1] = 0;
	cal.with_ns[1][0] = cal.with_ns[1][1] = 9 * MS;
	is_int(cm_rate_cost_estimate(&cal), 15 * US,
	       "a round without samples is skipped");
	calib_fill(&cal, 4, 4, 1 * MS, 1150 * US, 0);
	is_int(cm_rate_cost_estimate(&cal), 0, "no sample at all: unknown");
	calib_fill(&cal, 4, 4, 1 * MS, 1 * MS, 40);
	is_int(cm_rate_cost_estimate(&cal), CM_RATE_COST_MIN_NS,
	       "sampling free (or noise): the floor");
	calib_fill(&cal, 4, 4, 1 * MS, 900 * US, 40);
	is_int(cm_rate_cost_estimate(&cal), CM_RATE_COST_MIN_NS,
	       "sampled chunks faster (noise): the floor");
	calib_fill(&cal, 4, 4, 1 * MS, 100 * MS, 4);
	is_int(cm_rate_cost_estimate(&cal), CM_RATE_COST_MAX_NS,
	       "absurdly slow: the ceiling");
	calib_fill(&cal, 1, 3, 1 * MS, 1030 * US, 6);
	is_int(cm_rate_cost_estimate(&cal), 15 * US,
	       "one round of 3 chunks: 3 x 30 us / 6");
	calib_fill(&cal, 0, 4, 1 * MS, 1150 * US, 40);
	is_int(cm_rate_cost_estimate(&cal), 0, "no round: unknown");
	calib_fill(&cal, 4, CM_RATE_CALIB_CHUNKS + 1, 1 * MS, 1150 * US, 40);
	is_int(cm_rate_cost_estimate(&cal), 0, "too many chunks: refused");
	calib_fill(&cal, CM_RATE_CALIB_ROUNDS + 1, 4, 1 * MS, 1150 * US, 40);
	is_int(cm_rate_cost_estimate(&cal), 0, "too many rounds: refused");
	is_int(cm_rate_cost_estimate(NULL), 0, "NULL: unknown");
}

/* The budget over a 60 s run of an application using 2 CPUs, sampled at
 * each phase's period, its samples costing 25% more than the model says
 * (sample_rate.h, CM_RATE_AIM): every 1 s window under 5%, the run under
 * 1%, on a quiet node's cost and a busy one's. */
static void test_budget_run(uint64_t cost, double useful_share,
			    int learn_s)
{
	struct cm_rate_config c;
	struct cm_rate_budget b;
	double worst = 0, spent = 0, app = 0;
	uint64_t period, samples = 0;

	cm_rate_config_default(&c);
	c.sample_cost_ns = cost;
	c.target = 0.01 * CM_RATE_AIM;
	c.learn_target = 0.01 * CM_RATE_LEARN_FACTOR;
	cm_rate_budget_init(&b, &c, 0, 0);
	period = cm_rate_period_for(&c, cm_rate_budget_target(&b, &c));
	for (int sec = 0; sec < 60; sec++) {
		uint64_t a = 2 * S, n = a / period;
		double w = 1.25 * (double)n * (double)(cost + c.agent_cost_ns) /
			   (double)a;

		worst = w > worst ? w : worst;
		spent += w * (double)a;
		app += (double)a;
		samples += n;
		cm_rate_budget_evidence(&b, (uint64_t)((double)samples *
						       useful_share), 8);
		if (cm_rate_budget_account(&b, a, n * c.agent_cost_ns, n)) {
			cm_rate_budget_begin(&b, CM_RATE_WATCH, period,
					     (uint64_t)sec * S);
			period = cm_rate_period_for(&c, c.target);
		}
	}
	ok(worst <= 0.05 && spent / app <= 0.01 &&
	   b.total[CM_RATE_LEARN].app_cpu_ns == (uint64_t)learn_s * S,
	   "%.1f us a sample, %.0f%% of them evidence: the worst 1 s window "
	   "spends %.2f%%, the run %.2f%%, %.0f s of CPU learning",
	   (double)cost / 1e3, 100 * useful_share, 100 * worst,
	   100 * spent / app,
	   (double)b.total[CM_RATE_LEARN].app_cpu_ns / 1e9);
}

/* The phases' bookkeeping alone. */
static void test_budget(void)
{
	struct cm_rate_config c;
	struct cm_rate_budget b;

	cm_rate_config_default(&c);
	c.target = 0.004;
	cm_rate_budget_init(&b, &c, 500 * US, 0);
	ok(b.phase == CM_RATE_LEARN && b.learn_left_ns == 2 * S &&
	   b.nspend == 1 && cm_rate_budget_target(&b, &c) == 0.03,
	   "a run begins learning at 3%%, for 2 s of application CPU");
	is_int(cm_rate_budget_account(&b, 1500 * MS, 1 * MS, 100), 0,
	       "1.5 s: learning");
	is_int(cm_rate_budget_account(&b, 600 * MS, 1 * MS, 100), 1,
	       "2.1 s: done");
	cm_rate_budget_begin(&b, CM_RATE_WATCH, 2 * MS, 3 * S);
	ok(b.phase == CM_RATE_WATCH && cm_rate_budget_target(&b, &c) == 0.004 &&
	   b.spend[0].samples == 200 && b.spend[0].app_cpu_ns == 2100 * MS &&
	   b.spend[1].start_ns == 3 * S,
	   "then watching at the target; the learning phase accounted");
	is_int(cm_rate_budget_account(&b, 5 * S, 0, 5), 0,
	       "watching never ends by itself");
	is_int(cm_rate_budget_learn(&b, &c, 500 * US, 10 * S), 0,
	       "a phase change after 5 s of CPU watching: not yet");
	cm_rate_budget_account(&b, 5 * S, 0, 5);
	is_int(cm_rate_budget_learn(&b, &c, 500 * US, 20 * S), 1,
	       "a phase change: learning again");
	ok(b.learn_left_ns == 1 * S && cm_rate_budget_learn(&b, &c, 0, 0) == 0,
	   "for 1 s; not twice");
	for (int i = 0; i < 20; i++)
		cm_rate_budget_begin(&b, i % 2 ? CM_RATE_LEARN : CM_RATE_WATCH,
				     MS, (uint64_t)(30 + i) * S);
	ok(b.nspend == CM_RATE_SPEND_MAX && b.spend[0].start_ns == 0 &&
	   b.spend[0].phase == CM_RATE_LEARN &&
	   b.spend[CM_RATE_SPEND_MAX - 1].start_ns == 49 * S &&
	   b.phases == 23,
	   "the first phase and the latest ones are kept");
	ok(b.total[CM_RATE_LEARN].app_cpu_ns == 2100 * MS &&
	   b.total[CM_RATE_WATCH].app_cpu_ns == 10 * S,
	   "totals per phase kind");
	/* evidence: 8 threads need 8 x CM_RATE_LEARN_EVIDENCE references */
	cm_rate_budget_init(&b, &c, 500 * US, 0);
	cm_rate_budget_evidence(&b, 100, 8);
	is_int(cm_rate_budget_account(&b, 2100 * MS, 1 * MS, 100), 0,
	       "2.1 s with 100 references for 8 threads: still learning");
	cm_rate_budget_evidence(&b, 8 * CM_RATE_LEARN_EVIDENCE, 8);
	is_int(cm_rate_budget_account(&b, 100 * MS, 1 * MS, 100), 1,
	       "2.2 s, 8 x CM_RATE_LEARN_EVIDENCE references: done");
	cm_rate_budget_init(&b, &c, 500 * US, 0);
	cm_rate_budget_evidence(&b, 0, 8);
	is_int(cm_rate_budget_account(&b, 5900 * MS, 0, 0), 0,
	       "no evidence: learning at 5.9 s");
	is_int(cm_rate_budget_account(&b, 200 * MS, 0, 0), 1,
	       "... over at 6.1 s (3 times its length at most)");
	cm_rate_budget_begin(&b, CM_RATE_WATCH, 2 * MS, 7 * S);
	cm_rate_budget_evidence(&b, 5000, 8);
	cm_rate_budget_account(&b, 10 * S, 0, 5);
	cm_rate_budget_learn(&b, &c, 500 * US, 20 * S);
	is_int(cm_rate_budget_account(&b, 1100 * MS, 0, 0), 0,
	       "a phase change counts its evidence from its start: "
	       "learning at 1.1 s with the earlier references");
	cm_rate_budget_evidence(&b, 5000 + 8 * CM_RATE_LEARN_EVIDENCE, 8);
	is_int(cm_rate_budget_account(&b, 1, 0, 0), 1, "... over with its own");
	cm_rate_budget_init(&b, &c, 500 * US, 0);
	cm_rate_budget_evidence(&b, 0, 0);
	is_int(cm_rate_budget_account(&b, 2100 * MS, 0, 0), 1,
	       "no thread working: over at its time");
	c.learn_target = 0.004;
	cm_rate_budget_init(&b, &c, 500 * US, 0);
	ok(b.phase == CM_RATE_WATCH && cm_rate_budget_learn(&b, &c, 0, 0) == 0,
	   "a learning target not above the target: no learning phase");
	is_str(cm_rate_phase_name(CM_RATE_LEARN), "learn", "phase names");
	is_str(cm_rate_phase_name((enum cm_rate_phase)7), "?",
	       "unknown phase");
	/* 8 threads need 2,048 references of evidence: the learning period
	 * gives 8,000 samples a second of this run at 3.7 us a sample
	 * (250 us), 1,680 at 33.7 us (1.19 ms); with 80% of them on the
	 * stack (register spills) a fifth; at most 6 s */
	test_budget_run(3700, 1, 2);
	test_budget_run(33700, 1, 4);
	test_budget_run(3700, 0.2, 4);
	test_budget_run(33700, 0.2, 6);
}

int main(void)
{
	struct cm_rate_config c;

	cm_rate_config_default(&c);
	test_overhead(&c);
	test_ideal(&c);
	test_initial();
	test_decisions(&c);
	test_under_confirm(&c);
	test_window(&c);
	test_stability(&c);
	test_config();
	test_cost_estimate();
	test_budget();
	return done_testing();
}
