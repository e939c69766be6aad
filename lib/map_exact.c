/* map_exact.c: placeholder, being written. */
