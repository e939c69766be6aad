/* matrix.c: placeholder, being written. */
