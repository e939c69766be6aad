/* place_nodes_line.h: what srun's own command line and its allocation's
 * environment say about a step's layout, for the placement across nodes
 * (place_nodes.h).  Pure but for the file system look-up of the program. */
#ifndef COMMAP_PLACE_NODES_LINE_H
#define COMMAP_PLACE_NODES_LINE_H

/* What srun's command line says (only what matters here). */
struct cm_srun_line {
	int asked;		/* --commap-place-nodes */
	const char *own;	/* an option that chooses nodes or layout */
	long ntasks, nnodes;	/* -n, -N; 0 when not given */
	int prog;		/* index of the program, 0 when not found */
};

/* Scan argv[1..argc-1], srun's arguments: its options end at "--" or at
 * the first word that is neither an option nor an option's value and
 * names an executable regular file (PATH searched when it has no '/'). */
void cm_srun_line_scan(int argc, char **argv, struct cm_srun_line *l);

/* Task slots per node from SLURM_TASKS_PER_NODE ("2(x3)"; "4" on one
 * node) for nnodes nodes: the count when every node has the same, else
 * 0 (different counts, malformed, NULL). */
long cm_srun_even_slots(const char *tpn, int nnodes);

/* 1 when s is a placement note as srun's plugin writes it into
 * COMMAP_PLACE_NODES ("learned|block BYTES BYTES RUNS", integers >= 0),
 * else 0: the job's environment is the user's, and the agent is handed
 * only a well-formed one. */
int cm_place_nodes_note_valid(const char *s);

#endif
