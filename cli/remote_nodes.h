/* remote_nodes.h: 'commap report JOB' for a job that ran on several nodes:
 * the job across its nodes, before each node's own report. */
#ifndef COMMAP_CLI_REMOTE_NODES_H
#define COMMAP_CLI_REMOTE_NODES_H

#include <stdio.h>

#include <jansson.h>

/* When the job document (GET /v1/jobs/{job}: "job", "results" rows with
 * "step", "node", "ranks", "threads", "edges", "migrations", "final_cost"
 * and optionally "document") holds results from two or more nodes, print
 * one line per result (step, node, ranks, threads, edges, pins, cost, the
 * step's CPUs there), the totals, and the MPI ranks across nodes of each
 * step whose results carry rank_traffic (report/render_traffic.h), else
 * that traffic between nodes is not in the matrices; then return 1.  Return 0, printing nothing, for a job
 * on one node or without results; -1 on a write error. */
int remote_nodes_summary(FILE *out, const json_t *job);

#endif
