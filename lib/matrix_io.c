/* matrix_io.c: placeholder, being written. */
