/* fuzz_matrix_json.c: libFuzzer target for the JSON matrix reader (both
 * "commap-matrix" and "commap-result" documents).  Accepted input must be
 * consistent and survive a JSON and a CSV round trip. */
#include <stddef.h>
#include <stdint.h>

#include "commap/matrix.h"
#include "commap/matrix_io.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cm_matrix *m = NULL;
	struct cm_error err = { "" };

	if (cm_matrix_parse_json((const char *)data, size, &m, &err) < 0) {
		fuzz_check(m == NULL && err.text[0] != '\0',
			   "failure without a message or with a matrix");
		return 0;
	}
	fuzz_round_trip(m, cm_matrix_write_json, CM_MATRIX_FORMAT_JSON);
	fuzz_round_trip(m, cm_matrix_write_csv, CM_MATRIX_FORMAT_CSV);
	cm_matrix_free(m);
	return 0;
}
