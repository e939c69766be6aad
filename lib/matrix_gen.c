/* matrix_gen.c: placeholder, being written. */
