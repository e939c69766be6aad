/* upload_driver.c: a small command around nodeagent/upload.h for
 * tests/service/t0640-upload.sh.
 *
 *   upload_driver deliver [OPTS] FILE   prints "uploaded", "spooled" or
 *                                       "error", then the message on
 *                                       stderr; exits 0, 1 or 3
 *   upload_driver flush [OPTS]          prints "delivered N"; exit 0, 3
 *   upload_driver count --spool DIR     prints the pending count
 *   upload_driver id FILE               prints cm_upload_id_make's id
 *
 * OPTS: --service URL --spool DIR --timeout MS --max-bytes N --id ID
 *       --munge-socket PATH --max N (flush)
 */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "upload.h"

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 &&
	    fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1)) &&
	    fread(buf, 1, (size_t)n, f) == (size_t)n) {
		*len = (size_t)n;
	} else {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

int main(int argc, char *argv[])
{
	static const struct option lopts[] = {
		{ "service", required_argument, NULL, 's' },
		{ "spool", required_argument, NULL, 'd' },
		{ "timeout", required_argument, NULL, 't' },
		{ "max-bytes", required_argument, NULL, 'b' },
		{ "id", required_argument, NULL, 'i' },
		{ "max", required_argument, NULL, 'm' },
		{ "munge-socket", required_argument, NULL, 'u' },
		{ NULL, 0, NULL, 0 }
	};
	struct cm_deliver_opts o = { .service_url = NULL };
	struct cm_error err = { .text = "" };
	char id[CM_UPLOAD_ID_MAX];
	const char *cmd, *given_id = NULL;
	char *doc = NULL;
	size_t len = 0, bytes;
	int c, max = 0, rc;

	if (argc < 2)
		return 2;
	cmd = argv[1];
	optind = 2;
	while ((c = getopt_long(argc, argv, "", lopts, NULL)) != -1) {
		switch (c) {
		case 's': o.service_url = optarg; break;
		case 'd': o.spool_dir = optarg; break;
		case 't': o.timeout_ms = atol(optarg); break;
		case 'b': o.spool_max_bytes = strtoull(optarg, NULL, 10); break;
		case 'i': given_id = optarg; break;
		case 'm': max = atoi(optarg); break;
		case 'u': o.munge_socket = optarg; break;
		default: return 2;
		}
	}
	if (!strcmp(cmd, "count")) {
		rc = cm_spool_count(&o, &bytes);
		if (rc < 0)
			return 3;
		printf("%d\n", rc);
		return 0;
	}
	if (!strcmp(cmd, "flush")) {
		rc = cm_spool_flush(&o, max, &err);
		if (err.text[0])
			fprintf(stderr, "%s\n", err.text);
		if (rc < 0)
			return 3;
		printf("delivered %d\n", rc);
		return 0;
	}
	if (optind >= argc || !(doc = slurp(argv[optind], &len))) {
		fprintf(stderr, "upload_driver: cannot read the document\n");
		return 2;
	}
	cm_upload_id_make(doc, len, id);
	if (!strcmp(cmd, "id")) {
		printf("%s\n", id);
		free(doc);
		return 0;
	}
	rc = cm_result_deliver(&o, doc, len, given_id ? given_id : id, &err);
	free(doc);
	printf("%s\n", rc == CM_DELIVER_UPLOADED ? "uploaded" :
		       rc == CM_DELIVER_SPOOLED ? "spooled" : "error");
	if (err.text[0])
		fprintf(stderr, "%s%s%s\n", err.text, rc < 0 ? ": errno " : "",
			rc < 0 ? strerror(errno) : "");
	return rc < 0 ? 3 : rc;
}
