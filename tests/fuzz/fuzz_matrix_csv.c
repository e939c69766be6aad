/* fuzz_matrix_csv.c: libFuzzer target for the CSV matrix reader (and the
 * format detection of cm_matrix_parse).  Accepted input must be consistent
 * and survive a CSV and a JSON round trip. */
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

	if (cm_matrix_parse_csv((const char *)data, size, &m, &err) < 0) {
		fuzz_check(m == NULL && err.text[0] != '\0',
			   "failure without a message or with a matrix");
		/* Detection must not crash either. */
		if (cm_matrix_parse((const char *)data, size,
				    CM_MATRIX_FORMAT_AUTO, &m, &err) == 0)
			cm_matrix_free(m);
		return 0;
	}
	fuzz_round_trip(m, cm_matrix_write_csv, CM_MATRIX_FORMAT_CSV);
	fuzz_round_trip(m, cm_matrix_write_json, CM_MATRIX_FORMAT_JSON);
	cm_matrix_free(m);
	return 0;
}
