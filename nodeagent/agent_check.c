/* agent_check.c: commap-agent --check, what this node allows the agent to
 * do (docs/agent.md, "Checking a node").
 *
 * Each probe does for real what the agent would do at a step's start, on
 * the agent's own process: load the topology, decode an instruction, open
 * the software sampling event with user registers, probe the hardware
 * sampling PMU, open the page-fault tracepoint, and read the kernel knobs
 * that change what the backends see.  One line per probe; exit 0 when at
 * least one address-sampling backend (sample or hw) works, else 1 (jobs
 * then run unpinned, as the agent would say in its log).
 */
#define _GNU_SOURCE
#include <config.h>

#include <asm/perf_regs.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "commap/topology.h"
#include "decode.h"
#include "fault_sample.h"
#include "perf_sample.h"

static void line(FILE *out, const char *status, const char *what,
		 const char *detail)
{
	fprintf(out, "  %-5s %-16s %s\n", status, what, detail);
}

static void check_topology(FILE *out)
{
	struct cm_error err = { "" };
	struct cm_topo *t = NULL;
	char detail[512];
	char *cpus, *syn;

	if (cm_topo_load_this(&t, &err) < 0) {
		line(out, "FAIL", "topology", err.text);
		return;
	}
	cpus = cm_topo_cpulist(t);
	syn = cm_topo_synthetic(t);
	snprintf(detail, sizeof(detail), "%d PUs allowed (%s); %s",
		 cm_topo_npus(t), cpus ? cpus : "?",
		 syn ? syn : "not a symmetric machine");
	line(out, "ok", "topology", detail);
	free(cpus);
	free(syn);
	cm_topo_free(t);
}

/* mov rax, [rbx + rcx*8 + 0x10] with rbx = 0x1000, rcx = 2: 0x1020. */
static void check_decoder(FILE *out)
{
	static const uint8_t code[] = { 0x48, 0x8b, 0x44, 0xcb, 0x10 };
	struct cm_error err = { "" };
	struct cm_decoder *d = cm_decoder_new(4, 0, &err);
	struct cm_regs regs;
	struct cm_access a;

	if (!d) {
		line(out, "FAIL", "decoder", err.text);
		return;
	}
	memset(&regs, 0, sizeof(regs));
	regs.v[PERF_REG_X86_BX] = 0x1000;
	regs.v[PERF_REG_X86_CX] = 2;
	regs.valid = 1u << PERF_REG_X86_BX | 1u << PERF_REG_X86_CX;
	if (cm_decode_address(d, 1, code, sizeof(code), 0x400000,
			      0x400000 + sizeof(code), &regs, &a, &err) == 1 &&
	    a.ref[0].addr == 0x1020)
		line(out, "ok", "decoder", "Capstone x86-64: a sampled load "
		     "gives its data address");
	else
		line(out, "FAIL", "decoder", err.text[0] ? err.text :
		     "a known load did not decode to its address");
	cm_decoder_free(d);
}

static int check_sample(FILE *out)
{
	struct cm_error err = { "" };
	struct cm_perf_config cfg;
	struct cm_perf_sampler *s;
	int ok;

	cm_perf_config_default(&cfg);
	s = cm_perf_sampler_new(&cfg, &err);
	ok = s && cm_perf_sampler_attach(s, gettid(), &err) == 0;
	cm_perf_sampler_free(s);
	line(out, ok ? "ok" : "FAIL", "sample backend", ok ?
	     "CPU-clock sampling with user registers (software, works in "
	     "VMs)" : err.text);
	return ok;
}

static int check_hw(FILE *out)
{
	struct cm_perf_hw hw;
	char detail[CM_ERROR_TEXT_MAX + 512];
	int rc;

	memset(&hw, 0, sizeof(hw));
	rc = cm_perf_hw_probe(NULL, &hw);
	if (rc == 1)
		snprintf(detail, sizeof(detail), "%s on PMU %s: %s",
			 cm_perf_hw_kind_name(hw.kind), hw.pmu, hw.reason);
	else
		snprintf(detail, sizeof(detail), "%s (the sample backend is "
			 "used instead)", hw.reason[0] ? hw.reason :
			 "no memory-sampling PMU");
	line(out, rc == 1 ? "ok" : "no", "hw backend", detail);
	return rc == 1;
}

static void check_fault(FILE *out)
{
	struct cm_error err = { "" };
	struct cm_fault_config cfg;
	struct cm_fault_sampler *s;
	char detail[CM_ERROR_TEXT_MAX + 128];

	cm_fault_config_default(&cfg);
	s = cm_fault_sampler_new(&cfg, &err);
	if (s)
		snprintf(detail, sizeof(detail), "tracepoint "
			 "exceptions:page_fault_user on %d CPUs (an optional "
			 "second source: --backend sample+fault)",
			 cm_fault_sampler_nevents(s));
	else
		snprintf(detail, sizeof(detail), "%s (optional)", err.text);
	line(out, s ? "ok" : "no", "fault backend", detail);
	cm_fault_sampler_free(s);
}

/* A one-line integer file: 0 with *v, or -1. */
static int read_knob(const char *path, long *v)
{
	FILE *f = fopen(path, "re");
	int rc = -1;

	if (f) {
		rc = fscanf(f, "%ld", v) == 1 ? 0 : -1;
		fclose(f);
	}
	return rc;
}

/* One "info" line for an integer sysctl: its value and what it means,
 * or that this kernel has no such file. */
static void knob_line(FILE *out, const char *what, const char *name,
		      const char *meaning)
{
	char path[128], detail[256];
	long v;

	snprintf(path, sizeof(path), "/proc/sys/%s", name);
	for (char *p = path + strlen("/proc/sys/"); *p; p++)
		if (*p == '.')
			*p = '/';
	if (read_knob(path, &v) == 0)
		snprintf(detail, sizeof(detail), "%s = %ld (%s)", name, v,
			 meaning);
	else
		snprintf(detail, sizeof(detail), "%s not available", name);
	line(out, "info", what, detail);
}

static void check_knobs(FILE *out)
{
	knob_line(out, "numa balancing", "kernel.numa_balancing",
		  "the fault backend needs 1; numa_balancing=manage turns it "
		  "on");
	knob_line(out, "perf paranoid", "kernel.perf_event_paranoid",
		  "root's agents are not limited; 'commap run' as a user "
		  "needs <= 2");
}

int agent_check(FILE *out)
{
	int sample, hw;

	fprintf(out, "commap-agent %s: what this node allows\n",
		PACKAGE_VERSION);
	check_topology(out);
	check_decoder(out);
	sample = check_sample(out);
	hw = check_hw(out);
	check_fault(out);
	check_knobs(out);
	if (sample || hw)
		fprintf(out, "the agent can detect and place here (backend "
			"%s)\n", hw ? "hw" : "sample");
	else
		fprintf(out, "the agent cannot sample memory accesses here: "
			"jobs run unpinned\n");
	return sample || hw ? 0 : 1;
}
