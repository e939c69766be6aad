/* test_place_nodes_line.c: what the plugin reads from srun's command line
 * and the allocation's environment before it places ranks across nodes
 * (spank/place_nodes_line.h): the option, the program after srun's
 * options and their values, the options that choose a layout, -n/-N in
 * their four spellings, and even task slots per node. */
#include <stdlib.h>
#include <string.h>

#include "place_nodes_line.h"
#include "tap.h"

#define MAXW 32

/* Scan a line of blank-separated words ("srun" first). */
static struct cm_srun_line scan_words(const char *line, char *buf,
				      char **argv)
{
	struct cm_srun_line l;
	int argc = 0;

	strcpy(buf, line);
	for (char *t = strtok(buf, " "); t && argc < MAXW - 1;
	     t = strtok(NULL, " "))
		argv[argc++] = t;
	argv[argc] = NULL;
	cm_srun_line_scan(argc, argv, &l);
	return l;
}

static void test_program(void)
{
	char buf[512], *argv[MAXW];
	struct cm_srun_line l;

	/* /bin/sh names a file, "6", "pmix" and "x.out" do not */
	l = scan_words("srun -n 6 --mpi=pmix --commap-place-nodes /bin/sh -c "
		       "true", buf, argv);
	ok(l.asked, "--commap-place-nodes seen");
	ok(l.prog > 0 && strcmp(argv[l.prog], "/bin/sh") == 0,
	   "the program follows the options and their values");
	is_int((int)l.ntasks, 6, "-n 6");
	ok(!l.own, "no layout option");
	l = scan_words("srun -o x.out -n6 sh --commap-place-nodes", buf, argv);
	ok(l.prog > 0 && strcmp(argv[l.prog], "sh") == 0,
	   "a program found in PATH");
	ok(!l.asked, "the program's own arguments are not srun's");
	is_int((int)l.ntasks, 6, "-n6");
	l = scan_words("srun --ntasks=12 --nodes 3 -- ./no-such-program",
		       buf, argv);
	ok(l.prog > 0 && strcmp(argv[l.prog], "./no-such-program") == 0,
	   "after --, whatever follows is the program");
	is_int((int)l.ntasks, 12, "--ntasks=12");
	is_int((int)l.nnodes, 3, "--nodes 3");
	l = scan_words("srun --ntasks 4 -N2 ./no-such-program", buf, argv);
	is_int((int)l.ntasks, 4, "--ntasks 4");
	is_int((int)l.nnodes, 2, "-N2");
	is_int(l.prog, 0, "no executable: no program");
}

static void test_own_layout(void)
{
	static const char *const lines[][2] = {
		{ "srun -m cyclic /bin/sh", "distribution" },
		{ "srun --distribution=plane=2 /bin/sh", "distribution" },
		{ "srun -w node1,node2 /bin/sh", "nodelist" },
		{ "srun --nodelist node1 /bin/sh", "nodelist" },
		{ "srun -x node3 /bin/sh", "exclude" },
		{ "srun -r 1 /bin/sh", "relative" },
		{ "srun --het-group=0 /bin/sh", "het-group" },
		{ "srun -n1 /bin/sh : -n1 /bin/sh", NULL },
	};
	char buf[512], *argv[MAXW];

	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		struct cm_srun_line l = scan_words(lines[i][0], buf, argv);

		if (lines[i][1])
			ok(l.own && strcmp(l.own, lines[i][1]) == 0,
			   "'%s': chooses its own %s", lines[i][0],
			   l.own ? l.own : "(nothing)");
		else
			ok(!l.own && l.prog == 2, "'%s': the first program "
			   "ends srun's options", lines[i][0]);
	}
}

static void test_even_slots(void)
{
	is_int((int)cm_srun_even_slots("2(x3)", 3), 2, "2(x3) on 3 nodes: 2");
	is_int((int)cm_srun_even_slots("4", 1), 4, "4 on one node: 4");
	is_int((int)cm_srun_even_slots("4", 2), 0, "4 for 2 nodes: unknown");
	is_int((int)cm_srun_even_slots("2(x2),1", 3), 0, "uneven: 0");
	is_int((int)cm_srun_even_slots("2(x4)", 3), 0, "4 nodes, not 3: 0");
	is_int((int)cm_srun_even_slots("x", 1), 0, "malformed: 0");
	is_int((int)cm_srun_even_slots(NULL, 3), 0, "unset: 0");
	is_int((int)cm_srun_even_slots("0(x3)", 3), 0, "no slot: 0");
}

/* What the plugin hands the agent from the job's environment. */
static void test_note(void)
{
	ok(cm_place_nodes_note_valid("learned 117964800 0 1"),
	   "a learned note is passed on");
	ok(cm_place_nodes_note_valid("block 25 25 3"), "a block note too");
	ok(!cm_place_nodes_note_valid("learned 1 0"), "three words: refused");
	ok(!cm_place_nodes_note_valid("other 1 0 1"), "another kind: refused");
	ok(!cm_place_nodes_note_valid("learned 1 0 1 --spool /x"),
	   "more words: refused");
	ok(!cm_place_nodes_note_valid("learned -1 0 1"), "a sign: refused");
	ok(!cm_place_nodes_note_valid(""), "empty: refused");
	ok(!cm_place_nodes_note_valid(NULL), "unset: refused");
}

int main(void)
{
	test_note();
	test_program();
	test_own_layout();
	test_even_slots();
	return done_testing();
}
